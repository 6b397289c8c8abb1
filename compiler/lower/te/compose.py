"""A primitive Relay function as tensor expressions: one compute rule per call, composed.

    fn (%p0: Tensor[(1, 64), float32], %p1, Primitive=1) { nn.relu(add(%p0, %p1)) }
        ->  inputs  [p0, p1]            (placeholders; a tuple parameter gives one per field)
            outputs [T_relu]            (a tuple body gives one per field)

Non-scalar constants in the body become extra inputs (`constants`, passed by the runtime
like parameters, as TVM lifts them out of primitive functions; a deferred value, ir/deferred.py,
stays one: the executable reads it, the kernel needs its shape alone); scalar constants become
0-d computes that schedules inline.  Every compute a rule creates gets the span of the call
it lowers (`ComputeOp.span`, and `loc` on each scalar node: what the debug locations point
at) and the op name as its tag when the rule gave none.

Errors are `te.LoweringError` at the call's span: an op without a compute rule, a shape
with `?` dimensions, a dtype the code generator lacks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir.deferred import Deferred, resolved
from ...ir.expr import Call, Constant, Function, Op, Tuple, TupleGetItem, Var
from ...ir.functor import children, post_order
from ...ir.types import TensorType, TupleType, Type
from ...ops import get_op
from ...ops.attrs import AttrError
from ...ops.qnn_composite import NON_COMPUTATIONAL
from ..errors import LoweringError
from . import expr as te
from . import topi  # noqa: F401  (registers each op's compute rule on its OpDef)


@dataclass
class Composed:
    inputs: list[te.Tensor]  # one per (flattened) parameter, in order
    constants: list[tuple[te.Tensor, np.ndarray | Deferred]] = field(default_factory=list)  # `resolved` reads one
    outputs: list[te.Tensor] = field(default_factory=list)

    @property
    def placeholders(self) -> list[te.Tensor]:
        return self.inputs + [t for t, _ in self.constants]


def compose(func: Function) -> Composed:
    """The tensor expressions computing `func`'s result from its parameters."""
    result = Composed([])
    values: dict[Any, Any] = {}
    for k, param in enumerate(func.params):
        values[param] = _placeholders(_type_of(param), f"p{k}", result.inputs, param.span or func.span)
    out = _evaluate(func.body, values, result, set())
    result.outputs = _distinct_outputs(out if isinstance(out, tuple) else (out,), func)
    return result


