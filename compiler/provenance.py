"""Provenance: what each source expression became in every pass (DESIGN.md, "Provenance").

Built from the spans of the build's snapshots alone: a node of any snapshot whose span has
a document range of the input source is an appearance of the source expression with that
range.  One index answers hover, `relaylens explain`, the pass view and the code lenses:

    prov = Provenance(build_result)
    key = prov.key_at(offset)                 # the innermost source expression there
    for stage, appearances in prov.trace(key):   # per snapshot: nodes and printed ranges
        ...
    prov.fused_function(key)                  # (name, Function) it ended in, after FuseOps
    prov.fusion_reason(key)                   # why FuseOps fused it there, or did not ("" if unknown)
    prov.movers(key)                          # kernels that only move a value in or out of it
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .ir.expr import Call, Constant, Expr, Function, Let, Node, Op, Tuple, TupleGetItem, Var
from .ir.functor import post_order
from .ir.module import IRModule
from .ir.span import LayerSpan, Source, Span, node_layers
from .printer import Printer

if TYPE_CHECKING:  # build.py holds BuildResult and imports this module
    from .build import BuildResult

Key = tuple[int, int]  # [start, end) of a document range in the input source
_COMMENT = re.compile(r"\s*/\*.*?\*/")  # the printer's type annotations inside a snippet

# the kinds an editor user points at; binders and leaves are not "what became of"
TRACED = (Call, Tuple, TupleGetItem, Constant, Function)


@dataclass
class Stage:
    index: int
    pass_name: str
    changed: bool
    module: IRModule
    by_key: dict[Key, list[Expr]] = field(default_factory=dict)
    _printed: tuple[str, dict] | None = None

    def printed(self) -> tuple[str, dict[Node, tuple[int, int]]]:
        """The snapshot's text (with types) and where each node is in it; printed once."""
        if self._printed is None:
            result = Printer(types=True).print_module(self.module)
            self._printed = (result.text, result.locations)
        return self._printed

    def snippet(self, node: Expr, width: int = 100) -> tuple[int, str]:
        """(1-based line in the snapshot, the first line of the node's text, without the
        `/* ty=... */` comments of its operands)."""
        text, locations = self.printed()
        where = locations.get(node)
        if where is None:
            return 0, ""
        start, end = where
        line = text.count("\n", 0, start) + 1
        first = _COMMENT.sub("", text[start:end].split("\n", 1)[0])
        return line, first if len(first) <= width else first[: width - 1] + "…"


