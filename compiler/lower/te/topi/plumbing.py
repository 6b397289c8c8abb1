"""Plumbing ops that compute something (reference §7.7) as tensor expressions.

The pass-through annotations (`annotation.stop_fusion`, `on_device`, `device_copy`) copy
their tensor (or each tensor of a tuple).  The qnn ops follow the numpy reference (TVM's
canonical lowering): quantize, dequantize, requantize (fixed-point multiplication in
int64 whose significand and shift are computed from the scale tensors, in stages over the
scale's shape), and qnn.conv2d / qnn.dense, whose integer products are summed in
out_dtype (the same modulo 2^bits as the reference's exact sum).

memory.*, vm.*, call_lowered and dyn.* have no rule: they allocate, call or have dynamic
shapes, which a primitive function's loop nest cannot express.
"""

from __future__ import annotations

import numpy as np

from ....ir.types import TensorType
from ....ops.conv_geometry import parse_layout
from ....ops.qnn_geometry import QMIN_QMAX, channel_axis, qnn_conv_geometry, requantize_modes
from ...errors import LoweringError
from .. import expr as te
from .nn_conv import conv_forward, pad_spatial
from .registry import register_compute


def _pass_through(op: str) -> None:
    @register_compute(op)
    def rule(data, attrs, out_type):
        """A copy of the tensor, or of each tensor of a tuple."""
        tensors = data if isinstance(data, tuple) else (data,)
        if not all(isinstance(t, te.Tensor) for t in tensors):
            raise LoweringError(f"{op}: only a tensor or a tuple of tensors can be lowered")
        copies = tuple(te.compute(t.shape, lambda *i, t=t: t[i], "T_copy") for t in tensors)
        return copies if isinstance(data, tuple) else copies[0]


for _op in ("annotation.stop_fusion", "on_device", "device_copy"):
    _pass_through(_op)


# ---- qnn


def qparam(p: te.Tensor, channel: te.PrimExpr) -> te.PrimExpr:
    """A scale or zero point: the one value of a scalar (or one-element) tensor, or the
    element of a per-channel vector."""
    if int(np.prod(p.shape, dtype=np.int64)) == 1:
        return p[(0,) * p.ndim]
    return p[channel]


def _clip(value: te.PrimExpr, dtype: str) -> te.PrimExpr:
    lo, hi = QMIN_QMAX[dtype]
    return te.minimum(te.maximum(value, lo), hi)


def _axis(op: str, data: te.Tensor, axis: int) -> int:
    return channel_axis(op, TensorType(data.shape, data.dtype), axis, False)[0]


@register_compute("qnn.quantize")
def _(data, scale, zero_point, attrs, out_type):
    """clip(round(data / scale) + zero_point), halves away from zero, in float32."""
    axis = _axis("qnn.quantize", data, attrs.axis)
    f = "float32"

    def body(*i):
        c = i[axis] if i else 0
        q = te.intrinsic("round", te.cast(data[i], f) / te.cast(qparam(scale, c), f))
        q = q + te.cast(qparam(zero_point, c), f)
        return te.cast(_clip(q, attrs.out_dtype), attrs.out_dtype)

    return te.compute(data.shape, body, "T_quantize")


@register_compute("qnn.dequantize")
def _(data, scale, zero_point, attrs, out_type):
    """(data - zero_point) in int32, times scale in float32 (clipped to float16's range
    for a float16 result)."""
    axis = _axis("qnn.dequantize", data, attrs.axis)

    def body(*i):
        c = i[axis] if i else 0
        shifted = te.cast(data[i], "int32") - te.cast(qparam(zero_point, c), "int32")
        value = te.cast(shifted, "float32") * te.cast(qparam(scale, c), "float32")
        if attrs.out_dtype == "float16":
            limit = float(np.finfo(np.float16).max)
            value = te.minimum(te.maximum(value, -limit), limit)
        return te.cast(value, attrs.out_dtype)

    return te.compute(data.shape, body, "T_dequantize")


