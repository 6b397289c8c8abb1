"""`relay.op.annotation.simulated_quantize`: the fake-quantization node of TVM's
quantization toolkit (relay.quantize; src/relay/quantize/quantize.cc, the compute in
python/tvm/relay/quantize/_annotate.py).  `relay.quantize.quantize` puts one after each
tensor it will quantize, computes in float32 what the integer program will, calibrates
dom_scale, clip_min and clip_max, then realizes the graph to integers.

    relay.op.annotation.simulated_quantize(%x, %dom_scale, %clip_min, %clip_max, kind=1)
      = round(max(min(%x / %dom_scale, %clip_max), %clip_min)) * %dom_scale

kind is QAnnotateKind (0 IDENTITY: the data unchanged; 1 INPUT, 2 WEIGHT, 3 ACTIVATION:
a hint for the bit widths); round takes halves away from zero (TVM's round, llvm.round).
TVM computes only sign=True and rounding "round" (its compute asserts both); so do the
reference and the compute rule, with an error naming the attribute.  The three
parameters are float32 scalars (TVM's relation assigns them that type).

Its layout rule (layout_rules.py, TVM's SimQuantizeLayout): the data's layout, new or
old, and the parameters in C, so it follows a converted convolution.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from .attrs import BOOL, INT, STR, Attr, REQUIRED
from .registry import ELEMWISE, OpTypeError, define
from .shapes import tensor, type_text

NAME = "relay.op.annotation.simulated_quantize"
KINDS = {0: "IDENTITY", 1: "INPUT", 2: "WEIGHT", 3: "ACTIVATION"}

simulated_quantize = define(
    NAME, ("data", "dom_scale", "clip_min", "clip_max"), ELEMWISE,
    attrs=(Attr("kind", INT, REQUIRED, "QAnnotateKind: 0 IDENTITY, 1 INPUT, 2 WEIGHT, 3 ACTIVATION"),
           Attr("sign", BOOL, True, "whether the quantized type is signed (only True is computed)"),
           Attr("rounding", STR, "round", "floor, ceil or round (only round is computed)")),
    doc="Simulated quantization (relay.quantize's annotation): round(clip(data / dom_scale, clip_min, "
        "clip_max)) * dom_scale, halves away from zero; kind 0 (IDENTITY) passes data through.")


@simulated_quantize.relation
def _(data, dom_scale, clip_min, clip_max, attrs):
    d = tensor(data, f"{NAME}: data", 0)
    if d.ndim == 0:
        raise OpTypeError(f"{NAME}: the input shape cannot be empty, found {type_text(d)}", 0)
    for arg, (ty, what) in enumerate(((dom_scale, "dom_scale"), (clip_min, "clip_min"), (clip_max, "clip_max")), 1):
        t = tensor(ty, f"{NAME}: {what}", arg)
        if t.dtype != "float32" or t.ndim != 0:
            raise OpTypeError(f"{NAME}: {what} must be a float32 scalar, found {type_text(t)}", arg)
    return d


def computed_mode(attrs) -> str | None:
    """Why TVM's compute would not take these attributes (sign True, rounding "round"), or None."""
    if not attrs.sign:
        return "only sign=True is computed (TVM's compute asserts it)"
    if attrs.rounding != "round":
        return f"only rounding=\"round\" is computed, got \"{attrs.rounding}\" (TVM's compute asserts it)"
    return None


@simulated_quantize.reference
def _(data, dom_scale, clip_min, clip_max, attrs):
    problem = computed_mode(attrs)
    if problem is not None:
        raise OpTypeError(f"{NAME}: {problem}")
    if attrs.kind == 0:
        return data.copy()
    dtype = data.dtype
    scale = np.asarray(dom_scale, dtype=dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scaled = (data / scale).astype(dtype)
        clipped = np.maximum(np.minimum(scaled, np.asarray(clip_max, dtype=dtype)), np.asarray(clip_min, dtype=dtype))
        rounded = np.sign(clipped) * np.floor(np.abs(clipped) + dtype.type(0.5))
        return (rounded * scale).astype(dtype)
