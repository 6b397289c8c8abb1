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

    qnn.requantize(%q, IS, %izp, OS, %ozp, out_dtype=D)        (IS, OS scalar constants)
      => cast(clip(add(cast(%ozp, "int32"),
                       fixed_point_multiply(subtract(cast(%q, "int32"), cast(IZP, "int32")),
                                            multiplier=M, shift=S)), a_min=qmin(D), a_max=qmax(D)), D)

(TVM's RequantizeLowerInt, with rounding UPWARD and compute_dtype int64, the defaults on
`llvm`, which does not claim SSE4.1): M, S from IS / OS as GetFixedPointMultiplierShift
gives them; the zero-point subtraction is left out when the input zero point is the
constant 0, the multiplication when IS equals OS, the add when the output zero point is
the constant 0, and the clip and cast when D is int32.  IZP is reshaped to one axis and
expanded to the channel axis, as TVM writes it.

Not canonicalized (still ops, lowered by their compute rules, which compute TVM's
canonical arithmetic): qnn.requantize with per-channel input scales (TVM makes a
fixed_point_multiply_per_axis, which our registry does not have), with scales that are
not constants, or with rounding TONEAREST or a floating compute_dtype written in its
attributes; qnn.conv2d and qnn.dense never reach this step on the default x86 target
(QnnLegalize made them nn ops).

Spans: see legalize.py.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Call, Constant, Expr
from ...ir.types import TensorType
from ...ops import get_op
from ...ops.qnn import fixed_point_multiplier
from ...ops.qnn_geometry import requantize_modes
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


def _scalar(e: Expr) -> float | None:
    """The value of a scalar constant (TVM's IsConstScalar), else None."""
    if isinstance(e, Constant) and e.data is not None and np.ndim(e.data) == 0:
        return float(e.data)
    return None


@register_legalize("qnn.requantize", "FTVMQnnCanonicalize")
def requantize_rule(call: Call, args, types) -> Expr | None:
    attrs = get_op("qnn.requantize").normalize_attrs(call.attrs)
    if requantize_modes(attrs) != ("UPWARD", "int64"):
        return None
    return requantize_lower(*args, types[0].ndim, attrs.axis, attrs.out_dtype)


def requantize_lower(data: Expr, in_scale: Expr, in_zp: Expr, out_scale: Expr, out_zp: Expr, ndim: int,
                     axis: int, out_dtype: str) -> Expr | None:
    """TVM's RequantizeLower with UPWARD rounding in int64 (see the module doc); None when
    the scales are not scalar constants."""
    in_s, out_s = _scalar(in_scale), _scalar(out_scale)
    if in_s is None or out_s is None or out_s == 0.0:
        return None
    tensor = _call("cast", [data], {"dtype": "int32"})
    if _scalar(in_zp) != 0.0:
        axis = _axis(axis, ndim) if ndim > 0 else 0
        flat = _call("reshape", [in_zp], {"newshape": [-1]})
        zp = expand_to_axis(flat, TensorType((1,), "int32"), ndim, axis)
        tensor = _call("subtract", [tensor, _call("cast", [zp], {"dtype": "int32"})])
    if np.float32(in_s) != np.float32(out_s):
        multiplier, shift = fixed_point_multiplier(float(np.float32(in_s)) / float(np.float32(out_s)))
        tensor = _call("fixed_point_multiply", [tensor], {"multiplier": multiplier, "shift": shift})
    if _scalar(out_zp) != 0.0:
        tensor = _call("add", [_call("cast", [out_zp], {"dtype": "int32"}), tensor])
    if out_dtype == "int32":
        return tensor
    low, high = _bounds(out_dtype)
    return _call("cast", [_call("clip", [tensor], {"a_min": low, "a_max": high})], {"dtype": out_dtype})
