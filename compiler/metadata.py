"""The `#[metadata]` section: TVM's SaveJSON node graph and its base64 tensors.

Layout (spec §2.5): `nodes[root]` is a `Map` whose `keys` are type keys ("relay.Constant",
"tir.SizeVar", ...) and whose `data` are, in the same order, indices of `Array` nodes; each
Array's `data` lists node indices.  So `meta[K][i]` is `nodes[array_of(K).data[i]]`.  Node
attrs are all strings; an object-valued attr holds a node index ("0" is the null node).  A
`relay.Constant`'s `data` attr indexes `b64ndarrays`, base64 of TVM's NDArray blob:

    u64 magic 0xDD5E40F096B4A13F, u64 reserved, i32 device type, i32 device id, i32 ndim,
    u8 dtype code (0 int, 1 uint, 2 float, 4 bfloat), u8 bits, u16 lanes,
    i64 shape[ndim], i64 byte count, then the elements, little-endian, C order.

Elements take (bits + 7) // 8 bytes each, so TVM's `bool` (uint, 1 bit) is one byte.

Decoding is lazy: `parse_metadata` reads the JSON and checks the table's skeleton, and a
tensor is decoded on its first `constant(i)` (then cached).  Arrays come back read-only and
share the decoded bytes; copy one before writing to it.  `bfloat16` decodes to
`ml_dtypes.bfloat16` when that package is installed, else to its raw bits as `uint16`.

An attributes entry (`meta[relay.attrs.Conv2DAttrs][0]`, which TVM's printer writes in
place of a call's attributes) is read by `attrs()`: its fields are strings, a POD field's
value as text, an object field's a node index.

Every problem with the input is a `MetadataError` carrying a message and a character offset
into the section's text (the JSON error position for syntax errors, else 0).
"""

from __future__ import annotations

import base64
import json
import math
import struct
from functools import lru_cache
from typing import Any, Callable, Sequence

from .lazy_modules import numpy as np
from .ir.attrs import FloatImm, IntImm, MetaRef

NDARRAY_MAGIC = 0xDD5E40F096B4A13F
TVM_VERSION = "0.16.0"  # what encode_metadata claims to be
CONSTANT = "relay.Constant"

# magic, reserved, device type, device id, ndim, dtype code, dtype bits, dtype lanes
_HEADER = struct.Struct("<QQiiiBBH")

@lru_cache(maxsize=1)
def _dtypes() -> dict[tuple[int, int], np.dtype]:
    """(DLPack type code, bits) -> numpy dtype of the decoded array (little-endian on disk);
    made at the first decode, numpy (and ml_dtypes) imported then."""
    try:  # lazy, and optional: a real bfloat16 numpy dtype
        from ml_dtypes import bfloat16
    except ImportError:  # pragma: no cover - depends on the environment
        bfloat16 = None
    return {
        **{(0, b): np.dtype(f"<i{b // 8}") for b in (8, 16, 32, 64)},
        **{(1, b): np.dtype(f"<u{b // 8}") for b in (8, 16, 32, 64)},
        **{(2, b): np.dtype(f"<f{b // 8}") for b in (16, 32, 64)},
        (1, 1): np.dtype(bool),
        (4, 16): np.dtype(bfloat16) if bfloat16 is not None else np.dtype("<u2"),
    }


class MetadataError(Exception):
    """Malformed metadata, or a reference to an entry it does not have."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.message = message
        self.offset = offset

    def __str__(self) -> str:
        return self.message


class MissingEntry(MetadataError, KeyError):
    """`meta[K][i]` names no entry.  Also a KeyError, so `except KeyError` catches it."""


def parse_metadata(text: str) -> MetadataTable:
    """Read the text after the `#[metadata]` line.  Tensors are decoded on first use."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise MetadataError(f"the metadata section is not valid JSON: {e.msg}", e.pos) from None
    except (ValueError, TypeError, RecursionError) as e:  # e.g. absurdly deep nesting
        raise MetadataError(f"the metadata section cannot be read: {e}") from None
    return MetadataTable(doc)


