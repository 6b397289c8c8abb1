"""FoldScaleAxis: fold per-channel scalings into the weights of convolutions and dense
layers, as TVM's `FoldScaleAxis` does (src/relay/transforms/fold_scale_axis.cc, v0.16).

    FoldScaleAxis = Sequential(BackwardFoldScaleAxis,   opt 3   fold_scale_axis_backward.py
                               ForwardFoldScaleAxis,    opt 3   fold_scale_axis_forward.py
                               FoldConstant)            opt 2   fold_constant.py

Backward folds a `multiply` after a conv2d/conv3d/dense (through relu, add, bias_add) into
its weight: a batch norm after a convolution, once SimplifyInference made it a multiply
and an add, becomes part of the convolution.  Forward folds a `multiply` before one (through
relu, add) into the weight of the layer that consumes it.  FoldConstant then computes the
scaled weights when they are constants (bound parameters).  The scale must be a
per-channel one that broadcasts onto exactly the channel axes (`(C, 1, 1)`, `(1, C, 1, 1)`
or a scalar for NCHW; `(C,)` is the last axis there and does not fold), the layouts simple
(NCHW, NHWC, OIHW, HWIO, ...) or blocked on both channel axes (NCHW4c with OIHW4i4o), the
convolution ungrouped or depthwise; a scale that crosses a relu must be a constant with no
negative element.  fold_scale_axis_shared.py holds these conditions.

Like TVM's sequence, this one is skipped as a whole when "FoldScaleAxis" is a disabled
pass, and its members run when the context's opt level reaches their own (at the default
opt level 2 only the FoldConstant does).

Spans: see each member; in short, a folded weight carries the spans of the layer it went
into and of the multiply it absorbed, and FoldConstant keeps them on the computed constant.
"""

from __future__ import annotations

from ...ir.module import IRModule
from ..infra import PassContext, Sequential, register_pass
from .fold_constant import FoldConstant
from .fold_scale_axis_backward import BackwardFoldScaleAxis
from .fold_scale_axis_forward import ForwardFoldScaleAxis


@register_pass
class FoldScaleAxis(Sequential):
    name = "FoldScaleAxis"
    opt_level = 0

    def __init__(self) -> None:
        super().__init__([BackwardFoldScaleAxis(), ForwardFoldScaleAxis(), FoldConstant()], name=self.name)

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        ctx = ctx or PassContext.current()
        if self.name in ctx.disabled_pass:
            return mod
        return super().__call__(mod, ctx)
