"""Issue 21, the fast path: no text makes `check` allocate without bound.

Type relations refuse absurd ranks, element counts and tuple sizes (ops/budget.py); a
dtype RelayLens cannot carry is an error at its place (ops/shapes.dtype_problem); a text
over the size limit is not read at all (check.py).  The cases that used to take gigabytes
run in a child capped at 1 GiB (budget_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from budget_helpers import build_capped, check_capped
from relaylens.compiler.build import build_text
from relaylens.compiler.check import MAX_SOURCE_CHARS, check_text, recheck
from relaylens.compiler.ops.budget import MAX_ELEMENTS, MAX_FIELDS, MAX_RANK

HEADER = '#[version = "0.0.5"]\n'
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "relay"


def errors(diagnostics: list[dict]) -> list[tuple[int, int, str]]:
    return [(d["line"], d["col"], d["message"]) for d in diagnostics if d["severity"] == "error"]


# --- shape relations -----------------------------------------------------------------------


@pytest.mark.parametrize("num_newaxis", [100_000_000, 1_000_000_000])
def test_expand_dims_to_an_absurd_rank_is_an_error_at_the_call(num_newaxis):
    text = HEADER + ("def @main(%x: Tensor[(1), float32]) {\n"
                     f"  expand_dims(%x, axis=0, num_newaxis={num_newaxis})\n}}\n")
    [(line, col, message)] = errors(check_capped(text))
    assert (line, col) == (3, 3)
    assert message.startswith("expand_dims:") and f"rank {num_newaxis + 1}" in message
    assert f"more than the {MAX_RANK} dimensions" in message


def test_rank_at_the_limit_is_fine():
    text = HEADER + ("def @main(%x: Tensor[(1), float32]) {\n"
                     f"  expand_dims(%x, axis=0, num_newaxis={MAX_RANK - 1})\n}}\n")
    assert errors(check_capped(text)) == []
    text = text.replace(f"num_newaxis={MAX_RANK - 1}", f"num_newaxis={MAX_RANK}")
    assert "rank 65" in errors(check_capped(text))[0][2]


def test_split_into_absurdly_many_fields_is_an_error():
    text = HEADER + "def @main(%x: Tensor[(?), float32]) {\n  split(%x, indices_or_sections=1000000000)\n}\n"
    [(line, col, message)] = errors(check_capped(text))
    assert (line, col) == (3, 3) and f"1000000000 fields, more than the {MAX_FIELDS}" in message


@pytest.mark.parametrize("call, rank", [
    ("dyn.broadcast_to(%x, %s)", 1_000_000_000),
    ("memory.alloc_tensor(%st, 0i64, %s, dtype=\"float32\")", 1_000_000_000),
])
def test_a_rank_taken_from_a_shape_tensor_is_bounded(call, rank):
    text = HEADER + (f"def @main(%x: Tensor[(1), float32], %s: Tensor[({rank}), int64], %st: Storage[]) {{\n"
                     f"  {call}\n}}\n")
    found = errors(check_capped(text))
    assert any(f"rank {rank}" in m for _, _, m in found), found


def test_an_absurd_element_count_is_an_error_and_a_large_one_is_not():
    big = HEADER + "def @main(%x: Tensor[(100000, 100000), float32]) {\n  tile(%x, reps=[100000, 100000])\n}\n"
    [(line, col, message)] = errors(check_capped(big))
    assert (line, col) == (3, 3) and message.startswith("tile:") and "2^40" in message
    ok = big.replace("reps=[100000, 100000]", "reps=[100, 1]")  # 1e12 elements: under 2^40
    assert 100000 * 100000 * 100 < MAX_ELEMENTS and errors(check_capped(ok)) == []


# --- dtypes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, says", [
    ("float8", "is not supported"), ("int4", "is not supported"), ("e4m3_float8", "is not supported"),
    ("float32x4", "vector dtypes are not supported"), ("int0", "unknown dtype"), ("banana", "unknown dtype"),
])
def test_a_dtype_relaylens_cannot_carry_is_an_error_at_its_place(dtype, says):
    text = HEADER + f"def @main(%x: Tensor[(2, 2), {dtype}]) {{\n  add(%x, %x)\n}}\n"
    [(line, col, message)] = [(d.location()[1], d.location()[2], d.message)
                              for d in check_text(text, "t.relay").diagnostics if d.is_error]
    assert (line, col) == (2, 30) and f"'{dtype}'" in message and says in message
    built = build_text(text, "t.relay")  # stops at the check, no internal error in a pass
    assert [d.message for d in built.diagnostics if d.is_error] == [message]


def test_dtypes_in_scalar_types_and_attributes_follow_the_same_rule():
    text = HEADER + 'def @main(%x: float8, %y: int) {\n  (cast(%y, dtype="int0"), %x)\n}\n'
    found = sorted((d.location()[1], d.location()[2], d.message) for d in check_text(text).diagnostics)
    assert [(line, col) for line, col, _ in found] == [(2, 15), (3, 4)]
    assert "'float8' is not supported" in found[0][2] and "cast: unknown dtype 'int0'" in found[1][2]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float64", "bfloat16"])
def test_supported_dtypes_check_clean(dtype):
    text = HEADER + f"def @main(%x: Tensor[(2, 2), {dtype}]) {{\n  %x\n}}\n"
    assert check_text(text).diagnostics == []


# --- the size of the source ------------------------------------------------------------------


def test_a_text_over_the_limit_is_not_read():
    text = HEADER + "def @main() {\n  undefined_op(%nowhere)\n}\n"
    result = check_text(text, "big.relay", max_chars=len(text) - 1)
    [d] = result.diagnostics
    assert d.is_error and d.span is None and f"{len(text):,} characters" in d.message
    assert not result.module.functions  # nothing was parsed (else the undefined names would show)
    assert [x.message for x in check_text(text, "big.relay", max_chars=len(text)).diagnostics] != [d.message]


def test_the_default_limit_stops_a_huge_text_at_once_within_the_cap():
    found = check_capped("x" * (MAX_SOURCE_CHARS + 1))
    assert len(found) == 1 and "not read" in found[0]["message"]


def test_build_and_recheck_honour_the_limit():
    text = HEADER + "def @main(%x: float32) {\n  %x\n}\n"
    built = build_text(text, "t.relay", max_chars=10)
    assert [d.source for d in built.diagnostics] == ["size"] and built.module is None
    previous = check_text(text, "t.relay", incremental=True)
    edited = text.replace("%x\n}", "add(%x, %x)\n}")
    assert recheck(previous, edited, max_chars=len(edited) - 1) is None


def test_the_default_limit_is_far_above_every_real_text(corpus_dir):
    largest = max(p.stat().st_size for p in corpus_dir.glob("*.relay"))
    assert largest * 50 < MAX_SOURCE_CHARS


# --- a check and a build of the texts of issue 21 within 1 GiB -----------------------------------


def test_build_of_the_150_byte_expand_dims_file_is_an_error_within_the_cap():
    text = HEADER + "def @main(%x: Tensor[(1), float32]) {\n  expand_dims(%x, axis=0, num_newaxis=1000000000)\n}\n"
    assert len(text) < 150
    [(line, col, message)] = errors(build_capped(text))
    assert (line, col) == (3, 3) and "rank" in message
