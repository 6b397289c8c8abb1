"""MergeCompilerRegions: join neighbouring regions of one target into one region.

As TVM's pass (src/relay/transforms/merge_compiler_regions.cc): the regions that
AnnotateTarget's annotations delimit (transform/annotated_regions.py) are visited at
their `compiler_end`s, in post-order, each after the regions feeding it.  A region is
merged with each region that feeds it directly when both have the same target, unless
that would make a cycle: a region remembers (as "restrictions") every region of another
target it depends on, inherits the restrictions of the regions it depends on, and never
merges with one of them.  Then every `compiler_end` → `compiler_begin` pair inside one
merged region is removed.

    conv (mynpu) → relu (mynpu) → exp (default) → add (mynpu)
    ⇒ one region {conv, relu}; add stays apart (it depends on exp, which depends on it)

Expects: typed input annotated by AnnotateTarget (required: InferType).  Guarantees: typed
output, the same values; each remaining annotation pair separates two regions.  An end
without its begin, or a call with some arguments annotated and some not, is an error at
that expression.

Spans: nothing is built; the annotations removed take nothing with them, and every kept
expression is rebuilt with its own span.
"""

from __future__ import annotations

from ...diagnostics import Diagnostic, Severity
from ...ir.expr import Call, Expr, Function, If
from ...ir.functor import ExprMutator, post_order
from ...ir.module import IRModule
from ...typing import infer_types
from ..annotated_regions import BEGIN, END, Region, RegionError, RegionSet
from ..infra import FunctionPass, PassContext, register_pass


def _control_flow_regions(expr: Expr, regions: RegionSet, found: set[Region]) -> None:
    if isinstance(expr, If):
        for part in (expr.cond, expr.true_branch, expr.false_branch):
            region = regions.region_of(part)
            if region is not None:
                found.add(region)
            else:
                _control_flow_regions(part, regions, found)


class _Merger:
    def __init__(self, regions: RegionSet) -> None:
        self.regions = regions
        self.merged: set[int] = set()
        self.restrictions: dict[int, set[int]] = {}
        self.visited: set[Expr] = set()

    def visit(self, expr: Expr) -> None:
        for node in post_order(expr, done=self.visited):
            self.visited.add(node)
            if isinstance(node, Call) and node.op is END:
                self.merge_at(node)

    def merge_at(self, end: Call) -> None:
        region = self.regions.region_of(end)
        if region is None or region.id in self.merged:
            return
        for begin in list(region.ins):
            parent = self.regions.region_of(begin.args[0])
            if parent is not None and parent.id not in self.merged:
                self.visit(begin.args[0])
        mergeable: list[Region] = []
        correlative: set[Region] = set()
        for begin in list(region.ins):
            parent = self.regions.region_of(begin.args[0])
            if parent is not None:
                if parent not in mergeable:
                    mergeable.append(parent)
                correlative.add(parent)
            else:
                _control_flow_regions(begin.args[0], self.regions, correlative)
        mine = self.restrictions.setdefault(region.id, set())
        for parent in correlative:
            mine |= self.restrictions.get(parent.id, set())
        for parent in mergeable:
            if parent.target != region.target:
                mine.add(parent.id)
                continue
            if parent.id in mine:
                continue
            self.regions.merge(parent, region)
            for ids in self.restrictions.values():
                if parent.id in ids:
                    ids.discard(parent.id)
                    ids.add(region.id)
        self.merged.add(region.id)


class _RemoveInnerAnnotations(ExprMutator):
    def __init__(self, regions: RegionSet) -> None:
        super().__init__()
        self.regions = regions

    def visit_call(self, call: Call) -> Expr:
        inner = call.args[0] if call.op is BEGIN else None
        if isinstance(inner, Call) and inner.op is END:
            here, there = self.regions.region_of(call), self.regions.region_of(inner)
            if here is not None and here is there:
                post = self.result(inner)
                return post.args[0] if isinstance(post, Call) and post.op is END else post
        return self.rebuild(call)


@register_pass
class MergeCompilerRegions(FunctionPass):
    name = "MergeCompilerRegions"
    opt_level = 0
    required = ("InferType",)

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.diagnostics = []
        out = super().run(mod, ctx)
        if out is not mod:
            self.diagnostics.extend(infer_types(out))
        return out

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        try:
            regions = RegionSet.create(func)
        except RegionError as err:
            self.diagnostics.append(Diagnostic(err.message, err.expr.span, Severity.ERROR, source="byoc"))
            return func
        if not regions.regions:
            return func
        _Merger(regions).visit(func)
        out = _RemoveInnerAnnotations(regions).visit(func)
        assert isinstance(out, Function)
        return out
