"""Deformable 2-D convolution (TVM's DeformableConv2DRel in src/relay/op/nn/convolution.cc,
python/tvm/topi/nn/deformable_conv2d.py): `nn.deformable_conv2d`, OutEWiseFusable.

    data    (N, C, H, W)                      in data_layout (NCHW, NHWC, ...)
    offset  (N, 2 * DG * KH * KW, OH, OW)     in data_layout too
    weight  (O, C / groups, KH, KW)           in kernel_layout (OIHW, HWIO, ...)
    ->      (N, O, OH, OW)                    in out_layout (default data_layout)

OH and OW follow the convolution rule.  Kernel tap (kh, kw) of output (oy, ox) reads the
data at

    y = oy * stride_h - pad_top  + kh * dilation_h + offset[n, g*2*KH*KW + 2*(kh*KW + kw),     oy, ox]
    x = ox * stride_w - pad_left + kw * dilation_w + offset[n, g*2*KH*KW + 2*(kh*KW + kw) + 1, oy, ox]

g being the deformable group of the input channel (C / DG channels each), read
bilinearly as TVM's topi reads it: a point with y < 0, x < 0, y >= H or x >= W reads 0,
any other weighs its four neighbours (a neighbour past the far edge reads 0).  Then the
sampled taps are convolved with the weight, `groups` splitting the channels as nn.conv2d
does.  TVM's topi computes groups = 1 only; groups > 1 here is the split convolution
the op's doc describes (ONNX DeformConv's `group`).

The relation derives the offset's type, as TVM's does, and checks the one written; the
weight is checked as nn.conv2d checks it.  Floating-point inputs only.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType
from .attrs import INT, INTS, OPT_INT, OPT_INTS, STR, Attr, AttrError
from .conv_geometry import ConvSpec, backward_shape, conv_plan, from_canonical, result_dtype, to_canonical
from .nn_conv import accumulate_matmul, canonical_shape, check_weight, spatial_out
from .registry import OUT_EWISE_FUSABLE, OpTypeError, define
from .shapes import known, mul, same_dim, tensor, type_text

DEFORMABLE = ConvSpec("nn.deformable_conv2d", "HW")
OP = DEFORMABLE.name

deformable_conv2d = define(
    OP, ("data", "offset", "weight"), OUT_EWISE_FUSABLE,
    attrs=(
        Attr("strides", INTS, (1, 1), "the step of the window along each spatial axis"),
        Attr("padding", INTS, (0, 0), "implicit zero padding: 1 value for all sides, [h, w] on both "
             "sides, or [top, left, bottom, right]"),
        Attr("dilation", INTS, (1, 1), "the spacing between kernel elements"),
        Attr("deformable_groups", INT, 1, "split the input channels into this many groups, each with "
             "its own offsets"),
        Attr("groups", INT, 1, "split the channels into this many independent convolutions"),
        Attr("channels", OPT_INT, None, "the number of output channels (default: from weight)"),
        Attr("kernel_size", OPT_INTS, None, "the kernel extents (default: from weight)"),
        Attr("data_layout", STR, "NCHW", "the layout of data and offset"),
        Attr("kernel_layout", STR, "OIHW", "the layout of weight"),
        Attr("out_layout", STR, "", "the layout of the result (default: data_layout)"),
        Attr("out_dtype", STR, "", "the result dtype (default: data's dtype)"),
    ),
    doc="Deformable 2-D convolution (arXiv 1703.06211): data (N, C, H, W), offset "
        "(N, 2*deformable_groups*KH*KW, OH, OW), weight (O, C/groups, KH, KW) -> (N, O, OH, OW); "
        "each kernel tap reads the data bilinearly at its place moved by the offset (dy, dx).  "
        "Any layout of N, C, H, W (NHWC) and of O, I, H, W (HWIO) is accepted.")


@deformable_conv2d.relation
def _(data, offset, weight, attrs):
    d = tensor(data, f"{OP}: data", 0)
    w = tensor(weight, f"{OP}: weight", 2)
    o = tensor(offset, f"{OP}: offset", 1)
    if not d.dtype.startswith("float"):
        raise OpTypeError(f"{OP}: data must be floating point (bilinear sampling), found {type_text(d)}", 0)
    plan = conv_plan(DEFORMABLE, attrs)
    dg = attrs.deformable_groups
    if dg < 1:
        raise AttrError(f"{OP}: deformable_groups must be positive, got {dg}", "deformable_groups")
    dshape = canonical_shape(OP, "data", d, plan.data_layout, "NCHW", 0)
    wshape = canonical_shape(OP, "weight", w, plan.kernel_layout, "OIHW", 2)
    in_c = dshape[1]
    if known(in_c) and in_c % dg:
        raise OpTypeError(f"{OP}: data has {in_c} channels, which deformable_groups={dg} does not "
                          f"divide (data {type_text(d)})", 0)
    try:
        out_c, kernel = check_weight(DEFORMABLE, plan, attrs, d, w, dshape, wshape)
    except OpTypeError as err:  # nn.conv2d's messages name weight as argument 1
        raise OpTypeError(err.message, 2 if err.arg == 1 else err.arg) from None
    oh = spatial_out(DEFORMABLE, plan, 0, "H", dshape[2], kernel[0])
    ow = spatial_out(DEFORMABLE, plan, 1, "W", dshape[3], kernel[1])
    taps = mul(mul(kernel[0], kernel[1]), 2 * dg)
    want = backward_shape(plan.data_layout, (dshape[0], taps, oh, ow), "NCHW")
    if o.ndim != len(want) or not all(same_dim(a, b) for a, b in zip(o.shape, want)):
        raise OpTypeError(f"{OP}: offset must be {type_text(TensorType(want, d.dtype))} "
                          f"(2 * deformable_groups * KH * KW = {taps} channels at the output's "
                          f"{oh}x{ow}, in {plan.data_layout.name}), found {type_text(o)}", 1)
    if o.dtype != d.dtype:
        raise OpTypeError(f"{OP}: offset must be {d.dtype} like data, found {type_text(o)}", 1)
    oshape = backward_shape(plan.out_layout, (dshape[0], out_c, oh, ow), "NCHW")
    return TensorType(oshape, result_dtype(attrs, d.dtype))


def tap_coordinates(offset: np.ndarray, plan, kh: int, kw: int, dg: int):
    """The sampling coordinates (y, x) of every tap, (N, DG, KH, KW, OH, OW) each, from the
    canonical (NCHW) offset."""
    N, _, OH, OW = offset.shape
    ft = offset.dtype.type
    off = offset.reshape(N, dg, kh, kw, 2, OH, OW)
    base_y = (np.arange(OH) * plan.strides[0] - plan.pad_before[0])[None, :, None] \
        + (np.arange(kh) * plan.dilation[0])[:, None, None]  # (KH, OH, 1)
    base_x = (np.arange(OW) * plan.strides[1] - plan.pad_before[1])[None, None, :] \
        + (np.arange(kw) * plan.dilation[1])[:, None, None]  # (KW, 1, OW)
    y = base_y.astype(ft)[None, None, :, None, :, :] + off[:, :, :, :, 0]
    x = base_x.astype(ft)[None, None, None, :, :, :] + off[:, :, :, :, 1]
    return y, x


def sample(x: np.ndarray, y_pos: np.ndarray, x_pos: np.ndarray, dg: int) -> np.ndarray:
    """The data read at the taps: (N, C, KH, KW, OH, OW) from x (N, C, H, W)."""
    N, C, H, W = x.shape
    ft = y_pos.dtype.type
    per = C // dg
    outside = (y_pos < 0) | (x_pos < 0) | (y_pos >= H) | (x_pos >= W)
    ylo = np.floor(y_pos).astype(np.int64)
    xlo = np.floor(x_pos).astype(np.int64)
    wyh = (y_pos - ylo.astype(ft)).astype(ft)
    wxh = (x_pos - xlo.astype(ft)).astype(ft)
    wyl, wxl = ft(1) - wyh, ft(1) - wxh
    xg = x.reshape(N, dg, per, H * W).astype(ft, copy=False)
    val = np.zeros((N, dg, per) + y_pos.shape[2:], dtype=ft)
    nidx = np.arange(N)[:, None, None]
    gidx = np.arange(dg)[None, :, None]
    for wx, xi in ((wxl, xlo), (wxh, xlo + 1)):
        for wy, yi in ((wyl, ylo), (wyh, ylo + 1)):
            ok = (yi >= 0) & (yi <= H - 1) & (xi >= 0) & (xi <= W - 1) & ~outside
            flat = (np.clip(yi, 0, H - 1) * W + np.clip(xi, 0, W - 1)).reshape(N, dg, -1)
            got = xg[nidx, gidx, :, flat]  # (N, DG, taps, per)
            got = np.moveaxis(got, -1, 2).reshape(val.shape)
            w = (wx * wy).astype(ft)
            val += np.where(ok[:, :, None], w[:, :, None] * got, ft(0))
    return val.reshape((N, C) + y_pos.shape[2:])


@deformable_conv2d.reference
def _(data, offset, weight, attrs):
    plan = conv_plan(DEFORMABLE, attrs)
    out_dtype = result_dtype(attrs, str(data.dtype))
    x = to_canonical(data, plan.data_layout, "NCHW")
    off = to_canonical(offset, plan.data_layout, "NCHW")
    w = to_canonical(weight, plan.kernel_layout, "OIHW")
    O, Cg, KH, KW = w.shape
    N, C = x.shape[:2]
    dg, G = attrs.deformable_groups, plan.groups
    y_pos, x_pos = tap_coordinates(off, plan, KH, KW, dg)
    cols = sample(x, y_pos, x_pos, dg)  # (N, C, KH, KW, OH, OW)
    OH, OW = cols.shape[-2:]
    cols = cols.reshape(N, G, Cg * KH * KW, OH * OW).transpose(1, 2, 0, 3).reshape(G, Cg * KH * KW, N * OH * OW)
    wg = w.reshape(G, O // G, Cg * KH * KW)
    out = accumulate_matmul(wg, cols, out_dtype).reshape(G, O // G, N, OH, OW)
    out = np.moveaxis(out, 2, 0).reshape(N, O, OH, OW)
    return from_canonical(np.ascontiguousarray(out), plan.out_layout, "NCHW")
