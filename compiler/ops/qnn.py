"""The quantized (qnn) ops seen in printed IR (reference §7.7): qnn.quantize, dequantize,
requantize, conv2d and dense -- their relations and numpy references.

qnn follows TVM's canonical lowering: quantize is clip(round(x / scale) + zp), dequantize
(q - zp) * scale, requantize a fixed-point multiplication by input_scale / output_scale
(int64 with UPWARD rounding unless the attributes say otherwise), and qnn.conv2d / qnn.dense
accumulate (q - zp) products in integers.  Scales and zero points are scalars or, along the
channel axis, one value per channel.  Their geometry (ranges, axis, layouts) is shared with
the compute rules through qnn_geometry.py.
"""

from __future__ import annotations

import itertools
import math

from ..lazy_modules import numpy as np
from ..ir.types import TensorType, Type
from .attrs import INT, INTS, OPT_INT, OPT_INTS, STR, Attr
from .qnn_geometry import QMIN_QMAX, channel_axis, qnn_conv_geometry, requantize_modes
from .registry import OUT_EWISE_FUSABLE, OpTypeError, define
from .shapes import dims, known, same_dim, tensor, type_text

def _dtype_in(op: str, t: TensorType, allowed: tuple[str, ...], what: str, arg: int) -> None:
    if t.dtype not in allowed:
        raise OpTypeError(f"{op}: {what} must be one of {', '.join(allowed)}, found {type_text(t)}", arg)


