"""Stand-ins for nodes we cannot convert (`--allow-unsupported`).

Such a node becomes a call of a new parameter of @main with a function type, named after
the op (`%onnx_NonMaxSuppression`):

    def @main(%x: Tensor[(1, 4), float32], %onnx_Unique: fn (Tensor[(1, 4), float32])
              -> (Tensor[(?), float32], Tensor[(?), int64])) {
      %0 = %onnx_Unique(%x) /* span=Unique_0:0:0 */;
      ...

Our parser, type checker and printer take this as ordinary Relay: the rest of the model
keeps its types and spans, and the editor shows the gap where it is.  Running the module
needs a value for the parameter, which only a runtime that implements the op could give,
so `relaylens run` stops with a missing-input error naming it.

The result types come from ONNX shape inference (run once, on the first stand-in); a node
whose output types it cannot tell has no stand-in, and its original error stands.
"""

from __future__ import annotations

from onnx import ModelProto, NodeProto, TypeProto, shape_inference

from ...ir.expr import Call, Expr, Var
from ...ir.types import ANY, FuncType, TensorType, TupleType, Type
from .builder import item
from .dtypes import relay_dtype
from .errors import NodeError


class StandIns:
    def __init__(self, model: ModelProto) -> None:
        self.model = model
        self._types: dict[str, TypeProto] | None = None
        self.vars: list[Var] = []

    def output_types(self, node: NodeProto) -> list[Type]:
        if self._types is None:
            try:
                inferred = shape_inference.infer_shapes(self.model)
            except Exception:  # noqa: BLE001 -- onnx raises several kinds; we only lose the types
                inferred = self.model
            graph = inferred.graph
            self._types = {v.name: v.type for v in (*graph.value_info, *graph.output, *graph.input)}
        found = []
        for name in node.output:
            proto = self._types.get(name) if name else None
            if proto is None or not proto.HasField("tensor_type") or not proto.tensor_type.elem_type:
                raise NodeError(f"--allow-unsupported cannot stand in for it: ONNX shape inference does "
                                f"not know the type of output '{name}'")
            found.append(tensor_type_of(proto))
        return found

    def make(self, node: NodeProto, var_name: str, inputs: list[Expr | None]) -> list[Expr]:
        """The stand-in's call, then one expression per output of the node."""
        outputs = self.output_types(node)
        args = tuple(e for e in inputs if e is not None)
        ret: Type = outputs[0] if len(outputs) == 1 else TupleType(tuple(outputs))
        fn_type = FuncType(tuple(a.ty for a in args), ret)
        var = Var(var_name, fn_type, ty=fn_type)
        self.vars.append(var)
        result = Call(var, args, ty=ret)
        return [result] if len(outputs) == 1 else [item(result, k) for k in range(len(outputs))]


def tensor_type_of(proto: TypeProto) -> TensorType:
    """A tensor type of ONNX: symbolic and unknown dimensions are `?`."""
    tensor = proto.tensor_type
    dims = tuple(d.dim_value if d.HasField("dim_value") else ANY for d in tensor.shape.dim)
    return TensorType(dims, relay_dtype(tensor.elem_type))