class Provenance:
    def __init__(self, build: BuildResult, source: Source | None = None) -> None:
        self.build = build
        self.source = source if source is not None else _input_source(build)
        self.stages = [Stage(i, s.pass_name, s.changed, s.module) for i, s in enumerate(build.snapshots)]
        for stage in self.stages:
            self._index(stage)
        # A source expression's fused function: the first one that holds a call of the
        # expression's own op with its span, else the first one that holds anything with
        # its span (a conv whose weight FoldScaleAxis scales at run time lives in the
        # conv's function, not in the one that scales the weight) but a kernel that only
        # moves a value in or out of it (MOVES; `movers`), which speaks for it only when
        # nothing else does.
        self.fused: dict[Key, tuple[str, Function]] = {}
        self._kernel_reads: tuple[dict[Expr, list[Call]], dict[Key, list[Var]]] | None = None  # readers()
        same_op: dict[Key, tuple[str, Function]] = {}
        moved: dict[Key, tuple[str, Function]] = {}
        self._movers: dict[Key, list[tuple[str, str, Function]]] = {}
        for func, name in build.fused_names.items():
            moving = self.moved_value(func)
            for node in post_order(func):
                for key in self.keys_of(node):
                    if moving is not None:
                        moved.setdefault(key, (name, func))
                        continue
                    self.fused.setdefault(key, (name, func))
                    if key not in same_op and _same_op(node, self.source_node(key)):
                        same_op[key] = (name, func)
            if moving is not None:
                for key in {k for node in post_order(func.body) if not isinstance(node, Var) for k in self.keys_of(node)}:
                    self._movers.setdefault(key, []).append((moving, name, func))
        self.fused.update(same_op)
        for key, found in moved.items():
            self.fused.setdefault(key, found)
        # FuseOps records its input in evaluation order: when several nodes carry one source
        # expression (a rewrite into several ops), the last computes its value and speaks for
        # it; a layout_transform that only moves it (MOVES) speaks only when nothing else does
        self.fusion: dict[Key, str] = {}
        moves: dict[Key, str] = {}
        for node, reason in build.fusion_reasons.items():
            moving = moves_only(node)
            for key in self.keys_of(node):
                if moving:
                    moves[key] = reason
                else:
                    self.fusion[key] = reason
        for key, reason in moves.items():
            self.fusion.setdefault(key, reason)

    def keys_of(self, node: Expr) -> list[Key]:
        if node.span is None:
            return []
        return [(o.start, o.end) for o in node.span.origins()
                if isinstance(o, Span) and o.source is self.source]

    def _index(self, stage: Stage) -> None:
        done: set = set()
        for func in stage.module.functions.values():
            for node in post_order(func, done=done):
                done.add(node)
                if isinstance(node, TRACED) or (isinstance(node, Var) and stage.index == 0):
                    for key in self.keys_of(node):
                        stage.by_key.setdefault(key, []).append(node)
        if stage.index == 0:  # a binder with its value's range (`ref_write(%r, 1f); ...`, a `let`
            for key, nodes in stage.by_key.items():  # of its own): the value speaks for the range
                if len(nodes) > 1 and any(isinstance(n, Var) for n in nodes):
                    nodes[:] = [n for n in nodes if not isinstance(n, Var)] or nodes

    # queries ---------------------------------------------------------------------------
    def key_at(self, offset: int) -> Key | None:
        """The innermost traced source expression whose range holds `offset`."""
        best: Key | None = None
        for start, end in self.stages[0].by_key if self.stages else ():
            if start <= offset < end and (best is None or end - start < best[1] - best[0]):
                best = (start, end)
        return best

    def key_on_line(self, offset: int, line_start: int, line_end: int) -> Key | None:
        """What a position on the line [line_start, line_end) points at: the innermost traced
        expression holding it when that starts on the line; else (the position is on the
        line's indentation or on `%10 = `, before the statement's value, where only the
        whole function holds it) the outermost expression starting first on the line at or
        after it, or the innermost holding it when the line starts none."""
        best = self.key_at(offset)
        if best is not None and best[0] >= line_start:
            return best
        after = [k for k in (self.stages[0].by_key if self.stages else ()) if offset <= k[0] < line_end]
        return min(after, key=lambda k: (k[0], -k[1])) if after else best

    def source_node(self, key: Key) -> Expr | None:
        nodes = self.stages[0].by_key.get(key) if self.stages else None
        return nodes[0] if nodes else None

    def trace(self, key: Key) -> list[tuple[Stage, list[Expr]]]:
        return [(stage, stage.by_key.get(key, [])) for stage in self.stages]

    def changes(self, key: Key) -> list[tuple[Stage, list[Expr]]]:
        """The stages where the expressions carrying `key` differ from the stage before.

        An expression a pass only rebuilt (a new object because an operand was rebuilt,
        which renumbers it in the printed text) has not changed: two appearances are the
        same when they are the same object, or have the same kind, operator, attributes
        and type, and operands that are the same source expressions (`_local_shape`)."""
        out = []
        previous: list | None = None
        for stage, nodes in self.trace(key):
            shapes = [self._local_shape(n) for n in nodes]
            if previous is not None and shapes != previous:
                out.append((stage, nodes))
            previous = shapes
        return out

    def _local_shape(self, node: Expr) -> tuple:
        """What a node is, itself: its kind, head (operator and attributes, a projection's
        index) and type, and each operand named by the source expressions it carries (by
        identity when it carries none).  Constants and functions are themselves."""
        if isinstance(node, (Constant, Function)):
            return (id(node),)
        if isinstance(node, Call):
            head = (node.op.name if isinstance(node.op, Op) else self._operand(node.op), tuple(node.attrs.items()))
            operands = node.args
        elif isinstance(node, TupleGetItem):
            head, operands = node.index, (node.tuple_value,)
        elif isinstance(node, Tuple):
            head, operands = len(node.fields), node.fields
        else:
            return (id(node),)
        return (type(node), head, node.ty, tuple(self._operand(a) for a in operands))

    def _operand(self, node: Expr) -> tuple:
        keys = self.keys_of(node)
        return tuple(keys) if keys else (id(node),)

    def ordered(self, key: Key, nodes: list[Expr]) -> list[Expr]:
        """`nodes` (appearances of `key`) with the ones that speak for it first: a call of
        the source expression's own op, then other computations, then constants, then the
        layout_transforms that only move its value (MOVES) — a conv2d "became" the conv2d,
        not the expand_dims that FoldScaleAxis put before it."""
        source = self.source_node(key)

        def rank(node: Expr) -> int:
            if _same_op(node, source):
                return 0
            return 3 if moves_only(node) else 2 if isinstance(node, Constant) else 1
        return sorted(nodes, key=rank)

    def fused_function(self, key: Key) -> tuple[str, Function] | None:
        return self.fused.get(key)

    def moved_value(self, func: Function) -> str | None:
        """None unless the fused function only moves a value between layouts (every call
        in it a MOVES op), or only puts a parameter in the shape and layout a call reads it
        in (RESHAPES, one of them a MOVES op: CanonicalizeOps makes an unbound bias's
        bias_add an expand_dims and an add, AlterOpLayout moves the expanded bias into the
        conv's layout, and FuseOps leaves the two a kernel of their own, carrying the
        bias_add's range while the add is in the conv's kernel); then `%name` when the
        value is a variable of the source (a parameter: a weight left unbound, the model's
        input), else "" (a result taken back to its old layout).  Such a kernel runs at
        every inference and carries the range of the call that reads the variable, or of
        the expression that reads the result (layout_rewrite.py's span contract); it is one
        of that expression's `movers`, not its fused function."""
        calls = [node for node in post_order(func.body) if isinstance(node, Call)]
        if not calls or not any(moves_only(c) for c in calls):
            return None
        sources = [self.source_node(k) for k in self.keys_of(func.params[0])] if len(func.params) == 1 else []
        parameter = next((f"%{v.name}" for v in sources if isinstance(v, Var)), None)
        if all(moves_only(c) for c in calls):
            return parameter or ""
        return parameter if reshapes_only(func) else None

    def parameter(self, key: Key) -> str | None:
        """`@main` when the source expression `key` is a parameter of @main (a weight left
        unbound, the model's input), the name of its global function for a parameter of
        another; None for anything else.  No pass removes or rewrites a parameter: it is a
        binder, traced through the kernels that read it (`readers`), not through passes."""
        node = self.source_node(key)
        if not isinstance(node, Var) or not self.stages:
            return None
        for gv, func in self.stages[0].module.functions.items():
            if isinstance(func, Function) and any(p is node for p in func.params):
                return f"@{gv.name}"
        return None

    def let_value(self, key: Key) -> Key | None:
        """For a variable that a `let` binds, the source range of its value (what the passes
        made of the variable is what they made of that); None for anything else, and for a
        binder that shares its value's range (`ref_write(%r, 1f); ...` is a `let` of its own)."""
        node = self.source_node(key)
        if not isinstance(node, Var):
            return None
        for func in self.stages[0].module.functions.values():
            for let in post_order(func):
                if isinstance(let, Let) and let.var is node:
                    keys = [k for k in self.keys_of(let.value) if k != key and k in self.stages[0].by_key]
                    return keys[0] if keys else None
        return None

    def readers(self, key: Key) -> list[tuple[str, Function, tuple[tuple[str, Function], ...]]]:
        """The kernels of the final module that read the parameter `key` at every run:
        (fused name, Function, the kernels on the way), where a kernel on the way only
        reshapes or moves the value for its reader (RESHAPES: AlterOpLayout's
        layout_transform of a weight, the expand_dims of a bias) and so is followed to what
        reads its result.  In the order the final module calls them; [] for anything that
        is not a parameter, or one no kernel reads (passed straight to the output)."""
        if self.parameter(key) is None:
            return []
        if self._kernel_reads is None:  # once per build: the final module's kernel calls by operand
            self._kernel_reads = ({}, {})
            readers_of, variables = self._kernel_reads
            done: set = set()
            for func in self.stages[-1].module.functions.values():
                for node in post_order(func, done=done):
                    done.add(node)
                    if isinstance(node, Var):
                        for k in self.keys_of(node):
                            variables.setdefault(k, []).append(node)
                    if isinstance(node, Call) and node.op in self.build.fused_names:
                        for arg in node.args:
                            for value in arg.fields if isinstance(arg, Tuple) else (arg,):
                                readers_of.setdefault(value, []).append(node)
        readers_of, variables = self._kernel_reads
        out = []
        todo = [(v, ()) for v in variables.get(key, [])]
        while todo:
            value, via = todo.pop(0)
            for call in readers_of.get(value, []):
                name = self.build.fused_names[call.op]
                if reshapes_only(call.op):
                    todo.append((call, (*via, (name, call.op))))
                else:
                    out.append((name, call.op, via))
        return out

    def movers(self, key: Key) -> list[tuple[str, str, Function]]:
        """(`%parameter` or "", fused name, Function) of each kernel that only moves a value
        into the layout the source expression `key` reads it in, or its result out of it,
        at every inference (`moved_value`)."""
        return self._movers.get(key, [])

    def fusion_reason(self, key: Key) -> str:
        """Why FuseOps put the expression where it is (compiler/transform/passes/fuse_ops.py),
        "" when FuseOps did not run or saw no call, tuple or projection with that range."""
        return self.fusion.get(key, "")

    def display_name(self, func: Function, width: int = 72) -> str:
        """A fused function as a person names it: the operators of the source expressions
        it computes, in evaluation order (`nn.` dropped), then its first frontend layer:
        "conv2d + batch_norm + relu · /conv1/Conv".  A call a pass made to move data
        (AlterOpLayout's layout_transform, which carries the span of what it moves) is named
        by its own operator.  The `tvmgen_…` symbol stays its name in the IR; this is for
        lenses, tabs and tables."""
        ops: dict[str, None] = {}
        layers: dict[str, None] = {}
        moving = self.moved_value(func) is not None
        for node in post_order(func.body):
            if not isinstance(node, Call):
                continue
            if moving or moves_only(node):  # named by what it does, not what it moves
                ops.setdefault(node.op.name)
                continue
            for key in self.keys_of(node):
                source = self.source_node(key)
                if isinstance(source, Call) and isinstance(source.op, Op):
                    ops.setdefault(source.op.name.removeprefix("nn."))
            for origin in node.span.origins() if node.span is not None else ():
                if isinstance(origin, LayerSpan):
                    layers.setdefault(origin.name)
        name = " + ".join(ops) or "fn"
        if layers:
            name += " · " + next(iter(layers))
        return name if len(name) <= width else name[: width - 1] + "…"

    def layers(self, key: Key) -> list[str]:
        node = self.source_node(key)
        if node is None or node.span is None:
            return []
        return node_layers(o.name for o in node.span.origins() if isinstance(o, LayerSpan))


