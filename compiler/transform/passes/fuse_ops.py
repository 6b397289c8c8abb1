"""FuseOps: group operator calls into primitive functions, as TVM's fusion does.

Algorithm (TVM's, reference §8.1; our own code).  Per global function:

1. A dataflow graph in post-order: one node per expression, with the node's pattern
   (an op call has its op's pattern, a scalar constant of a simple dtype is ElemWise, a
   tuple is Tuple, a projection Injective, everything else Opaque) and its consumers with
   the edge pattern (the consumer's; Broadcast becomes ElemWise when the argument has the
   result's shape).  Function parameters and bodies, let/if/match parts are referenced from
   outside the dataflow (`extern`), so they end groups.
2. The post-dominator tree: a node's parent is the least common ancestor of its
   consumers; its pattern is the strongest edge pattern on the way there.
3. Union-find groups, merged into the post-dominator's group in three phases:
   phase 0: an OutEWiseFusable node (conv2d, dense, pool...) joins its post-dominator
   when that relation is ElemWise and every node between is at most Broadcast; ElemWise
   and Broadcast nodes join a post-dominator reached through Injective-or-lower nodes
   (phases 0 and 1); phase 1: Injective nodes and tuples join when every path is
   Injective-or-lower; phase 2: Injective nodes join an intermediate tuple that was fused
   into later injective ops.  Never into a group whose root is a tuple (except phase 2),
   never past `relay.FuseOps.max_depth` nodes (256), never two OutEWiseFusable anchors.
   PassContext opt_level 0 merges nothing: each call becomes its own function.
4. Each group becomes `fn (%p0, ..., Primitive=1) { ... }` called in place; arguments
   from other groups become parameters `p0, p1, ...` in first-use order.
   `annotation.stop_fusion` is a barrier and disappears; primitive functions already in
   the input are left as they are.  Non-computational ops (`on_device`, `call_lowered`,
   the memory and vm dialects: fold_constant.NON_COMPUTATIONAL) stay outside, rebuilt
   around their fused arguments, as TVM's FuseMutator leaves TNonComputational calls.

Why: the pass records, for every operator call, tuple and projection of its input, the
decision and the rule that made it (`FuseOps.fusion_reasons`: expression -> one line, e.g.
"fused into nn.relu's group: ElemWise after OutEWiseFusable (phase 0)", "not fused:
Opaque op", "root of its group (anchor: nn.conv2d, OutEWiseFusable)").  Recording reads
what the partitioner computes anyway and never changes what it fuses; the build carries
the lines into the provenance index and the editor's hover.

External functions (`Compiler=...`, from PartitionGraph) are not fused as host code, as
in TVM; with no vendor codegen behind them, the reference external codegen
(transform/external_codegen.py) decides after the host functions are fused: one kernel
for the whole function, or its body fused like any other.

Expects typed input (required: InferType).  Guarantees: every operator call but the
non-computational ones sits inside a primitive function.

Spans: calls and projections moved into a fused function keep their own spans; the
fused function's span covers them (one document range per source, plus their frontend
layers); the call of the fused function carries the SequentialSpan of every fused
expression, in evaluation order; parameter `%pK` takes the span of the argument it
stands for.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

from ...ir.attrs import Attrs, IntImm
from ...ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from ...ir.functor import ExprMutator, children, post_order
from ...ir.module import IRModule
from ...ir.span import cover, sequential
from ...ir.types import TensorType, TupleType
from ...ops import OpPattern, get_op
from ..external_codegen import reference_codegen
from ..infra import FunctionPass, PassContext, register_pass
from .fold_constant import NON_COMPUTATIONAL

ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, OUT_EWISE, TUPLE, OPAQUE = (OpPattern.COMM_REDUCE, OpPattern.OUT_EWISE_FUSABLE,
                                         OpPattern.TUPLE, OpPattern.OPAQUE)
SIMPLE_CONST_DTYPES = {"int32", "int64", "float32", "float64", "bool"}
RESHAPE_OPS = {"reshape", "expand_dims", "squeeze", "reshape_like", "contrib_reverse_reshape", "dyn.reshape"}
STOP_FUSION = "annotation.stop_fusion"
MAX_DEPTH_KEY = "relay.FuseOps.max_depth"
MAX_ARGS_KEY = "relay.FuseOps.max_function_args"


# --- 1. the dataflow graph ----------------------------------------------------------------

class Node:
    __slots__ = ("index", "expr", "pattern", "outputs", "extern")

    def __init__(self, index: int, expr: Expr) -> None:
        self.index = index
        self.expr = expr
        self.pattern = OPAQUE
        self.outputs: list[tuple[Node, OpPattern]] = []
        self.extern = False


def _prune(expr: Expr) -> Iterable[Expr]:
    """Children the graph and the rewrite visit: not into primitive functions, not ops."""
    if isinstance(expr, Function) and expr.is_primitive:
        return ()
    if isinstance(expr, Call) and isinstance(expr.op, Op):
        return expr.args
    return children(expr)


def op_pattern(call: Call) -> OpPattern:
    if not isinstance(call.op, Op):
        return OPAQUE
    opdef = get_op(call.op.name)
    if opdef is None or opdef.pattern is None:
        return OPAQUE
    return opdef.pattern


def build_graph(func: Function) -> tuple[list[Node], dict[Expr, Node]]:
    nodes: list[Node] = []
    node_of: dict[Expr, Node] = {}
    external: list[Expr] = [func]
    for expr in post_order(func, _prune):
        node = Node(len(nodes), expr)
        nodes.append(node)
        node_of[expr] = node

        def link(child: Expr, pattern: OpPattern, node: Node = node) -> None:
            node_of[child].outputs.append((node, pattern))

        if isinstance(expr, Call):
            pattern = node.pattern = op_pattern(expr)
            if not isinstance(expr.op, Op):
                link(expr.op, OPAQUE)
            out = expr.ty
            for arg in expr.args:
                edge = pattern
                if (edge == BROADCAST and isinstance(out, TensorType) and isinstance(arg.ty, TensorType)
                        and tuple(out.shape) == tuple(arg.ty.shape)):
                    edge = ELEMWISE
                link(arg, edge)
        elif isinstance(expr, Constant):
            simple = expr.known and len(expr.shape) == 0 and expr.dtype in SIMPLE_CONST_DTYPES
            node.pattern = ELEMWISE if simple else OPAQUE
        elif isinstance(expr, Tuple):
            node.pattern = TUPLE
            for f in expr.fields:
                if isinstance(f.ty, TensorType):
                    link(f, INJECTIVE)
                else:
                    external.append(f)
        elif isinstance(expr, TupleGetItem):
            tty = expr.tuple_value.ty
            if isinstance(tty, TupleType) and all(isinstance(f, TensorType) for f in tty.fields):
                node.pattern = INJECTIVE
                link(expr.tuple_value, INJECTIVE)
            else:
                external.append(expr.tuple_value)
        elif isinstance(expr, Function):
            external.extend(expr.params)
            external.append(expr.body)
        else:  # let, if, match, refs: barriers; their parts are used from outside the dataflow
            external.extend(children(expr))
    for expr in external:
        if expr in node_of:
            node_of[expr].extern = True
    return nodes, node_of


# --- 2. the post-dominator tree -------------------------------------------------------------

class DomNode:
    __slots__ = ("node", "parent", "depth", "pattern")

    def __init__(self, node: Node, parent: "DomNode | None", depth: int, pattern: OpPattern) -> None:
        self.node = node
        self.parent = parent
        self.depth = depth
        self.pattern = pattern  # the strongest edge pattern on the way to the parent


def post_dominators(nodes: list[Node]) -> list[DomNode]:
    tree: list[DomNode] = [None] * len(nodes)  # type: ignore[list-item]
    for node in reversed(nodes):  # consumers come after their producers
        if node.extern or not node.outputs:
            tree[node.index] = DomNode(node, None, 1, OPAQUE)
            continue
        box = [ELEMWISE]
        first, edge = node.outputs[0]
        parent: DomNode | None = tree[first.index]
        box[0] = max(box[0], edge)
        for consumer, edge in node.outputs[1:]:
            parent = _lca(parent, tree[consumer.index], box)
            box[0] = max(box[0], edge)
        tree[node.index] = DomNode(node, parent, parent.depth + 1 if parent else 1, box[0])
    return tree


def _lca(a: DomNode | None, b: DomNode | None, box: list) -> DomNode | None:
    while a is not b:
        if a is None or b is None:
            return None
        if a.depth < b.depth:
            box[0] = max(box[0], b.pattern)
            b = b.parent
        elif b.depth < a.depth:
            box[0] = max(box[0], a.pattern)
            a = a.parent
        else:
            box[0] = max(box[0], a.pattern, b.pattern)
            a, b = a.parent, b.parent
    return a


# --- 3. grouping ----------------------------------------------------------------------------------

class Group:
    __slots__ = ("parent", "pattern", "root", "anchor", "size")

    def __init__(self, node: Node) -> None:
        self.parent: Group | None = None
        self.pattern = node.pattern
        self.root = node.expr  # the expression whose value leaves the group
        self.anchor = node.expr if node.pattern == OUT_EWISE else None
        self.size = 1

    def find(self) -> "Group":
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node is not root:  # path compression
            node.parent, node = root, node.parent
        return root


class Partitioner:
    def __init__(self, nodes: list[Node], max_depth: int, max_args: int) -> None:
        self.nodes = nodes
        self.groups = [Group(n) for n in nodes]
        self.max_depth = max_depth
        self.max_args = max_args
        self.fused_by: dict[int, str] = {}  # node index -> the rule that merged it (first wins)
        self.refused: dict[int, str] = {}  # node index -> the last rule that refused it
        self.blocker: Node | None = None  # the node where the last failed check_path stopped

    def partition(self, opt_level: int) -> list[Group]:
        if opt_level > 0:
            tree = post_dominators(self.nodes)
            for phase in range(3):
                self.run_phase(tree, phase)
        else:
            for node in self.nodes:
                self.refused[node.index] = "opt_level 0 fuses nothing (each call is its own function)"
        return self.groups

    def refuse(self, node: Node, why: str) -> None:
        self.refused[node.index] = why

    def refuse_path(self, node: Node, sink: Node, phase: int, allowed: str) -> None:
        """Record a check_path failure: which group on the way stopped it."""
        block = self.blocker
        if block is None:
            return self.refuse(node, f"a path to its post-dominator {_name(sink.expr)} is blocked (phase {phase})")
        group = self.groups[block.index].find()
        anchor = f", anchor {_name(group.anchor)}" if group.anchor is not None else ""
        where = (f"its post-dominator {_name(sink.expr)} is" if block is sink else
                 f"the path to its post-dominator {_name(sink.expr)} passes through {_name(block.expr)},")
        self.refuse(node, f"{where} in a group of pattern {group.pattern.label}{anchor}, which phase "
                          f"{phase} does not allow (only {allowed})")

    def run_phase(self, tree: list[DomNode], phase: int) -> None:
        groups = self.groups
        for node in self.nodes:
            group = groups[node.index]
            dom = tree[node.index]
            if group.pattern == OPAQUE:
                self.refuse(node, "Opaque op")
                continue
            if dom.parent is None:
                self.refuse(node, "its value leaves the dataflow (the function's result, or used by a "
                                  "let/if/match/function)" if node.extern
                            else "its consumers have no common post-dominator")
                continue
            sink = dom.parent.node
            if self.fused_size(node, sink) > self.max_depth:
                self.refuse(node, f"the group would exceed max_depth {self.max_depth} ({MAX_DEPTH_KEY})")
                continue
            if self.max_args and self.fused_args(node, sink) > self.max_args:
                self.refuse(node, f"the group would exceed max_function_args {self.max_args} ({MAX_ARGS_KEY})")
                continue
            sink_group = groups[sink.index]
            if phase == 2:
                if group.pattern > INJECTIVE:
                    continue
                root = sink_group.find()
                if root.pattern == TUPLE:
                    if group.find() is not root:
                        self.refuse(node, "its post-dominator is a tuple that was not fused into later "
                                          "injective ops (phase 2)")
                    continue
                if sink_group.pattern == TUPLE and root.pattern <= INJECTIVE:
                    if self.check_path(node, sink, lambda kind, is_sink: kind <= INJECTIVE):
                        self.commit(node, sink, phase, f"{group.pattern.label} into a tuple that was fused "
                                                       "into later injective ops")
                    else:
                        self.refuse_path(node, sink, phase, "Injective or lower")
                continue
            if group.find() is sink_group.find():
                continue
            if sink_group.pattern == TUPLE:
                self.refuse(node, "its post-dominator is a tuple, which takes producers only in phase 2")
                continue
            if group.pattern == OUT_EWISE:
                if phase == 0 and dom.pattern == ELEMWISE:
                    if self.check_path(node, sink, lambda kind, is_sink: kind <= BROADCAST):
                        rule = ("OutEWiseFusable followed by elemwise ops" if node.pattern == OUT_EWISE
                                else f"{node.pattern.label} after OutEWiseFusable")
                        self.commit(node, sink, phase, rule)
                    else:
                        self.refuse_path(node, sink, phase, "Broadcast or lower after OutEWiseFusable")
                elif phase == 0:
                    who = ("an OutEWiseFusable op" if node.pattern == OUT_EWISE else
                           f"a group with an OutEWiseFusable anchor ({_name(group.find().anchor)})")
                    self.refuse(node, f"{who} joins only an elemwise consumer; the way to "
                                      f"{_name(sink.expr)} is {dom.pattern.label}")
            elif group.pattern <= BROADCAST:
                if dom.pattern <= INJECTIVE or dom.pattern == COMM_REDUCE:
                    if self.check_path(node, sink, _broadcast_path):
                        kind = self.groups[sink.index].find().pattern
                        self.commit(node, sink, phase, f"{group.pattern.label} before {kind.label}")
                    else:
                        self.refuse_path(node, sink, phase, "Injective or lower on the way")
                else:
                    self.refuse(node, f"the way to its post-dominator {_name(sink.expr)} is {dom.pattern.label}")
            elif group.pattern in (INJECTIVE, TUPLE):
                if phase == 1:
                    if self.check_path(node, sink, lambda kind, is_sink: kind <= INJECTIVE):
                        self.commit(node, sink, phase, f"{group.pattern.label}, every path Injective or lower")
                    else:
                        self.refuse_path(node, sink, phase, "Injective or lower")
            elif group.pattern == COMM_REDUCE:  # a reduction never starts a merge; it only absorbs producers
                self.refuse(node, "a CommReduce op absorbs its producers but never joins its consumers")

    def check_path(self, src: Node, sink: Node, ok) -> bool:
        """Does every path from src's consumers to sink pass only groups `ok` accepts?"""
        seen: set[int] = set()
        stack = [c for c, _ in src.outputs]
        while stack:
            node = stack.pop()
            if node.index in seen:
                continue
            seen.add(node.index)
            is_sink = node is sink
            if not ok(self.groups[node.index].find().pattern, is_sink):
                self.blocker = node
                return False
            if not is_sink:
                stack.extend(c for c, _ in node.outputs)
        return True

    def commit(self, src: Node, sink: Node, phase: int, rule: str) -> None:
        """Merge every group from src up to (not including) sink into sink's group, and
        record why for src and for the nodes on the way that had no reason yet."""
        target = self.groups[sink.index]
        into = f"fused into {_name(target.find().root)}'s group: "
        self.fused_by.setdefault(src.index, f"{into}{rule} (phase {phase})")
        seen: set[int] = set()
        stack = [src]
        while stack:
            node = stack.pop()
            if node is sink or node.index in seen:
                continue
            seen.add(node.index)
            self.fused_by.setdefault(node.index, f"{into}on the path from {_name(src.expr)} (phase {phase})")
            self.merge(self.groups[node.index], target)
            stack.extend(c for c, _ in node.outputs)

    def merge(self, child: Group, parent: Group) -> None:
        child, parent = child.find(), parent.find()
        if child is parent:
            return
        parent.size += child.size
        child.parent = parent
        if child.anchor is not None:
            parent.anchor = child.anchor
            parent.pattern = max(child.pattern, parent.pattern)

    def fused_size(self, child: Node, sink: Node) -> int:
        total = self.groups[sink.index].find().size
        seen: set[int] = set()
        stack = [child]
        while stack:
            node = stack.pop()
            if node is sink or node.index in seen:
                continue
            seen.add(node.index)
            total += self.groups[node.index].size
            stack.extend(c for c, _ in node.outputs)
        return total

    def fused_args(self, child: Node, sink: Node) -> int:
        """Inputs the merged group would take: distinct producers outside it."""
        members = {n.index for n in self.nodes
                   if self.groups[n.index].find() in (self.groups[sink.index].find(),
                                                      self.groups[child.index].find())}
        inputs: set[int] = set()
        for n in self.nodes:
            for consumer, _ in n.outputs:
                if consumer.index in members and n.index not in members:
                    inputs.add(n.index)
        return len(inputs)

    def reasons(self) -> dict[Expr, str]:
        """One line per call (of an operator), tuple and projection: the decision and its rule."""
        out: dict[Expr, str] = {}
        for node in self.nodes:
            expr = node.expr
            if not (isinstance(expr, (Tuple, TupleGetItem)) or (isinstance(expr, Call) and isinstance(expr.op, Op))):
                continue
            if isinstance(expr, Call) and expr.op.name == STOP_FUSION:
                out[expr] = "not fused: annotation.stop_fusion is a fusion barrier"
            elif isinstance(expr, Call) and expr.op.name in NON_COMPUTATIONAL:
                out[expr] = f"not fused: {expr.op.name} is not computational and stays outside"
            elif node.index in self.fused_by:
                out[expr] = self.fused_by[node.index]
            else:
                group = self.groups[node.index].find()
                refused = self.refused.get(node.index, "no rule applies")
                if group.root is expr and group.size > 1:
                    anchor = (f"anchor: {_name(group.anchor)}, OutEWiseFusable" if group.anchor is not None
                              else group.pattern.label)
                    out[expr] = f"root of its group ({anchor}); not fused further: {refused}"
                else:
                    out[expr] = f"not fused: {refused}"
        return out


