"""nn.deformable_conv2d (ops/nn_deformable.py) as tensor expressions, in four steps:

1. Per deformable group, kernel tap and output position p = oy * OW + ox, the four
   corners of the bilinear read: `T_deform_weight`, `T_deform_y`, `T_deform_x`
   (N, DG, KH, KW, 4, OH*OW).  A point with y < 0, x < 0, y >= H or x >= W weighs 0 at
   every corner, and so does a neighbour past the far edge; the indices are clamped, so
   every read is in bounds whatever the offsets hold.  Each is a sum over one position,
   so that the default schedule stores it instead of inlining it into step 2, which
   would work it out again for every channel of the group (as TVM's topi does).
2. `T_deform` (N, C, KH, KW, OH*OW), the sampled columns (im2col's, moved by the
   offsets): the four corners weighted and summed in the order TVM sums them, in the
   offset's dtype.  A corner of weight 0 adds 0 * the pixel, the same as reading 0 for
   finite data (an inf or NaN at the clamped pixel would show where TVM reads 0).
3. `T_deformable_conv2d` (N, OH*OW, O), a product of those columns with the weight
   packed filters last (`T_deform_weight_pack`, (groups, Cg, KH, KW, O/groups)),
   summed over the group's channels and the taps in float32 (float64 when a side is)
   and tagged "nn.deformable_conv2d": the default schedule's register tile takes 4
   positions by 16 filters in a vector, the filters inside the positions, so the tile's
   columns stay in cache while every filter passes.
4. `T_deformable_out`: that read back in out_layout, cast to out_dtype after.

Measured (1 thread, CPU time, 1x64x28x28, 64 filters 3x3, offsets of about 2 pixels,
onnxruntime's DeformConv beside in the same run, load 3-5 from other work): from 12-13 ms
(T_deform a gather per channel with the corners worked out in it, the product over
(N, O, OH, OW) streaming T_deform once per filter) to 2.9-3.4 ms against
onnxruntime's 2.1-2.2 ms.  The sampling is still scalar gathers (LLVM's vectoriser
inserts them 4 at a time).

Data and offset are read in data_layout, the weight in kernel_layout and the result
written in out_layout, through the index maps of nn_conv.py (any permutation of the
canonical letters; a split spatial axis is a LoweringError).
"""

from __future__ import annotations

from ....ops.conv_geometry import conv_plan, forward_shape, result_dtype
from ....ops.nn_deformable import DEFORMABLE
from .. import expr as te
from .nn_conv import acc_dtype, canonical_indices, finish, read_in_layout, whole_spatial
from .registry import register_compute

OP = DEFORMABLE.name
CORNERS = 4  # of the bilinear interpolation


def _stored(shape, value, dtype: str, name: str) -> te.Tensor:
    """A stage of `value(*indices)` that is stored, not inlined into its reader: a sum
    over one position (the default schedule inlines every other injective stage that
    a convolution does not read, and T_deform would compute it per channel again)."""
    one = te.reduce_axis(1, "one")
    return te.compute(shape, lambda *i: te.sum(value(*i) + te.cast(one, dtype) * te.const(0, dtype), [one]), name)