class MetadataTable:
    """The parsed section: `meta[K][i]` lookups, and the tensors of `relay.Constant`s."""

    def __init__(self, doc: Any):
        if not isinstance(doc, dict):
            raise MetadataError("the metadata section must be a JSON object")
        self._nodes = doc.get("nodes")
        self._blobs = doc.get("b64ndarrays", [])
        if not isinstance(self._nodes, list):
            raise MetadataError('the metadata section has no "nodes" array')
        if not isinstance(self._blobs, list):
            raise MetadataError('"b64ndarrays" in the metadata section must be an array')
        attrs = doc.get("attrs")
        version = attrs.get("tvm_version") if isinstance(attrs, dict) else None
        self.tvm_version: str | None = version if isinstance(version, str) else None
        self._arrays: dict[int, np.ndarray] = {}  # decoded tensors by b64ndarrays index

        root = self._node_at(doc.get("root"), 'the "root" of the metadata section')
        keys, arrays = root.get("keys", []), root.get("data", [])
        if not (root.get("type_key") == "Map" and isinstance(keys, list)
                and isinstance(arrays, list) and len(keys) == len(arrays)
                and all(isinstance(k, str) for k in keys)):
            raise MetadataError("the root of the metadata section is not a Map of type keys")
        self._tables: dict[str, list[int]] = {}  # type key -> node ids of its entries
        for key, array_id in zip(keys, arrays):
            array = self._node_at(array_id, f"the {key} array")
            items = array.get("data", [])
            if array.get("type_key") != "Array" or not isinstance(items, list):
                raise MetadataError(f"the metadata entry for {key} is not an Array")
            self._tables[key] = [self._node_id(i, f"an element of the {key} array")
                                 for i in items]

    def keys(self) -> list[str]:
        return list(self._tables)

    def count(self, key: str) -> int:
        return len(self._tables.get(key, ()))

    def node(self, key: str, index: int) -> dict:
        """The raw node object of `meta[key][index]`."""
        ids = self._tables.get(key, [])
        if not 0 <= index < len(ids):
            has = f"{len(ids)} {key} entries" if ids else f"no {key} entries"
            raise MissingEntry(
                f"no entry meta[{key}][{index}] in the metadata section (it has {has})")
        return self._nodes[ids[index]]

    def lookup(self, ref: MetaRef) -> dict:
        return self.node(ref.key, ref.index)

    def constant(self, index: int) -> np.ndarray:
        """The tensor of `meta[relay.Constant][index]` (read-only; decoded once)."""
        where = f"meta[{CONSTANT}][{index}]"
        node = self.node(CONSTANT, index)
        attrs = node.get("attrs")
        if node.get("type_key") != CONSTANT or not isinstance(attrs, dict):
            raise MetadataError(f"{where} is not a relay.Constant node")
        blob_id = _index(attrs.get("data"), len(self._blobs), f"the data of {where}")
        if blob_id not in self._arrays:
            self._arrays[blob_id] = decode_ndarray(
                self._blobs[blob_id], f"the tensor of {where} (b64ndarrays[{blob_id}])")
        return self._arrays[blob_id]

    def type_dims(self, key: str, index: int) -> str:
        """The name of a `tir.SizeVar`/`tir.Var` entry (a shape variable such as `n`)."""
        where = f"meta[{key}][{index}]"
        attrs = self.node(key, index).get("attrs")
        name = attrs.get("name") if isinstance(attrs, dict) else None
        if name is None:
            raise MetadataError(f"{where} has no name (is it a tir.Var?)")
        string = self._node_at(name, f"the name of {where}")
        text = string.get("repr_str", "")
        if string.get("type_key") != "runtime.String" or not isinstance(text, str):
            raise MetadataError(f"the name of {where} is not a string")
        return text

    def attrs(self, key: str, index: int, pod: Callable[[str], bool]) -> dict[str, Any]:
        """The fields of an attributes entry, `meta[relay.attrs.Conv2DAttrs][0]` (TVM's
        printer writes a call's attributes so when it cannot print them inline).  A field
        for which `pod(name)` holds (an int, float or bool in the op's schema) is read
        from its text: `"1"` is 1, `"1e-05"` 1e-05.  Any other field's text is a node
        index when it is all digits (an IntImm, FloatImm, String or Array of them; `"0"`
        is None), else a plain string (a DataType such as `"float32"`; `""` stays `""`)."""
        where = f"meta[{key}][{index}]"
        node = self.node(key, index)
        fields = node.get("attrs", {})
        if node.get("type_key") != key or not isinstance(fields, dict):
            raise MetadataError(f"{where} is not a {key} node")
        out: dict[str, Any] = {}
        for name, text in fields.items():
            if name == "span" or not isinstance(text, str):
                continue
            if pod(name):
                out[name] = _pod(text, f"field {name} of {where}")
            elif text.isascii() and text.isdigit():
                out[name] = self._object(_index(text, len(self._nodes), f"field {name} of {where}"), 0)
            else:
                out[name] = text
        return out

    def _object(self, node_id: int, depth: int) -> Any:
        """A small object node as a Python value (IntImm/FloatImm as ints/floats with
        their dtype, String as str, Array as tuple, the null node as None)."""
        if node_id == 0 or depth > 8:
            return None
        node = self._node_at(node_id, f"node {node_id}")
        kind, fields = node.get("type_key"), node.get("attrs", {})
        if kind == "Array":
            return tuple(self._object(self._node_id(i, f"an element of node {node_id}"), depth + 1)
                         for i in node.get("data", []))
        if kind == "runtime.String":
            return node.get("repr_str", "")
        if kind in ("IntImm", "FloatImm") and isinstance(fields, dict):
            value = _pod(str(fields.get("value", "")), f"node {node_id}")
            return IntImm(int(value), fields.get("dtype", "int32")) if kind == "IntImm" \
                else FloatImm(float(value), fields.get("dtype", "float32"))
        raise MetadataError(f"node {node_id} ({kind}) is not a value an attribute can hold")

    def _node_id(self, value: Any, what: str) -> int:
        node_id = _index(value, len(self._nodes), what)
        if not isinstance(self._nodes[node_id], dict):
            raise MetadataError(f"{what} is not a node object")
        return node_id

    def _node_at(self, value: Any, what: str) -> dict:
        return self._nodes[self._node_id(value, what)]


