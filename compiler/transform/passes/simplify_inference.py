"""SimplifyInference: rewrite inference-time normalisations into primitive ops, as TVM does.

Rewrites (one rule per op, each building exactly the graph TVM's pass builds):

* `%t = nn.batch_norm(x, gamma, beta, mean, var); %t.0` becomes
  `x * s + (-mean * s + beta)` with `s = 1 / sqrt(var + eps) * gamma`, both vectors
  expanded to broadcast along the channel axis (`expand_dims(v, axis=1, num_newaxis=k)`,
  k the number of axes after the channel axis; none when k is 0).  Only a projection
  `.0` whose tuple is the batch_norm call itself is rewritten; `.1` and `.2` keep reading
  the (rebuilt) batch_norm call, and a batch_norm bound by `let` is left alone.
* `nn.dropout(x).0` becomes `x`.
* `nn.layer_norm`, `nn.instance_norm`: `(x - mean(x)) / sqrt(variance(x, mean) + eps)`
  over the normalised axes (layer_norm: its axis as written; instance_norm: every axis but
  the batch and channel axes), then `* gamma`, `+ beta` expanded along the axis.
* `nn.group_norm`: the same on `reshape(x, (.., groups, C / groups, ..))`, reduced over
  the axes after the group axis, reshaped back (static shapes only, as TVM needs).
* `nn.l2_normalize`: `x / sqrt(maximum(sum(x * x, axis, keepdims), eps))`, eps a float32
  scalar.

`center=False` drops beta, `scale=False` drops gamma.  Epsilon is a scalar constant of
the data's dtype holding `float32(epsilon)`.  New calls write only attributes that differ
from the op's defaults (as TVM prints them).

Expects: typed input (required: InferType; a call that did not typecheck, or a
group_norm with a dynamic shape, is left alone).  Guarantees: no projection `.0` of a
batch_norm or dropout call and no layer/instance/group norm or l2_normalize call remains
where types are known.  New nodes have `ty` None until the next InferType.

Spans: the graph that replaces a call (down to, not including, the call's arguments)
takes the call's span: `SIBuilder(call).recursively_fill_span(new, inputs=call.args)`.
The graph that replaces a batch_norm projection takes the SequentialSpan of the
batch_norm call and the projection.  `dropout(x).0` becomes `x` itself, which keeps its
own span (it is an existing expression).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ir.attrs import Attrs, IntImm
from ...ir.expr import Call, Constant, Expr, Function, Op, TupleGetItem, op
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ...ir.types import TensorType
from ...ops import get_op
from ..infra import FunctionPass, PassContext, register_pass
from ..si_builder import SIBuilder

# --- building blocks -------------------------------------------------------------------


def _value(v: Any) -> Any:
    """A Python attribute value as the parser would hold it."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return IntImm(v)
    if isinstance(v, (tuple, list)):
        return tuple(_value(x) for x in v)
    return v


def call(name: str, *args: Expr, **attrs: Any) -> Call:
    """`name(args..., attrs...)`, writing only the attributes that differ from the op's
    defaults."""
    opdef = get_op(name)
    defaults = {a.name: a.default for a in opdef.attrs} if opdef is not None else {}
    kept = {}
    for key, v in attrs.items():
        if v is None or (key in defaults and _plain(v) == defaults[key]):
            continue
        kept[key] = _value(v)
    return Call(op(name), tuple(args), Attrs(kept))


