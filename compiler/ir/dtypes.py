"""Dtypes: the one place that says which element types RelayLens carries and what they are.

    dtype_problem("float8")     why a dtype cannot be used, or None: the parser asks it for
                                every type the text writes, the relations for every dtype
                                attribute (ops/shapes.check_dtype)
    bits("int16") == 16         is_float, is_signed, is_unsigned, kind_and_bits: facts
                                about one dtype

Every value is a numpy array, so the dtypes carried are numpy's that TVM also names
(DTYPES); lowering compiles all of them but bfloat16 (lower/te: COMPILED).
"""

from __future__ import annotations

import re

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64")
UINTS = ("uint8", "uint16", "uint32", "uint64")
# every dtype carried, most used first (completion offers them in this order)
DTYPE_NAMES = ("float32", "float16", "float64", "bfloat16", *INTS, *UINTS, "bool")
DTYPES = frozenset(DTYPE_NAMES)
# What TVM's DataType parser reads besides: other widths, vectors (`float32x4`), handles,
# the float8 formats.  Such a dtype is valid TVM but not one RelayLens can carry: every
# value here is a numpy array, and lowering and folding work on DTYPES alone.
_TVM_DTYPE = re.compile(r"(?:(?:u?int|float|bfloat)(?P<bits>\d+)|handle|e[45]m[23]_float8|custom\[\w+\]\d+)"
                        r"(?:x(?P<lanes>\d+))?")
_WIDTHS = {None, "1", "2", "4", "8", "16", "32", "64", "128"}  # bits TVM's types come in


def dtype_problem(dtype: str, what: str = "dtype") -> str | None:
    """Why `dtype` cannot be used (malformed, or not one RelayLens supports), or None.
    The one rule for dtypes: the parser asks it for every type written in the text, and
    the relations (`check_dtype`) for every dtype attribute."""
    if dtype in DTYPES:
        return None
    supported = ", ".join(sorted(DTYPES))
    m = _TVM_DTYPE.fullmatch(dtype)
    if m is None or m.group("bits") not in _WIDTHS or m.group("lanes") in ("0", "1"):
        return f"unknown {what} '{dtype}' (expected one of {supported})"
    if m.group("lanes") is not None and dtype.split("x")[0] in DTYPES:
        return (f"{what} '{dtype}' has {m.group('lanes')} lanes: vector dtypes are not supported "
                f"by RelayLens (expected one of {supported})")
    return f"{what} '{dtype}' is not supported by RelayLens (expected one of {supported})"




def is_float(dtype: str) -> bool:
    return dtype in FLOATS or dtype == "bfloat16"


def is_signed(dtype: str) -> bool:
    return dtype in INTS


def is_unsigned(dtype: str) -> bool:
    return dtype in UINTS or dtype == "bool"


_KIND = re.compile(r"(int|uint|float|bfloat)(\d+)")


def kind_and_bits(dtype: str) -> tuple[str, int] | None:
    """("int" | "uint" | "float" | "bfloat", bits), bool being ("uint", 1) as in TVM; None
    for a name that is not of that form."""
    if dtype == "bool":
        return ("uint", 1)
    m = _KIND.fullmatch(dtype)
    return (m.group(1), int(m.group(2))) if m else None


def bits(dtype: str) -> int:
    """The width of one element: 1 for bool, else the number in the name."""
    return 1 if dtype == "bool" else int("".join(c for c in dtype if c.isdigit()))
