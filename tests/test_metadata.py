"""The `#[metadata]` codec: real sections from the corpus, hand-built NDArray blobs of each
dtype, round trips, every malformation we can name, and fuzzing (only MetadataError may
escape)."""

from __future__ import annotations

import base64
import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from relaylens.compiler.ir.attrs import MetaRef
from relaylens.compiler.metadata import MetadataError, encode_metadata, parse_metadata

from conftest import CORPUS, corpus_file, needs_corpus
MAGIC = 0xDD5E40F096B4A13F


# ---------------------------------------------------------------------------- helpers
def blob(code, bits, shape, data: bytes, *, lanes=1, magic=MAGIC, nbytes=None) -> bytes:
    """An NDArray blob packed field by field (independent of the module's encoder)."""
    head = struct.pack("<QQiii", magic, 0, 1, 0, len(shape))
    head += struct.pack("<BBH", code, bits, lanes) + struct.pack(f"<{len(shape)}q", *shape)
    return head + struct.pack("<q", len(data) if nbytes is None else nbytes) + data


def section(*blobs: bytes) -> str:
    """A minimal metadata section holding one relay.Constant per blob."""
    n = len(blobs)
    nodes = [{"type_key": ""}, {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
             {"type_key": "Array", "data": list(range(3, 3 + n))}]
    nodes += [{"type_key": "relay.Constant", "attrs": {"data": str(i), "span": "0"}}
              for i in range(n)]
    b64 = [base64.b64encode(b).decode() for b in blobs]
    return json.dumps({"root": 1, "nodes": nodes, "b64ndarrays": b64}, indent=2)


def split_metadata(path: Path) -> tuple[str, str]:
    """(program text, section text) of a corpus file."""
    program, _, meta = re.split(r"^(#\[metadata\])[ \t]*$", path.read_text(), maxsplit=1,
                                flags=re.M)
    return program, meta


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ------------------------------------------------------------------- the real corpus
# `meta[relay.Constant][i]`, then optionally a `/* ty=Tensor[(d, ...), dtype] ... */` or
# `/* Tensor[...] */` comment right after it.
REF = re.compile(r"meta\[relay\.Constant\]\[(\d+)\]"
                 r"(?:\s*/\*\s*(?:ty=)?Tensor\[\(([^)]*)\),\s*(\w+)\][^*]*\*/)?")


@pytest.mark.parametrize("name", ["131.relay", "132.relay", "134.relay"])
def test_every_constant_in_the_corpus_resolves_and_matches_its_type_comment(name):
    program, meta = split_metadata(corpus_file(name))
    table = parse_metadata(meta)
    refs = REF.findall(program)
    assert refs and table.keys() == ["relay.Constant"]
    for index, dims, dtype in refs:
        array = table.constant(int(index))
        assert table.lookup(MetaRef("relay.Constant", int(index)))["type_key"] == "relay.Constant"
        if dims or dtype:
            assert array.shape == tuple(int(d) for d in dims.split(",") if d.strip())
            assert array.dtype == np.dtype(dtype)


@needs_corpus
def test_corpus_values():
    _, meta = split_metadata(CORPUS / "131.relay")
    table = parse_metadata(meta)
    assert table.count("relay.Constant") == 10 and table.tvm_version == "0.13.0"
    assert np.isfinite(table.constant(6)).all() and table.constant(6).std() > 0
    assert same_array(parse_metadata(split_metadata(CORPUS / "132.relay")[1]).constant(0),
                      np.array([0], np.int32))
    assert parse_metadata(split_metadata(CORPUS / "134.relay")[1]).constant(0).shape == (0,)


# --------------------------------------------------------------- hand-built blobs
DTYPES = [  # (code, bits, struct format, numpy dtype, values)
    (0, 8, "b", "int8", [-128, 127]), (0, 16, "h", "int16", [-32768, 2]),
    (0, 32, "i", "int32", [-(2**31), 7]), (0, 64, "q", "int64", [-(2**63), 2**40]),
    (1, 8, "B", "uint8", [0, 255]), (1, 16, "H", "uint16", [65535, 1]),
    (1, 32, "I", "uint32", [2**32 - 1, 3]), (1, 64, "Q", "uint64", [2**64 - 1, 0]),
    (2, 16, "e", "float16", [1.5, -2.0]), (2, 32, "f", "float32", [0.1, -1e30]),
    (2, 64, "d", "float64", [1e-300, 3.25]), (1, 1, "?", "bool", [True, False]),
]


@pytest.mark.parametrize("code, bits, fmt, dtype, values", DTYPES, ids=[d[3] for d in DTYPES])
def test_decodes_each_dtype(code, bits, fmt, dtype, values):
    data = struct.pack(f"<{len(values)}{fmt}", *values)
    array = parse_metadata(section(blob(code, bits, [len(values)], data))).constant(0)
    assert array.dtype == np.dtype(dtype) and array.shape == (len(values),)
    assert array.tolist() == list(np.array(values, dtype))


def test_layout_is_little_endian_and_c_order():
    data = bytes([4, 3, 2, 1, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0])
    array = parse_metadata(section(blob(0, 32, [2, 2], data))).constant(0)
    assert array.tolist() == [[0x01020304, 0], [1, 2]]
    text = encode_metadata([np.array([[0x01020304, 0], [1, 2]], ">i4").T])  # big-endian, F order
    raw = base64.b64decode(json.loads(text)["b64ndarrays"][0])
    assert raw == blob(0, 32, [2, 2], bytes([4, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]))


def test_scalar_and_bool_blobs():
    table = parse_metadata(section(blob(2, 32, [], struct.pack("<f", 2.5)),
                                   blob(1, 1, [3], bytes([0, 1, 7]))))
    assert table.constant(0).shape == () and table.constant(0) == np.float32(2.5)
    assert table.constant(1).tolist() == [False, True, True]  # TVM bool: 1 byte per element


def test_bfloat16_keeps_its_bits_without_ml_dtypes():
    array = parse_metadata(section(blob(4, 16, [1], struct.pack("<H", 0x3F80)))).constant(0)
    if array.dtype == np.uint16:
        assert array.tolist() == [0x3F80]
    else:  # ml_dtypes is installed
        assert array.dtype.name == "bfloat16" and float(array[0]) == 1.0


def test_constants_are_decoded_once_and_read_only():
    table = parse_metadata(section(blob(0, 8, [2], b"\x01\x02")))
    assert table.constant(0) is table.constant(0)
    with pytest.raises(ValueError):
        table.constant(0)[0] = 5


# -------------------------------------------------------------------- round trips
ROUND_TRIP_DTYPES = [d[3] for d in DTYPES]


@settings(max_examples=200, deadline=None)
@given(st.lists(hnp.arrays(st.sampled_from(ROUND_TRIP_DTYPES),
                           hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)),
                max_size=4))
