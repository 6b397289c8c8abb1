"""Plumbing ops seen in printed IR: annotations, devices, lowered calls, memory, the VM,
dynamic broadcast, and the quantized (qnn) ops (reference §7.7).

* `annotation.stop_fusion`, `on_device`, `device_copy` pass their argument through (any
  type: a tensor, a tuple, an ADT value, a function).  The device attributes changed
  between TVM versions (`virtual_device` in v0.9+, `se_scope`/`device_type` before), so
  those ops keep attributes their schema does not list.
* `call_lowered(@f, (args...))` takes the callee's function type and the tuple of its
  arguments and returns the callee's result type; `vm.invoke_tvm_op` and `vm.shape_func`
  likewise check a function against tuples of inputs and outputs.
* `memory.*` relations work (they produce the runtime's `Storage` type), but allocation has
  no meaning in a reference interpreter: their numpy compute raises NotImplementedError.
* qnn follows TVM's canonical lowering: quantize is clip(round(x / scale) + zp),
  dequantize (q - zp) * scale, requantize a fixed-point multiplication by
  input_scale / output_scale (int64 with UPWARD rounding unless the attributes say
  otherwise), and qnn.conv2d / qnn.dense accumulate (q - zp) products in integers.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..ir.types import ANY, UNIT, FuncType, GlobalTypeVar, TensorType, TupleType, Type, TypeCall
from .attrs import ANY as ANY_VALUE
from .attrs import BOOL, INT, INTS, OPT_INT, OPT_INTS, STR, Attr
from .qnn_geometry import QMIN_QMAX, channel_axis, qnn_conv_geometry, requantize_modes
from .registry import BROADCAST, OPAQUE, OUT_EWISE_FUSABLE, OpTypeError, define
from .shapes import check_dtype, check_rank, dims, known, same_dim, tensor, type_text

# ---- pass-through annotations ----------------------------------------------------------------


def _identity(name: str, doc: str, attrs: tuple[Attr, ...] = (), open_attrs: bool = False) -> None:
    opdef = define(name, ("data",), OPAQUE, attrs=attrs, doc=doc, open_attrs=open_attrs, polymorphic=True)
    opdef.relation(lambda data, attrs: data)
    opdef.reference(lambda x, attrs: x)


_identity("annotation.stop_fusion", "A fusion barrier: the value itself; FuseOps never fuses across it.")
_identity("on_device", "The value itself, placed on a virtual device (attributes as in TVM v0.9+; older "
                       "spellings such as se_scope/is_fixed are kept as written).",
          attrs=(Attr("virtual_device", ANY_VALUE, None, "where the value lives"),
                 Attr("constrain_result", BOOL, False, "the result is on the device"),
                 Attr("constrain_body", BOOL, True, "the argument is on the device")),
          open_attrs=True)
_identity("device_copy", "The value itself, copied from one virtual device to another (v0.8 spelled the "
                         "attributes src_dev_type/dst_dev_type or src_se_scope/dst_se_scope).",
          attrs=(Attr("src_virtual_device", ANY_VALUE, None, "the source device"),
                 Attr("dst_virtual_device", ANY_VALUE, None, "the destination device")),
          open_attrs=True)


# ---- checking a function against argument types ------------------------------------------------------

def _compatible(expected: Type, found: Type) -> bool:
    """False only when the two types certainly differ (a `?` or a type variable could be anything)."""
    if isinstance(expected, TensorType) and isinstance(found, TensorType):
        return (expected.dtype == found.dtype and expected.ndim == found.ndim
                and all(same_dim(a, b) for a, b in zip(dims(expected), dims(found))))
    if isinstance(expected, TupleType) and isinstance(found, TupleType):
        return len(expected.fields) == len(found.fields) and all(
            _compatible(a, b) for a, b in zip(expected.fields, found.fields))
    kinds = (TensorType, TupleType, FuncType)
    if isinstance(expected, kinds) and isinstance(found, kinds):
        return type(expected) is type(found)
    return True


def _function(op: str, ty: Type, arg: int = 0) -> FuncType:
    if not isinstance(ty, FuncType):
        raise OpTypeError(f"{op}: the callee must be a function, found {type_text(ty)}", arg)
    return ty


def _tuple(op: str, ty: Type, what: str, arg: int) -> TupleType:
    if not isinstance(ty, TupleType):
        raise OpTypeError(f"{op}: {what} must be a tuple, found {type_text(ty)}", arg)
    return ty


def _check_args(op: str, fn: FuncType, args: tuple[Type, ...], what: str, arg: int) -> None:
    n = len(fn.arg_types)
    if len(args) != n:
        raise OpTypeError(f"{op}: the callee takes {n} argument{'s' * (n != 1)} ({type_text(fn)}) but "
                          f"{what} has {len(args)}", arg)
    if fn.type_params:
        return  # polymorphic: the checker would need to instantiate it
    for i, (param, found) in enumerate(zip(fn.arg_types, args)):
        if not _compatible(param, found):
            raise OpTypeError(f"{op}: argument {i} of the callee expects {type_text(param)}, {what} gives "
                              f"{type_text(found)}", arg)


call_lowered = define("call_lowered", None, OPAQUE,
                      attrs=(Attr("metadata", ANY_VALUE, None, "a map of lowering metadata (relay_attrs, ...)"),),
                      doc="Call a lowered (primitive) function: call_lowered(@f, (args...)) returns what "
                          "@f returns.  Appears after LowerTE.")


@call_lowered.relation
def _(args, attrs):
    if len(args) != 2:
        raise OpTypeError(f"call_lowered takes 2 arguments (the lowered function and a tuple of its "
                          f"arguments), {len(args)} given")
    fn = _function("call_lowered", args[0])
    tup = _tuple("call_lowered", args[1], "the second argument", 1)
    _check_args("call_lowered", fn, tup.fields, "the argument tuple", 1)
    return fn.ret_type


@call_lowered.reference
def _(args, attrs):
    fn, inputs = args
    if not callable(fn):
        raise NotImplementedError("call_lowered needs the lowered function as a Python callable")
    return fn(*inputs)


# ---- memory -----------------------------------------------------------------------------------

STORAGE_TYPE_NAME = "Storage"
_STORAGE = GlobalTypeVar(STORAGE_TYPE_NAME)


def storage_type() -> TypeCall:
    """The runtime's opaque `Storage` type (an ADT name TVM's modules intern)."""
    return TypeCall(_STORAGE)


def _is_storage(ty: Type) -> bool:
    if isinstance(ty, TypeCall):
        return ty.func.name == STORAGE_TYPE_NAME
    return isinstance(ty, GlobalTypeVar) and ty.name == STORAGE_TYPE_NAME


def _int64_scalar(op: str, ty: Type, what: str, arg: int) -> TensorType:
    t = tensor(ty, f"{op}: {what}", arg)
    if t.dtype != "int64" or t.ndim != 0:
        raise OpTypeError(f"{op}: {what} must be an int64 scalar, found {type_text(t)}", arg)
    return t


def _no_reference(name: str):
    def compute(*args):
        raise NotImplementedError(f"{name} has no reference semantics")

    return compute


alloc_storage = define("memory.alloc_storage", ("size", "shape", "alignment"), OPAQUE,
                       attrs=(Attr("dtype", STR, "float32", "dtype hint"),
                              Attr("virtual_device", ANY_VALUE, None, "the device to allocate on")),
                       open_attrs=True,
                       doc="Allocate `size` bytes of storage aligned to `alignment` (int64 scalars); "
                           "the form of TVM v0.14+ (earlier versions had no shape argument).")


@alloc_storage.relation
def _(size, shape, alignment, attrs):
    _int64_scalar("memory.alloc_storage", size, "size", 0)
    tensor(shape, "memory.alloc_storage: shape", 1)
    _int64_scalar("memory.alloc_storage", alignment, "alignment", 2)
    check_dtype(attrs.dtype)
    return storage_type()


alloc_storage.reference(_no_reference("memory.alloc_storage"))


alloc_tensor = define("memory.alloc_tensor", ("storage", "offset", "shape"), OPAQUE,
                      attrs=(Attr("dtype", STR, "float32", "the tensor's dtype"),
                             Attr("const_shape", ANY_VALUE, None, "the shape as a constant, when known"),
                             Attr("assert_shape", ANY_VALUE, None, "the shape, when const_shape is not given")),
                      doc="A tensor placed in `storage` at `offset`, with the shape given by the 1-D `shape` "
                          "tensor (its type comes from const_shape or assert_shape).")


def _shape_values(value) -> tuple | None:
    """Integers (or `?`) from an attribute that holds a shape, or None if it cannot be read here."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return tuple(int(v) for v in value.reshape(-1))
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            if isinstance(v, bool):
                return None
            if isinstance(v, int):
                out.append(v)
            elif hasattr(v, "value") and isinstance(v.value, int):
                out.append(v.value)
            else:
                out.append(ANY)
        return tuple(out)
    data = getattr(value, "data", None)  # a Constant node
    if isinstance(data, np.ndarray):
        return tuple(int(v) for v in data.reshape(-1))
    return None  # a meta reference: its values live in the metadata section


