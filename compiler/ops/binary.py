"""Broadcasting binary ops: arithmetic, comparisons, logic, bitwise, `where`, `nn.bias_add`.

Reference §7.4.  Operands broadcast as in NumPy (right-aligned; equal, 1 or `?`) and must
share a dtype; comparisons and logic give bool.  Integer `divide` and `mod` truncate
toward zero (C semantics, as TVM's `div`/`truncmod`); `floor_divide`/`floor_mod` round
toward negative infinity.  The bitwise ops (TVM's `bitwise_and/or/xor`) take integers or
bool and keep the dtype.
"""

from __future__ import annotations

from ..lazy_modules import deferred, numpy as np
from ..ir.types import TensorType
from .attrs import INT, Attr
from .registry import BROADCAST, OpTypeError, define
from .shapes import axis_index, broadcast_types, dims, same_dim, tensor, type_text


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.trunc(np.true_divide(a, b))
        return q.astype(a.dtype)
    return np.true_divide(a, b).astype(a.dtype)


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b).astype(a.dtype)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.power(a, b).astype(a.dtype)


ARITHMETIC = {
    "add": (deferred(np, "add"), "a + b, broadcasting."),
    "subtract": (deferred(np, "subtract"), "a - b, broadcasting."),
    "multiply": (deferred(np, "multiply"), "a * b, broadcasting."),
    "divide": (_divide, "a / b, broadcasting (integers truncate toward zero)."),
    "floor_divide": (deferred(np, "floor_divide"), "a / b rounded toward negative infinity."),
    "mod": (_mod, "Remainder of truncating division (sign of a)."),
    "floor_mod": (deferred(np, "mod"), "Remainder of floor division (sign of b)."),
    "power": (_power, "a to the power b."),
    "maximum": (deferred(np, "maximum"), "The larger of a and b, element by element."),
    "minimum": (deferred(np, "minimum"), "The smaller of a and b, element by element."),
}

COMPARISONS = {
    "equal": (deferred(np, "equal"), "a == b."),
    "not_equal": (deferred(np, "not_equal"), "a != b."),
    "less": (deferred(np, "less"), "a < b."),
    "less_equal": (deferred(np, "less_equal"), "a <= b."),
    "greater": (deferred(np, "greater"), "a > b."),
    "greater_equal": (deferred(np, "greater_equal"), "a >= b."),
}

LOGICAL = {
    "logical_and": (deferred(np, "logical_and"), "Boolean and."),
    "logical_or": (deferred(np, "logical_or"), "Boolean or."),
    "logical_xor": (deferred(np, "logical_xor"), "Boolean exclusive or."),
}

BITWISE = {
    "bitwise_and": (deferred(np, "bitwise_and"), "a & b on the bits of integers, broadcasting."),
    "bitwise_or": (deferred(np, "bitwise_or"), "a | b on the bits of integers, broadcasting."),
    "bitwise_xor": (deferred(np, "bitwise_xor"), "a ^ b on the bits of integers, broadcasting."),
}


def _binary(name: str, fn, doc: str, result_dtype: str | None, needs: str | None) -> None:
    """`needs`: None for any dtype, "bool" or "integer" (bool counts as an integer of 1 bit)."""
    opdef = define(name, ("lhs", "rhs"), BROADCAST, doc=doc)

    @opdef.relation
    def _(lhs, rhs, attrs):
        a = tensor(lhs, f"{name}: lhs", 0)
        b = tensor(rhs, f"{name}: rhs", 1)
        if needs == "bool" and a.dtype != "bool":
            raise OpTypeError(f"{name} expects bool operands, found {type_text(a)}", 0)
        if needs == "integer" and not (a.dtype == "bool" or a.dtype.startswith(("int", "uint"))):
            raise OpTypeError(f"{name} expects integer or bool operands, found {type_text(a)}", 0)
        return broadcast_types(name, [a, b], result_dtype)

    def compute(a, b, attrs):
        out = fn(a, b)
        return np.asarray(out, dtype=result_dtype or a.dtype)

    opdef.reference(compute)


for _name, (_fn, _doc) in ARITHMETIC.items():
    _binary(_name, _fn, _doc, None, None)
for _name, (_fn, _doc) in COMPARISONS.items():
    _binary(_name, _fn, _doc, "bool", None)
for _name, (_fn, _doc) in LOGICAL.items():
    _binary(_name, _fn, _doc, "bool", "bool")
for _name, (_fn, _doc) in BITWISE.items():
    _binary(_name, _fn, _doc, None, "integer")


where = define("where", ("condition", "x", "y"), BROADCAST,
               doc="x where condition is true, else y; all three broadcast.")


@where.relation
def _(condition, x, y, attrs):
    c = tensor(condition, "where: condition", 0)
    a = tensor(x, "where: x", 1)
    b = tensor(y, "where: y", 2)
    if c.dtype != "bool":
        raise OpTypeError(f"where: condition must be bool, found {type_text(c)}", 0)
    values = broadcast_types("where", [a, b])
    return broadcast_types("where", [TensorType(c.shape, a.dtype), values])


@where.reference
def _(c, x, y, attrs):
    return np.where(c, x, y).astype(x.dtype)


bias_add = define("nn.bias_add", ("data", "bias"), BROADCAST,
                  attrs=(Attr("axis", INT, 1, "the axis of data the bias runs along"),),
                  doc="Add a 1-D bias along one axis of data (CanonicalizeOps turns it into "
                      "expand_dims + add).")


@bias_add.relation
def _(data, bias, attrs):
    d = tensor(data, "nn.bias_add: data", 0)
    b = tensor(bias, "nn.bias_add: bias", 1)
    axis = axis_index(attrs.axis, d.ndim)
    if b.ndim != 1:
        raise OpTypeError(f"nn.bias_add: bias must be 1-D, found {type_text(b)}", 1)
    if not same_dim(dims(b)[0], dims(d)[axis]):
        raise OpTypeError(f"nn.bias_add: bias has {dims(b)[0]} elements but data has {dims(d)[axis]} "
                          f"along axis {attrs.axis} (data {type_text(d)})", 1)
    if b.dtype != d.dtype:
        raise OpTypeError(f"nn.bias_add: bias dtype {b.dtype} differs from data {type_text(d)}", 1)
    return d


@bias_add.reference
def _(data, bias, attrs):
    axis = attrs.axis % data.ndim
    shape = [1] * data.ndim
    shape[axis] = bias.shape[0]
    return (data + bias.reshape(shape)).astype(data.dtype)
