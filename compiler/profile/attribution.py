"""Sharing a kernel's time among the Relay lines and ONNX layers compiled into it.

    shares = attribute(func, provenance)
    shares.lines     # {12: 0.91, 13: 0.09}     1-based line of the source expression -> fraction
    shares.layers    # {"/conv1/Conv": 0.91, "/relu1/Relu": 0.09}

A fused kernel runs its ops interleaved in one loop nest, so no clock can split its time;
it is shared by each op call's share of the kernel's FLOPs (cost.py).  Why FLOPs and not a
separate timing of an unfused build: an unfused build runs different code (every
intermediate written to memory and read back), so its times say what the layers would
cost apart, not what they cost here; the FLOP share is exact for the arithmetic-bound
anchor op (conv2d, dense) that dominates most fused kernels, and it sums to the kernel's
time by construction.  A kernel that does no arithmetic (reshape, transpose, a pad)
shares by the elements each call writes; one with neither, equally among its calls.

A call carries the source expressions and layers of its span (SequentialSpan: several);
its share is split equally among them.  Time of calls without a source line goes to the
line `None`, without a layer to the layer `None` ("unattributed" in the table), so the
fractions of each map always sum to 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.expr import Call, Function, Op
from ..ir.functor import post_order
from ..ir.span import LayerSpan, node_layers
from ..provenance import Provenance
from .cost import call_flops, output_elements


@dataclass
class Shares:
    lines: dict[int | None, float] = field(default_factory=dict)
    layers: dict[str | None, float] = field(default_factory=dict)
    weighted_by: str = "FLOPs"  # or "elements written", "calls"


def attribute(func: Function, prov: Provenance) -> Shares:
    calls = [n for n in post_order(func.body) if isinstance(n, Call) and isinstance(n.op, Op)]
    shares = Shares()
    if not calls:
        shares.lines[None] = shares.layers[None] = 1.0
        shares.weighted_by = "calls"
        return shares
    weights = [call_flops(c) for c in calls]
    if not sum(weights):
        weights, shares.weighted_by = [output_elements(c) for c in calls], "elements written"
    if not sum(weights):
        weights, shares.weighted_by = [1] * len(calls), "calls"
    total = float(sum(weights))
    text = prov.source.text if prov.source is not None else ""
    for call, weight in zip(calls, weights):
        fraction = weight / total
        lines = sorted({text.count("\n", 0, start) + 1 for start, _ in prov.keys_of(call)}) or [None]
        for line in lines:
            shares.lines[line] = shares.lines.get(line, 0.0) + fraction / len(lines)
        origins = call.span.origins() if call.span is not None else ()
        layers = node_layers(o.name for o in origins if isinstance(o, LayerSpan)) or [None]
        for layer in layers:
            shares.layers[layer] = shares.layers.get(layer, 0.0) + fraction / len(layers)
    return shares
