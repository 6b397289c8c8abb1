"""Running sums and products (TVM's `cumsum` and `cumprod`, ScanopAttrs):

    cumprod(%x, axis=1)                   out[.., i, ..] = x[.., 0, ..] * ... * x[.., i, ..]
    cumsum(%x, axis=1, exclusive=True)    out[.., i, ..] = x[.., 0, ..] + ... + x[.., i-1, ..]

With no axis the data are flattened first (the result is 1-D), as TVM's ScanopRel does;
`dtype` (empty: the data's) is the result's and the accumulator's; `exclusive` leaves
element i out of its own result (0 or 1 first).  TVM registers both Opaque (its kernel is
a sequential scan); reverse scans are `reverse` around them, as TVM's ONNX frontend
writes them.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType
from .attrs import BOOL, OPT_INT, STR, Attr
from .registry import OPAQUE, define
from .shapes import axis_index, check_dtype, dims, product, tensor

SCANS = {"cumsum": ("sum", 0), "cumprod": ("product", 1)}  # op -> (what, identity)


def scan_axis(data: TensorType, attrs, op: str) -> int | None:
    """The scanned axis as an index, or None for the flattened data."""
    return None if attrs.axis is None else axis_index(attrs.axis, data.ndim, f"{op}: axis", 0)


def _scan(op: str, what: str, identity: int) -> None:
    opdef = define(
        op, ("data",), OPAQUE,
        attrs=(Attr("axis", OPT_INT, None, "the axis to run along (None: the flattened data)"),
               Attr("dtype", STR, "", "the result's dtype (default: the data's)"),
               Attr("exclusive", BOOL, False, "leave each element out of its own result")),
        doc=f"The running {what} of data along axis (of the flattened data without one); "
            f"exclusive starts from {identity}.")

    @opdef.relation
    def _(data, attrs):
        d = tensor(data, f"{op}: data", 0)
        dtype = check_dtype(attrs.dtype) if attrs.dtype else d.dtype
        if scan_axis(d, attrs, op) is None:
            return TensorType((product(dims(d)),), dtype)
        return TensorType(d.shape, dtype)

    @opdef.reference
    def _(x, attrs):
        dtype = attrs.dtype or x.dtype
        axis = scan_axis(TensorType(x.shape, str(x.dtype)), attrs, op)
        if axis is None:
            x, axis = x.reshape(-1), 0
        n = x.shape[axis]
        if attrs.exclusive and n:  # the identity, then every element but the last
            first = np.full_like(np.take(x, [0], axis=axis), identity)
            x = np.concatenate([first, np.take(x, np.arange(n - 1), axis=axis)], axis=axis)
        run = (np.cumsum if op == "cumsum" else np.cumprod)(x, axis=axis, dtype=dtype)
        return np.asarray(run, dtype=dtype)


for _op, (_what, _identity) in SCANS.items():
    _scan(_op, _what, _identity)
