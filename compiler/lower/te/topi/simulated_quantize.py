"""The compute rule of `relay.op.annotation.simulated_quantize` (TVM's
simulated_quantize_compute, python/tvm/relay/quantize/_annotate.py): data / dom_scale,
clipped to [clip_min, clip_max], rounded (halves away from zero), times dom_scale; kind 0
(IDENTITY) is a copy.  Only sign=True and rounding "round" are computed, as TVM's asserts
say (ops/simulated_quantize.py)."""

from __future__ import annotations

from ....ops.simulated_quantize import NAME, computed_mode
from ...errors import LoweringError
from .. import expr as te
from .registry import register_compute


@register_compute(NAME)
def _(data, dom_scale, clip_min, clip_max, attrs, out_type):
    problem = computed_mode(attrs)
    if problem is not None:
        raise LoweringError(problem)
    if attrs.kind == 0:
        return te.compute(data.shape, lambda *i: data[i], "T_identity")
    dtype = data.dtype

    def body(*i):
        scale = te.cast(dom_scale[()], dtype)
        scaled = data[i] / scale
        clipped = te.maximum(te.minimum(scaled, te.cast(clip_max[()], dtype)), te.cast(clip_min[()], dtype))
        return te.intrinsic("round", clipped) * scale

    return te.compute(data.shape, body, "T_simulated_quantize")
