"""The types of constants whose values are unknown, from the calls that use them.

Text printed without its metadata (`mod.astext(show_meta_data=False)`, `print(mod)`) writes
`meta[relay.Constant][i]` with nothing to read; the parser makes a `Constant` with no data
(compiler/parser/lower.py).  Its type is its `ty=` comment when it has one; otherwise it is a
hole that the type checker (infer.py) fills from the constant's use, as TVM's relations fix
an incomplete weight from the call's attributes and data.

Which uses fix the type (the value's dtype is the data's):

  nn.conv1d/2d/3d weight   (channels, C_in / groups, *kernel_size) in kernel_layout; needs
                           channels and kernel_size, and a plain (unpacked) kernel_layout
  nn.dense weight          (units, data.shape[-1]); needs units
  nn.bias_add bias         (data.shape[axis],)
  nn.prelu alpha           (data.shape[axis],)
  nn.batch_norm gamma, beta, moving_mean, moving_var   (data.shape[axis],)
  nn.layer_norm gamma, beta                           (data.shape[axis],)
  a broadcasting binary op (add, multiply, ...) operand: the other operand's type, but only
                           when the call's result is already fixed (by an annotation or a
                           function's declared result) to exactly that type, so any choice
                           gives the same result type; see `broadcast_operand`

Nothing else: a broadcast operand whose call's result is free (a bias added after a conv2d
could be (C, 1, 1), (1, C, 1, 1) or a scalar), a dense weight with `units=None`, an operand
of any other op.  Such a constant keeps an unknown type, and the checker says so at it.
"""

from __future__ import annotations

from ..ir.attrs import IntImm
from ..ir.expr import Call, Constant, Expr
from ..ir.functor import children
from ..ir.module import IRModule
from ..ir.types import TensorType, Type
from ..ops.conv_geometry import backward_shape, parse_layout
from ..ops.nn_conv import CONV_SPECS

# ops whose relation is numpy broadcasting of two operands (the result dtype is theirs)
BROADCAST_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum",
    "mod", "floor_mod", "trunc_divide", "trunc_mod",
})


def _int(d) -> int | None:
    if isinstance(d, bool):
        return None
    if isinstance(d, int):
        return d
    if isinstance(d, IntImm):
        return d.value
    return None


def _channel(data: TensorType, axis: int) -> TensorType | None:
    if axis < 0:
        axis += len(data.shape)
    if not 0 <= axis < len(data.shape) or _int(data.shape[axis]) is None:
        return None
    return TensorType((_int(data.shape[axis]),), data.dtype)


def operand_type(op: str, index: int, args: list[Type], attrs) -> TensorType | None:
    """The type the call `op(args, attrs)` fixes for its operand `index` (an unknown
    constant), or None when the relation cannot say.  `args` are resolved types; only
    `args[0]` (the data) is read, and only when it is a tensor type."""
    data = args[0] if args else None
    if index == 0 or not isinstance(data, TensorType):
        return None
    if op in CONV_SPECS and index == 1 and not CONV_SPECS[op].transpose:
        return _conv_weight(CONV_SPECS[op], data, attrs)
    if op == "nn.dense" and index == 1:
        units, k = _int(attrs.units), _int(data.shape[-1]) if data.shape else None
        return TensorType((units, k), data.dtype) if units is not None and k is not None else None
    if op in ("nn.bias_add", "nn.prelu") and index == 1:
        return _channel(data, attrs.axis)
    if op == "nn.batch_norm" and 1 <= index <= 4:
        return _channel(data, attrs.axis)
    if op == "nn.layer_norm" and index in (1, 2):
        return _channel(data, attrs.axis)
    return None


def _conv_weight(spec, data: TensorType, attrs) -> TensorType | None:
    channels = _int(attrs.channels)
    kernel = tuple(_int(k) for k in attrs.kernel_size or ())
    data_layout = parse_layout(attrs.data_layout, spec.data_canonical)
    kernel_layout = parse_layout(attrs.kernel_layout, spec.kernel_canonical)
    if (channels is None or len(kernel) != spec.ndim or None in kernel or data_layout is None
            or kernel_layout is None or any(f is not None for _, f in data_layout.axes)
            or any(f is not None for _, f in kernel_layout.axes)
            or len(data.shape) != len(data_layout.axes)):
        return None
    in_channels = _int(data.shape[data_layout.index("C")])
    groups = _int(attrs.groups) or 1
    if in_channels is None or in_channels % groups:
        return None
    canonical = (channels, in_channels // groups, *kernel)
    shape = backward_shape(kernel_layout, canonical, spec.kernel_canonical)
    return TensorType(tuple(shape), data.dtype)


def broadcast_operand(op: str, index: int, args: list[Type], result: Type) -> TensorType | None:
    """The type of operand `index` (an unknown constant) of a broadcasting binary op whose
    result is already fixed to `result`: the other operand's type when it equals `result`
    (then the constant, whatever shape it broadcasts from, may as well be that shape)."""
    if op not in BROADCAST_OPS or len(args) != 2 or index not in (0, 1):
        return None
    other = args[1 - index]
    if not (isinstance(other, TensorType) and isinstance(result, TensorType)):
        return None
    shape = tuple(_int(d) for d in other.shape)
    if None in shape or other.dtype != result.dtype or shape != tuple(_int(d) for d in result.shape):
        return None
    return TensorType(shape, other.dtype)


def unknown_constants(module: IRModule) -> list[Constant]:
    """The constants of `module` with no value, in the order of first appearance."""
    found: dict[Constant, None] = {}
    seen: set[int] = set()
    for func in module.functions.values():
        stack: list[Expr] = [func]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, Constant) and not node.known:
                found[node] = None
            stack.extend(c for c in children(node) if isinstance(c, Expr))
            if isinstance(node, Call):
                stack.append(node.op)
    return list(found)
