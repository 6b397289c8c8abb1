"""Typed IR construction for converters: every expression is born with its type.

    call("nn.conv2d", x, w, strides=(2, 2))   a Call whose `ty` the op's relation gave
    const(np.array(...)), scalar(0.5, like=x)  Constants (a scalar in x's dtype)
    make_tuple([a, b]), item(t, 0)             Tuple and TupleGetItem
    shape(x), static_shape(x, what), dtype(x)  what a converter reads of a type

Attributes are given as plain Python values and stored as the parser would read them
(`IntImm`, `FloatImm`, tuples).  A relation that rejects a call raises `NodeError` with
the op's message, so a node that does not fit its inputs is reported at that node.
Nothing here sets spans: the graph walk fills them (spans.py).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...ir.attrs import Attrs, FloatImm, IntImm
from ...ir.expr import Call, Constant, Expr, Tuple, TupleGetItem, op
from ...ir.types import ANY, TensorType, TupleType, Type
from ...ops import AttrError, OpTypeError, get_op
from ...printer.types import print_type
from .errors import NodeError

INT32 = (-(2**31), 2**31 - 1)


def attr_value(value: Any) -> Any:
    """A Python attribute value as the parser would have read it."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        value = int(value)
        return IntImm(value) if INT32[0] <= value <= INT32[1] else IntImm(value, "int64")
    if isinstance(value, (float, np.floating)):
        return FloatImm(float(value))
    if isinstance(value, (tuple, list)):
        return tuple(attr_value(v) for v in value)
    raise TypeError(f"no attribute value for {value!r}")


def call(op_name: str, *args: Expr, **attrs: Any) -> Call:
    opdef = get_op(op_name)
    if opdef is None:
        raise AssertionError(f"the op library has no {op_name}")
    ir_attrs = Attrs({k: attr_value(v) for k, v in attrs.items()})
    try:
        ty = opdef.infer([a.ty for a in args], ir_attrs)
    except (OpTypeError, AttrError) as err:
        message = err.message if err.message.startswith(op_name) else f"{op_name}: {err.message}"
        raise NodeError(message) from None
    return Call(op(op_name), tuple(args), ir_attrs, ty=ty)


def const(value: Any, dtype: str | None = None) -> Constant:
    data = np.array(value, dtype=dtype)
    return Constant(data, ty=TensorType(tuple(data.shape), str(data.dtype)))


def scalar(value: Any, like: Expr | str) -> Constant:
    """A 0-d constant in the dtype of `like` (an expression or a dtype)."""
    return const(value, like if isinstance(like, str) else dtype(like))


def make_tuple(fields: Sequence[Expr]) -> Tuple:
    return Tuple(tuple(fields), ty=TupleType(tuple(f.ty for f in fields)))


def item(value: Expr, index: int) -> TupleGetItem:
    ty = value.ty
    assert isinstance(ty, TupleType), f"item of a non-tuple {ty}"
    return TupleGetItem(value, index, ty=ty.fields[index])


# --- reading types -------------------------------------------------------------------------


def tensor_type(expr: Expr) -> TensorType:
    ty = expr.ty
    if not isinstance(ty, TensorType):
        raise NodeError(f"expected a tensor, found {_show(ty)}")
    return ty


def shape(expr: Expr) -> tuple:
    """The dimensions of a tensor: ints, or ANY where only run time knows."""
    return tuple(d if isinstance(d, int) else ANY for d in tensor_type(expr).shape)


def static_shape(expr: Expr, what: str) -> tuple[int, ...]:
    dims = shape(expr)
    if any(d is ANY for d in dims):
        raise NodeError(f"{what} needs a static shape, found {_show(expr.ty)}; fix the input "
                        f"dimensions with --shape")
    return dims


def rank(expr: Expr) -> int:
    return len(tensor_type(expr).shape)


def dtype(expr: Expr) -> str:
    return tensor_type(expr).dtype


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < ndim:
        raise NodeError(f"{what} {axis} is out of range for rank {ndim}")
    return axis % ndim if ndim else 0


def _show(ty: Type | None) -> str:
    return "an untyped value" if ty is None else print_type(ty)