def test_round_trip(arrays):
    table = parse_metadata(encode_metadata(arrays))
    assert table.count("relay.Constant") == len(arrays)
    for i, array in enumerate(arrays):
        assert same_array(table.constant(i), array)


def test_round_trip_large():
    big = np.random.default_rng(0).standard_normal((64, 3, 3, 512)).astype(np.float32)
    assert same_array(parse_metadata(encode_metadata([big])).constant(0), big)


def test_encoded_section_looks_like_tvms():
    text = encode_metadata([np.zeros((2, 3), np.float16), np.array(True)])
    assert text.startswith('{\n  "root": 1, \n  "nodes": [\n    {\n      "type_key": ""\n    }, ')
    assert text.endswith('  "attrs": {"tvm_version": "0.16.0"}\n}')
    doc = json.loads(text)
    nodes = doc["nodes"]
    table = parse_metadata(text)
    first, second = (table.node("relay.Constant", i)["attrs"] for i in range(2))
    assert first["virtual_device_"] == second["virtual_device_"]  # one shared VirtualDevice
    ttype = nodes[int(first["_checked_type_"])]
    assert ttype["type_key"] == "relay.TensorType" and ttype["attrs"]["dtype"] == "float16"
    dims = [nodes[i]["attrs"]["value"] for i in nodes[int(ttype["attrs"]["shape"])]["data"]]
    assert dims == ["2", "3"]
    assert nodes[int(nodes[int(second["_checked_type_"])]["attrs"]["shape"])] == {
        "type_key": "Array"}
    assert parse_metadata(encode_metadata([])).count("relay.Constant") == 0


