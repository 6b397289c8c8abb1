"""PartitionGraph: cut every annotated region out into a global function for its compiler.

As TVM's pass (src/relay/transforms/partition_graph.cc, `PartitionGraph(mod_name="default",
bind_constants=True)`), which is a sequence of steps done here in one pass:

1. FlattenTupleOutputs: `compiler_end((a, b))` becomes `(compiler_end(a), compiler_end(b))`.
2. RemoveDefaultAnnotations: annotations of target `default` go (their regions stay on
   the host).
3. Partition: every region (transform/annotated_regions.py, ids from 0 in post-order per
   function) becomes a global function
       def @tvmgen_default_<target>_<function>_<id>(%<target>_<id>_i<k>: T, ...,
           Primitive=1, Compiler="<target>", global_symbol="tvmgen_default_<target>_<function>_<id>",
           Inline=1) { ... }
   whose parameters are the region's inputs (one per distinct input, named by the index
   of its first `compiler_begin`), and whose result is the region's one output or the
   tuple of its outputs; the region is replaced by a call of it (projections of the call
   for several outputs).  An input that is a constant (or a tuple of constants) is bound
   inside the function instead of passed (`bind_constants`).
4. NameMangleExtFuncs: the global's name and `global_symbol` carry the module prefix
   (`tvmgen_default_`), made fresh through the module's GlobalVarSupply.
5. InferType.

Expects: typed input annotated by AnnotateTarget (and usually MergeCompilerRegions).
Guarantees: typed output without annotations, the same values; every external function
has `Compiler`, `global_symbol`, `Primitive` and `Inline`.

Spans: each expression moved into an external function keeps its span; a parameter takes
the span of the input it stands for; the function's span covers the region's
expressions; the call (and its projections) that replace the region carry the
SequentialSpan of the region's expressions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ...diagnostics import Diagnostic, Severity
from ...ir.attrs import Attrs, IntImm
from ...ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ...ir.functor import ExprMutator, children, post_order
from ...ir.module import IRModule
from ...ir.span import cover, sequential
from ...ir.types import TupleType
from ...typing import infer_types
from ..annotated_regions import BEGIN, END, Region, RegionError, RegionSet
from ..infra import ModulePass, PassContext, register_pass
from ..names import GlobalVarSupply
from ..si_builder import SIBuilder
from .annotate_target import DEFAULT, annotation, target_of


class _FlattenAndDropDefaults(ExprMutator):
    """Steps 1 and 2."""

    def visit_call(self, pre: Call) -> Expr:
        post = self.rebuild(pre)
        if pre.op not in (BEGIN, END):
            return post
        if target_of(pre) == DEFAULT:
            return post.args[0]
        inner = post.args[0]
        if pre.op is END and isinstance(inner, Tuple):
            fields = tuple(annotation(END, f, target_of(pre)) for f in inner.fields)
            return dataclasses.replace(inner, fields=fields)
        return post


@dataclass
class _RegionFunction:
    call: Expr | None = None
    args: list[tuple[Var, Expr]] = field(default_factory=list)
    inputs: dict[Expr, Var] = field(default_factory=dict)  # the expression before the begins -> parameter
    outputs: dict[Expr, Expr] = field(default_factory=dict)  # the end's argument -> what replaces it


class _Partitioner(ExprMutator):
    def __init__(self, regions: RegionSet, supply: GlobalVarSupply, new_functions: dict[GlobalVar, Function]):
        super().__init__()
        self.regions = regions
        self.supply = supply
        self.new_functions = new_functions
        self.meta: dict[Region, _RegionFunction] = {}

    def visit_call(self, pre: Call) -> Expr:
        if pre.op is BEGIN:
            return self.begin(pre)
        if pre.op is END:
            region = self.regions.region_of(pre)
            assert region is not None
            meta = self.meta.setdefault(region, _RegionFunction())
            if meta.call is None:
                self.create_function(region, pre)
            return meta.outputs[pre.args[0]]
        return self.rebuild(pre)

    def begin(self, pre: Call) -> Expr:
        parent = pre.args[0]
        while isinstance(parent, Call) and parent.op in (BEGIN, END):
            parent = parent.args[0]
        region = self.regions.region_of(pre)
        assert region is not None
        meta = self.meta.setdefault(region, _RegionFunction())
        if parent in meta.inputs:
            return meta.inputs[parent]
        index = next(i for i, b in enumerate(region.ins) if b is pre)
        outer = self.result(pre.args[0])
        var = Var(f"{region.target}_{region.id}_i{index}", pre.ty, span=outer.span)
        meta.args.append((var, outer))
        meta.inputs[parent] = var
        return var

    def create_function(self, region: Region, end: Call) -> None:
        meta = self.meta[region]
        fields: list[Expr] = []
        index_of: dict[Expr, int] = {}
        for out in region.outs:
            node = out.args[0]
            if node not in index_of:
                index_of[node] = len(fields)
                fields.append(self.visit(node))
        members = _members(region, list(index_of))
        spans = [n.span for n in members]
        params: list[Var] = []
        call_args: list[Expr] = []
        bound: dict[Var, Expr] = {}
        for var, expr in meta.args:
            if _is_constant(expr):
                bound[var] = expr
            else:
                params.append(var)
                call_args.append(expr)
        body: Expr = fields[0] if len(fields) == 1 else Tuple(tuple(fields), span=cover(*(f.span for f in fields)),
                                                                   ty=TupleType(tuple(f.ty for f in fields)))
        if bound:
            body = _Bind(bound).visit(body)
        gv = self.supply.fresh_global(f"{region.target}_{region.name}_{region.id}")
        attrs = Attrs({"Primitive": IntImm(1), "Compiler": region.target, "global_symbol": gv.name,
                       "Inline": IntImm(1)})
        self.new_functions[gv] = Function(tuple(params), body, body.ty, attrs=attrs, span=cover(*spans))
        span = SIBuilder(sequential(*spans)).create_span()
        call = Call(gv, tuple(call_args), ty=body.ty, span=span)
        meta.call = call
        if len(fields) == 1:
            meta.outputs[next(iter(index_of))] = call
        else:
            for node, i in index_of.items():
                meta.outputs[node] = TupleGetItem(call, i, ty=node.ty, span=span)


def _members(region: Region, outputs: list[Expr]) -> list[Expr]:
    """The region's expressions (not its annotations) in evaluation order."""
    def inside(e: Expr):
        return children(e) if e in region.nodes else ()

    seen: set[Expr] = set()
    found: list[Expr] = []
    for out in outputs:
        for node in post_order(out, inside, seen):
            seen.add(node)
            if node in region.nodes and not (isinstance(node, Call) and node.op in (BEGIN, END)):
                found.append(node)
    return found


