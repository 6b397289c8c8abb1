"""nn.deformable_conv2d (ops/nn_deformable.py) as tensor expressions: TVM's topi in two
stages.

1. `T_deform` (N, C, KH, KW, OH, OW): the data read bilinearly at every kernel tap of
   every output position moved by its offset, in the offset's dtype (a point with y < 0,
   x < 0, y >= H or x >= W reads 0; a neighbour past the far edge is selected away, so
   every read is in bounds whatever the offsets hold).
2. The convolution of `T_deform` with the weight, a reduction over the group's input
   channels and the kernel taps tagged "nn.deformable_conv2d" (so the default schedule
   tiles it as a convolution, `T_deform` computed once into a buffer), summed in float32
   (float64 when a side is) and cast to out_dtype after.

Not fast yet: `T_deform` is a gather (its reads move with the offsets), which the lane
code generator leaves scalar, and it computes a tap's coordinates and weights again for
every channel of its deformable group, as TVM's topi does.  Measured (relaylens profile
--compare, 1x64x28x28, 64 filters 3x3, 2 threads, load average 7-9 from other work):
40 ms against onnxruntime's 2.6 ms.  A coordinate stage per group kept out of inlining,
or gathers in lanes.py, would be the next step.

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

    def deform(n, c, kh, kw, oy, ox):
        channel = (c // per_dg) * (2 * KH * KW) + (kh * KW + kw) * 2
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
        wyh, wxh = y - te.cast(ylo, ft), x - te.cast(xlo, ft)
        wyl, wxl = 1.0 - wyh, 1.0 - wxh
        val: te.PrimExpr = te.const(0, ft)
        for wx, xi, x_edge in ((wxl, xlo, False), (wxh, xlo + 1, True)):
            for wy, yi, y_edge in ((wyl, ylo, False), (wyh, ylo + 1, True)):
                at = {"N": n, "C": c, "H": te.minimum(yi, H - 1), "W": te.minimum(xi, W - 1)}
                term = (wx * wy) * te.cast(read_in_layout(data, plan.data_layout, at), ft)
                inside = ([te.le(yi, H - 1)] if y_edge else []) + ([te.le(xi, W - 1)] if x_edge else [])
                val = val + (te.select(te.all_of(*inside), term, te.const(0, ft)) if inside else term)
        return te.select(outside, te.const(0, ft), val)

    sampled = te.compute((N, C, KH, KW, OH, OW), deform, "T_deform")
    out_dtype = result_dtype(attrs, data.dtype)
    acc = acc_dtype(out_dtype, ft, weight.dtype)
    rc, ry, rx = te.reduce_axis(Cg, "rc"), te.reduce_axis(KH, "ry"), te.reduce_axis(KW, "rx")

    def conv(*axes):
        idx = canonical_indices(plan.out_layout, axes)
        o = idx["C"]
        c = rc if groups == 1 else (o // per_group) * Cg + rc
        v = te.cast(sampled[idx["N"], c, ry, rx, idx["H"], idx["W"]], acc)
        w = te.cast(read_in_layout(weight, plan.kernel_layout, {"O": o, "I": rc, "H": ry, "W": rx}), acc)
        return te.sum(v * w, [rc, ry, rx])

    result = te.compute(out_type.shape, conv, "T_deformable_conv2d", tag=OP)
    return finish(result, out_dtype)