def _index(value: Any, limit: int, what: str) -> int:
    """A node or blob index, written as an int or (in attrs) a decimal string."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 19:
        value = int(value)
    if type(value) is not int:
        raise MetadataError(f"{what} is {_short(value)}, not an index")
    if not 0 <= value < limit:
        raise MetadataError(f"{what} is index {value}, but there are only {limit}")
    return value


def _pod(text: str, what: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise MetadataError(f"{what} is {_short(text)}, not a number") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def decode_ndarray(text: Any, where: str = "the tensor") -> np.ndarray:
    """Decode one `b64ndarrays` entry; `where` names it in error messages."""
    try:
        blob = base64.b64decode(text, validate=True)
    except (ValueError, TypeError):  # binascii.Error is a ValueError
        raise MetadataError(f"{where} is not valid base64") from None
    if len(blob) < _HEADER.size:
        raise MetadataError(f"{where} is truncated: {len(blob)} bytes, not even a header")
    magic, _, _, _, ndim, code, bits, lanes = _HEADER.unpack_from(blob)
    if magic != NDARRAY_MAGIC:
        raise MetadataError(f"{where} is not a TVM NDArray (magic number 0x{magic:016X})")
    dtype = _dtypes().get((code, bits))
    if dtype is None or lanes != 1:
        raise MetadataError(
            f"{where} has an unsupported dtype (code {code}, {bits} bits, {lanes} lanes)")
    data_at = _HEADER.size + 8 * ndim + 8
    if ndim < 0 or len(blob) < data_at:
        raise MetadataError(f"{where} is truncated in its shape ({ndim} dims)")
    *shape, nbytes = struct.unpack_from(f"<{ndim + 1}q", blob, _HEADER.size)
    if any(d < 0 for d in shape):
        raise MetadataError(f"{where} has a negative dimension in shape {tuple(shape)}")
    count = math.prod(shape)
    if nbytes != count * dtype.itemsize:
        raise MetadataError(f"{where} declares {nbytes} data bytes, but {count} elements "
                            f"of {dtype.name} take {count * dtype.itemsize}")
    if len(blob) - data_at != nbytes:
        raise MetadataError(f"{where} has {len(blob) - data_at} data bytes, expected {nbytes}")
    raw = memoryview(blob)[data_at:]
    if dtype.kind == "b":  # one byte each; any nonzero byte is true
        flat = np.frombuffer(raw, np.uint8) != 0
        flat.setflags(write=False)
    else:
        flat = np.frombuffer(raw, dtype)
    try:
        return flat.reshape(shape)
    except ValueError as e:  # e.g. more dimensions than numpy supports
        raise MetadataError(f"{where} cannot be represented in numpy: {e}") from None


def encode_ndarray(array: np.ndarray) -> bytes:
    """TVM's NDArray blob of an array (CPU device, C order, little-endian)."""
    code, bits = _dtype_code(array.dtype)
    if array.dtype.kind == "b":
        data = array.astype(np.uint8).tobytes()
    elif code == 4:
        data = array.view(np.uint16).astype("<u2").tobytes()
    else:
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
    head = _HEADER.pack(NDARRAY_MAGIC, 0, 1, 0, array.ndim, code, bits, 1)
    return head + struct.pack(f"<{array.ndim + 1}q", *array.shape, len(data)) + data