@alloc_tensor.relation
def _(storage, offset, shape, attrs):
    op = "memory.alloc_tensor"
    if not _is_storage(storage):
        raise OpTypeError(f"{op}: storage must be Storage, found {type_text(storage)}", 0)
    tensor(offset, f"{op}: offset", 1)
    s = tensor(shape, f"{op}: shape", 2)
    if s.ndim > 1:
        raise OpTypeError(f"{op}: shape must be a 1-D tensor, found {type_text(s)}", 2)
    rank = dims(s)[0] if s.ndim == 1 else 0
    dtype = check_dtype(attrs.dtype)
    const = _shape_values(attrs.const_shape)
    if const is not None:
        if known(rank) and len(const) != rank:
            raise OpTypeError(f"{op}: const_shape has {len(const)} values but shape has {rank} ({type_text(s)})", 2)
        return TensorType(const, dtype)
    asserted = _shape_values(attrs.assert_shape)
    if attrs.const_shape is None and asserted is not None:
        return TensorType(asserted, dtype)
    if not known(rank):
        raise OpTypeError(f"{op}: the rank of the result is unknown: shape is {type_text(s)} and neither "
                          f"const_shape nor assert_shape can be read")
    return TensorType((ANY,) * check_rank(rank, f"{op}: the result"), dtype)