def _name(expr: Expr) -> str:
    if isinstance(expr, Call):
        return expr.op.name if isinstance(expr.op, Op) else "a function call"
    return {Tuple: "a tuple", TupleGetItem: "a tuple projection"}.get(type(expr), type(expr).__name__.lower())


def _broadcast_path(kind: OpPattern, is_sink: bool) -> bool:
    if not is_sink:
        return kind <= INJECTIVE
    return kind <= BROADCAST or kind in (COMM_REDUCE, INJECTIVE, OUT_EWISE)


# --- 4. the rewrite ----------------------------------------------------------------------------

class _GroupInfo:
    __slots__ = ("params", "arguments", "param_of", "members")

    def __init__(self) -> None:
        self.params: list[Var] = []
        self.arguments: list[Expr] = []
        self.param_of: dict[Expr, Var] = {}
        self.members: list[Expr] = []  # original expressions, in evaluation order


class _Fuser(ExprMutator):
    def __init__(self, group_of: dict[Expr, Group], spans: bool = True) -> None:
        super().__init__()
        self.group_of = group_of
        self.spans = spans  # ir.enable_si_builder
        self.info: dict[Group, _GroupInfo] = {}
        for expr, group in group_of.items():
            self.info_for(group.find()).members.append(expr)

    def children(self, expr: Expr) -> Iterable[Expr]:
        return _prune(expr)

    def info_for(self, group: Group) -> _GroupInfo:
        info = self.info.get(group)
        if info is None:
            info = self.info[group] = _GroupInfo()
        return info

    def argument(self, arg: Expr, group: Group) -> Expr:
        """The value of `arg` inside `group`: itself if it is a member, else a parameter."""
        new = self.result(arg)
        if self.group_of[arg].find() is group:
            return new
        info = self.info_for(group)
        param = info.param_of.get(new)
        if param is None:
            param = Var(f"p{len(info.params)}", arg.ty, span=arg.span if self.spans else None)
            info.param_of[new] = param
            info.params.append(param)
            info.arguments.append(new)
        return param

    def visit_call(self, call: Call) -> Expr:
        if not isinstance(call.op, Op):
            return self.rebuild(call)
        if call.op.name == STOP_FUSION:
            return self.result(call.args[0])
        if call.op.name in NON_COMPUTATIONAL:  # annotations (on_device...) stay outside, as in TVM
            return self.rebuild(call)
        group = self.group_of[call].find()
        args = tuple(self.argument(a, group) for a in call.args)
        new = call if all(a is b for a, b in zip(args, call.args)) else dataclasses.replace(call, args=args)
        if group.root is call:
            return self.make_function(group, call, new)
        return new

    def visit_tuple(self, tup: Tuple) -> Expr:
        group = self.group_of[tup].find()
        if group.root is tup:
            return self.rebuild(tup)
        fields = tuple(self.argument(f, group) for f in tup.fields)
        return dataclasses.replace(tup, fields=fields)

    def visit_tuple_get_item(self, item: TupleGetItem) -> Expr:
        group = self.group_of[item].find()
        inner = self.argument(item.tuple_value, group)
        new = dataclasses.replace(item, tuple_value=inner)
        if group.root is item:
            if self.group_of[item.tuple_value].find() is not group:
                return self.rebuild(item)  # isolated: the tuple comes from an opaque op
            return self.make_function(group, item, new)
        return new

    def visit_function(self, func: Function) -> Expr:
        return func if func.is_primitive else self.rebuild(func)

    def make_function(self, group: Group, root: Expr, body: Expr) -> Expr:
        info = self.info_for(group)
        calls = [m for m in info.members if isinstance(m, Call) and isinstance(m.op, Op)
                 and m.op.name != STOP_FUSION]
        attrs = {"Primitive": IntImm(1 if calls else 0)}
        if calls and all(c.op.name in RESHAPE_OPS for c in calls):
            attrs["relay.reshape_only"] = IntImm(1)
        spans = [m.span for m in info.members] if self.spans else []
        func = Function(tuple(info.params), body, root.ty, attrs=Attrs(attrs), span=cover(*spans))
        return Call(func, tuple(info.arguments), span=sequential(*spans), ty=root.ty)


