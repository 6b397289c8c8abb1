"""The graph walk: an ONNX model in, an IRModule with @main and its params out.

    import_onnx(model, shapes={"x": (1, 3, 224, 224)}, allow_unsupported=False) -> OnnxImport

1. Initializers become parameters of @main (their arrays go to `OnnxImport.params`),
   except scalars and short integer lists (at most `INLINE_LIMIT` elements: shapes, axes,
   indices), which become constants in the text.  The tensors of Constant nodes too.
2. Graph inputs become the first parameters of @main, typed from the model (a symbolic
   or unknown dimension is `?`) or from `shapes`.
3. Nodes are converted in graph order (ONNX keeps them topologically sorted).  Each
   converter builds typed IR from its inputs' expressions (registry.py, convert_*.py);
   each output computed from constants alone is folded (fold.py); then every expression
   the node created gets the node's span (spans.py).
4. @main returns the graph's output, or a tuple of its outputs.  Its parameters are the
   graph inputs, in order, then the initializers it uses, then stand-ins (opaque.py).
5. Type inference runs over the module as a check: a type error there is our bug, and
   is reported as one.

A node that cannot be converted raises `OnnxImportError` naming the node, its op and the
opset; with `allow_unsupported` it becomes a stand-in call instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
from onnx import ModelProto, NodeProto

from ...ir.expr import Expr, Function, Var
from ...ir.functor import post_order
from ...ir.module import IRModule
from ...ir.span import LayerSpan, sequential
from ...ir.types import ANY, TensorType
from ...typing import infer_types
from .builder import const, make_tuple
from .context import NodeContext
from .dtypes import to_array
from .errors import NodeError, OnnxImportError
from .fold import Folder
from .names import VarNames
from .opaque import StandIns, tensor_type_of
from .registry import lookup, supported_ops
from .shape_hint import unfixed_inputs_hint
from .spans import fill, layer_span, node_names, parameter_span

INLINE_LIMIT = 16  # integer initializers with at most this many elements are written as constants
DEFAULT_DOMAINS = ("", "ai.onnx")

Shape = Sequence[int | None]


@dataclass
class OnnxImport:
    module: IRModule
    params: dict[str, np.ndarray]  # @main parameter name → initializer value
    inputs: dict[str, str]  # ONNX graph input → its @main parameter, in graph order
    stand_ins: list[str] = field(default_factory=list)  # nodes imported as opaque calls


def model_opset(model: ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            return int(entry.version)
    return 1


def domain_opset(model: ModelProto, domain: str) -> int:
    """The opset the model imports of another domain (com.microsoft), 1 if it names none."""
    return next((int(e.version) for e in model.opset_import if e.domain == domain), 1)


def import_onnx(model: ModelProto, shapes: Mapping[str, Shape] | None = None, *,
                allow_unsupported: bool = False) -> OnnxImport:
    return _Importer(model, dict(shapes or {}), allow_unsupported).run()


class _Importer:
    def __init__(self, model: ModelProto, shapes: dict[str, Shape], allow_unsupported: bool) -> None:
        self.model = model
        self.graph = model.graph
        self.opset = model_opset(model)
        self.shapes = shapes
        self.allow_unsupported = allow_unsupported
        self.names = VarNames([t.name for t in self.graph.input] + [t.name for t in self.graph.initializer])
        self.values: dict[str, Expr] = {}
        self.params: dict[Var, np.ndarray] = {}
        self.inputs: dict[str, Var] = {}
        self.folder = Folder(self.params)
        self.stand_ins = StandIns(model)
        self.stood_in: list[str] = []
        self.unreadable: dict[str, str] = {}  # initializer name -> why it cannot be read

    def run(self) -> OnnxImport:
        if self.graph.sparse_initializer:
            raise OnnxImportError("sparse initializers are not supported")
        self.read_initializers()
        self.read_inputs()
        for node, name in zip(self.graph.node, node_names(self.graph.node)):
            self.convert(node, name)
        return self.finish()

    # --- inputs and initializers ------------------------------------------------------------
    def read_initializers(self) -> None:
        for tensor in self.graph.initializer:
            try:
                array = to_array(tensor)
            except NodeError as err:  # said at the node that reads it (an int4 zero point...)
                self.unreadable[tensor.name] = err.message
                continue
            self.values[tensor.name] = self.tensor(tensor.name, array)

    def tensor(self, name: str, array: np.ndarray) -> Expr:
        """A known tensor: a constant if it is a scalar or a few integers (a shape, axes),
        else a parameter of @main (weights)."""
        if array.size <= 1 or (array.size <= INLINE_LIMIT and array.dtype.kind in "iub"):
            return const(array)
        ty = TensorType(tuple(array.shape), str(array.dtype))
        var = Var(self.names.fresh(name), ty, ty=ty)
        self.params[var] = array
        return var

    def read_inputs(self) -> None:
        declared = [i for i in self.graph.input if i.name not in self.values and i.name not in self.unreadable]
        unknown = sorted(set(self.shapes) - {i.name for i in declared})
        if unknown:
            names = ", ".join(i.name for i in declared) or "none"
            raise OnnxImportError(f"--shape names no graph input: {', '.join(unknown)} (the inputs: {names})")
        for info in declared:
            where = f"graph input '{info.name}'"
            if not info.type.HasField("tensor_type"):
                raise OnnxImportError(f"{where}: only tensor inputs are supported")
            try:
                ty = tensor_type_of(info.type)
            except NodeError as err:
                raise OnnxImportError(f"{where}: {err.message}") from None
            if info.name in self.shapes:
                ty = TensorType(tuple(ANY if d is None else d for d in self.shapes[info.name]), ty.dtype)
            elif not info.type.tensor_type.HasField("shape"):
                raise OnnxImportError(f"{where} has no shape (not even a rank); give one with "
                                      f"--shape {info.name}=D1,D2,...")
            var = Var(self.names.fresh(info.name), ty, ty=ty)
            self.inputs[info.name] = var
            self.values[info.name] = var

    # --- nodes --------------------------------------------------------------------------------
    def convert(self, node: NodeProto, name: str) -> None:
        inputs = [self.input_of(node, name, k) for k in range(len(node.input))]
        try:
            outputs = self.outputs_of(node, inputs)
        except NodeError as err:
            if not self.allow_unsupported:
                tensor = node.input[err.needs_value] if err.needs_value is not None else None
                hint = "" if tensor is None else unfixed_inputs_hint(
                    self.graph, tensor, {k: v.ty for k, v in self.inputs.items()})
                raise OnnxImportError(f"{self.where(node, name)}: {err.message}{hint}", tensor) from None
            try:
                outputs = self.stand_ins.make(node, self.names.fresh(f"onnx_{node.op_type}"), inputs)
            except NodeError as why:
                raise OnnxImportError(f"{self.where(node, name)}: {err.message}; {why.message}") from None
            self.stood_in.append(name)
        except Exception as exc:  # a bug of ours: say where it struck
            exc.add_note(f"while converting {self.where(node, name)}")
            raise
        span = layer_span(name)
        for output_name, expr in zip(node.output, outputs):
            if not output_name or expr is None:
                continue
            self.values[output_name] = fill(self.folder.fold(expr), span)

    def where(self, node: NodeProto, name: str) -> str:
        domain = f"{node.domain}." if node.domain not in DEFAULT_DOMAINS else ""
        return f"node '{name}' ({domain}{node.op_type}, opset {self.opset})"

    def input_of(self, node: NodeProto, name: str, k: int) -> Expr | None:
        tensor = node.input[k]
        if not tensor:
            return None
        expr = self.values.get(tensor)
        if expr is None and tensor in self.unreadable:
            raise OnnxImportError(f"{self.where(node, name)}: input {k} (initializer '{tensor}'): "
                                  f"{self.unreadable[tensor]}")
        if expr is None:
            raise OnnxImportError(f"{self.where(node, name)}: input '{tensor}' is neither a graph input, "
                                  f"an initializer nor the output of an earlier node")
        if expr.span is None:  # a graph input or initializer, first used here
            object.__setattr__(expr, "span", parameter_span(name, tensor))
        return expr

    def outputs_of(self, node: NodeProto, inputs: list[Expr | None]) -> list[Expr | None]:
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        found = lookup(node.op_type, domain)
        if found is None and domain:
            known = [n[len(domain) + 1:] for n in supported_ops() if n.startswith(f"{domain}.")]
            if not known:
                raise NodeError(f"ops of domain '{node.domain}' are not supported")
            raise NodeError(f"the op {node.op_type} of domain '{node.domain}' is not supported "
                            f"(of that domain: {', '.join(known)})")
        if found is None:
            raise NodeError(f"the op {node.op_type} is not supported")
        convert, since = found
        opset = self.opset if not domain else domain_opset(self.model, domain)
        if opset < since:
            raise NodeError(f"{node.op_type} is supported from opset {since}")
        ctx = NodeContext(node, self.opset, inputs, self.folder.value, self.tensor)
        result = convert(ctx)
        outputs = [result] if isinstance(result, Expr) else list(result)
        for k in range(len(outputs), len(node.output)):
            if node.output[k]:
                raise NodeError(f"output {k} ('{node.output[k]}') is not supported")
        return outputs

    # --- @main ---------------------------------------------------------------------------------
    def finish(self) -> OnnxImport:
        outputs = []
        for info in self.graph.output:
            expr = self.values.get(info.name)
            if expr is None:
                raise OnnxImportError(f"graph output '{info.name}' is not produced by any node")
            outputs.append(expr)
        if len(outputs) == 1:
            body = outputs[0]
        else:
            body = make_tuple(outputs)
            object.__setattr__(body, "span", sequential(*(o.span for o in outputs)))
        for var in self.inputs.values():  # inputs no node reads
            if var.span is None:
                object.__setattr__(var, "span", LayerSpan(var.name))
        used = {n for n in post_order(body) if isinstance(n, Var)}
        params = [*self.inputs.values(), *(v for v in self.params if v in used),
                  *(v for v in self.stand_ins.vars if v in used)]
        graph_span = LayerSpan(self.graph.name or "main")
        main = Function(tuple(params), body, body.ty, span=graph_span)
        module = IRModule()
        module.add(module.get_global_var("main"), main)
        errors = [d for d in infer_types(module) if d.is_error]
        if errors:
            first = errors[0]
            where = f" at {first.span}" if first.span is not None else ""
            raise OnnxImportError(f"internal error: the imported module does not type-check{where}: "
                                  f"{first.message}")
        return OnnxImport(module, {v.name: a for v, a in self.params.items() if v in used},
                          {name: var.name for name, var in self.inputs.items()}, self.stood_in)
