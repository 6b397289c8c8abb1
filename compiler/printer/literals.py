"""Literal text: scalar constants, floats, strings and attribute values (reference §1.7,
§1.8, §5.1).

Numbers carry their width as a suffix (`5i64`, `3f16`); int32 and float32 are the
unsuffixed/`f` defaults.  A float is written with the fewest digits that read back to the
same value at its width (`0.1f`, `1e-05f`), in Python's notation, and an integral float
drops its `.0` (`1f`).  float32's infinities are `inff` and `-inff`; other non-finite
scalars go to metadata, as no literal reads them back.  float32's largest magnitude,
whose shortest digits lie beyond it, is written exactly (`-3.4028234663852886e+38f`).
Strings get C escapes, which our parser reads back.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..lazy_modules import numpy as np
from ..ir.attrs import FloatImm, IntImm, MetaRef, Opaque
from ..ir.expr import Constant, Constructor, Expr, GlobalVar, Op, Var
from ..ir.types import AnyDim

_FLOAT_SUFFIX = {"float32": "f", "float16": "f16", "float64": "f64"}
_NARROW_FLOATS = ("float32", "float16")  # numpy's shortest digits at these widths
_FLOAT_MAX = {"float32": 3.4028234663852886e38, "float16": 65504.0}  # the largest finite values
_INT_SUFFIX = {"int32": "", "int64": "i64", "int16": "i16", "int8": "i8"}
# The dtypes a scalar constant can be written in as a literal (others go to metadata).
_LITERAL_DTYPES = ("bool", "int16", "int32", "int64", "float16", "float32", "float64")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def float_text(value: float, dtype: str = "float32") -> str:
    """`value` as a float literal of `dtype`, suffix included: `0.1f`, `1e-05f`, `2f64`."""
    if dtype not in _NARROW_FLOATS:  # float64 (and widths we have no literal for, written as float32)
        body = repr(float(value))
    else:  # numpy knows the shortest digits at this width; Python's repr lays them out
        body = repr(float(str(getattr(np, dtype)(value))))
        if abs(float(body)) > _FLOAT_MAX[dtype]:
            # float32's largest value has the shortest digits 3.4028235e+38, above it as a
            # decimal, which TVM's parser and ours refuse as out of range (the -FLT_MAX that
            # exporters fill masks with): its exact digits read back to the same value
            body = repr(float(value))
    if body.endswith(".0"):
        body = body[:-2]
    return body + _FLOAT_SUFFIX.get(dtype, "f")


def int_text(value: int, dtype: str = "int32") -> str:
    """`value` as an integer literal of `dtype`: `7`, `7i64`, `True` for bool."""
    if dtype == "bool":
        return "True" if value else "False"
    return f"{int(value)}{_INT_SUFFIX.get(dtype, '')}"


def scalar_literal(data: Any) -> str | None:
    """The literal of a 0-d array, or None when its dtype has no literal form (TVM then
    stores it in the metadata section)."""
    array = data if isinstance(data, np.ndarray) else np.asarray(data)
    if array.ndim != 0:
        return None
    dtype = array.dtype.name
    if dtype not in _LITERAL_DTYPES or array.dtype.byteorder == ">":
        return None
    if dtype == "bool":
        return "True" if bool(array) else "False"
    if dtype in _FLOAT_SUFFIX:
        value = float(array)
        if value != value or (value in (math.inf, -math.inf) and dtype != "float32"):
            # `inff` is the one non-finite literal (TVM's lexer and ours); NaN, and float16's
            # and float64's infinities (a mask's -1e9 in float16), go to metadata
            return None
        return float_text(value, dtype)
    return int_text(int(array), dtype)


def quote_string(text: str) -> str:
    """A double-quoted string literal: `"`, `\\`, newline, tab and CR escaped, other control
    characters as `\\xHH` (non-ASCII letters stay as they are)."""
    out = ['"']
    for c in text:
        escaped = _ESCAPES.get(c)
        if escaped is not None:
            out.append(escaped)
        elif ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def dim_text(dim: Any) -> str:
    """A tensor-shape dimension: `3`, `3i64`, `?`, `meta[tir.SizeVar][0]`."""
    return print_attr_value(dim)


def print_attr_value(value: Any, var_name: Callable[[Var], str] | None = None) -> str:
    """An attribute value as TVM writes it; `var_name` names variables (default: their
    own name)."""
    if isinstance(value, tuple | list):
        return "[" + ", ".join(print_attr_value(v, var_name) for v in value) + "]"
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, IntImm):
        return int_text(value.value, value.dtype)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, FloatImm):
        return float_text(value.value, value.dtype)
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, MetaRef | AnyDim):
        return str(value)
    if isinstance(value, Opaque):
        return value.text
    if isinstance(value, Expr):
        return _expr_value(value, var_name)
    return str(value)


def _expr_value(expr: Expr, var_name: Callable[[Var], str] | None) -> str:
    if isinstance(expr, Var):
        return "%" + (var_name(expr) if var_name else expr.name)
    if isinstance(expr, GlobalVar):
        return "@" + expr.name
    if isinstance(expr, Op | Constructor):
        return expr.name
    if isinstance(expr, Constant) and expr.data is not None:
        literal = scalar_literal(expr.data)
        if literal is not None:
            return literal
    return "__error__"
