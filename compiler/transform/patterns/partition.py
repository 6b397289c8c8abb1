"""Partitioning a function by one pattern: every match becomes a call of a composite function.

    new_body = partition(entry, func.body, composite="mynpu.conv2d_bias_relu")

As TVM's PatternGrouper and PatternPartitioner (src/relay/ir/dataflow_matcher.cc):

1. Matches are looked for from the outputs back to the inputs (reverse post-order), so a
   chain `relu(add(relu(add(...))))` is grouped from its end.  Nothing inside a function
   already partitioned (a composite) is looked at.
2. A match is a group.  Its inputs are the expressions the pattern's parameters bound, in
   the order the pattern meets its parameters (post-order of the pattern), each once; each
   becomes a parameter `%FunctionVar_<g>_<k>` (g counts the groups tried, k the inputs).
   A constant bound by a `Constants` parameter, and a constant the pattern writes, stay
   inside the group instead (TVM's EmbedConst).
3. A group is dropped when an expression of it (not an input) is already in another group,
   or when an inner expression is also used outside the group (TVM keeps the latter when
   the outside use flows back into the group's root; here it is always dropped, so no
   expression is ever computed twice).
4. The group's root is replaced by `Call(fn(params) { body }, inputs)` with the function
   attributes `PartitionedFromPattern` (the op names of the body in post-order, each
   followed by `_`, as TVM writes it: `nn.conv2d_nn.bias_add_nn.relu_`) and `Composite`.

Spans: each expression copied into the composite function keeps its own span; the
function's span covers them all; the call that replaces the group carries the
SequentialSpan of the group's expressions (root last, in evaluation order).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ...ir.attrs import Attrs
from ...ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from ...ir.functor import FIELDS, ExprMutator, children, post_order
from ...ir.span import cover, sequential
from ..si_builder import SIBuilder
from .matcher import Match, match
from .table import PatternEntry


@dataclass(eq=False)
class Group:
    root: Expr
    match: Match
    args: list[Expr]  # the inputs, in parameter order
    function: Function
    name: str  # PartitionedFromPattern
    members: list[Expr] = field(default_factory=list)  # the expressions replaced, in evaluation order


def partitioned_from_pattern(body: Expr) -> str:
    parts: list[str] = []
    for node in post_order(body):
        if isinstance(node, Call):
            parts.append(node.op.name + "_" if isinstance(node.op, Op) else "Call_")
        elif isinstance(node, Tuple):
            parts.append("Tuple_")
        elif isinstance(node, TupleGetItem):
            parts.append(f"TupleGetItem{node.index}_")
        elif isinstance(node, Function):
            parts.append("Function")
        elif isinstance(node, Let):
            parts.append("Let_")
        elif isinstance(node, If):
            parts.append("If_")
    return "".join(parts)


class _Grouper:
    def __init__(self, entry: PatternEntry, body: Expr) -> None:
        self.entry = entry
        self.order = list(post_order(body))
        self.users: dict[Expr, list[Expr]] = {}
        for node in self.order:
            for child in children(node):
                self.users.setdefault(child, []).append(node)
        self.group_of: dict[Expr, Group] = {}
        self.graph_number = 0

    def groups(self) -> dict[Expr, Group]:
        skip: set[Expr] = set()
        roots: dict[Expr, Group] = {}
        for node in reversed(self.order):
            if node in self.group_of:
                continue
            if isinstance(node, Function) and "PartitionedFromPattern" in node.attrs:
                skip.add(node)
                skip.update(post_order(node.body))
            if node in skip or not isinstance(node, (Call, Tuple, TupleGetItem)):
                continue
            found = match(self.entry, node)
            if found is not None:
                group = self.make_group(node, found)
                if group is not None:
                    roots[node] = group
        return roots

    def make_group(self, root: Expr, found: Match) -> Group | None:
        inputs: dict[Expr, Var] = {}
        args: list[Expr] = []
        for pnode in post_order(self.entry.func.body):
            if not isinstance(pnode, Var):
                continue  # constants the pattern writes are embedded
            bound = found.nodes.get(pnode)
            if bound is None or isinstance(bound, (Op, Function)) or bound in inputs:
                continue
            if pnode in self.entry.constants and isinstance(bound, Constant):
                continue
            inputs[bound] = Var(f"FunctionVar_{self.graph_number}_{len(args)}", bound.ty, span=bound.span)
            args.append(bound)
        self.graph_number += 1
        memo: dict[Expr, Expr] = {}
        body = _extract(root, inputs, memo)
        interior = [e for e in memo if e not in inputs and not isinstance(e, (Op, Function, Constant, GlobalVar, Var))]
        inside = set(memo)
        for node in interior:
            if node in self.group_of:
                return None  # overlaps a group made before
            if node is not root and any(u not in inside for u in self.users.get(node, ())):
                return None  # an inner value is used outside the group
        inner = set(interior)
        members = [e for e in post_order(root, _stop_at(inputs)) if e in inner]
        spans = [e.span for e in members]
        func = Function(tuple(inputs[a] for a in args), body, None, span=cover(*spans))  # no ret_type, as TVM
        group = Group(root, found, args, func, partitioned_from_pattern(body), members)
        for node in interior:
            self.group_of[node] = group
        return group


def _stop_at(inputs: dict[Expr, Var]):
    return lambda e: () if e in inputs else children(e)


def _extract(expr: Expr, inputs: dict[Expr, Var], memo: dict[Expr, Expr]) -> Expr:
    """`expr` down to the inputs, rebuilt with each input replaced by its parameter."""
    for node in post_order(expr, _stop_at(inputs)):
        if node in inputs:
            memo[node] = inputs[node]
            continue
        changes = {}
        for name in _fields(node):
            old = getattr(node, name)
            new = tuple(memo.get(e, e) for e in old) if isinstance(old, tuple) else memo.get(old, old)
            if new is not old and new != old:
                changes[name] = new
        memo[node] = dataclasses.replace(node, **changes) if changes else node
    return memo[expr]


def _fields(node: Expr) -> tuple[str, ...]:
    return tuple(name for name, _ in FIELDS.get(type(node), ()))


class _Partitioner(ExprMutator):
    def __init__(self, roots: dict[Expr, Group], composite: str) -> None:
        super().__init__()
        self.roots = roots
        self.composite = composite

    def _replace(self, node: Expr) -> Expr:
        group = self.roots[node]
        attrs = Attrs({"PartitionedFromPattern": group.name, "Composite": self.composite})
        func = dataclasses.replace(group.function, attrs=attrs)
        args = tuple(self.result(a) for a in group.args)
        span = SIBuilder(sequential(*(m.span for m in group.members))).create_span()
        return Call(func, args, ty=node.ty, span=span)

    def visit_call(self, call: Call) -> Expr:
        return self._replace(call) if call in self.roots else self.rebuild(call)

    def visit_tuple(self, tup: Tuple) -> Expr:
        return self._replace(tup) if tup in self.roots else self.rebuild(tup)

    def visit_tuple_get_item(self, item: TupleGetItem) -> Expr:
        return self._replace(item) if item in self.roots else self.rebuild(item)


def partition(entry: PatternEntry, body: Expr, composite: str) -> Expr:
    """`body` with every group of `entry`'s matches replaced by a composite call."""
    roots = _Grouper(entry, body).groups()
    if not roots:
        return body
    return _Partitioner(roots, composite).visit(body)