MOVES = ("layout_transform",)  # ops passes insert to move data between layouts


def moves_only(node: Expr) -> bool:
    """A call that only moves a value between layouts (it carries the span of what it moves)."""
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in MOVES


# ops that only give a value another shape or layout: a kernel of nothing else, with one
# input, prepares a parameter for the kernel that reads it (Provenance.readers)
RESHAPES = (*MOVES, "expand_dims", "reshape", "squeeze")


def reshape_ops(func: Function) -> list[str]:
    """The operators a kernel calls, in evaluation order, when it has one input and calls
    only RESHAPES; else []."""
    calls = [n for n in post_order(func.body) if isinstance(n, Call)]
    if len(func.params) != 1 or not all(isinstance(c.op, Op) and c.op.name in RESHAPES for c in calls):
        return []
    return [c.op.name for c in calls]


def reshapes_only(func: Function) -> bool:
    return bool(reshape_ops(func))


def preparation(func: Function) -> str:
    """What a kernel that only reshapes or moves a value does: "expand_dims +
    layout_transform: NCHW → NCHW4c"."""
    return " + ".join(dict.fromkeys(reshape_ops(func))) + layouts_moved(func)


def layouts_moved(func: Function) -> str:
    """`: OIHW → OIHW16i16o`, the layouts a moving kernel's layout_transforms go between
    ("" when it holds none)."""
    calls = [n for n in post_order(func.body) if isinstance(n, Call) and moves_only(n)]
    if not calls:
        return ""
    return f": {calls[0].attrs.get('src_layout')} → {calls[-1].attrs.get('dst_layout')}"


def _same_op(node: Expr, source: Expr | None) -> bool:
    return (isinstance(node, Call) and isinstance(source, Call) and isinstance(node.op, Op)
            and isinstance(source.op, Op) and node.op.name == source.op.name)


def _input_source(build: BuildResult) -> Source | None:
    if build.checked is not None:
        return build.checked.parsed.source
    return None