def _dtype_code(dtype: np.dtype) -> tuple[int, int]:
    bits = dtype.itemsize * 8
    if dtype.name == "bfloat16":
        return 4, 16
    if dtype.kind == "b":
        return 1, 1
    if dtype.kind in "iu" and bits in (8, 16, 32, 64):
        return (0 if dtype.kind == "i" else 1), bits
    if dtype.kind == "f" and bits in (16, 32, 64):
        return 2, bits
    raise MetadataError(f"a constant of dtype {dtype} cannot be stored in the metadata section")


def encode_metadata(constants: Sequence[np.ndarray]) -> str:
    """The section TVM would write for these `relay.Constant`s (the JSON after
    `#[metadata]`, laid out as TVM's JSON writer lays it out, with no final newline)."""
    nodes: list[dict] = [{"type_key": ""}, {"type_key": "Map", "keys": [CONSTANT], "data": [2]},
                         {"type_key": "Array", "data": []}]
    blobs: list[str] = []
    device: str | None = None  # one VirtualDevice (fully unconstrained) shared by all, as in TVM

    def add(node: dict) -> str:  # append a node; its index as attrs write references
        nodes.append(node)
        return str(len(nodes) - 1)

    for value in constants:
        array = np.asarray(value)
        blob = base64.b64encode(encode_ndarray(array)).decode("ascii")  # checks the dtype
        nodes[2]["data"].append(len(nodes))
        attrs = {"data": str(len(blobs)), "span": "0"}
        add({"type_key": CONSTANT, "attrs": attrs})
        # Preorder, in the order TVM's writer visits the fields: virtual_device_, then type.
        if device is None:
            scope = {"device_type_int": "-1", "target": "0", "virtual_device_id": "-1"}
            device = add({"type_key": "VirtualDevice", "attrs": scope})
            scope["memory_scope"] = add({"type_key": "runtime.String"})
        dtype = "bool" if array.dtype.kind == "b" else array.dtype.name
        type_attrs = {"dtype": dtype, "span": "0"}
        attrs.update(virtual_device_=device,
                     _checked_type_=add({"type_key": "relay.TensorType", "attrs": type_attrs}))
        dims: dict = {"type_key": "Array"}
        type_attrs["shape"] = add(dims)
        dims["data"] = [int(add({"type_key": "IntImm", "attrs": {
            "dtype": "int32" if d < 2**31 else "int64", "span": "0", "value": str(d)}}))
            for d in array.shape]
        blobs.append(blob)

    return _obj([("root", "1"),
                 ("nodes", _arr([_node(n) for n in nodes], 1, True)),
                 ("b64ndarrays", _arr([json.dumps(b) for b in blobs], 1, True)),
                 ("attrs", _obj([("tvm_version", json.dumps(TVM_VERSION))], 1, False))], 0)


# TVM writes with dmlc's JSONWriter: 2-space indent, ", " before each line break, int arrays
# of up to 10 on one line, one-entry attr maps on one line, and node fields left out when
# empty.
def _node(node: dict) -> str:
    fields = [("type_key", json.dumps(node["type_key"]))]
    if attrs := node.get("attrs"):
        fields.append(("attrs", _obj([(k, json.dumps(v)) for k, v in sorted(attrs.items())],
                                     3, len(attrs) > 1)))
    if keys := node.get("keys"):
        fields.append(("keys", _arr([json.dumps(k) for k in keys], 3, True)))
    if data := node.get("data"):
        fields.append(("data", _arr([str(i) for i in data], 3, len(data) > 10)))
    return _obj(fields, 2)


def _obj(fields: list[tuple[str, str]], depth: int, multi_line: bool = True) -> str:
    return _join([f"{json.dumps(k)}: {v}" for k, v in fields], "{}", depth, multi_line)


def _arr(items: list[str], depth: int, multi_line: bool) -> str:
    return _join(items, "[]", depth, multi_line)


def _join(items: list[str], brackets: str, depth: int, multi_line: bool) -> str:
    if not items or not multi_line:
        return brackets[0] + ", ".join(items) + brackets[1]
    inner = "  " * (depth + 1)
    body = ", \n".join(inner + item for item in items)
    return f"{brackets[0]}\n{body}\n{'  ' * depth}{brackets[1]}"