def test_encode_refuses_unsupported_dtypes():
    with pytest.raises(MetadataError, match="complex64"):
        encode_metadata([np.zeros(2, np.complex64)])


# ------------------------------------------------------------------------- errors
GOOD = struct.pack("<2i", 1, 2)
BAD_BLOBS = {
    "not even a header": blob(0, 32, [2], GOOD)[:20],
    "truncated in its shape": blob(0, 32, [2, 1], b"")[:40],
    "has 4 data bytes, expected 8": blob(0, 32, [2], GOOD, nbytes=8)[:-4],
    "has 12 data bytes, expected 8": blob(0, 32, [2], GOOD + b"\0" * 4, nbytes=8),
    "magic number 0x0000000000000001": blob(0, 32, [2], GOOD, magic=1),
    "declares 4 data bytes, but 2 elements": blob(0, 32, [2], GOOD[:4]),
    "negative dimension": blob(0, 32, [-2], b""),
    "code 2, 8 bits": blob(2, 8, [2], b"\0\0"),
    "4 lanes": blob(0, 32, [2], GOOD, lanes=4),
}


@pytest.mark.parametrize("fragment", BAD_BLOBS)
def test_bad_blobs(fragment):
    table = parse_metadata(section(BAD_BLOBS[fragment]))
    with pytest.raises(MetadataError, match=re.escape(fragment)) as info:
        table.constant(0)
    assert "meta[relay.Constant][0] (b64ndarrays[0])" in str(info.value)


def test_bad_base64():
    text = section(blob(0, 8, [1], b"\0")).replace('"P6G0', '"P6G!')
    with pytest.raises(MetadataError, match="not valid base64"):
        parse_metadata(text).constant(0)


def edit(mutate) -> str:
    doc = json.loads(section(blob(0, 8, [1], b"\0")))
    mutate(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d.pop("nodes"), 'no "nodes" array'),
    (lambda d: d.update(root=40), '"root" of the metadata section is index 40'),
    (lambda d: d["nodes"][1].update(type_key="Array"), "not a Map of type keys"),
    (lambda d: d["nodes"][1].update(keys=["a", "b"]), "not a Map of type keys"),
    (lambda d: d["nodes"][2].update(data=[9]), "element of the relay.Constant array is index 9"),
    (lambda d: d["nodes"][2].update(type_key="Map"), "relay.Constant is not an Array"),
    (lambda d: d["nodes"].__setitem__(3, [1]), "element of the relay.Constant array is not a"),
], ids=["nodes", "root", "map", "keys", "element", "array", "not-a-node"])
def test_malformed_tables(mutate, fragment):
    with pytest.raises(MetadataError, match=re.escape(fragment)):
        parse_metadata(edit(mutate))


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d["nodes"][3]["attrs"].pop("data"), "the data of meta[relay.Constant][0] is None"),
    (lambda d: d["nodes"][3]["attrs"].update(data="x"), "meta[relay.Constant][0] is 'x', not"),
    (lambda d: d["nodes"][3]["attrs"].update(data="3"), "is index 3, but there are only 1"),
    (lambda d: d["nodes"][3].update(type_key="tir.Var"), "is not a relay.Constant node"),
])
def test_malformed_constants(mutate, fragment):
    with pytest.raises(MetadataError, match=re.escape(fragment)):
        parse_metadata(edit(mutate)).constant(0)


