"""Where a value came from, in words a person can follow: an expression's line:col and
ONNX layers, a fused function's display name, Relay lines and layers.

    expression_place(call)        "model.relay:14:8 (layer /bn1/BatchNormalization)"
    FusedPlace.of(build, func)    .name (its symbol), .display, .lines ("14-16, 20"), .layers
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Call, Expr, Function, Op, Var
from ..ir.functor import post_order
from ..ir.span import AnySpan, LayerSpan, document_span
from ..provenance import Provenance


def layers_of(span: AnySpan | None) -> list[str]:
    """The frontend layers (ONNX node names) among a span's origins."""
    return [o.name for o in span.origins() if isinstance(o, LayerSpan)] if span is not None else []


def expression_place(expr: Expr) -> str:
    """`file:line:col`, and its layers, of an expression; "(no source position)" without one."""
    doc = document_span(expr.span)
    layers = layers_of(expr.span)
    where = f"{doc.name}:{doc.line}:{doc.col}" if doc is not None else "(no source position)"
    return where + (f" (layer {', '.join(layers)})" if layers else "")


def op_name(call: Call) -> str:
    return call.op.name if isinstance(call.op, Op) else "a call"


@dataclass(frozen=True)
class FusedPlace:
    name: str  # the kernel's symbol
    display: str  # "conv2d + batch_norm + relu · /conv1/Conv"
    lines: str  # the Relay lines its expressions are written on: "14-16, 20"
    layers: tuple[str, ...]

    @classmethod
    def of(cls, build, func: Function, name: str, provenance: Provenance | None = None) -> "FusedPlace":
        prov = provenance if provenance is not None else Provenance(build)
        lines: set[int] = set()
        layers: dict[str, None] = {}
        for node in post_order(func.body):
            span = getattr(node, "span", None)
            if span is None or isinstance(node, (Function, Var)):
                continue
            for origin in span.origins():
                if isinstance(origin, LayerSpan):
                    layers.setdefault(origin.name)
                elif hasattr(origin, "line"):
                    lines.update(range(origin.line, origin.end_location[0] + 1))
        return cls(name, prov.display_name(func), line_ranges(lines), tuple(layers))

    def text(self) -> str:
        where = f"lines {self.lines}" if self.lines else "no source lines"
        layers = f", layers {', '.join(self.layers[:4])}{' …' if len(self.layers) > 4 else ''}" if self.layers else ""
        return f"{self.name} \"{self.display}\" ({where}{layers})"


def line_ranges(lines: set[int]) -> str:
    """{3, 4, 5, 9} -> "3-5, 9"."""
    parts: list[tuple[int, int]] = []
    for line in sorted(lines):
        if parts and parts[-1][1] == line - 1:
            parts[-1] = (parts[-1][0], line)
        else:
            parts.append((line, line))
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in parts)