def _fixed_point(in_scale: te.Tensor, out_scale: te.Tensor) -> tuple[te.Tensor, te.Tensor]:
    """Stages over in_scale's shape: the significand q (int64, 31 bits) and the shift e
    with in_scale / out_scale = q * 2^(e - 31), q rounded half away from zero (frexp)."""
    one, zero = te.const(1, te.INDEX), te.const(0, te.INDEX)

    def multiplier(i):
        return te.cast(in_scale[i], "float64") / te.cast(qparam(out_scale, 0), "float64")

    def exponent(*i):
        m = te.abs(multiplier(i))
        m = te.select(te.gt(m, 0.0), m, te.const(1.0, "float64"))
        e = te.cast(te.floor(te.intrinsic("log2", m)), te.INDEX) + 1
        # log2 may be off by one next to a power of two: bring m / 2^e into [0.5, 1)
        f = m / te.power(2.0, te.cast(e, "float64"))
        return e + te.select(te.ge(f, 1.0), one, te.select(te.lt(f, 0.5), -one, zero))

    exponents = te.compute(in_scale.shape, exponent, "T_requantize_exponent")

    def rounded(i):
        m = multiplier(i)
        f = te.abs(m) / te.power(2.0, te.cast(exponents[i], "float64"))
        q = te.cast(te.floor(f * float(1 << 31) + 0.5), te.INDEX)
        return te.select(te.lt(m, 0.0), -q, te.select(te.eq(m, 0.0), zero, q))

    def significand(*i):
        q = rounded(i)
        return te.select(te.eq(q, 1 << 31), q // 2, q)

    def shift(*i):
        e = te.select(te.eq(multiplier(i), 0.0), zero, exponents[i])
        return te.select(te.eq(rounded(i), 1 << 31), e + 1, e)

    return (te.compute(in_scale.shape, significand, "T_requantize_significand"),
            te.compute(in_scale.shape, shift, "T_requantize_shift"))


@register_compute("qnn.requantize")
def _(data, in_scale, in_zp, out_scale, out_zp, attrs, out_type):
    """zp_out + (scale_in / scale_out) * (q - zp_in): fixed point in int64 (UPWARD or
    TONEAREST rounding of the shift), or in float32/float64 with compute_dtype; then
    clipped to out_dtype."""
    rounding, compute_dtype = requantize_modes(attrs)
    axis = _axis("qnn.requantize", data, attrs.axis)
    out_dtype = attrs.out_dtype

    if compute_dtype == "int64":
        significand, shift = _fixed_point(in_scale, out_scale)

        def requantized(i, c):
            value = te.cast(data[i], "int32") - te.cast(qparam(in_zp, c), "int32")
            e = qparam(shift, c)
            total = te.maximum(-e, 0) + 31
            product = te.binary("shl", te.cast(value, te.INDEX), te.maximum(e, 0)) * qparam(significand, c)
            rounder = te.binary("shl", te.const(1, te.INDEX), total - 1)
            if rounding == "TONEAREST":
                rounder = te.select(te.ge(product, 0), rounder, rounder - 1)
            scaled = te.cast(te.binary("shr", product + rounder, total), "int32")
            return scaled + te.cast(qparam(out_zp, 0), "int32")
    else:
        f = compute_dtype

        def requantized(i, c):
            value = te.cast(data[i], f) - te.cast(qparam(in_zp, c), f)
            m = te.cast(qparam(in_scale, c), "float64") / te.cast(qparam(out_scale, 0), "float64")
            value = te.cast(m, f) * value + te.cast(qparam(out_zp, 0), f)
            value = te.floor(value + 0.5) if rounding == "UPWARD" else te.intrinsic("round", value)
            return te.cast(value, "int32")

    def body(*i):
        value = requantized(i, i[axis] if i else 0)
        return value if out_dtype == "int32" else te.cast(_clip(value, out_dtype), out_dtype)

    return te.compute(data.shape, body, "T_requantize")


@register_compute("qnn.conv2d")
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs, out_type):
    """sum (data - input_zero_point) * (weight - kernel_zero_point[o]); padding holds
    data's zero point, so it contributes 0 as the reference's zero padding after the
    subtraction."""
    op = "qnn.conv2d"
    dtype = attrs.out_dtype or "int32"
    geometry = qnn_conv_geometry(op, TensorType(data.shape, data.dtype),
                              TensorType(weight.shape, weight.dtype), attrs)
    strides, dilation, before, after = geometry[3:7]
    data_layout = parse_layout(attrs.data_layout, "NCHW")
    kernel_layout = parse_layout(attrs.kernel_layout, "OIHW")
    out_layout = parse_layout(attrs.out_layout or attrs.data_layout, "NCHW")
    zp = te.cast(qparam(input_zp, 0), dtype)
    padded = pad_spatial(data, data_layout, "HW", before, after, fill=zp)

    def data_term(value, idx):
        return te.cast(value, dtype) - zp

    def weight_term(value, idx):
        return te.cast(value, dtype) - te.cast(qparam(kernel_zp, idx["C"]), dtype)

    return conv_forward(op, padded, data_layout, weight, kernel_layout, out_type.shape, out_layout, "HW",
                        strides, dilation, attrs.groups, data_term, weight_term)


@register_compute("qnn.dense")
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs, out_type):
    """(data - input_zero_point) @ (weight - kernel_zero_point[unit])^T, summed in out_dtype."""
    dtype = attrs.out_dtype or "int32"
    k = te.reduce_axis(data.shape[-1], "k")

    def body(*i):
        x = te.cast(data[i[:-1] + (k,)], dtype) - te.cast(qparam(input_zp, 0), dtype)
        w = te.cast(weight[i[-1], k], dtype) - te.cast(qparam(kernel_zp, i[-1]), dtype)
        return te.sum(x * w, [k])

    return te.compute(out_type.shape, body, "T_qnn_dense", tag="qnn.dense")