def _is_constant(expr: Expr) -> bool:
    return isinstance(expr, Constant) or (isinstance(expr, Tuple) and all(isinstance(f, Constant) for f in expr.fields))


class _Bind(ExprMutator):
    def __init__(self, bound: dict[Var, Expr]) -> None:
        super().__init__()
        self.bound = bound

    def visit_var(self, var: Var) -> Expr:
        return self.bound.get(var, var)


@register_pass
class PartitionGraph(ModulePass):
    name = "PartitionGraph"
    opt_level = 0
    required = ("InferType",)

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.diagnostics = []
        cleaned: dict[GlobalVar, Function] = {}
        for gv, func in mod.functions.items():
            new = _FlattenAndDropDefaults().visit(func)
            if new is not func:
                cleaned[gv] = new  # type: ignore[assignment]
        work = mod.with_functions(cleaned) if cleaned else mod
        supply = GlobalVarSupply(module=work)
        added: dict[GlobalVar, Function] = {}
        changed: dict[GlobalVar, Function] = {}
        for gv, func in work.functions.items():
            try:
                regions = RegionSet.create(func.body, gv.name)
            except RegionError as err:
                self.diagnostics.append(Diagnostic(err.message, err.expr.span, Severity.ERROR, source="byoc"))
                continue
            if not regions.regions:
                continue
            body = _Partitioner(regions, supply, added).visit(func.body)
            changed[gv] = dataclasses.replace(func, body=body)
        if not cleaned and not changed:
            return mod
        out = work.with_functions({**changed, **added})
        self.diagnostics.extend(infer_types(out))
        return out