def _plain(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def scalar(value: float, dtype: str) -> Constant:
    """A scalar constant of `dtype` holding `float32(value)`, as TVM's MakeConstantScalar."""
    return Constant(np.asarray(np.float32(value)).astype(dtype))


def expand_to_axis(vector: Expr, ndim: int, axis: int) -> Expr:
    """A 1-D vector reshaped to broadcast along `axis` of an `ndim`-tensor."""
    pad = ndim - axis - 1
    return call("expand_dims", vector, axis=1, num_newaxis=pad) if pad > 0 else vector


def _normalize(data: Expr, axes: Any, epsilon: float, dtype: str) -> Expr:
    """(data - mean) / sqrt(variance + eps) over `axes`, keeping dims."""
    mean = call("mean", data, axis=axes, keepdims=True)
    var = call("variance", data, mean, axis=axes, keepdims=True)
    denom = call("sqrt", call("add", var, scalar(epsilon, dtype)))
    return call("divide", call("subtract", data, mean), denom)


def _affine(out: Expr, gamma: Expr, beta: Expr, attrs: Any, ndim: int, axis: int) -> Expr:
    if attrs.scale:
        out = call("multiply", out, expand_to_axis(gamma, ndim, axis))
    if attrs.center:
        out = call("add", out, expand_to_axis(beta, ndim, axis))
    return out


# --- the rules: (rewritten call, attrs, data type) -> replacement or None ---------------

Rule = Callable[[Call, Any, TensorType], "Expr | None"]


def batch_norm_rule(bn: Call, attrs: Any, ty: TensorType) -> Expr:
    data, gamma, beta, moving_mean, moving_var = bn.args
    ndim = ty.ndim
    axis = attrs.axis + ndim if attrs.axis < 0 else attrs.axis
    eps = scalar(attrs.epsilon, ty.dtype)
    scale = call("divide", scalar(1.0, ty.dtype), call("sqrt", call("add", moving_var, eps)))
    if attrs.scale:
        scale = call("multiply", scale, gamma)
    shift = call("multiply", call("negative", moving_mean), scale)
    if attrs.center:
        shift = call("add", shift, beta)
    out = call("multiply", data, expand_to_axis(scale, ndim, axis))
    return call("add", out, expand_to_axis(shift, ndim, axis))


def layer_norm_rule(ln: Call, attrs: Any, ty: TensorType) -> Expr:
    data, gamma, beta = ln.args
    out = _normalize(data, (attrs.axis,), attrs.epsilon, ty.dtype)
    axis = attrs.axis + ty.ndim if attrs.axis < 0 else attrs.axis
    return _affine(out, gamma, beta, attrs, ty.ndim, axis)


def instance_norm_rule(norm: Call, attrs: Any, ty: TensorType) -> Expr:
    data, gamma, beta = norm.args
    axis = attrs.axis + ty.ndim if attrs.axis < 0 else attrs.axis
    axes = tuple(i for i in range(1, ty.ndim) if i != axis)
    out = _normalize(data, axes, attrs.epsilon, ty.dtype)
    return _affine(out, gamma, beta, attrs, ty.ndim, axis)


def group_norm_rule(norm: Call, attrs: Any, ty: TensorType) -> Expr | None:
    if not ty.is_static or attrs.num_groups < 1:
        return None
    data, gamma, beta = norm.args
    ndim = ty.ndim
    axis = attrs.axis + ndim if attrs.axis < 0 else attrs.axis
    shape = tuple(int(d) for d in ty.shape)
    groups = attrs.num_groups
    split = shape[:axis] + (groups, shape[axis] // groups) + shape[axis + 1:]
    axes = tuple(range(axis + 1, ndim + 1))  # the group's channels and every later axis
    grouped = call("reshape", data, newshape=split)
    out = call("reshape", _normalize(grouped, axes, attrs.epsilon, ty.dtype), newshape=shape)
    return _affine(out, gamma, beta, attrs, ndim, axis)


def l2_normalize_rule(norm: Call, attrs: Any, ty: TensorType) -> Expr:
    (data,) = norm.args
    total = call("sum", call("multiply", data, data), axis=attrs.axis, keepdims=True)
    bounded = call("maximum", total, scalar(attrs.eps, "float32"))
    return call("divide", data, call("sqrt", bounded))


CALL_RULES: dict[str, Rule] = {
    "nn.layer_norm": layer_norm_rule,
    "nn.instance_norm": instance_norm_rule,
    "nn.group_norm": group_norm_rule,
    "nn.l2_normalize": l2_normalize_rule,
}


# --- the walker --------------------------------------------------------------------------


def _op_name(expr: Expr) -> str | None:
    return expr.op.name if isinstance(expr, Call) and isinstance(expr.op, Op) else None


def _data_type(original: Call) -> TensorType | None:
    """The type of the call's data, when the call itself typechecked (else None)."""
    if original.ty is None or not original.args:
        return None
    ty = original.args[0].ty
    return ty if isinstance(ty, TensorType) else None


def _attrs(c: Call) -> Any:
    try:
        return get_op(_op_name(c)).normalize_attrs(c.attrs)
    except Exception:  # noqa: BLE001 -- bad attributes: the type checker reports them
        return None


class _Simplifier(ExprMutator):
    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        name = _op_name(original)
        rule = CALL_RULES.get(name)
        ty = _data_type(original)
        if rule is None or ty is None or len(new.args) != len(get_op(name).inputs):
            return new
        attrs = _attrs(new)
        out = rule(new, attrs, ty) if attrs is not None else None
        if out is None:
            return new
        return SIBuilder(original).recursively_fill_span(out, inputs=new.args)

    def visit_tuple_get_item(self, original: TupleGetItem) -> Expr:
        new = self.rebuild(original)
        tup = new.tuple_value
        if new.index != 0 or not isinstance(tup, Call):
            return new
        name = _op_name(tup)
        if name == "nn.dropout" and len(tup.args) == 1:
            return tup.args[0]
        if name != "nn.batch_norm" or len(tup.args) != 5:
            return new
        ty = _data_type(original.tuple_value)
        attrs = _attrs(tup)
        if ty is None or attrs is None or original.ty is None:
            return new
        out = batch_norm_rule(tup, attrs, ty)
        return SIBuilder([tup.span, original.span]).recursively_fill_span(out, inputs=tup.args)


@register_pass
class SimplifyInference(FunctionPass):
    name = "SimplifyInference"
    opt_level = 0
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return _Simplifier().visit(func)
