"""What counts as the same value, for structural equality and structural hashing alike.

The one place for the value rules both `structural_equal` (structural_equal.py) and
`structural_hash` (structural_hash.py) follow, so the two cannot drift apart (equal =>
same hash):

    dim_key(dim)          # an int dimension and IntImm(v, "int32") are the same key
    shapes_equal(a, b)    # shapes compared dimension by dimension under dim_key
    scalar_key(value)     # an attribute scalar with its dtype (int32/int64, float32, numpy)
    float_key(x)          # NaN equals NaN
    as_array(data)        # a Constant's data as an ndarray
    arrays_equal(a, b)    # same bytes, or same values (0.0 == -0.0, NaN == NaN)
    SPANNED               # the node kinds whose spans the text format keeps (expr.ANNOTATED)
"""

from __future__ import annotations

import math
from typing import Any

from ..lazy_modules import numpy as np
from .attrs import FloatImm, IntImm
from .expr import ANNOTATED

SPANNED = frozenset(ANNOTATED)  # kinds whose spans the text keeps (expr.py)


def dim_key(dim: Any) -> Any:
    if type(dim) is IntImm and dim.dtype == "int32":
        return dim.value
    return dim


def shapes_equal(a: tuple, b: tuple) -> bool:
    if a == b:
        return True
    return len(a) == len(b) and all(dim_key(x) == dim_key(y) for x, y in zip(a, b))


def scalar_key(value: Any) -> Any:
    """What an attribute scalar is, for comparing: ints and floats with their dtype."""
    t = type(value)
    if t is IntImm:
        return ("int", value.value, value.dtype)
    if t is int:
        return ("int", value, "int32" if -(2**31) <= value < 2**31 else "int64")
    if t is FloatImm:
        return ("float", float_key(value.value), value.dtype)
    if t is float:
        return ("float", float_key(value), "float32")
    if isinstance(value, np.bool_):
        return (bool, bool(value))
    if isinstance(value, np.integer):
        return ("int", int(value), value.dtype.name)
    if isinstance(value, np.floating):
        return ("float", float_key(float(value)), value.dtype.name)
    return (t, value)


def float_key(x: float) -> Any:
    return "nan" if math.isnan(x) else x


def as_array(data: Any) -> np.ndarray:
    return data if isinstance(data, np.ndarray) else np.asarray(data)


def arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype and shape assumed.  Equal bytes are equal values; otherwise compare values
    (0.0 equals -0.0, NaN equals NaN)."""
    if a.dtype.kind != "O" and a.tobytes() == b.tobytes():
        return True
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