alloc_tensor.reference(_no_reference("memory.alloc_tensor"))

kill = define("memory.kill", ("to_free",), OPAQUE, doc="Release a value to the allocator; returns ().")
kill.relation(lambda to_free, attrs: UNIT)
kill.reference(lambda x, attrs: ())


# ---- the VM ---------------------------------------------------------------------------------

shape_of = define("vm.shape_of", ("tensor",), OPAQUE,
                  attrs=(Attr("dtype", STR, "", "dtype of the result (empty: int64)"),),
                  doc="The shape of a tensor as a 1-D tensor (the VM's form of shape_of).")


@shape_of.relation
def _(data, attrs):
    t = tensor(data, "vm.shape_of: tensor", 0)
    return TensorType((t.ndim,), check_dtype(attrs.dtype or "int64"))


@shape_of.reference
def _(x, attrs):
    return np.array(x.shape, dtype=attrs.dtype or "int64")


def _as_tuple(ty: Type) -> tuple[Type, ...]:
    return ty.fields if isinstance(ty, TupleType) else (ty,)


invoke_tvm_op = define("vm.invoke_tvm_op", ("op", "ins", "outs"), OPAQUE, open_attrs=True,
                       doc="Run a primitive function on a tuple of inputs, writing a tuple of outputs; "
                           "returns ().")


@invoke_tvm_op.relation
def _(op, ins, outs, attrs):
    name = "vm.invoke_tvm_op"
    fn = _function(name, op)
    _check_args(name, fn, _tuple(name, ins, "ins", 1).fields, "ins", 1)
    results = _as_tuple(fn.ret_type)
    found = _tuple(name, outs, "outs", 2).fields
    if len(found) != len(results) or not all(_compatible(a, b) for a, b in zip(results, found)):
        raise OpTypeError(f"{name}: the callee returns {type_text(fn.ret_type)} but outs is "
                          f"{type_text(outs)}", 2)
    return UNIT


