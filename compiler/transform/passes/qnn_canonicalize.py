"""The FTVMQnnCanonicalize rules: qnn ops lowered to Relay arithmetic, as TVM's
QnnCanonicalize (the second step of qnn.Legalize, qnn_legalize.py) lowers them
(src/relay/qnn/op/quantize.cc `QuantizeLower`, dequantize.cc `DequantizeLower`).

    qnn.quantize(%x, %s, %zp, out_dtype=D, axis=a)
      => cast(clip(add(round(divide(%x, S)), cast(ZP, "float32")), a_min=qmin(D), a_max=qmax(D)), D)
    qnn.dequantize(%q, %s, %zp, out_dtype=D, axis=a)
      => multiply(cast(subtract(cast(%q, "int32"), ZP), "float32"), S)     (D float32)
      => cast(clip(that, a_min=min(D), a_max=max(D)), D)                     (other D)

S and ZP are the scale and zero point as given when they are scalars, else (one value per
channel) given trailing axes to broadcast along axis a (`expand_dims(axis=1,
num_newaxis=ndim - a - 1)`, TVM's ExpandBiasToMatchAxis).

Not canonicalized (still ops, lowered by their compute rules, which compute TVM's
canonical arithmetic): qnn.requantize, whose lowering needs its scales as constants and
TVM's fixed-point multiplier; qnn.conv2d and qnn.dense never reach this step on the
default x86 target (QnnLegalize made them nn ops).

Spans: see legalize.py.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Call, Expr
from ...ir.types import TensorType
from ...ops import get_op
from .legalize import register_legalize
from .simplify_expr_rules import make_call


def _call(name: str, args: list[Expr], attrs: dict | None = None) -> Call:
    return make_call(name, args, attrs, span=None)


def expand_to_axis(value: Expr, ty: TensorType, ndim: int, axis: int) -> Expr:
    """A per-channel vector shaped to broadcast along `axis` of an `ndim`-tensor; a scalar
    as it is (TVM: IsConstScalar or IsScalarType, then ExpandBiasToMatchAxis)."""
    pad = ndim - axis - 1
    if ty.ndim == 0 or pad <= 0:
        return value
    attrs = {"axis": 1} if pad == 1 else {"axis": 1, "num_newaxis": pad}
    return _call("expand_dims", [value], attrs)


def _axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def _bounds(dtype: str) -> tuple[float, float]:
    info = np.iinfo(dtype) if dtype.startswith(("int", "uint")) else np.finfo(dtype)
    return float(info.min), float(info.max)


@register_legalize("qnn.quantize", "FTVMQnnCanonicalize")
def quantize_rule(call: Call, args, types) -> Expr | None:
    attrs = get_op("qnn.quantize").normalize_attrs(call.attrs)
    data, scale, zero_point = args
    ndim = types[0].ndim
    axis = _axis(attrs.axis, ndim)
    scale = expand_to_axis(scale, types[1], ndim, axis)
    zero_point = expand_to_axis(zero_point, types[2], ndim, axis)
    rounded = _call("round", [_call("divide", [data, scale])])
    shifted = _call("add", [rounded, _call("cast", [zero_point], {"dtype": "float32"})])
    low, high = _bounds(attrs.out_dtype)
    clipped = _call("clip", [shifted], {"a_min": low, "a_max": high})
    return _call("cast", [clipped], {"dtype": attrs.out_dtype})


@register_legalize("qnn.dequantize", "FTVMQnnCanonicalize")
def dequantize_rule(call: Call, args, types) -> Expr | None:
    attrs = get_op("qnn.dequantize").normalize_attrs(call.attrs)
    data, scale, zero_point = args
    ndim = types[0].ndim
    axis = _axis(attrs.axis, ndim)
    scale = expand_to_axis(scale, types[1], ndim, axis)
    zero_point = expand_to_axis(zero_point, types[2], ndim, axis)
    shift = _call("subtract", [_call("cast", [data], {"dtype": "int32"}), zero_point])
    scaled = _call("multiply", [_call("cast", [shift], {"dtype": "float32"}), scale])
    if attrs.out_dtype == "float32":
        return scaled
    low, high = _bounds(attrs.out_dtype)
    clipped = _call("clip", [scaled], {"a_min": low, "a_max": high})
    return _call("cast", [clipped], {"dtype": attrs.out_dtype})
