"""Plumbing ops seen in printed IR: annotations, devices, lowered calls, memory, the VM
and dynamic broadcast (reference §7.7).  The quantized ops are in qnn.py.

* `annotation.stop_fusion`, `on_device`, `device_copy`, and the BYOC region markers
  `annotation.compiler_begin`/`compiler_end`, pass their argument through (any
  type: a tensor, a tuple, an ADT value, a function).  The device attributes changed
  between TVM versions (`virtual_device` in v0.9+, `se_scope`/`device_type` before), so
  those ops keep attributes their schema does not list.
* `call_lowered(@f, (args...))` takes the callee's function type and the tuple of its
  arguments and returns the callee's result type; `vm.invoke_tvm_op` and `vm.shape_func`
  likewise check a function against tuples of inputs and outputs.
* `memory.*` relations work (they produce the runtime's `Storage` type), but allocation has
  no meaning in a reference interpreter: their numpy compute raises NotImplementedError.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import ANY, UNIT, FuncType, GlobalTypeVar, TensorType, TupleType, Type, TypeCall
from .attrs import ANY as ANY_VALUE
from .attrs import BOOL, INTS, OPT_INTS, STR, Attr
from .registry import BROADCAST, OPAQUE, OpTypeError, define
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

_identity("annotation.compiler_begin", "The value itself, entering a region offloaded to `compiler` "
                                       "(AnnotateTarget writes it; PartitionGraph removes it).",
          attrs=(Attr("compiler", STR, doc="the external compiler (target) of the region"),))
_identity("annotation.compiler_end", "The value itself, leaving a region offloaded to `compiler` "
                                     "(AnnotateTarget writes it; PartitionGraph removes it).",
          attrs=(Attr("compiler", STR, doc="the external compiler (target) of the region"),))

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
