"""The work of an op call and of a fused function: FLOPs by op, bytes by buffer.

    call_flops(call)          # FLOPs of one `Call` of a primitive op, from its types and attrs
    function_flops(func)      # the sum over the calls of a fused function's body
    function_bytes(func)      # bytes its kernel must read and write at least once

One rule per op, in `FLOP_RULES` (keyed by op name); an op without a rule is counted by
its pattern (`BY_PATTERN`).  The counts are the textbook ones, what TVM's and most
profilers' FLOP counters use:

    convolution      2 × output elements × (weight elements / output channels)
                     (a multiply and an add per weight element reaching an output;
                     Winograd's: that of the direct convolution it computes)
    transposed conv  2 × input elements × (weight elements / input channels)
    dense, matmul    2 × output elements × K
    einsum           output elements × summed extents × operands (a multiply per
                     further operand and an add per term; no add when nothing is summed)
    pooling          output elements × window (global / adaptive: input elements)
    softmax          4 per element (max, subtract+exp, sum, divide)
    norms            batch_norm 2, layer/group/instance_norm 5, l2_normalize 3 per element
    elementwise      1 per output element (exp, tanh, sigmoid too: one op, not their cost
                     in instructions)
    reductions       1 per input element (variance 3)
    data movement    0 (reshape, transpose, pad, concatenate, cast, broadcast_to, take, ...)

Bytes are the compulsory traffic: every parameter and every constant of the function read
once and its result written once (what a kernel that kept nothing in cache would move at
least; real traffic is higher when tiles are re-read).
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np

from ..ir.expr import Call, Constant, Function, Op
from ..ir.functor import post_order
from ..ir.types import TensorType, TupleType, Type
from ..ops.einsum_geometry import einsum_plan
from ..ops.registry import OpPattern, OpTypeError, get_op

MOVES_DATA = frozenset({  # elementwise or broadcast by pattern, but no arithmetic
    "broadcast_to", "broadcast_to_like", "dyn.broadcast_to", "expand_dims", "repeat", "tile", "copy",
    "cast", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like", "where",
})


def _elements(ty: Type | None) -> int:
    """Elements of a static tensor type (a tuple: of all its fields); 0 when unknown."""
    if isinstance(ty, TupleType):
        return sum(_elements(f) for f in ty.fields)
    if isinstance(ty, TensorType) and ty.is_static:
        return int(np.prod(ty.shape, dtype=np.int64))
    return 0


def _nbytes(ty: Type | None) -> int:
    if isinstance(ty, TupleType):
        return sum(_nbytes(f) for f in ty.fields)
    if isinstance(ty, TensorType) and ty.is_static:
        try:
            size = np.dtype(ty.dtype).itemsize
        except TypeError:
            size = 4
        return int(np.prod(ty.shape, dtype=np.int64)) * size
    return 0


def _type(expr) -> Type | None:
    return getattr(expr, "ty", None) or getattr(expr, "type_annotation", None)


def _shape(expr) -> tuple[int, ...]:
    ty = _type(expr)
    if isinstance(ty, TensorType) and ty.is_static:
        return tuple(int(d) for d in ty.shape)
    return ()


def _out(call: Call) -> int:
    ty = _type(call)
    if isinstance(ty, TupleType) and ty.fields:  # batch_norm, split: the first field is the result
        return _elements(ty.fields[0]) if call.op.name == "nn.batch_norm" else _elements(ty)
    return _elements(ty)


def _in(call: Call) -> int:
    return _elements(_type(call.args[0])) if call.args else 0


def _layout_dims(layout: str, shape: tuple[int, ...], letters: str) -> int:
    """The product of the dims of `shape` whose layout letter (upper or lower case, a
    split dim like the `8o` of OIHW8i8o included) is in `letters`."""
    names = re.sub(r"\d+", "", layout)
    if len(names) != len(shape):
        return shape[0] if shape else 1
    return int(np.prod([d for d, n in zip(shape, names) if n.upper() in letters], dtype=np.int64)) or 1


def _conv(default_layout: str, weight_arg: int = 1):
    def rule(call: Call) -> int:
        weight = _shape(call.args[weight_arg]) if len(call.args) > weight_arg else ()
        if not weight:
            return 0
        layout = str(call.attrs.get("kernel_layout") or default_layout)
        per_output = int(np.prod(weight, dtype=np.int64)) // _layout_dims(layout, weight, "O")
        return 2 * _out(call) * per_output
    return rule


def _winograd(call: Call) -> int:
    """The direct convolution's count (Winograd's fewer multiplications are the kernel's
    business): 2 x output elements x input channels x the kernel's extents; the
    transformed weight is (alpha, alpha, O, I) or (alpha, alpha, O/v, I, v)."""
    weight = _shape(call.args[1]) if len(call.args) > 1 else ()
    kernel = call.attrs.get("kernel_size") or ()
    if len(weight) < 4 or not kernel:
        return 0
    window = int(np.prod([int(getattr(k, "value", k)) for k in kernel], dtype=np.int64))
    return 2 * _out(call) * weight[3] * window


def _conv_transpose(default_layout: str):
    def rule(call: Call) -> int:
        weight = _shape(call.args[1]) if len(call.args) > 1 else ()
        if not weight:
            return 0
        layout = str(call.attrs.get("kernel_layout") or default_layout)
        per_input = int(np.prod(weight, dtype=np.int64)) // _layout_dims(layout, weight, "I")
        return 2 * _in(call) * per_input
    return rule


def _contract(transpose_attr: str | None, k_axis_if_transposed: int = -2):
    """dense / matmul / batch_matmul: 2 × output × K, K from the first operand."""
    def rule(call: Call) -> int:
        a = _shape(call.args[0])
        if not a:
            return 0
        transposed = bool(call.attrs.get(transpose_attr)) if transpose_attr else False
        return 2 * _out(call) * a[k_axis_if_transposed if transposed else -1]
    return rule


def _einsum(call: Call) -> int:
    ty = _type(call.args[0]) if call.args else None
    fields = ty.fields if isinstance(ty, TupleType) else ()
    if not fields or not all(isinstance(f, TensorType) and f.is_static for f in fields):
        return 0
    try:
        plan = einsum_plan(str(call.attrs.get("equation")), [f.shape for f in fields])
    except OpTypeError:
        return 0
    summed = int(np.prod(plan.shape_of(plan.reduced), dtype=np.int64))
    return _out(call) * summed * (len(fields) - 1 + bool(plan.reduced))


def _window(call: Call) -> int:
    pool = call.attrs.get("pool_size") or ()
    return _out(call) * int(np.prod([int(p) for p in pool], dtype=np.int64))


def _per_element(factor: int, of: Callable[[Call], int] = _out):
    return lambda call: factor * of(call)


FLOP_RULES: dict[str, Callable[[Call], int]] = {
    "nn.conv1d": _conv("OIW"),
    "nn.conv2d": _conv("OIHW"),
    "nn.conv3d": _conv("OIDHW"),
    "qnn.conv2d": _conv("OIHW"),
    "nn.contrib_conv2d_NCHWc": _conv("OIHW"),
    "nn.contrib_depthwise_conv2d_NCHWc": _conv("OIHW"),
    "nn.contrib_conv2d_winograd_without_weight_transform": _winograd,
    "nn.deformable_conv2d": _conv("OIHW", weight_arg=2),  # the convolution; its sampling not counted
    "nn.conv1d_transpose": _conv_transpose("IOW"),
    "nn.conv2d_transpose": _conv_transpose("IOHW"),
    "nn.dense": _contract(None),
    "nn.contrib_dense_pack": _contract(None),
    "qnn.dense": _contract(None),
    "nn.matmul": _contract("transpose_a"),
    "nn.batch_matmul": _contract("transpose_a"),
    "einsum": _einsum,
    "nn.max_pool1d": _window, "nn.max_pool2d": _window, "nn.max_pool3d": _window,
    "nn.avg_pool1d": _window, "nn.avg_pool2d": _window, "nn.avg_pool3d": _window,
    "nn.global_avg_pool2d": _per_element(1, _in), "nn.global_max_pool2d": _per_element(1, _in),
    "nn.adaptive_avg_pool1d": _per_element(1, _in), "nn.adaptive_avg_pool2d": _per_element(1, _in),
    "nn.adaptive_avg_pool3d": _per_element(1, _in), "nn.adaptive_max_pool1d": _per_element(1, _in),
    "nn.adaptive_max_pool2d": _per_element(1, _in), "nn.adaptive_max_pool3d": _per_element(1, _in),
    "nn.softmax": _per_element(4), "nn.log_softmax": _per_element(4), "nn.fast_softmax": _per_element(4),
    "nn.batch_norm": _per_element(2), "nn.layer_norm": _per_element(5), "nn.group_norm": _per_element(5),
    "nn.instance_norm": _per_element(5), "nn.l2_normalize": _per_element(3),
    "nn.lrn": lambda call: _out(call) * int(call.attrs.get("size") or 1),
    "variance": _per_element(3, _in),
    "qnn.quantize": _per_element(2), "qnn.dequantize": _per_element(2), "qnn.requantize": _per_element(2),
    **{name: (lambda call: 0) for name in MOVES_DATA},
}

BY_PATTERN: dict[OpPattern | None, Callable[[Call], int]] = {
    OpPattern.ELEMWISE: _per_element(1),
    OpPattern.BROADCAST: _per_element(1),
    OpPattern.COMM_REDUCE: _per_element(1, _in),
    OpPattern.INJECTIVE: lambda call: 0,
    OpPattern.OPAQUE: lambda call: 0,
}


def call_flops(call: Call) -> int:
    """FLOPs of one call of a primitive op (0 for a call of anything else)."""
    if not isinstance(call.op, Op):
        return 0
    rule = FLOP_RULES.get(call.op.name)
    if rule is None:
        opdef = get_op(call.op.name)
        rule = BY_PATTERN.get(opdef.pattern if opdef is not None else None, _per_element(1))
    try:
        return max(int(rule(call)), 0)
    except (TypeError, ValueError, IndexError, KeyError):  # attrs or types not as the op's relation left them
        return _out(call)


def function_flops(func: Function) -> int:
    return sum(call_flops(n) for n in post_order(func.body) if isinstance(n, Call))


def function_bytes(func: Function) -> int:
    """Parameters and constants read once, the result written once."""
    total = sum(_nbytes(_type(p)) for p in func.params) + _nbytes(_type(func.body))
    for node in post_order(func.body):
        if isinstance(node, Constant) and node.data is not None:
            total += int(np.asarray(node.data).nbytes)
    return total


def output_elements(call: Call) -> int:
    """Elements a call produces: the weight of a call when a kernel that does no
    arithmetic (only moves data) shares its time among its calls."""
    return _out(call)