@invoke_tvm_op.reference
def _(fn, ins, outs, attrs):
    if not callable(fn):
        raise NotImplementedError("vm.invoke_tvm_op needs the primitive function as a Python callable")
    results = fn(*ins)
    for out, value in zip(outs, results if isinstance(results, tuple) else (results,)):
        np.copyto(out, value)
    return ()


def _flatten(ty: Type) -> list[TensorType]:
    if isinstance(ty, TupleType):
        return [t for f in ty.fields for t in _flatten(f)]
    return [ty]  # type: ignore[list-item]


shape_func = define("vm.shape_func", ("func", "ins", "outs"), OPAQUE,
                    attrs=(Attr("is_input", OPT_INTS, None, "per argument: 1 if the shape function reads "
                                                            "the data, 0 if only the shape"),),
                    doc="Run the shape function of a primitive function (TVM v0.8-v0.13): ins hold data "
                        "or int64 shapes, outs the int64 output shapes; returns ().")


@shape_func.relation
def _(func, ins, outs, attrs):
    name = "vm.shape_func"
    fn = _function(name, func)
    flags = attrs.is_input or ()
    if len(flags) != len(fn.arg_types):
        raise OpTypeError(f"{name}: is_input has {len(flags)} values but the callee takes "
                          f"{len(fn.arg_types)} arguments")
    expected_ins: list[Type] = []
    for flag, arg_type in zip(flags, fn.arg_types):
        for t in _flatten(arg_type):
            t = tensor(t, f"{name}: callee argument", 0)
            expected_ins.append(t if flag else TensorType((t.ndim,), "int64"))
    expected_outs = [TensorType((tensor(t, f"{name}: callee result", 0).ndim,), "int64")
                     for t in _flatten(fn.ret_type)]
    for what, expected, found, arg in (("ins", expected_ins, ins, 1), ("outs", expected_outs, outs, 2)):
        fields = _tuple(name, found, what, arg).fields
        if len(fields) != len(expected) or not all(_compatible(a, b) for a, b in zip(expected, fields)):
            raise OpTypeError(f"{name}: {what} should be {type_text(TupleType(tuple(expected)))}, found "
                              f"{type_text(found)}", arg)
    return UNIT


shape_func.reference(_no_reference("vm.shape_func"))

reshape_tensor = define("vm.reshape_tensor", ("data", "shape"), OPAQUE,
                        attrs=(Attr("newshape", INTS, doc="the result shape"),),
                        doc="The VM's reshape: data viewed with a new shape.")


@reshape_tensor.relation
def _(data, shape, attrs):
    t = tensor(data, "vm.reshape_tensor: data", 0)
    tensor(shape, "vm.reshape_tensor: shape", 1)
    return TensorType(tuple(attrs.newshape), t.dtype)


reshape_tensor.reference(lambda x, shape, attrs: x.reshape(attrs.newshape))


# ---- dyn ---------------------------------------------------------------------------------------

dyn_broadcast_to = define("dyn.broadcast_to", ("data", "shape"), BROADCAST,
                          attrs=(Attr("shape", OPT_INTS, None, "unused (the shape is an argument)"),
                                 Attr("dtype", STR, "", "unused")),
                          doc="Broadcast data to the shape held by a 1-D tensor; every extent of the "
                              "result is `?`.")


@dyn_broadcast_to.relation
def _(data, shape, attrs):
    t = tensor(data, "dyn.broadcast_to: data", 0)
    s = tensor(shape, "dyn.broadcast_to: shape", 1)
    if s.ndim != 1 or not known(dims(s)[0]):
        raise OpTypeError(f"dyn.broadcast_to: shape must be a 1-D tensor of static length, found {type_text(s)}", 1)
    return TensorType((ANY,) * check_rank(dims(s)[0], "dyn.broadcast_to: the result"), t.dtype)


@dyn_broadcast_to.reference
def _(x, shape, attrs):
    return np.broadcast_to(x, tuple(int(v) for v in np.asarray(shape).reshape(-1))).copy()


