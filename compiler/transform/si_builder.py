"""SIBuilder: how a rewrite says where its new expressions came from (RFC 0092).

Two uses, as the RFC designed them:

    # one-to-many: the new subgraph (entry down to the old inputs) takes one span
    SIBuilder(old_call).recursively_fill_span(new_entry, inputs=[x, gamma, beta])

    # many-to-one: the replacement's span collects every span of the matched pattern
    span = SIBuilder(matched_entry, inputs=[x]).create_span()

Filling sets `span` only on expressions that have none, in place (they are new: the pass
just built them), and stops at the inputs and at any expression that already has a span,
since everything under such an expression comes from somewhere known.  With the pass
context's `ir.enable_si_builder` off, the builder does nothing: that is the switch the
span-cost benchmark flips.
"""

from __future__ import annotations

from typing import Iterable

from ..ir.expr import Constructor, Expr, GlobalVar, Op
from ..ir.functor import children
from ..ir.span import AnySpan, SpanBase, sequential
from .infra import PassContext


# Interned leaves, one object per name for every use (and every module, for ops): never
# filled, or one rewrite's span would show on every later use of `add`.
SHARED_LEAVES = (Op, GlobalVar, Constructor)


class SIBuilder:
    def __init__(self, source: Expr | AnySpan | Iterable[AnySpan | None] | None = None,
                 inputs: Iterable[Expr] = (), *, enabled: bool | None = None) -> None:
        self.enabled = PassContext.current().si_builder_enabled if enabled is None else enabled
        if not self.enabled:
            self.span = None
        elif source is None:
            self.span = None
        elif isinstance(source, Expr):
            self.span = collect_spans(source, inputs) if inputs else source.span
        elif isinstance(source, SpanBase):
            self.span = source
        else:
            self.span = sequential(*source)

    def create_span(self) -> AnySpan | None:
        return self.span

    def recursively_fill_span(self, entry: Expr, inputs: Iterable[Expr] = ()) -> Expr:
        """Give `self.span` to every expression from `entry` down to `inputs` that has
        no span; returns `entry`."""
        if self.span is None:
            return entry
        stop = set(inputs)
        seen: set[Expr] = set()
        stack = [entry]
        while stack:
            node = stack.pop()
            if node in seen or node in stop or isinstance(node, SHARED_LEAVES):
                continue
            seen.add(node)
            if node.span is not None and node is not entry:
                continue
            if node.span is None:
                object.__setattr__(node, "span", self.span)  # a new node, not yet shared
            stack.extend(children(node))
        return entry


def collect_spans(entry: Expr, inputs: Iterable[Expr] = ()) -> AnySpan | None:
    """Every span from `entry` down to `inputs` (exclusive), joined in visiting order."""
    stop = set(inputs)
    seen: set[Expr] = set()
    spans: list[AnySpan | None] = []
    stack = [entry]
    while stack:
        node = stack.pop()
        if node in seen or node in stop:
            continue
        seen.add(node)
        spans.append(node.span)
        stack.extend(reversed(children(node)))
    return sequential(*spans)