def test_missing_entries_name_the_reference():
    table = parse_metadata(section(*[blob(0, 8, [1], b"\0")] * 3))
    with pytest.raises(KeyError) as info:
        table.lookup(MetaRef("relay.Constant", 7))
    assert isinstance(info.value, MetadataError) and str(info.value) == (
        "no entry meta[relay.Constant][7] in the metadata section"
        " (it has 3 relay.Constant entries)")
    with pytest.raises(MetadataError, match=r"it has no tir.Var entries"):
        table.node("tir.Var", 0)
    with pytest.raises(MetadataError, match=r"meta\[relay.Constant\]\[-1\]"):
        table.constant(-1)


def test_json_errors_carry_their_offset():
    with pytest.raises(MetadataError, match="not valid JSON") as info:
        parse_metadata('{\n  "root": 1,, "nodes": []}')
    assert info.value.offset == 14
    for text in ("", "[]", '{"nodes": 3}', "[" * 100_000):
        with pytest.raises(MetadataError):
            parse_metadata(text)


def test_size_var_names():
    nodes = [{"type_key": ""}, {"type_key": "Map", "keys": ["tir.SizeVar"], "data": [2]},
             {"type_key": "Array", "data": [3]},
             {"type_key": "tir.SizeVar", "attrs": {"dtype": "int64", "name": "4", "span": "0"}},
             {"type_key": "runtime.String", "repr_str": "n"}]
    table = parse_metadata(json.dumps({"root": 1, "nodes": nodes}))
    assert table.keys() == ["tir.SizeVar"] and table.type_dims("tir.SizeVar", 0) == "n"
    with pytest.raises(MetadataError):
        table.constant(0)


# --------------------------------------------------------------------------- fuzz
def exercise(text: str) -> None:
    """Parse and touch every entry; anything but MetadataError fails the test."""
    try:
        table = parse_metadata(text)
    except MetadataError:
        return
    for key in [*table.keys(), "relay.Constant"]:
        for i in range(-1, min(table.count(key), 4) + 1):
            for access in (lambda: table.node(key, i), lambda: table.constant(i),
                           lambda: table.type_dims(key, i)):
                try:
                    access()
                except MetadataError:
                    pass


SAMPLE = encode_metadata([np.arange(6, dtype=np.int16).reshape(2, 3), np.float32(1.5)])
REAL = split_metadata(CORPUS / "132.relay")[1] if CORPUS.is_dir() else SAMPLE
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 20) | st.sampled_from(
        ["0", "1", "2", "3", "-1", "x", "Map", "Array", "relay.Constant", "P6G0lvBAXt0="]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.sampled_from(
        ["root", "nodes", "b64ndarrays", "type_key", "keys", "data", "attrs", "name"]),
        inner, max_size=5), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_fuzz_random_text(text):
    exercise(text)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_fuzz_random_json(doc):
    exercise(json.dumps(doc))


def subtrees(value, path=()):
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, child in items:
        yield from subtrees(child, (*path, key))


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_fuzz_valid_section_with_one_subtree_replaced(data):
    doc = json.loads(SAMPLE)
    *path, last = data.draw(st.sampled_from(list(subtrees(doc))[1:]))
    parent = doc
    for key in path:
        parent = parent[key]
    parent[last] = data.draw(JSONISH)
    exercise(json.dumps(doc))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([SAMPLE, REAL]), st.data())
def test_fuzz_truncated_and_corrupted_sections(text, data):
    cut = data.draw(st.integers(0, len(text)))
    exercise(text[:cut])
    at = data.draw(st.integers(0, len(text) - 1))
    exercise(text[:at] + data.draw(st.characters()) + text[at + 1:])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_corrupted_blob_bytes(data):
    raw = bytearray(base64.b64decode(json.loads(SAMPLE)["b64ndarrays"][0]))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    raw = raw[: data.draw(st.integers(0, len(raw) + 8))]
    exercise(section(bytes(raw)))
