"""Helpers for type relations: checking argument types and computing with shapes.

A dimension inside a relation is an `int` or `ANY` (`?`, known only at run time);
`dims()` turns the other forms the text allows (`1i64`, a symbolic `meta[tir.SizeVar][0]`)
into those.  Arithmetic on dimensions keeps `ANY` flowing: anything combined with `?` is `?`.
"""

from __future__ import annotations

from typing import Sequence

from ..ir.attrs import IntImm
from ..ir.dtypes import dtype_problem
from ..ir.types import ANY, TensorType, TupleType, Type
from .budget import fields_problem, rank_problem
from .registry import OpTypeError

Dim = int | type(ANY)  # type: ignore[valid-type]


def type_text(ty: Type) -> str:
    from ..printer.types import print_type  # one place writes type text

    return print_type(ty)


def tensor(ty: Type, what: str, arg: int | None = None) -> TensorType:
    """`ty` as a tensor type, or an OpTypeError saying that `what` must be one."""
    if isinstance(ty, TensorType):
        return ty
    raise OpTypeError(f"{what} must be a tensor, found {type_text(ty)}", arg)


def tensors_of_tuple(ty: Type, what: str, arg: int | None = 0) -> list[TensorType]:
    """The fields of a tuple of tensors (concatenate, stack)."""
    if not isinstance(ty, TupleType):
        raise OpTypeError(f"{what} must be a tuple of tensors, found {type_text(ty)}", arg)
    return [tensor(f, f"field {i} of {what}", arg) for i, f in enumerate(ty.fields)]


def dim(d: object) -> Dim:
    if isinstance(d, bool):
        return ANY
    if isinstance(d, int):
        return d
    if isinstance(d, IntImm):
        return d.value
    return ANY  # `?` or a symbolic size


def dims(ty: TensorType) -> tuple[Dim, ...]:
    return tuple(dim(d) for d in ty.shape)


def known(*ds: Dim) -> bool:
    return all(isinstance(d, int) for d in ds)


def add(a: Dim, b: Dim) -> Dim:
    return a + b if known(a, b) else ANY  # type: ignore[operator]


def mul(a: Dim, b: Dim) -> Dim:
    return a * b if known(a, b) else ANY  # type: ignore[operator]


def product(ds: Sequence[Dim]) -> Dim:
    out: Dim = 1
    for d in ds:
        out = mul(out, d)
    return out


def same_dim(a: Dim, b: Dim) -> bool:
    """Could two dimensions be equal (a `?` could be anything)?"""
    return not known(a, b) or a == b


def check_rank(rank: int, what: str) -> int:
    """`rank`, or an OpTypeError when a result of that rank is over the budget (budget.py):
    asked before a relation builds a shape whose rank comes from a number."""
    problem = rank_problem(rank, what)
    if problem is not None:
        raise OpTypeError(problem)
    return rank


def check_fields(count: int, what: str) -> int:
    """`count`, or an OpTypeError when a tuple of that many fields is over the budget."""
    problem = fields_problem(count, what)
    if problem is not None:
        raise OpTypeError(problem)
    return count


def axis_index(axis: int, ndim: int, what: str = "axis", arg: int | None = None) -> int:
    """A possibly negative axis as an index in [0, ndim), or an error naming the range."""
    if not -ndim <= axis < ndim:
        raise OpTypeError(f"{what} {axis} is out of range for a tensor of rank {ndim} "
                          f"(expected {-ndim} to {ndim - 1})", arg)
    return axis + ndim if axis < 0 else axis


def broadcast(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """NumPy broadcasting of two shapes (right-aligned; equal, 1, or `?`)."""
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    out: list[Dim] = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif known(x, y):
            if x != y:
                raise BroadcastError(i - n)
            out.append(x)
        else:
            out.append(x if isinstance(x, int) else y)
    return tuple(out)


class BroadcastError(Exception):
    def __init__(self, axis: int) -> None:
        super().__init__(axis)
        self.axis = axis  # negative: counted from the right


def broadcast_types(op_name: str, types: Sequence[TensorType], dtype: str | None = None) -> TensorType:
    """The result of an element-wise op on broadcast operands of one dtype."""
    first = types[0]
    for i, t in enumerate(types[1:], 1):
        if t.dtype != first.dtype:
            raise OpTypeError(f"{op_name}: operands have different dtypes: {type_text(first)} and "
                              f"{type_text(t)}", i)
    shape = dims(first)
    for i, t in enumerate(types[1:], 1):
        try:
            shape = broadcast(shape, dims(t))
        except BroadcastError:
            raise OpTypeError(f"{op_name}: shapes cannot be broadcast together: "
                              + " and ".join(type_text(x) for x in types[: i + 1]), i) from None
    return TensorType(shape, dtype or first.dtype)


def conv_out(size: Dim, kernel: Dim, pad_before: int, pad_after: int, stride: int, dilation: int,
             ceil_mode: bool = False) -> Dim:
    """Output extent of a sliding window: (size + pads - dilation*(kernel-1) - 1) // stride + 1."""
    if not known(size, kernel):
        return ANY
    span = size + pad_before + pad_after - dilation * (kernel - 1) - 1  # type: ignore[operator]
    if ceil_mode:
        span += stride - 1
    return span // stride + 1


def expand_padding(padding: tuple[int, ...], ndim: int, what: str = "padding") -> tuple[tuple[int, ...], tuple[int, ...]]:
    """TVM's padding convention for `ndim` spatial axes: one value for all sides, `ndim`
    values (same before and after), or 2*ndim values (all befores, then all afters)."""
    if len(padding) == 1:
        return (padding[0],) * ndim, (padding[0],) * ndim
    if len(padding) == ndim:
        return tuple(padding), tuple(padding)
    if len(padding) == 2 * ndim:
        return tuple(padding[:ndim]), tuple(padding[ndim:])
    raise OpTypeError(f"{what} expects 1, {ndim} or {2 * ndim} values, got {len(padding)}")


def expect_len(values: tuple, n: int, what: str) -> tuple:
    """A list attribute of exactly n values; one value is repeated (TVM accepts that)."""
    if len(values) == 1 and n > 1:
        return tuple(values) * n
    if len(values) != n:
        raise OpTypeError(f"attribute {what} expects {n} values, got {len(values)}")
    return tuple(values)


def check_dtype(dtype: str, what: str = "dtype") -> str:
    """`dtype`, or an OpTypeError saying why it cannot be used (`dtype_problem`)."""
    problem = dtype_problem(dtype, what)
    if problem is not None:
        raise OpTypeError(problem)
    return dtype