# ---- qnn -------------------------------------------------------------------------------------


def _dtype_in(op: str, t: TensorType, allowed: tuple[str, ...], what: str, arg: int) -> None:
    if t.dtype not in allowed:
        raise OpTypeError(f"{op}: {what} must be one of {', '.join(allowed)}, found {type_text(t)}", arg)


def _qparam(op: str, ty: Type, what: str, arg: int, dtype: str, channels=None) -> TensorType:
    """A scale or zero point: a `dtype` scalar, or (channels given) a vector of `channels` values."""
    t = tensor(ty, f"{op}: {what}", arg)
    if t.dtype != dtype:
        raise OpTypeError(f"{op}: {what} must be {dtype}, found {type_text(t)}", arg)
    if t.ndim == 0:
        return t
    if channels is None:
        raise OpTypeError(f"{op}: {what} must be a scalar, found {type_text(t)}", arg)
    if t.ndim != 1 or not same_dim(dims(t)[0], channels):
        raise OpTypeError(f"{op}: {what} must be a scalar or a vector of {channels} values (one per channel), "
                          f"found {type_text(t)}", arg)
    return t


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast along `axis` (a scalar stays a scalar)."""
    v = np.asarray(v)
    if v.ndim == 0 or v.size == 1:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def _round_away(x: np.ndarray) -> np.ndarray:
    """Halves away from zero (relay's round, LLVM's llvm.round)."""
    return np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5))


QUANTIZED = ("int8", "uint8", "int16", "uint16", "int32")

quantize = define("qnn.quantize", ("data", "output_scale", "output_zero_point"), None,
                  attrs=(Attr("out_dtype", STR, "int8", "int8, uint8, int16, uint16 or int32"),
                         Attr("axis", INT, -1, "the channel axis of per-channel scales")),
                  doc="q = clip(round(data / scale) + zero_point) in out_dtype (float32 data; halves round "
                      "away from zero).")


@quantize.relation
def _(data, scale, zero_point, attrs):
    op = "qnn.quantize"
    d = tensor(data, f"{op}: data", 0)
    if d.dtype != "float32":
        raise OpTypeError(f"{op}: data must be float32, found {type_text(d)}", 0)
    per_channel = any(isinstance(t, TensorType) and t.ndim > 0 for t in (scale, zero_point))
    _, channels = channel_axis(op, d, attrs.axis, per_channel)
    _qparam(op, scale, "output_scale", 1, "float32", channels)
    _qparam(op, zero_point, "output_zero_point", 2, "int32", channels)
    if attrs.out_dtype not in QUANTIZED:
        raise OpTypeError(f"{op}: out_dtype must be one of {', '.join(QUANTIZED)}, got '{attrs.out_dtype}'")
    return TensorType(d.shape, attrs.out_dtype)


@quantize.reference
def _(x, scale, zero_point, attrs):
    axis, _ = channel_axis("qnn.quantize", TensorType(x.shape, "float32"), attrs.axis, False)
    s = _along(scale, axis, x.ndim).astype(np.float32)
    zp = _along(zero_point, axis, x.ndim).astype(np.float32)
    q = _round_away((x.astype(np.float32) / s).astype(np.float32)) + zp
    lo, hi = QMIN_QMAX[attrs.out_dtype]
    return np.clip(q, lo, hi).astype(attrs.out_dtype)


dequantize = define("qnn.dequantize", ("data", "input_scale", "input_zero_point"), None,
                    attrs=(Attr("out_dtype", STR, "float32", "float32 or float16"),
                           Attr("axis", INT, -1, "the channel axis of per-channel scales")),
                    doc="(data - zero_point) * scale, computed in int32 then float32.")


@dequantize.relation
def _(data, scale, zero_point, attrs):
    op = "qnn.dequantize"
    d = tensor(data, f"{op}: data", 0)
    _dtype_in(op, d, QUANTIZED, "data", 0)
    per_channel = any(isinstance(t, TensorType) and known(*dims(t)) and math.prod(dims(t)) != 1
                      for t in (scale, zero_point))
    _, channels = channel_axis(op, d, attrs.axis, per_channel)
    _qparam(op, scale, "input_scale", 1, "float32", channels if per_channel else 1)
    _qparam(op, zero_point, "input_zero_point", 2, "int32", channels if per_channel else 1)
    if attrs.out_dtype not in ("float16", "float32"):
        raise OpTypeError(f"{op}: out_dtype must be float16 or float32, got '{attrs.out_dtype}'")
    return TensorType(d.shape, attrs.out_dtype)


@dequantize.reference
def _(q, scale, zero_point, attrs):
    axis, _ = channel_axis("qnn.dequantize", TensorType(q.shape, str(q.dtype)), attrs.axis, False)
    shifted = q.astype(np.int32) - _along(zero_point, axis, q.ndim).astype(np.int32)
    out = shifted.astype(np.float32) * _along(scale, axis, q.ndim).astype(np.float32)
    if attrs.out_dtype == "float16":
        info = np.finfo(np.float16)
        out = np.clip(out, info.min, info.max)
    return out.astype(attrs.out_dtype)


requantize = define("qnn.requantize", ("data", "input_scale", "input_zero_point", "output_scale",
                                       "output_zero_point"), None,
                    attrs=(Attr("axis", INT, -1, "the channel axis of per-channel input scales"),
                           Attr("rounding", STR, "None", "UPWARD or TONEAREST (None: UPWARD)"),
                           Attr("compute_dtype", STR, "None", "int64, float32 or float64 (None: int64)"),
                           Attr("out_dtype", STR, "int8", "int8, uint8, int16 or int32")),
                    doc="Re-express a quantized tensor with another scale and zero point: "
                        "zp_out + (scale_in / scale_out) * (q - zp_in), by fixed-point multiplication.")

REQUANTIZE_IN = ("int8", "uint8", "int16", "int32", "int64")
REQUANTIZE_OUT = ("int8", "uint8", "int16", "int32")


@requantize.relation
def _(data, in_scale, in_zp, out_scale, out_zp, attrs):
    op = "qnn.requantize"
    d = tensor(data, f"{op}: data", 0)
    _dtype_in(op, d, REQUANTIZE_IN, "data", 0)
    _, channels = channel_axis(op, d, attrs.axis, True)
    _qparam(op, in_scale, "input_scale", 1, "float32", channels)
    _qparam(op, in_zp, "input_zero_point", 2, "int32", channels)
    _qparam(op, out_scale, "output_scale", 3, "float32")
    _qparam(op, out_zp, "output_zero_point", 4, "int32")
    requantize_modes(attrs)
    if attrs.out_dtype not in REQUANTIZE_OUT:
        raise OpTypeError(f"{op}: out_dtype must be one of {', '.join(REQUANTIZE_OUT)}, got '{attrs.out_dtype}'")
    return TensorType(d.shape, attrs.out_dtype)


def fixed_point_multiplier(multiplier: float) -> tuple[int, int]:
    """multiplier = significand * 2**(shift - 31), significand a 31-bit integer (TVM's
    GetFixedPointMultiplierShift: frexp, then round half away from zero)."""
    if multiplier == 0:
        return 0, 0
    significand, shift = math.frexp(multiplier)
    q = math.floor(abs(significand) * (1 << 31) + 0.5) * (1 if significand > 0 else -1)
    if q == 1 << 31:
        q //= 2
        shift += 1
    return q, shift


def _fixed_point_multiply(x: np.ndarray, multipliers: np.ndarray, rounding: str) -> np.ndarray:
    """x * multiplier in int64 fixed point (multipliers: a scalar or per-channel, broadcasting to x)."""
    significand, shift = np.vectorize(fixed_point_multiplier, otypes=[np.int64, np.int64])(multipliers)
    left = np.maximum(shift, 0)
    total = np.maximum(-shift, 0) + 31
    product = (x.astype(np.int64) << left) * significand
    rounder = np.int64(1) << (total - 1)
    if rounding == "TONEAREST":
        rounder = np.where(product >= 0, rounder, rounder - 1)
    return ((product + rounder) >> total).astype(np.int32)


@requantize.reference
def _(q, in_scale, in_zp, out_scale, out_zp, attrs):
    rounding, compute_dtype = requantize_modes(attrs)
    axis, _ = channel_axis("qnn.requantize", TensorType(q.shape, str(q.dtype)), attrs.axis, False)
    in_scale = np.asarray(in_scale, dtype=np.float32)
    out_scale = float(np.asarray(out_scale, dtype=np.float32))
    if out_scale == 0:
        raise ValueError("qnn.requantize: output_scale is 0")
    multipliers = _along(in_scale.astype(np.float64) / out_scale, axis, q.ndim)
    same_scale = in_scale.size == 1 and float(in_scale.reshape(-1)[0]) == out_scale
    zp_in = _along(in_zp, axis, q.ndim)
    if compute_dtype == "int64":
        value = q.astype(np.int32) - zp_in.astype(np.int32)
        if not same_scale:
            value = _fixed_point_multiply(value, multipliers, rounding)
        value = value + np.asarray(out_zp).astype(np.int32)
    else:
        ftype = np.float32 if compute_dtype == "float32" else np.float64
        value = q.astype(ftype) - zp_in.astype(ftype)
        if not same_scale:
            value = multipliers.astype(ftype) * value
        value = value + ftype(np.asarray(out_zp))
        value = np.floor(value + ftype(0.5)) if rounding == "UPWARD" else _round_away(value)
        value = value.astype(np.int32)
    if attrs.out_dtype == "int32":
        return value.astype(np.int32)
    lo, hi = QMIN_QMAX[attrs.out_dtype]
    return np.clip(value, lo, hi).astype(attrs.out_dtype)


# ---- qnn.conv2d and qnn.dense ------------------------------------------------------------------------

_QNN_INPUTS = ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")


def _qnn_common(op: str, data, weight, input_zp, kernel_zp, input_scale, kernel_scale, out_channels,
                data_dtypes: tuple[str, ...], weight_dtypes: tuple[str, ...], out_dtype: str) -> str:
    d = tensor(data, f"{op}: data", 0)
    w = tensor(weight, f"{op}: weight", 1)
    _dtype_in(op, d, data_dtypes, "data", 0)
    _dtype_in(op, w, weight_dtypes, "weight", 1)
    _qparam(op, input_zp, "input_zero_point", 2, "int32")
    _qparam(op, kernel_zp, "kernel_zero_point", 3, "int32", out_channels)
    _qparam(op, input_scale, "input_scale", 4, "float32")
    _qparam(op, kernel_scale, "kernel_scale", 5, "float32", out_channels)
    return out_dtype or "int32"


qnn_conv2d = define("qnn.conv2d", _QNN_INPUTS, OUT_EWISE_FUSABLE,
                    attrs=(Attr("strides", INTS, (1, 1), "step along H and W"),
                           Attr("padding", INTS, (0, 0), "1, 2 or 4 values (top, left, bottom, right)"),
                           Attr("dilation", INTS, (1, 1), "spacing of kernel elements"),
                           Attr("groups", INT, 1, "number of channel groups"),
                           Attr("channels", OPT_INT, None, "output channels"),
                           Attr("kernel_size", OPT_INTS, None, "kernel [height, width]"),
                           Attr("data_layout", STR, "NCHW", "data layout"),
                           Attr("kernel_layout", STR, "OIHW", "weight layout"),
                           Attr("out_layout", STR, "", "output layout (empty: as data)"),
                           Attr("out_dtype", STR, "", "int16, int32 or int64 (empty: int32)")),
                    doc="Quantized 2-D convolution: sum of (data - input_zero_point) * (weight - "
                        "kernel_zero_point) accumulated in integers; the output's scale is "
                        "input_scale * kernel_scale and its zero point 0.")


@qnn_conv2d.relation
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    op = "qnn.conv2d"
    d = tensor(data, f"{op}: data", 0)
    w = tensor(weight, f"{op}: weight", 1)
    *_, shape, channels = qnn_conv_geometry(op, d, w, attrs)
    out_dtype = _qnn_common(op, data, weight, input_zp, kernel_zp, input_scale, kernel_scale, channels,
                            ("int8", "uint8", "int16"), ("int8", "uint8", "int16"), attrs.out_dtype)
    if out_dtype not in ("int16", "int32", "int64"):
        raise OpTypeError(f"{op}: out_dtype must be int16, int32 or int64, got '{out_dtype}'")
    return TensorType(shape, out_dtype)


def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides, dilation, before, after, groups: int) -> np.ndarray:
    """Grouped 2-D convolution of NCHW x with OIHW w, zero padding, in the inputs' dtype."""
    x = np.pad(x, ((0, 0), (0, 0), (before[0], after[0]), (before[1], after[1])))
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow), dtype=np.result_type(x, w))
    per_group = o // groups
    for ky, kx in itertools.product(range(kh), range(kw)):
        y0, x0 = ky * dilation[0], kx * dilation[1]
        patch = x[:, :, y0:y0 + strides[0] * (oh - 1) + 1:strides[0], x0:x0 + strides[1] * (ow - 1) + 1:strides[1]]
        for g in range(groups):
            go = slice(g * per_group, (g + 1) * per_group)
            out[:, go] += np.einsum("nchw,oc->nohw", patch[:, g * i:(g + 1) * i], w[go, :, ky, kx])
    return out