def _evaluate(body, values: dict[Any, Any], result: Composed, known: set[int]) -> Any:
    """The tensor(s) of `body`, with its free variables bound in `values`.  A call of an
    inner function (a `Composite` pattern inside an external function) is composed
    inline, its parameters bound to the arguments.  `known`: the ids of the tensors the
    calls composed so far made (`_lower_call`)."""
    for node in post_order(body, _not_into_functions):
        if node in values or isinstance(node, (Op, Function)):
            continue
        if isinstance(node, Var):
            raise LoweringError(f"%{node.name} is not a parameter of the primitive function", node.span)
        if isinstance(node, Constant):
            values[node] = _constant(node, result)
        elif isinstance(node, Tuple):
            values[node] = tuple(values[f] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            values[node] = values[node.tuple_value][node.index]
        elif isinstance(node, Call) and isinstance(node.op, Op):
            values[node] = _lower_call(node, values, known)
        elif isinstance(node, Call) and isinstance(node.op, Function):
            inner = dict(zip(node.op.params, (values[a] for a in node.args)))
            values[node] = _evaluate(node.op.body, inner, result, known)
        else:
            raise LoweringError(f"a primitive function cannot contain {type(node).__name__}", node.span)
    return values[body]


def _not_into_functions(node) -> tuple:
    if isinstance(node, Function):
        return ()
    if isinstance(node, Call):
        return (*node.args, node.op)
    return children(node)


def _type_of(expr) -> Type:
    ty = expr.ty if getattr(expr, "ty", None) is not None else getattr(expr, "type_annotation", None)
    if ty is None:
        raise LoweringError("its type is unknown (type inference did not reach it)", expr.span)
    return ty


def _static(ty: Type, span, what: str) -> tuple[tuple[int, ...], str]:
    if not isinstance(ty, TensorType):
        raise LoweringError(f"{what}: expected a tensor, found {type(ty).__name__}", span)
    if not ty.is_static:
        dims = ", ".join(str(d) if isinstance(d, int) else "?" for d in ty.shape)
        raise LoweringError(f"{what}: the shape ({dims}) has unknown (?) dimensions; "
                               "lowering needs static shapes", span)
    if ty.dtype not in te.DTYPES:
        raise LoweringError(f"{what}: no lowering for dtype {ty.dtype}", span)
    return tuple(int(d) for d in ty.shape), ty.dtype


def _placeholders(ty: Type, name: str, into: list[te.Tensor], span) -> Any:
    if isinstance(ty, TupleType):
        return tuple(_placeholders(f, f"{name}.{k}", into, span) for k, f in enumerate(ty.fields))
    shape, dtype = _static(ty, span, f"parameter {name}")
    t = te.placeholder(shape, dtype, name)
    into.append(t)
    return t


def _constant(node: Constant, result: Composed) -> te.Tensor:
    if not node.known:
        raise LoweringError(f"the constant {node.meta or 'folded from unknown constants'} has no value (its metadata entry is missing)", node.span)
    dtype = node.dtype
    if dtype not in te.DTYPES:
        raise LoweringError(f"no lowering for a constant of dtype {dtype}", node.span)
    raw = node.raw
    data = raw if isinstance(raw, Deferred) else np.asarray(raw)
    if data.ndim == 0:
        value = te.const(resolved(data).item(), dtype)
        t = te.compute((), lambda: value, "T_const", dtype=dtype)
        t.op.span, t.op.tag = node.span, "constant"
        t.op.body = te.with_loc(t.op.body, node.span)
        return t
    t = te.placeholder(data.shape, dtype, f"c{len(result.constants)}")
    result.constants.append((t, data))
    return t


def _lower_call(call: Call, values: dict, known: set[int]) -> Any:
    """The op's compute rule on its arguments' tensors; each tensor the rule made gets the
    call's span, location and tag (an op's tensors keep theirs).  `known` holds the ids of
    every tensor the earlier calls made (closed under what each reads: the tensors of
    this call's arguments among them), and takes this call's: walking only the new ones
    made composing a fused function quadratic no more (ResNet-50's 29 kernels: the walks
    over the arguments' graphs were a third of composing, before the workers start)."""
    name = call.op.name
    opdef = get_op(name)
    rule = opdef.compute if opdef is not None else None
    if rule is None:
        why = (" (TVM never computes it: qnn.Legalize rewrites it first, when its operands are integers)"
               if name in NON_COMPUTATIONAL else "")
        raise LoweringError(f"no lowering for operator {name}{why}", call.span)
    try:
        attrs = opdef.normalize_attrs(call.attrs)
    except AttrError as err:
        raise LoweringError(str(err), call.span) from None
    out_type = _type_of(call)
    for field_ty in (out_type.fields if isinstance(out_type, TupleType) else (out_type,)):
        _static(field_ty, call.span, name)
    args = [values[a] for a in call.args]
    try:
        out = rule(*args, attrs, out_type) if opdef.inputs is not None else rule(args, attrs, out_type)
    except LoweringError as err:
        raise LoweringError(f"{name}: {err.message}", err.span or call.span) from None
    outs = out if isinstance(out, tuple) else (out,)
    for t in te.post_order(list(outs), known):  # the rule's new tensors, the arguments' left unwalked
        known.add(id(t))
        if t.op is not None and t.op.span is None:
            t.op.span = call.span
            t.op.body = te.with_loc(t.op.body, call.span)
            t.op.tag = t.op.tag or name
    return out


def _distinct_outputs(outs: tuple, func: Function) -> list[te.Tensor]:
    """Each output its own computed tensor: a parameter or an output that appears twice
    is copied (the runtime writes each output buffer once)."""
    result: list[te.Tensor] = []
    seen: set[int] = set()
    for t in outs:
        if isinstance(t, tuple):
            raise LoweringError("a primitive function returning a nested tuple", func.span)
        if t.op is None or id(t) in seen:
            src = t
            t = te.compute(src.shape, lambda *i: src[i] if i else src[()], f"T_copy{len(result)}")
            t.op.span, t.op.tag = func.span, "copy"
            t.op.body = te.with_loc(t.op.body, func.span)
        seen.add(id(t))
        result.append(t)
    return result
