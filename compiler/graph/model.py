"""The dataflow graph of one module (any pass snapshot), as plain data.

    graphs = module_graphs(snapshot.module)        # one Graph per global function, @main first
    g = graphs[0]; g.nodes[0].label, g.nodes[0].namespace, g.nodes[0].inputs

What becomes a node:

* every call of an operator (`nn.conv2d`), of a global function (`@f`, `subgraph` names it)
  or of anything else (`call`); a call of a *primitive* function (what FuseOps makes) is no
  node: the calls in its body are, grouped under the fused function's name; so is a call of
  an external function (`Compiler=`, what PartitionGraph makes: grouped under its name,
  `external_groups` says its target) and of a composite function (`Composite=`, what
  MergeComposite makes: grouped under the composite's name, inside its region if any);
* every parameter of the function (`input`), constant (`constant`), tuple (`tuple`), and
  any other expression that computes a value (`if`, `match`, `fn`, ...);
* a projection `%1.0` of a node is no node: the edge leaves that node's output `0`; a
  `let` is no node: its variable stands for its value.

Each node's `namespace` is the path of groups it sits in, outermost first: the frontend
layer its span names (`/layer1/conv2/Conv` -> `layer1`, `conv2`; the last part, the ONNX
op, is the node itself), and, inside a fused function, the fused function's name under the
layers all of its calls share.  Edges are stored on the target, as `(source id, source
output)` per operand, in operand order; each node's outputs carry their type.  `span` is
the node's first document range as 1-based (line, col, end line, end col); `keys` are all
of its document ranges as character offsets, what the before/after mapping of a pass
(mapping.py) compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, Let, Op, Tuple, TupleGetItem, Var)
from ..ir.functor import children, post_order
from ..ir.module import IRModule
from ..ir.span import LayerSpan, Span
from ..ir.types import TensorType, TupleType, Type
from ..printer import print_type
from ..printer.literals import dim_text, print_attr_value
from ..transform.fused_names import name_primitive_functions

Ref = tuple[str, str]  # (node id, output id)


@dataclass
class GraphNode:
    id: str
    label: str
    kind: str  # "op", "call", "input", "constant", "tuple" or the expression's kind ("if", "fn", ...)
    namespace: tuple[str, ...] = ()
    inputs: list[Ref] = field(default_factory=list)
    outputs: list[Type | None] = field(default_factory=list)  # one per output, by output id
    attrs: list[tuple[str, str]] = field(default_factory=list)  # the operator's attributes, printed
    span: tuple[int, int, int, int] | None = None  # line, col, end line, end col (1-based)
    source: str = ""  # the document's name of `span`
    layers: tuple[str, ...] = ()  # frontend layers its span names
    fused: str | None = None  # the fused function it computes in
    keys: tuple[tuple[int, int], ...] = ()  # its document ranges (character offsets)
    subgraph: str | None = None  # the global function a call calls


@dataclass
class Graph:
    id: str  # the global function's name
    nodes: list[GraphNode] = field(default_factory=list)
    fused_groups: dict[tuple[str, ...], str] = field(default_factory=dict)  # namespace -> fused function
    external_groups: dict[tuple[str, ...], tuple[str, str]] = field(default_factory=dict)  # -> (function, target)
    outputs: list[Ref] = field(default_factory=list)  # what the function returns

    def by_id(self) -> dict[str, GraphNode]:
        return {n.id: n for n in self.nodes}


def module_graphs(mod: IRModule) -> list[Graph]:
    """A graph for every global function that is not primitive, `@main` first."""
    names = name_primitive_functions(mod)
    gvs = sorted((gv for gv, f in mod.functions.items() if not f.is_primitive),
                 key=lambda gv: (gv.name != "main", gv.name))
    functions = {gv.name: f for gv, f in mod.functions.items()}
    return [_Builder(gv.name, names, functions).build(mod.functions[gv]) for gv in gvs]


def layer_path(name: str) -> tuple[str, ...]:
    """The groups an ONNX node name puts a node in: its path without the last part (the op):
    `/layer1/conv2/Conv` -> (layer1, conv2); `conv1/Conv.weight` -> (conv1,); `Conv_3` -> ()."""
    parts = [p for p in name.split("/") if p]
    return tuple(parts[:-1])


def tensor_text(ty: Type | None) -> str:
    """A tensor type as Model Explorer shows shapes: `float32[1,64,56,56]`."""
    if isinstance(ty, TensorType):
        return f"{ty.dtype}[{','.join(dim_text(d) for d in ty.shape)}]"
    return print_type(ty) if ty is not None else "?"


class _Builder:
    def __init__(self, name: str, fused_names: dict[Function, str], functions: dict[str, Function] | None = None) -> None:
        self.graph = Graph(name)
        self.fused_names = fused_names
        self.functions = functions or {}
        self.refs: dict[Expr, Ref] = {}
        self.let_values: dict[Var, Expr] = {}
        self.counts: dict[tuple[str, ...], int] = {}
        self.ids: set[str] = set()
        self._local: dict[str, tuple[str, ...]] = {}  # node id -> its composite/region groups, outermost first

    def build(self, func: Function) -> Graph:
        for p in func.params:
            self.refs[p] = (self._add(p, f"%{p.name}", "input", []).id, "0")
        self.graph.outputs = self._walk(func.body)
        return self.graph

    # the walk ---------------------------------------------------------------------------
    def _walk(self, root: Expr, fused: str | None = None) -> list[Ref]:
        nodes = list(post_order(root, _operands))
        self.let_values.update((n.var, n.value) for n in nodes if isinstance(n, Let))
        for node in nodes:
            if node in self.refs:
                continue
            ref = self._visit(node, fused)
            if ref is not None:
                self.refs[node] = ref
        return self._refs_of(root)

    def _visit(self, node: Expr, fused: str | None) -> Ref | None:
        if isinstance(node, Var):  # a let's variable is its value; any other is an input
            value = self.let_values.get(node)
            if value is not None:
                return self.refs.get(value)
            return self._add(node, f"%{node.name}", "input", []).id, "0"
        if isinstance(node, Let):
            return self.refs.get(node.body)
        if isinstance(node, TupleGetItem):
            inner = node.tuple_value
            if isinstance(inner, Tuple):
                return self._ref(inner.fields[node.index]) if node.index < len(inner.fields) else None
            source = self._ref(inner)
            if source is not None and source[1] == "0":
                return source[0], str(node.index)
        if isinstance(node, Call) and isinstance(node.op, Function) and node.op.is_primitive:
            return self._fused_call(node)
        if isinstance(node, Call) and isinstance(node.op, Function) and "Composite" in node.op.attrs:
            return self._grouped_call(node, node.op, _attr_text(node.op.attrs["Composite"]), fused)
        external = self._external(node)
        if external is not None:
            return self._grouped_call(node, external, node.op.name, fused,  # type: ignore[union-attr]
                                      target=_attr_text(external.attrs["Compiler"]))
        if isinstance(node, (Op, GlobalVar)):
            return None
        if isinstance(node, Call):
            return self._call(node, fused)
        kind, label = _kind(node)
        operands = [r for c in _operands(node) if (r := self._ref(c)) is not None]
        return self._add(node, label, kind, operands, fused).id, "0"

    def _call(self, node: Call, fused: str | None) -> Ref:
        operands = [r for a in node.args if (r := self._ref(a)) is not None]
        if isinstance(node.op, Op):
            made = self._add(node, node.op.name, "op", operands, fused)
            made.attrs = [(k, print_attr_value(v)) for k, v in node.attrs.items()]
        elif isinstance(node.op, GlobalVar):
            made = self._add(node, f"@{node.op.name}", "call", operands, fused)
            made.subgraph = node.op.name
        else:
            callee = self._ref(node.op)
            made = self._add(node, "call", "call", ([callee] if callee else []) + operands, fused)
        return made.id, "0"

    def _fused_call(self, call: Call) -> Ref | None:
        """The body's calls become nodes, the function's parameters standing for the call's
        operands; all are put in one group under the layers they share."""
        func: Function = call.op  # type: ignore[assignment]
        name = self.fused_names.get(func, "fused")
        for param, arg in zip(func.params, call.args):
            ref = self._ref(arg)
            if ref is not None:
                self.refs[param] = ref
        first = len(self.graph.nodes)
        outputs = self._walk(func.body, fused=name)
        members = self.graph.nodes[first:]
        if members:
            prefix = _common_prefix([m.namespace for m in members])
            short = name[name.index("fused_"):] if "fused_" in name else name  # tvmgen_default_ dropped
            n = self.counts[prefix + (short,)] = self.counts.get(prefix + (short,), 0) + 1
            group = prefix + (short if n == 1 else f"{short}#{n}",)  # a second call of one kernel
            for m in members:
                m.namespace = group
            self.graph.fused_groups[group] = name
        return outputs[0] if len(outputs) == 1 else None

    def _external(self, call: Expr) -> Function | None:
        """The external function (`Compiler=`, from PartitionGraph) a call of a global calls."""
        if isinstance(call, Call) and isinstance(call.op, GlobalVar):
            func = self.functions.get(call.op.name)
            if func is not None and "Compiler" in func.attrs:
                return func
        return None

    def _grouped_call(self, call: Call, func: Function, name: str, fused: str | None,
                      target: str | None = None) -> Ref | None:
        """A composite's or an external function's body drawn in place of its call, as a
        fused function's is: its nodes in one group (a composite inside its region's group),
        named by the composite or by the function (`tvmgen_default_` dropped)."""
        for param, arg in zip(func.params, call.args):
            ref = self._ref(arg)
            if ref is not None:
                self.refs[param] = ref
        first = len(self.graph.nodes)
        outputs = self._walk(func.body, fused)
        members = self.graph.nodes[first:]
        if members:
            local = self._local
            base = [m.namespace[:len(m.namespace) - len(local.get(m.id, ()))] for m in members]  # the layers
            prefix = _common_prefix(base)
            short = name.removeprefix("tvmgen_default_")
            n = self.counts[prefix + (short,)] = self.counts.get(prefix + (short,), 0) + 1
            group = prefix + (short if n == 1 else f"{short}#{n}",)
            for m in members:  # a composite's own group stays inside its region's
                local[m.id] = group[len(prefix):] + local.get(m.id, ())
                m.namespace = prefix + local[m.id]
            if target is not None:
                self.graph.external_groups[group] = (name, target)
        return outputs[0] if len(outputs) == 1 else None

    # nodes ------------------------------------------------------------------------------
    def _add(self, expr: Expr, label: str, kind: str, inputs: list[Ref], fused: str | None = None) -> GraphNode:
        node_id = f"n{len(self.graph.nodes)}"
        if kind == "input":  # a parameter is named as in the text, when that name is free
            node_id = f"%{expr.name}" if f"%{expr.name}" not in self.ids else f"%{expr.name}#{len(self.graph.nodes)}"
        self.ids.add(node_id)
        node = GraphNode(node_id, label, kind, inputs=inputs, fused=fused)
        ty = expr.ty
        node.outputs = list(ty.fields) if isinstance(ty, TupleType) and kind == "op" else [ty]
        origins = expr.span.origins() if expr.span is not None else ()
        node.layers = tuple(dict.fromkeys(o.name for o in origins if isinstance(o, LayerSpan)))
        if node.layers:
            layer = node.layers[0]
            if kind == "input" and layer.endswith(f".{expr.name}"):  # `<node>.<tensor>`: the node's layer
                layer = layer[: -len(expr.name) - 1] + "/"
            node.namespace = layer_path(layer)
        docs = [o for o in origins if isinstance(o, Span)]
        node.keys = tuple(dict.fromkeys((o.start, o.end) for o in docs))
        if docs:
            first = docs[0]
            node.span = (*first.source.location(first.start), *first.source.location(first.end))
            node.source = first.source.name
        if kind == "constant":
            node.label = _constant_label(expr)  # type: ignore[arg-type]
        self.graph.nodes.append(node)
        return node

    def _ref(self, expr: Expr) -> Ref | None:
        refs = self._refs_of(expr)
        return refs[0] if refs else None

    def _refs_of(self, expr: Expr) -> list[Ref]:
        ref = self.refs.get(expr)
        if ref is not None:
            return [ref]
        if isinstance(expr, Var) and expr in self.let_values:
            return self._refs_of(self.let_values[expr])
        return []


def _attr_text(value) -> str:
    """A string attribute (`Compiler="mynpu"`) as its text."""
    return str(getattr(value, "value", value))


def _operands(expr: Expr):
    """What a node is computed from, as the graph sees it: a call's operator is no operand
    unless it is a computed value, and a primitive function's body is walked on its own."""
    if isinstance(expr, Call):
        if isinstance(expr.op, (Op, GlobalVar)) or (isinstance(expr.op, Function)
                                                   and (expr.op.is_primitive or "Composite" in expr.op.attrs)):
            return expr.args
        return (expr.op, *expr.args)
    if isinstance(expr, Function):
        return ()  # a closure is one node; its body is not part of this dataflow
    if isinstance(expr, Let):
        return (expr.value, expr.body)
    return children(expr)


def _kind(node: Expr) -> tuple[str, str]:
    if isinstance(node, Constant):
        return "constant", "constant"
    if isinstance(node, Tuple):
        return "tuple", "tuple"
    if isinstance(node, TupleGetItem):
        return "project", f".{node.index}"
    kind = type(node).__name__.lower()
    return ("fn", "fn") if kind == "function" else (kind, kind)


def _constant_label(node: Constant) -> str:
    data = node.data
    if data is not None and getattr(data, "ndim", None) == 0:
        return f"constant {data.item():g}" if data.dtype.kind == "f" else f"constant {data.item()}"
    return "constant"


def _common_prefix(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    first = paths[0]
    n = len(first)
    for p in paths[1:]:
        n = min(n, len(p))
        while n and p[:n] != first[:n]:
            n -= 1
    return first[:n]