def _qparam(op: str, ty: Type, what: str, arg: int, dtype: str, channels=None) -> TensorType:
    """A scale or zero point: a `dtype` scalar, or (channels given) a vector of `channels` values."""
    t = tensor(ty, f"{op}: {what}", arg)
    if t.dtype != dtype:
        raise OpTypeError(f"{op}: {what} must be {dtype}, found {type_text(t)}", arg)
    if t.ndim == 0:
        return t
    if channels is None:
        raise OpTypeError(f"{op}: {what} must be a scalar, found {type_text(t)}", arg)
    if t.ndim != 1 or not same_dim(dims(t)[0], channels):
        raise OpTypeError(f"{op}: {what} must be a scalar or a vector of {channels} values (one per channel), "
                          f"found {type_text(t)}", arg)
    return t


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast along `axis` (a scalar stays a scalar)."""
    v = np.asarray(v)
    if v.ndim == 0 or v.size == 1:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def _round_away(x: np.ndarray) -> np.ndarray:
    """Halves away from zero (relay's round, LLVM's llvm.round)."""
    return np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5))


QUANTIZED = ("int8", "uint8", "int16", "uint16", "int32")

quantize = define("qnn.quantize", ("data", "output_scale", "output_zero_point"), None,
                  attrs=(Attr("out_dtype", STR, "int8", "int8, uint8, int16, uint16 or int32"),
                         Attr("axis", INT, -1, "the channel axis of per-channel scales")),
                  doc="q = clip(round(data / scale) + zero_point) in out_dtype (float32 data; halves round "
                      "away from zero).")


@quantize.relation
def _(data, scale, zero_point, attrs):
    op = "qnn.quantize"
    d = tensor(data, f"{op}: data", 0)
    if d.dtype != "float32":
        raise OpTypeError(f"{op}: data must be float32, found {type_text(d)}", 0)
    per_channel = any(isinstance(t, TensorType) and t.ndim > 0 for t in (scale, zero_point))
    _, channels = channel_axis(op, d, attrs.axis, per_channel)
    _qparam(op, scale, "output_scale", 1, "float32", channels)
    _qparam(op, zero_point, "output_zero_point", 2, "int32", channels)
    if attrs.out_dtype not in QUANTIZED:
        raise OpTypeError(f"{op}: out_dtype must be one of {', '.join(QUANTIZED)}, got '{attrs.out_dtype}'")
    return TensorType(d.shape, attrs.out_dtype)


@quantize.reference
def _(x, scale, zero_point, attrs):
    axis, _ = channel_axis("qnn.quantize", TensorType(x.shape, "float32"), attrs.axis, False)
    s = _along(scale, axis, x.ndim).astype(np.float32)
    zp = _along(zero_point, axis, x.ndim).astype(np.float32)
    q = _round_away((x.astype(np.float32) / s).astype(np.float32)) + zp
    lo, hi = QMIN_QMAX[attrs.out_dtype]
    return np.clip(q, lo, hi).astype(attrs.out_dtype)


dequantize = define("qnn.dequantize", ("data", "input_scale", "input_zero_point"), None,
                    attrs=(Attr("out_dtype", STR, "float32", "float32 or float16"),
                           Attr("axis", INT, -1, "the channel axis of per-channel scales")),
                    doc="(data - zero_point) * scale, computed in int32 then float32.")


@dequantize.relation
def _(data, scale, zero_point, attrs):
    op = "qnn.dequantize"
    d = tensor(data, f"{op}: data", 0)
    _dtype_in(op, d, QUANTIZED, "data", 0)
    per_channel = any(isinstance(t, TensorType) and known(*dims(t)) and math.prod(dims(t)) != 1
                      for t in (scale, zero_point))
    _, channels = channel_axis(op, d, attrs.axis, per_channel)
    _qparam(op, scale, "input_scale", 1, "float32", channels if per_channel else 1)
    _qparam(op, zero_point, "input_zero_point", 2, "int32", channels if per_channel else 1)
    if attrs.out_dtype not in ("float16", "float32"):
        raise OpTypeError(f"{op}: out_dtype must be float16 or float32, got '{attrs.out_dtype}'")
    return TensorType(d.shape, attrs.out_dtype)


@dequantize.reference
def _(q, scale, zero_point, attrs):
    axis, _ = channel_axis("qnn.dequantize", TensorType(q.shape, str(q.dtype)), attrs.axis, False)
    shifted = q.astype(np.int32) - _along(zero_point, axis, q.ndim).astype(np.int32)
    out = shifted.astype(np.float32) * _along(scale, axis, q.ndim).astype(np.float32)
    if attrs.out_dtype == "float16":
        info = np.finfo(np.float16)
        out = np.clip(out, info.min, info.max)
    return out.astype(attrs.out_dtype)


requantize = define("qnn.requantize", ("data", "input_scale", "input_zero_point", "output_scale",
                                       "output_zero_point"), None,
                    attrs=(Attr("axis", INT, -1, "the channel axis of per-channel input scales"),
                           Attr("rounding", STR, "None", "UPWARD or TONEAREST (None: UPWARD)"),
                           Attr("compute_dtype", STR, "None", "int64, float32 or float64 (None: int64)"),
                           Attr("out_dtype", STR, "int8", "int8, uint8, int16 or int32")),
                    doc="Re-express a quantized tensor with another scale and zero point: "
                        "zp_out + (scale_in / scale_out) * (q - zp_in), by fixed-point multiplication.")

REQUANTIZE_IN = ("int8", "uint8", "int16", "int32", "int64")
REQUANTIZE_OUT = ("int8", "uint8", "int16", "int32")


@requantize.relation
def _(data, in_scale, in_zp, out_scale, out_zp, attrs):
    op = "qnn.requantize"
    d = tensor(data, f"{op}: data", 0)
    _dtype_in(op, d, REQUANTIZE_IN, "data", 0)
    _, channels = channel_axis(op, d, attrs.axis, True)
    _qparam(op, in_scale, "input_scale", 1, "float32", channels)
    _qparam(op, in_zp, "input_zero_point", 2, "int32", channels)
    _qparam(op, out_scale, "output_scale", 3, "float32")
    _qparam(op, out_zp, "output_zero_point", 4, "int32")
    requantize_modes(attrs)
    if attrs.out_dtype not in REQUANTIZE_OUT:
        raise OpTypeError(f"{op}: out_dtype must be one of {', '.join(REQUANTIZE_OUT)}, got '{attrs.out_dtype}'")
    return TensorType(d.shape, attrs.out_dtype)


def fixed_point_multiplier(multiplier: float) -> tuple[int, int]:
    """multiplier = significand * 2**(shift - 31), significand a 31-bit integer (TVM's
    GetFixedPointMultiplierShift: frexp, then round half away from zero)."""
    if multiplier == 0:
        return 0, 0
    significand, shift = math.frexp(multiplier)
    q = math.floor(abs(significand) * (1 << 31) + 0.5) * (1 if significand > 0 else -1)
    if q == 1 << 31:
        q //= 2
        shift += 1
    return q, shift


def _fixed_point_multiply(x: np.ndarray, multipliers: np.ndarray, rounding: str) -> np.ndarray:
    """x * multiplier in int64 fixed point (multipliers: a scalar or per-channel, broadcasting to x)."""
    significand, shift = np.vectorize(fixed_point_multiplier, otypes=[np.int64, np.int64])(multipliers)
    left = np.maximum(shift, 0)
    total = np.maximum(-shift, 0) + 31
    product = (x.astype(np.int64) << left) * significand
    rounder = np.int64(1) << (total - 1)
    if rounding == "TONEAREST":
        rounder = np.where(product >= 0, rounder, rounder - 1)
    return ((product + rounder) >> total).astype(np.int32)


@requantize.reference
def _(q, in_scale, in_zp, out_scale, out_zp, attrs):
    rounding, compute_dtype = requantize_modes(attrs)
    axis, _ = channel_axis("qnn.requantize", TensorType(q.shape, str(q.dtype)), attrs.axis, False)
    in_scale = np.asarray(in_scale, dtype=np.float32)
    out_scale = float(np.asarray(out_scale, dtype=np.float32))
    if out_scale == 0:
        raise ValueError("qnn.requantize: output_scale is 0")
    multipliers = _along(in_scale.astype(np.float64) / out_scale, axis, q.ndim)
    same_scale = in_scale.size == 1 and float(in_scale.reshape(-1)[0]) == out_scale
    zp_in = _along(in_zp, axis, q.ndim)
    if compute_dtype == "int64":
        value = q.astype(np.int32) - zp_in.astype(np.int32)
        if not same_scale:
            value = _fixed_point_multiply(value, multipliers, rounding)
        value = value + np.asarray(out_zp).astype(np.int32)
    else:
        ftype = np.float32 if compute_dtype == "float32" else np.float64
        value = q.astype(ftype) - zp_in.astype(ftype)
        if not same_scale:
            value = multipliers.astype(ftype) * value
        value = value + ftype(np.asarray(out_zp))
        value = np.floor(value + ftype(0.5)) if rounding == "UPWARD" else _round_away(value)
        value = value.astype(np.int32)
    if attrs.out_dtype == "int32":
        return value.astype(np.int32)
    lo, hi = QMIN_QMAX[attrs.out_dtype]
    return np.clip(value, lo, hi).astype(attrs.out_dtype)


# ---- qnn.conv2d and qnn.dense ------------------------------------------------------------------------

_QNN_INPUTS = ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")


def _qnn_common(op: str, data, weight, input_zp, kernel_zp, input_scale, kernel_scale, out_channels,
                data_dtypes: tuple[str, ...], weight_dtypes: tuple[str, ...], out_dtype: str) -> str:
    d = tensor(data, f"{op}: data", 0)
    w = tensor(weight, f"{op}: weight", 1)
    _dtype_in(op, d, data_dtypes, "data", 0)
    _dtype_in(op, w, weight_dtypes, "weight", 1)
    _qparam(op, input_zp, "input_zero_point", 2, "int32")
    _qparam(op, kernel_zp, "kernel_zero_point", 3, "int32", out_channels)
    _qparam(op, input_scale, "input_scale", 4, "float32")
    _qparam(op, kernel_scale, "kernel_scale", 5, "float32", out_channels)
    return out_dtype or "int32"


qnn_conv2d = define("qnn.conv2d", _QNN_INPUTS, OUT_EWISE_FUSABLE,
                    attrs=(Attr("strides", INTS, (1, 1), "step along H and W"),
                           Attr("padding", INTS, (0, 0), "1, 2 or 4 values (top, left, bottom, right)"),
                           Attr("dilation", INTS, (1, 1), "spacing of kernel elements"),
                           Attr("groups", INT, 1, "number of channel groups"),
                           Attr("channels", OPT_INT, None, "output channels"),
                           Attr("kernel_size", OPT_INTS, None, "kernel [height, width]"),
                           Attr("data_layout", STR, "NCHW", "data layout"),
                           Attr("kernel_layout", STR, "OIHW", "weight layout"),
                           Attr("out_layout", STR, "", "output layout (empty: as data)"),
                           Attr("out_dtype", STR, "", "int16, int32 or int64 (empty: int32)")),
                    doc="Quantized 2-D convolution: sum of (data - input_zero_point) * (weight - "
                        "kernel_zero_point) accumulated in integers; the output's scale is "
                        "input_scale * kernel_scale and its zero point 0.")


@qnn_conv2d.relation
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    op = "qnn.conv2d"
    d = tensor(data, f"{op}: data", 0)
    w = tensor(weight, f"{op}: weight", 1)
    *_, shape, channels = qnn_conv_geometry(op, d, w, attrs)
    out_dtype = _qnn_common(op, data, weight, input_zp, kernel_zp, input_scale, kernel_scale, channels,
                            ("int8", "uint8", "int16"), ("int8", "uint8", "int16"), attrs.out_dtype)
    if out_dtype not in ("int16", "int32", "int64"):
        raise OpTypeError(f"{op}: out_dtype must be int16, int32 or int64, got '{out_dtype}'")
    return TensorType(shape, out_dtype)


def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides, dilation, before, after, groups: int) -> np.ndarray:
    """Grouped 2-D convolution of NCHW x with OIHW w, zero padding, in the inputs' dtype."""
    x = np.pad(x, ((0, 0), (0, 0), (before[0], after[0]), (before[1], after[1])))
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow), dtype=np.result_type(x, w))
    per_group = o // groups
    for ky, kx in itertools.product(range(kh), range(kw)):
        y0, x0 = ky * dilation[0], kx * dilation[1]
        patch = x[:, :, y0:y0 + strides[0] * (oh - 1) + 1:strides[0], x0:x0 + strides[1] * (ow - 1) + 1:strides[1]]
        for g in range(groups):
            go = slice(g * per_group, (g + 1) * per_group)
            out[:, go] += np.einsum("nchw,oc->nohw", patch[:, g * i:(g + 1) * i], w[go, :, ky, kx])
    return out


