"""The regions that `compiler_begin`/`compiler_end` annotations delimit in a function.

As TVM's AnnotatedRegionSet (src/relay/analysis/annotated_region_set.cc): walking the
function in post-order, each `compiler_begin` opens a region of its own (ids count from
0 in that order); an expression joins the region of its arguments (merging them when
they are in several: every argument not closed by a `compiler_end` must be in one);
a `compiler_end` closes the region of its argument.  A region keeps its target, its
expressions, its inputs (the begins) and outputs (the ends), in the order met.

    regions = RegionSet.create(func.body, func_name="main")
    regions.region_of(expr)       # the Region holding expr, or None
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.expr import Call, Expr, If, Let, Op, RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, op
from ..ir.functor import post_order

BEGIN = op("annotation.compiler_begin")
END = op("annotation.compiler_end")


class RegionError(Exception):
    """Annotations that do not delimit regions (an end without its begin, mixed arguments)."""

    def __init__(self, message: str, expr: Expr) -> None:
        super().__init__(message)
        self.message = message
        self.expr = expr


@dataclass(eq=False)
class Region:
    id: int
    target: str
    func_name: str
    nodes: set[Expr] = field(default_factory=set)
    ins: list[Call] = field(default_factory=list)
    outs: list[Call] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.func_name


class RegionSet:
    def __init__(self) -> None:
        self.regions: list[Region] = []
        self._next_id = 0
        self._of: dict[Expr, Region] = {}

    def region_of(self, expr: Expr) -> Region | None:
        return self._of.get(expr)

    def make_region(self, func_name: str, target: str) -> Region:
        region = Region(self._next_id, target, func_name)
        self._next_id += 1
        self.regions.append(region)
        return region

    def add(self, region: Region, expr: Expr) -> None:
        region.nodes.add(expr)
        self._of[expr] = region

    def merge(self, src: Region, dest: Region) -> None:
        """Move `src` into `dest`; inputs of dest fed by src's expressions are no longer inputs."""
        if src is dest:
            return
        for node in src.nodes:
            self._of[node] = dest
        dest.nodes |= src.nodes
        dest.ins.extend(src.ins)
        dest.outs.extend(src.outs)
        inner = [b for b in dest.ins if b.args[0] in src.nodes]
        for begin in inner:
            end = begin.args[0]
            dest.outs = [o for o in dest.outs if o is not end]
            dest.ins = [b for b in dest.ins if b is not begin]
        self.regions = [r for r in self.regions if r is not src]

    def add_to_region(self, dest: Region, expr: Expr) -> None:
        src = self.region_of(expr)
        if src is not None:
            self.merge(src, dest)
        else:
            self.add(dest, expr)

    @staticmethod
    def create(expr: Expr, func_name: str = "default") -> "RegionSet":
        regions = RegionSet()
        for node in post_order(expr):
            regions._visit(node, func_name)
        return regions

    def _visit(self, node: Expr, func_name: str) -> None:
        if isinstance(node, Call):
            if node.op is BEGIN:
                region = self.make_region(func_name, str(node.attrs.get("compiler")))
                self.add(region, node)
                region.ins.append(node)
            elif node.op is END:
                region = self.region_of(node.args[0])
                if region is None:
                    raise RegionError("a compiler_end without a region (no compiler_begin before it)", node)
                self.add(region, node)
                region.outs.append(node)
            else:
                self._join_args(node, node.args)
        elif isinstance(node, Tuple):
            self._join_args(node, node.fields)
        elif isinstance(node, TupleGetItem):
            self._join_args(node, (node.tuple_value,))
        elif isinstance(node, Let):
            self._join_args(node, (node.var, node.value, node.body))
        elif isinstance(node, If):
            self._join_args(node, (node.cond, node.true_branch, node.false_branch))
        elif isinstance(node, (RefCreate, RefRead)):
            self._join_args(node, (node.value if isinstance(node, RefCreate) else node.ref,))
        elif isinstance(node, RefWrite):
            self._join_args(node, (node.ref,))

    def _join_args(self, expr: Expr, args: tuple[Expr, ...]) -> None:
        open_args = [a for a in args if not (isinstance(a, Call) and a.op is END)]
        region = next((r for r in map(self.region_of, open_args) if r is not None), None)
        for arg in open_args:
            found = self.region_of(arg)
            if (found is None) != (region is None):
                raise RegionError("arguments of one expression are partly inside a region and partly not "
                                  "(every input of an annotated call needs a compiler_begin)", expr)
            if region is not None and found is not region:
                self.merge(found, region)  # type: ignore[arg-type]
        if region is not None:
            self.add_to_region(region, expr)


def is_annotation(expr: Expr, kind: Op) -> bool:
    return isinstance(expr, Call) and expr.op is kind