@register_compute(OP)
def _(data: te.Tensor, offset: te.Tensor, weight: te.Tensor, attrs, out_type) -> te.Tensor:
    plan = conv_plan(DEFORMABLE, attrs)
    for attr, layout in (("data_layout", plan.data_layout), ("out_layout", plan.out_layout)):
        whole_spatial(OP, "HW", layout, attr)
    N, C, H, W = forward_shape(plan.data_layout, data.shape, "NCHW")
    _, _, OH, OW = forward_shape(plan.data_layout, offset.shape, "NCHW")
    O, Cg, KH, KW = forward_shape(plan.kernel_layout, weight.shape, "OIHW")
    dg, groups = attrs.deformable_groups, plan.groups
    per_dg, per_group = C // dg, O // groups
    ft = offset.dtype
    (sh, sw), (dh, dw) = plan.strides, plan.dilation
    pt, pl = plan.pad_before

    groups_shape = (N, dg, KH, KW, CORNERS, OH * OW)

    def corner(n, g, kh, kw, q, p):
        """(weight, H index, W index) of bilinear corner q (0-3: x low/high outside, y
        low/high inside, the order the sum goes) of the tap (kh, kw) at position p."""
        oy, ox = p // OW, p % OW
        channel = g * (2 * KH * KW) + (kh * KW + kw) * 2
        y = te.cast(oy * sh - pt + kh * dh, ft) + read_in_layout(
            offset, plan.data_layout, {"N": n, "C": channel, "H": oy, "W": ox})
        x = te.cast(ox * sw - pl + kw * dw, ft) + read_in_layout(
            offset, plan.data_layout, {"N": n, "C": channel + 1, "H": oy, "W": ox})
        outside = te.logical_or(te.logical_or(te.lt(y, 0.0), te.lt(x, 0.0)),
                                te.logical_or(te.ge(y, float(H)), te.ge(x, float(W))))
        yc = te.minimum(te.maximum(y, 0.0), float(H - 1))  # equal to y wherever it is read
        xc = te.minimum(te.maximum(x, 0.0), float(W - 1))
        ylo = te.cast(te.floor(yc), te.INDEX)
        xlo = te.cast(te.floor(xc), te.INDEX)
        high_x, high_y = te.eq(q // 2, 1), te.eq(q % 2, 1)
        wyh, wxh = y - te.cast(ylo, ft), x - te.cast(xlo, ft)
        wx = te.select(high_x, wxh, 1.0 - wxh)
        wy = te.select(high_y, wyh, 1.0 - wyh)
        yi = ylo + te.cast(high_y, te.INDEX)
        xi = xlo + te.cast(high_x, te.INDEX)
        past = te.logical_or(te.gt(yi, H - 1), te.gt(xi, W - 1))  # a neighbour past the far edge
        weight = te.select(te.logical_or(outside, past), te.const(0, ft), wx * wy)
        return weight, te.minimum(yi, H - 1), te.minimum(xi, W - 1)

    weights = _stored(groups_shape, lambda *i: corner(*i)[0], ft, "T_deform_weight")
    rows = _stored(groups_shape, lambda *i: corner(*i)[1], te.INDEX, "T_deform_y")
    cols = _stored(groups_shape, lambda *i: corner(*i)[2], te.INDEX, "T_deform_x")

    def deform(n, c, kh, kw, p):
        g = c // per_dg
        val: te.PrimExpr = te.const(0, ft)
        for q in range(CORNERS):
            at = (n, g, kh, kw, q, p)
            pixel = read_in_layout(data, plan.data_layout, {"N": n, "C": c, "H": rows[at], "W": cols[at]})
            val = val + weights[at] * te.cast(pixel, ft)
        return val

    sampled = te.compute((N, C, KH, KW, OH * OW), deform, "T_deform")
    out_dtype = result_dtype(attrs, data.dtype)
    acc = acc_dtype(out_dtype, ft, weight.dtype)
    rc, ry, rx = te.reduce_axis(Cg, "rc"), te.reduce_axis(KH, "ry"), te.reduce_axis(KW, "rx")

    # the weight as (groups, Cg*KH*KW, O/groups): the filters contiguous
    packed = te.compute((groups, Cg, KH, KW, per_group), lambda g, i, y, x, o: read_in_layout(
        weight, plan.kernel_layout, {"O": g * per_group + o, "I": i, "H": y, "W": x}), "T_deform_weight_pack")

    def product(n, p, o):
        g = o // per_group
        c = rc if groups == 1 else g * Cg + rc
        v = te.cast(sampled[n, c, ry, rx, p], acc)
        w = te.cast(packed[g, rc, ry, rx, o % per_group], acc)
        return te.sum(v * w, [rc, ry, rx])

    # (N, OH*OW, O): the default tile takes 4 positions (the axis before the last) by 16
    # filters in a vector, its loop over the filters inside the one over the positions,
    # so the tile's columns of T_deform stay in cache while every filter passes
    result = te.compute((N, OH * OW, O), product, "T_deformable_conv2d", tag=OP)

    def unflatten(*axes):
        idx = canonical_indices(plan.out_layout, axes)
        return result[idx["N"], idx["H"] * OW + idx["W"], idx["C"]]

    return finish(te.compute(out_type.shape, unflatten, "T_deformable_out"), out_dtype)