@qnn_conv2d.reference
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    op = "qnn.conv2d"
    d_t, w_t = TensorType(data.shape, str(data.dtype)), TensorType(weight.shape, str(weight.dtype))
    dp, kp, out_perm, strides, dilation, before, after, _, _ = qnn_conv_geometry(op, d_t, w_t, attrs)
    x = np.transpose(data, dp).astype(np.int64) - np.int64(np.asarray(input_zp))
    k = np.transpose(weight, kp).astype(np.int64)
    k = k - _along(kernel_zp, 0, 4).astype(np.int64)
    out = conv2d_nchw(x, k, strides, dilation, before, after, attrs.groups)
    return np.transpose(out, np.argsort(out_perm)).astype(attrs.out_dtype or "int32")


qnn_dense = define("qnn.dense", _QNN_INPUTS, OUT_EWISE_FUSABLE,
                   attrs=(Attr("units", OPT_INT, None, "output features (weight rows)"),
                          Attr("out_dtype", STR, "", "int32 or int64 (empty: int32)")),
                   doc="Quantized dense: (data - input_zero_point) @ (weight - kernel_zero_point)^T, "
                       "accumulated in integers; data (..., K), weight (units, K).")


@qnn_dense.relation
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    op = "qnn.dense"
    d = tensor(data, f"{op}: data", 0)
    w = tensor(weight, f"{op}: weight", 1)
    if d.ndim < 1 or w.ndim != 2:
        bad, what, arg = (d, "data", 0) if d.ndim < 1 else (w, "weight", 1)
        raise OpTypeError(f"{op}: {what} must be {'at least 1-D' if arg == 0 else '2-D'}, found "
                          f"{type_text(bad)}", arg)
    units, k = dims(w)
    if not same_dim(dims(d)[-1], k):
        raise OpTypeError(f"{op}: data has {dims(d)[-1]} features but weight expects {k} "
                          f"(data {type_text(d)}, weight {type_text(w)})", 1)
    if attrs.units is not None and known(units) and attrs.units != units:
        raise OpTypeError(f"{op}: attribute units={attrs.units} but weight has {units} rows "
                          f"(weight {type_text(w)})", 1)
    units = attrs.units if attrs.units is not None else units
    out_dtype = _qnn_common(op, data, weight, input_zp, kernel_zp, input_scale, kernel_scale, units,
                            ("int8", "uint8", "int16", "uint16"), ("int8", "uint8"), attrs.out_dtype)
    if out_dtype not in ("int32", "int64"):
        raise OpTypeError(f"{op}: out_dtype must be int32 or int64, got '{out_dtype}'")
    return TensorType(tuple(d.shape[:-1]) + (units,), out_dtype)


@qnn_dense.reference
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    x = data.astype(np.int64) - np.int64(np.asarray(input_zp))
    w = weight.astype(np.int64) - _along(kernel_zp, 0, 2).astype(np.int64)
    return (x @ w.T).astype(attrs.out_dtype or "int32")