@qnn_conv2d.reference
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    op = "qnn.conv2d"
    d_t, w_t = TensorType(data.shape, str(data.dtype)), TensorType(weight.shape, str(weight.dtype))
    dp, kp, out_perm, strides, dilation, before, after, _, _ = qnn_conv_geometry(op, d_t, w_t, attrs)
    x = np.transpose(data, dp).astype(np.int64) - np.int64(np.asarray(input_zp))
    k = np.transpose(weight, kp).astype(np.int64)
    k = k - _along(kernel_zp, 0, 4).astype(np.int64)
    out = conv2d_nchw(x, k, strides, dilation, before, after, attrs.groups)
    return np.transpose(out, np.argsort(out_perm)).astype(attrs.out_dtype or "int32")


qnn_dense = define("qnn.dense", _QNN_INPUTS, OUT_EWISE_FUSABLE,
                   attrs=(Attr("units", OPT_INT, None, "output features (weight rows)"),
                          Attr("out_dtype", STR, "", "int32 or int64 (empty: int32)")),
                   doc="Quantized dense: (data - input_zero_point) @ (weight - kernel_zero_point)^T, "
                       "accumulated in integers; data (..., K), weight (units, K).")


@qnn_dense.relation
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    op = "qnn.dense"
    d = tensor(data, f"{op}: data", 0)
    w = tensor(weight, f"{op}: weight", 1)
    if d.ndim < 1 or w.ndim != 2:
        bad, what, arg = (d, "data", 0) if d.ndim < 1 else (w, "weight", 1)
        raise OpTypeError(f"{op}: {what} must be {'at least 1-D' if arg == 0 else '2-D'}, found "
                          f"{type_text(bad)}", arg)
    units, k = dims(w)
    if not same_dim(dims(d)[-1], k):
        raise OpTypeError(f"{op}: data has {dims(d)[-1]} features but weight expects {k} "
                          f"(data {type_text(d)}, weight {type_text(w)})", 1)
    if attrs.units is not None and known(units) and attrs.units != units:
        raise OpTypeError(f"{op}: attribute units={attrs.units} but weight has {units} rows "
                          f"(weight {type_text(w)})", 1)
    units = attrs.units if attrs.units is not None else units
    out_dtype = _qnn_common(op, data, weight, input_zp, kernel_zp, input_scale, kernel_scale, units,
                            ("int8", "uint8", "int16", "uint16"), ("int8", "uint8"), attrs.out_dtype)
    if out_dtype not in ("int32", "int64"):
        raise OpTypeError(f"{op}: out_dtype must be int32 or int64, got '{out_dtype}'")
    return TensorType(tuple(d.shape[:-1]) + (units,), out_dtype)


@qnn_dense.reference
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    x = data.astype(np.int64) - np.int64(np.asarray(input_zp))
    w = weight.astype(np.int64) - _along(kernel_zp, 0, 2).astype(np.int64)
    return (x @ w.T).astype(attrs.out_dtype or "int32")
