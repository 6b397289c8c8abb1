"""The machinery of TVM's CombineParallel* passes (src/relay/transforms/combine_parallel_op.cc).

Not a pass: the base the passes build on (combine_parallel_conv2d.py, _dense.py,
_batch_matmul.py, combine_parallel_op_batch.py).

Algorithm, as TVM's:

1. Find (`find_groups`): walk the function in post-order, recording for each expression
   the calls that consume it.  A call of the combined op that the combiner supports
   (`is_supported`) is recorded as a consumer of its first argument only, and that
   argument becomes a root.  For each root (in the order they were first met), each of
   its consumers that is the combined op starts a branch: the op, then while the last
   call of the branch has exactly one consuming call whose op is elementwise or
   broadcast (pattern <= BROADCAST), that call.  Branches go into the first group of the
   root whose first op `can_combine` with theirs, else into a new group.
2. Combine each group of at least `min_num_branches` branches: `make_combined_op`
   makes the one call for the group's roots; then, depth by depth (up to the length of
   the shortest branch), while every branch has at that depth the same op, equal
   attributes, the same number of arguments, reads the previous depth at the same
   argument position, and every other argument `is_arg_compatible`, the calls of that
   depth are combined too (`make_following_call`).  `update_outputs` then maps the
   last combined call of each branch to its share of the combined result.
3. Substitute (TVM's ExprSubst): every mapped expression is replaced by its share, and
   the share itself is walked with the same memo, so a group that reads another
   group's branches reads their shares.

Spans: the combined call (and the concatenated or stacked arguments made for it) takes
the SequentialSpan of the calls it replaces, one per branch at that depth; each share
(the slice, or split-and-squeeze, taken out of the combined result) takes the span of
the call of its branch it stands for.  New nodes are untyped until the next InferType.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ...ir.attrs import Attrs, IntImm
from ...ir.expr import Call, Expr, Function, Op, op
from ...ir.functor import ExprMutator, ExprVisitor, children
from ...ir.structural_equal import structural_equal
from ...ir.types import TensorType
from ...ops import get_op
from ...ops.registry import OpPattern
from ..si_builder import SIBuilder

Branch = list[Call]
Group = list[Branch]


def make(name: str, args: Sequence[Expr], **attrs: Any) -> Call:
    """A new call of `name`, without span or type; attributes equal to the op's default
    are not written (as the printer leaves them out)."""
    defaults = {a.name: a.default for a in get_op(name).attrs}
    written = {}
    for key, value in attrs.items():
        if key in defaults and _plain(value) == _plain(defaults[key]):
            continue
        written[key] = _ir(value)
    return Call(op(name), tuple(args), Attrs(written))


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return int(value) if isinstance(value, IntImm) else value


def _ir(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (str, IntImm)):
        return value
    if isinstance(value, int):
        return IntImm(value)
    if isinstance(value, (list, tuple)):
        return tuple(_ir(v) for v in value)
    return value


def tensor_type(e: Expr) -> TensorType | None:
    return e.ty if isinstance(e.ty, TensorType) else None


def static_int(dim: Any) -> int | None:
    return dim if isinstance(dim, int) else None


def op_name(e: Expr) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def attrs_equal(a: Call, b: Call) -> bool:
    """Equal attributes, defaults filled in (TVM compares attribute objects)."""
    opdef = get_op(op_name(a) or "")
    if opdef is None:
        return structural_equal(a.attrs, b.attrs)
    try:
        return dict(opdef.normalize_attrs(a.attrs)) == dict(opdef.normalize_attrs(b.attrs))
    except Exception:  # noqa: BLE001 -- a bad attribute: compare as written
        return structural_equal(a.attrs, b.attrs)


class _Consumers(ExprVisitor):
    """The calls reading each expression, in post-order; roots in the order first met."""

    def __init__(self, op_name_: str, is_supported) -> None:
        super().__init__()
        self.op_name = op_name_
        self.is_supported = is_supported
        self.roots: dict[Expr, None] = {}
        self.consumers: dict[Expr, list[Call]] = {}

    def visit_call(self, call: Call) -> None:
        if op_name(call) == self.op_name and call.args and self.is_supported(call):
            self.roots.setdefault(call.args[0])
            self.consumers.setdefault(call.args[0], []).append(call)
        else:
            for arg in call.args:
                self.consumers.setdefault(arg, []).append(call)


class _Substitute(ExprMutator):
    """ExprSubst: mapped expressions replaced by their value, itself walked."""

    def __init__(self, subst: dict[Expr, Expr]) -> None:
        super().__init__()
        self.subst = subst

    def children(self, expr: Expr):
        return (self.subst[expr],) if expr in self.subst else children(expr)

    def _dispatch(self, node: Expr) -> Expr:
        if node in self.subst:
            return self.memo[self.subst[node]]
        return super()._dispatch(node)


@dataclass
class ParallelOpCombiner:
    """One combining pass's rules; subclasses fill in the hooks named in the module note."""

    op_name: str
    min_num_branches: int

    # --- hooks -----------------------------------------------------------------------
    def is_supported(self, call: Call) -> bool:
        raise NotImplementedError

    def can_combine(self, a: Call, b: Call) -> bool:
        raise NotImplementedError

    def make_combined_op(self, group: Group) -> Expr | None:
        raise NotImplementedError

    def is_arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        raise NotImplementedError

    def make_following_call(self, data: Expr, group: Group, depth: int, parent: int) -> Expr:
        raise NotImplementedError

    def update_outputs(self, data: Expr, group: Group, depth: int, subst: dict[Expr, Expr]) -> None:
        raise NotImplementedError

    # --- the walk --------------------------------------------------------------------
    def combine(self, func: Function) -> Function:
        subst: dict[Expr, Expr] = {}
        for group in self.find_groups(func):
            if len(group) >= self.min_num_branches:
                try:
                    self.combine_group(group, subst)
                except (ValueError, TypeError, AttributeError):  # a dynamic extent: left alone
                    continue
        if not subst:
            return func
        return _Substitute(subst).visit(func)

    def find_groups(self, func: Function) -> list[Group]:
        def supported(call: Call) -> bool:
            try:
                return self.is_supported(call)
            except Exception:  # noqa: BLE001 -- untyped or malformed: not combined
                return False

        finder = _Consumers(self.op_name, supported)
        finder.visit(func)
        groups: list[Group] = []
        for root in finder.roots:
            first = len(groups)
            for call in finder.consumers[root]:
                if op_name(call) != self.op_name:
                    continue
                branch = self._branch(call, finder.consumers)
                for group in groups[first:]:
                    if self._can_combine(call, group[0][0]):
                        group.append(branch)
                        break
                else:
                    groups.append([branch])
        return groups

    def _can_combine(self, a: Call, b: Call) -> bool:
        try:
            return self.can_combine(a, b)
        except Exception:  # noqa: BLE001 -- an untyped operand: not combined
            return False

    @staticmethod
    def _branch(call: Call, consumers: dict[Expr, list[Call]]) -> Branch:
        branch = [call]
        while len(users := consumers.get(branch[-1], ())) == 1:
            opdef = get_op(op_name(users[0]) or "")
            if opdef is None or opdef.pattern is None or opdef.pattern > OpPattern.BROADCAST:
                break
            branch.append(users[0])
        return branch

    def combine_group(self, group: Group, subst: dict[Expr, Expr]) -> None:
        combined = self.make_combined_op(group)
        if combined is None:
            return
        _fill(combined, [b[0] for b in group])
        depth = min(len(b) for b in group)
        level = 1
        while level < depth:
            call = group[0][level]
            parent = next((i for i, a in enumerate(call.args) if a is group[0][level - 1]), None)
            if parent is None or not self.check_level(group, level, parent):
                break
            combined = self.make_following_call(combined, group, level, parent)
            _fill(combined, [b[level] for b in group])
            level += 1
        shares: dict[Expr, Expr] = {}
        self.update_outputs(combined, group, level - 1, shares)
        for old, share in shares.items():
            SIBuilder(old).recursively_fill_span(share, inputs=[combined])
        subst.update(shares)

    def check_level(self, group: Group, depth: int, parent: int) -> bool:
        call = group[0][depth]
        for branch in group[1:]:
            other = branch[depth]
            if other.op is not call.op or len(other.args) != len(call.args) or not attrs_equal(other, call):
                return False
            if other.args[parent] is not branch[depth - 1]:
                return False
            for i in range(len(call.args)):
                if i != parent and not self._arg_compatible(call, other, i):
                    return False
        return True

    def _arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        try:
            return self.is_arg_compatible(a, b, index)
        except Exception:  # noqa: BLE001 -- an untyped operand: not combined
            return False


def _fill(combined: Expr, replaced: list[Call]) -> None:
    """The combined call and the arguments made for it take the spans of the calls it
    replaces; the walk stops at the operands those calls already had (and at the combined
    call of the previous depth, which has its span)."""
    inputs = [a for call in replaced for a in call.args]
    SIBuilder([c.span for c in replaced]).recursively_fill_span(combined, inputs=inputs)
