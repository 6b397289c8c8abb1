"""The geometry of the quantized ops, shared by their relations and numpy references
(qnn.py) and their compute rules (lower/te/topi/plumbing.py): the integer ranges
results saturate to, the quantization axis, requantize's rounding and compute dtype, and
qnn.conv2d's layouts, strides, padding and output shape.
"""

from __future__ import annotations

from ..ir.types import TensorType
from .pooling_geometry import layout_axes
from .registry import OpTypeError
from .shapes import conv_out, dims, expand_padding, known, type_text


QMIN_QMAX = {**{f"int{b}": (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)},
             **{f"uint{b}": (0, (1 << b) - 1) for b in (8, 16)}}


def channel_axis(op: str, data: TensorType, axis: int, per_channel: bool):
    """TVM's quantization axis: negative counts from the end; checked only for vectors."""
    rank = data.ndim
    index = (rank + axis if rank > 0 else 0) if axis < 0 else axis
    if per_channel and not 0 <= index < max(rank, 1):
        raise OpTypeError(f"{op}: axis {axis} is out of range for data of rank {rank} ({type_text(data)})")
    return index, (dims(data)[index] if rank > 0 and 0 <= index < rank else 1)


def requantize_modes(attrs) -> tuple[str, str]:
    rounding = "UPWARD" if attrs.rounding == "None" else attrs.rounding
    compute_dtype = "int64" if attrs.compute_dtype == "None" else attrs.compute_dtype
    if rounding not in ("UPWARD", "TONEAREST"):
        raise OpTypeError(f"qnn.requantize: attribute rounding is '{attrs.rounding}'; expected UPWARD or TONEAREST")
    if compute_dtype not in ("int64", "float32", "float64"):
        raise OpTypeError(f"qnn.requantize: attribute compute_dtype is '{attrs.compute_dtype}'; expected "
                          "int64, float32 or float64")
    return rounding, compute_dtype


def _layout_positions(op: str, layout: str, letters: str, attr: str) -> tuple[int, ...]:
    """Where each of `letters` sits in `layout`, which must be a permutation of them."""
    axes = layout_axes(op, layout)
    if sorted(axes) != sorted(letters):
        raise OpTypeError(f"{op}: unsupported {attr} {layout} (expected an arrangement of {letters}, "
                          f"such as {'NCHW or NHWC' if letters == 'NCHW' else 'OIHW or HWIO'})")
    return tuple(axes.index(c) for c in letters)


def qnn_conv_geometry(op: str, d: TensorType, w: TensorType, attrs):
    dp = _layout_positions(op, attrs.data_layout, "NCHW", "data_layout")
    kp = _layout_positions(op, attrs.kernel_layout, "OIHW", "kernel_layout")
    op_layout = _layout_positions(op, attrs.out_layout or attrs.data_layout, "NCHW", "out_layout")
    if d.ndim != 4 or w.ndim != 4:
        bad, what, arg = (d, "data", 0) if d.ndim != 4 else (w, "weight", 1)
        raise OpTypeError(f"{op}: {what} must be 4-D, found {type_text(bad)}", arg)
    n, c, h, wd = (dims(d)[i] for i in dp)
    o, i, kh, kw = (dims(w)[j] for j in kp)
    if attrs.groups < 1:
        raise OpTypeError(f"{op}: attribute groups must be positive, got {attrs.groups}")
    if known(c, i) and c != i * attrs.groups:
        raise OpTypeError(f"{op}: data has {c} channels but weight expects {i} x groups {attrs.groups} = "
                          f"{i * attrs.groups} (weight {type_text(w)})", 1)
    if attrs.channels is not None and known(o) and attrs.channels != o:
        raise OpTypeError(f"{op}: attribute channels={attrs.channels} but weight has {o} output channels "
                          f"(weight {type_text(w)})", 1)
    if attrs.kernel_size is not None and known(kh, kw) and tuple(attrs.kernel_size) != (kh, kw):
        raise OpTypeError(f"{op}: attribute kernel_size={list(attrs.kernel_size)} but weight is {kh}x{kw} "
                          f"(weight {type_text(w)})", 1)
    strides = tuple(attrs.strides) * 2 if len(attrs.strides) == 1 else tuple(attrs.strides)
    dilation = tuple(attrs.dilation) * 2 if len(attrs.dilation) == 1 else tuple(attrs.dilation)
    if len(strides) != 2 or len(dilation) != 2 or min(strides + dilation) < 1:
        raise OpTypeError(f"{op}: strides and dilation need 2 positive values, got {list(attrs.strides)} and "
                          f"{list(attrs.dilation)}")
    before, after = expand_padding(attrs.padding, 2, f"{op}: attribute padding")
    out = []
    for size, k, b, a, s, dl in zip((h, wd), (kh, kw), before, after, strides, dilation):
        extent = conv_out(size, k, b, a, s, dl)
        if known(extent) and extent < 1:
            raise OpTypeError(f"{op}: the kernel ({k} with dilation {dl}) is larger than the padded input "
                              f"({size} + {b + a}) (data {type_text(d)})", 0)
        out.append(extent)
    channels = attrs.channels if attrs.channels is not None else o
    nchw = (n, channels, out[0], out[1])
    shape = [None] * 4
    for letter_index, position in enumerate(op_layout):
        shape[position] = nchw[letter_index]
    return dp, kp, op_layout, strides, dilation, before, after, tuple(shape), channels