@register_pass
class FuseOps(FunctionPass):
    name = "FuseOps"
    opt_level = 0
    required = ("InferType",)

    def __init__(self, fuse_opt_level: int | None = None) -> None:
        self.fuse_opt_level = fuse_opt_level
        self.fusion_reasons: dict[Expr, str] = {}  # of the last run: input expression -> why (module doc)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.fusion_reasons = {}
        out = super().run(mod, ctx)
        # external functions: no vendor codegen here, ours compiles them (external_codegen.py)
        external = {gv: f for gv, f in out.functions.items() if f.attrs.get("Compiler") is not None}
        changed = {gv: new for gv, f in external.items()
                   if (new := reference_codegen(f, lambda host: self.transform_function(host, out, ctx))) is not f}
        return out.with_functions(changed) if changed else out

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        if func.attrs.get("Compiler") is not None:
            return func
        level = self.fuse_opt_level if self.fuse_opt_level is not None else ctx.opt_level
        nodes, node_of = build_graph(func)
        max_depth = int(ctx.get(MAX_DEPTH_KEY, 256))
        max_args = int(ctx.get(MAX_ARGS_KEY, 0))
        partitioner = Partitioner(nodes, max_depth, max_args)
        groups = partitioner.partition(level)
        self.fusion_reasons.update(partitioner.reasons())
        group_of = {n.expr: groups[n.index] for n in nodes}
        out = _Fuser(group_of, ctx.si_builder_enabled).visit(func)
        assert isinstance(out, Function)
        return out
