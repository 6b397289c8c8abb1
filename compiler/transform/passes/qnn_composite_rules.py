"""qnn.Legalize's rules for the qnn ops TVM never computes (ops/qnn_composite.py): they
become plain ops, as TVM rewrites them on the default x86 target `llvm`.

FTVMQnnCanonicalize (src/relay/qnn/op/add.cc `QnnAddCanonicalize`, concatenate.cc
`ConcatenateQnnCanonicalize`):

    qnn.add(%a, %b, SA, ZA, SB, ZB, SC, ZC)
      => cast(clip(subtract(add(A', B'), ZC), a_min=qmin(D), a_max=qmax(D)), D)
    qnn.concatenate((%a, %b), (SA, SB), (ZA, ZB), SC, ZC, axis=k)
      => concatenate((A'', B''), axis=k)

    qnn.batch_matmul(%x, %y, ZX, ZY, SX, SY)          (%x (B, M, K), %y (B, N, K))
      => subtract(T1, T2), subtract(T1, T3) or add(subtract(T1, T2), subtract(T4, T3))
         T1 = nn.batch_matmul(%x, %y, out_dtype="int32", transpose_b=True)
         T2 = multiply(ZY, sum(cast(%x, "int32"), axis=[2], keepdims=True))
         T3 = reshape(multiply(ZX, sum(cast(%y, "int32"), axis=[2], keepdims=True)), newshape=[0, 1, N])
         T4 = ZX * ZY * K

(batch_matmul.cc `QnnBatchMatmulCanonicalize`): with constant zero points the terms a zero
zero point cancels are left out (T1 alone when both are 0) and T4 is a constant; otherwise
all four, T4 as multiply(multiply(ZX, ZY), K).

A' is `cast(%a, "int32")` when SA, ZA are SC, ZC (TVM's IsEqualScalar: scalar constants,
structurally equal), else %a requantized to SC, ZC in int32 along lhs_axis; A'' is %a
itself, or requantized to its own dtype D.  A requantize is written out as
qnn_canonicalize.py lowers qnn.requantize (fixed_point_multiply and friends); with scales
that are not scalar constants (TVM stops there) it stays a qnn.requantize, which has a
compute rule.  The subtraction is left out when ZC is the constant 0.  A tuple that is not
written out as a Tuple is read field by field (TupleGetItem), as TVM reads a call's.

FTVMQnnLegalize (python/tvm/relay/qnn/op/legalizations.py `qnn_conv2d_transpose_legalize`,
the generic rule, which `llvm` gets):

    qnn.conv2d_transpose(%d, %w, ZD, ZW, SD, SW, attrs)
      => nn.conv2d_transpose(subtract(cast(%d, "int16"), cast(ZD, "int16")),
                             subtract(cast(%w, "int16"), cast(ZW, "int16")), attrs, out_dtype=O)

a per-channel ZW as `nn.bias_add(cast(%w, "int16"), negative(cast(ZW, "int16")))` (axis 1,
TVM's default, whatever kernel_layout says).  A one-element vector ZD is taken as the scalar
it holds (TVM's `nn.bias_add` of it along C would not type).  O is the qnn op's out_dtype
(int32 unless written); Legalize then brings the kernel to IOHW (legalize_x86.py).

Spans: see legalize.py.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.expr import Call, Constant, Expr, Tuple, TupleGetItem, op
from ...ir.types import TensorType, TupleType
from ...ops import get_op
from .legalize import register_legalize
from .qnn_canonicalize import requantize_lower
from .simplify_expr_rules import make_call


def _call(name: str, args: list[Expr], attrs: dict | None = None) -> Call:
    return make_call(name, args, attrs, span=None)


def is_equal_scalar(a: Expr, b: Expr) -> bool:
    """TVM's IsEqualScalar: two scalar constants of one dtype and value."""
    return (isinstance(a, Constant) and isinstance(b, Constant) and a.data is not None and b.data is not None
            and np.ndim(a.data) == 0 and np.ndim(b.data) == 0 and np.asarray(a.data).dtype == np.asarray(b.data).dtype
            and bool(np.asarray(a.data) == np.asarray(b.data)))


def requantize(x: Expr, ty: TensorType, scale: Expr, zp: Expr, out_scale: Expr, out_zp: Expr, axis: int,
               out_dtype: str) -> Expr:
    """TVM's helper Requantize: written out, or a qnn.requantize when it cannot be."""
    lowered = requantize_lower(x, scale, zp, out_scale, out_zp, ty.ndim, axis, out_dtype)
    if lowered is not None:
        return lowered
    return _call("qnn.requantize", [x, scale, zp, out_scale, out_zp], {"axis": axis, "out_dtype": out_dtype})


def _fields(e: Expr, ty) -> list[Expr]:
    if isinstance(e, Tuple):
        return list(e.fields)
    return [TupleGetItem(e, i, ty=f) for i, f in enumerate(ty.fields)]


@register_legalize("qnn.add", "FTVMQnnCanonicalize")
def qnn_add_rule(call: Call, args, types) -> Expr | None:
    attrs = get_op("qnn.add").normalize_attrs(call.attrs)
    lhs, rhs, lhs_scale, lhs_zp, rhs_scale, rhs_zp, out_scale, out_zp = args
    dtype = types[0].dtype
    if not dtype.startswith(("int", "uint")):
        return None  # TVM's canonicalization fails (no integer range); the call stays and says why

    def upcast(x, ty, scale, zp, axis):
        if is_equal_scalar(scale, out_scale) and is_equal_scalar(zp, out_zp):
            return _call("cast", [x], {"dtype": "int32"})
        return requantize(x, ty, scale, zp, out_scale, out_zp, axis, "int32")

    total = _call("add", [upcast(lhs, types[0], lhs_scale, lhs_zp, attrs.lhs_axis),
                          upcast(rhs, types[1], rhs_scale, rhs_zp, attrs.rhs_axis)])
    zero = Constant(np.asarray(0, dtype="int32"), ty=TensorType((), "int32"))
    if not is_equal_scalar(out_zp, zero):
        total = _call("subtract", [total, out_zp])
    info = np.iinfo(dtype)
    clipped = _call("clip", [total], {"a_min": float(info.min), "a_max": float(info.max)})
    return _call("cast", [clipped], {"dtype": dtype})


@register_legalize("qnn.concatenate", "FTVMQnnCanonicalize")
def qnn_concatenate_rule(call: Call, args, types) -> Expr | None:
    attrs = get_op("qnn.concatenate").normalize_attrs(call.attrs)
    data, scales, zero_points, out_scale, out_zp = args
    if not all(isinstance(t, TupleType) for t in types[:3]):
        return None
    parts = []
    for x, ty, scale, zp in zip(_fields(data, types[0]), types[0].fields, _fields(scales, types[1]),
                                _fields(zero_points, types[2])):
        if is_equal_scalar(scale, out_scale) and is_equal_scalar(zp, out_zp):
            parts.append(x)
        else:
            parts.append(requantize(x, ty, scale, zp, out_scale, out_zp, -1, ty.dtype))
    joined = Tuple(tuple(parts), ty=TupleType(tuple(p.ty for p in parts)) if all(p.ty for p in parts) else None)
    return _call("concatenate", [joined], {"axis": attrs.axis})


def _int16(x: Expr) -> Call:
    return _call("cast", [x], {"dtype": "int16"})


def _shifted(x: Expr, zp: Expr, zp_ty: TensorType, scalar: bool) -> Expr:
    if zp_ty.ndim == 0:
        return _call("subtract", [_int16(x), _int16(zp)])
    if scalar:
        return _call("subtract", [_int16(x), _int16(_call("reshape", [zp], {"newshape": []}))])
    return _call("nn.bias_add", [_int16(x), _call("negative", [_int16(zp)])], {"axis": 1})


@register_legalize("qnn.conv2d_transpose", "FTVMQnnLegalize")
def qnn_conv2d_transpose_rule(call: Call, args, types) -> Expr | None:
    data, weight, data_zp, kernel_zp = args[:4]
    written = {k: v for k, v in call.attrs.items()}
    written["out_dtype"] = types[-1].dtype
    schema = [a.name for a in get_op("nn.conv2d_transpose").attrs]
    ordered = {name: written[name] for name in schema if name in written}
    return Call(op("nn.conv2d_transpose"), (_shifted(data, data_zp, types[2], True),
                                            _shifted(weight, kernel_zp, types[3], False)), Attrs(ordered))


def _int32(value: int) -> Constant:
    return Constant(np.asarray(np.int64(value)).astype("int32"), ty=TensorType((), "int32"))  # wraps, as C++


def _zero_point(e: Expr) -> int | None:
    """A constant scalar zero point's value (TVM's IsConstScalar), else None."""
    if isinstance(e, Constant) and e.data is not None and np.ndim(e.data) == 0:
        return int(np.asarray(e.data))
    return None


@register_legalize("qnn.batch_matmul", "FTVMQnnCanonicalize")
def qnn_batch_matmul_rule(call: Call, args, types) -> Expr | None:
    x, y, x_zp, y_zp = args[:4]
    k, n = types[0].shape[2], types[1].shape[1]
    if not isinstance(k, int) or not isinstance(n, int):
        return None  # TVM reads them as constants; the call stays and says why
    term1 = _call("nn.batch_matmul", [x, y], {"out_dtype": "int32", "transpose_a": False, "transpose_b": True})

    def row_sums(t: Expr) -> Call:
        return _call("sum", [_call("cast", [t], {"dtype": "int32"})], {"axis": [2], "keepdims": True})

    term2 = _call("multiply", [y_zp, row_sums(x)])
    term3 = _call("reshape", [_call("multiply", [x_zp, row_sums(y)])], {"newshape": [0, 1, n]})
    zx, zy = _zero_point(x_zp), _zero_point(y_zp)
    if zx is not None and zy is not None:
        if zx == 0 and zy == 0:
            return term1
        if zx == 0:
            return _call("subtract", [term1, term2])
        if zy == 0:
            return _call("subtract", [term1, term3])
        term4 = _int32(zx * zy * k)
    else:
        term4 = _call("multiply", [_call("multiply", [x_zp, y_zp]), _int32(k)])
    return _call("add", [_call("subtract", [term1, term2]), _call("subtract", [term4, term3])])
