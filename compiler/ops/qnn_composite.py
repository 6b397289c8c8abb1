"""The qnn ops that TVM only rewrites, never computes (TNonComputational): qnn.add,
qnn.concatenate, qnn.conv2d_transpose and qnn.batch_matmul (src/relay/qnn/op/add.cc,
concatenate.cc, convolution_transpose.cc, batch_matmul.cc).  qnn.Legalize turns them into plain ops before anything is
lowered (transform/passes/qnn_composite_rules.py), so they have a relation and a numpy
reference here but no compute rule; the reference computes exactly what that rewrite
computes.

* qnn.add: each operand requantized to the output's scale and zero point (in int32; an
  operand whose scale and zero point are the output's, as scalar constants, is only cast),
  the sum less the output zero point, clipped and cast to the operands' dtype.
* qnn.concatenate: each input whose scale and zero point differ from the output's
  requantized to them (in its own dtype), then joined.
* qnn.conv2d_transpose: nn.conv2d_transpose of (data - input_zero_point) and
  (weight - kernel_zero_point), both in int16 (TVM's generic QnnLegalize, what `llvm` gets);
  a per-channel kernel zero point is subtracted along the weight's axis 1, as TVM's
  `nn.bias_add` does it whatever the kernel layout.
* qnn.batch_matmul: (x - x_zero_point) times (y - y_zero_point) transposed, batched,
  accumulated in int32 (TVM's four-term canonicalization computes exactly that).

Requantizing follows qnn.requantize with TVM's defaults (UPWARD rounding, int64 fixed
point), as TVM's helper `Requantize` builds it.  Where a relation here is stricter than
TVM's it says so in the op's doc.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType, TupleType
from .attrs import BOOL, INT, STR, Attr
from .qnn_geometry import QMIN_QMAX
from .registry import BROADCAST, OpTypeError, define, get_op
from .shapes import broadcast_types, dims, known, tensor, tensors_of_tuple, type_text

_INTEGER = ("int8", "uint8", "int16", "uint16", "int32")
# TVM's TNonComputational qnn ops: never lowered, qnn.Legalize rewrites them first
NON_COMPUTATIONAL = ("qnn.add", "qnn.concatenate", "qnn.conv2d_transpose", "qnn.batch_matmul")


def _scalar(op: str, ty, what: str, arg: int, dtype: str) -> None:
    t = tensor(ty, f"{op}: {what}", arg)
    if t.dtype != dtype or t.ndim != 0:
        raise OpTypeError(f"{op}: {what} must be a {dtype} scalar, found {type_text(t)}", arg)


def _scalar_or_channels(op: str, ty, what: str, arg: int, dtype: str, channels) -> None:
    """TVM's AssignType: a scalar, or a vector of the channel axis's extent."""
    t = tensor(ty, f"{op}: {what}", arg)
    if t.dtype != dtype:
        raise OpTypeError(f"{op}: {what} must be {dtype}, found {type_text(t)}", arg)
    if t.ndim == 0:
        return
    extent = dims(t)[0] if t.ndim == 1 else None
    if t.ndim != 1 or (known(extent, channels) and extent != channels):
        raise OpTypeError(f"{op}: {what} must be a scalar or a vector of {channels} values "
                          f"(one per channel), found {type_text(t)}", arg)


def _same_scalar(a: np.ndarray, b: np.ndarray) -> bool:
    """TVM's IsEqualScalar on values: both scalars, equal."""
    return np.ndim(a) == 0 and np.ndim(b) == 0 and a.dtype == b.dtype and bool(a == b)


def _requantize(q, scale, zero_point, out_scale, out_zero_point, out_dtype: str, axis: int = -1):
    return get_op("qnn.requantize").evaluate([q, scale, zero_point, out_scale, out_zero_point],
                                             {"axis": axis, "out_dtype": out_dtype})


def _integer_data(op: str, x: np.ndarray) -> str:
    dtype = str(x.dtype)
    if dtype not in _INTEGER:
        raise OpTypeError(f"{op}: the quantized tensors must be integers ({', '.join(_INTEGER)}) to be "
                          f"computed, found {dtype} (TVM's canonicalization stops there too)")
    return dtype


# ---- qnn.add ------------------------------------------------------------------------------------

qnn_add = define("qnn.add", ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point",
                             "output_scale", "output_zero_point"), BROADCAST,
                 attrs=(Attr("lhs_axis", INT, -1, "the channel axis of lhs's per-channel scale (-1: the last)"),
                        Attr("rhs_axis", INT, -1, "the channel axis of rhs's per-channel scale (-1: the last)")),
                 doc="Quantized add with broadcasting: each operand requantized to output_scale and "
                     "output_zero_point, summed in int32, less output_zero_point, clipped to the operands' "
                     "dtype.  As in TVM, the type relation does not look at the operands' dtype; only "
                     "integer operands can be computed.")


def _channel_extent(t: TensorType, axis: int):
    """TVM's get_channel_axis: rank <= 1 reads axis 0; a negative axis counts from the end."""
    if t.ndim == 0:
        return 0, 1
    index = 0 if t.ndim <= 1 else (t.ndim + axis if axis < 0 else axis)
    return index, (dims(t)[index] if 0 <= index < t.ndim else None)


@qnn_add.relation
def _(lhs, rhs, lhs_scale, lhs_zp, rhs_scale, rhs_zp, out_scale, out_zp, attrs):
    op = "qnn.add"
    a = tensor(lhs, f"{op}: lhs", 0)
    b = tensor(rhs, f"{op}: rhs", 1)
    operands = ((a, attrs.lhs_axis, "lhs", lhs_scale, lhs_zp, 2), (b, attrs.rhs_axis, "rhs", rhs_scale, rhs_zp, 4))
    for t, axis, name, scale, zp, arg in operands:
        index, extent = _channel_extent(t, axis)
        scalars = all(isinstance(x, TensorType) and x.ndim == 0 for x in (scale, zp))
        if not scalars and not 0 <= index < max(t.ndim, 1):
            raise OpTypeError(f"{op}: {name}_axis {axis} is out of range for {type_text(t)}")
        _scalar_or_channels(op, scale, f"{name}_scale", arg, "float32", extent)
        _scalar_or_channels(op, zp, f"{name}_zero_point", arg + 1, "int32", extent)
    _scalar(op, out_scale, "output_scale", 6, "float32")
    _scalar(op, out_zp, "output_zero_point", 7, "int32")
    return broadcast_types(op, [a, b])


@qnn_add.reference
def _(lhs, rhs, lhs_scale, lhs_zp, rhs_scale, rhs_zp, out_scale, out_zp, attrs):
    dtype = _integer_data("qnn.add", lhs)

    def upcast(x, scale, zp, axis):
        if _same_scalar(scale, out_scale) and _same_scalar(zp, out_zp):
            return x.astype(np.int32)
        return _requantize(x, scale, zp, out_scale, out_zp, "int32", axis)

    total = upcast(lhs, lhs_scale, lhs_zp, attrs.lhs_axis) + upcast(rhs, rhs_scale, rhs_zp, attrs.rhs_axis)
    total = total - np.asarray(out_zp, dtype=np.int32)
    lo, hi = QMIN_QMAX[dtype]
    return np.clip(total, lo, hi).astype(dtype)


# ---- qnn.concatenate ----------------------------------------------------------------------------

qnn_concatenate = define("qnn.concatenate", ("data", "input_scales", "input_zero_points", "output_scale",
                                             "output_zero_point"), None,
                         attrs=(Attr("axis", INT, 0, "the axis to join along"),),
                         doc="Join quantized tensors along an axis: each input whose scale and zero point "
                             "are not the output's is requantized to them first (in its own dtype).  "
                             "input_scales and input_zero_points are tuples of scalars, one per input (their "
                             "lengths are checked here; TVM reads past a short tuple).")


@qnn_concatenate.relation
def _(data, scales, zero_points, out_scale, out_zp, attrs):
    op = "qnn.concatenate"
    fields = tensors_of_tuple(data, f"{op}: data", 0)
    params = ((scales, "input_scales", 1, "float32"), (zero_points, "input_zero_points", 2, "int32"))
    for ty, what, arg, dtype in params:
        if not isinstance(ty, TupleType):
            raise OpTypeError(f"{op} requires a tuple of {what.split('_', 1)[1].replace('_', ' ')} as argument "
                              f"{arg + 1}, found {type_text(ty)}", arg)
        if len(ty.fields) != len(fields):
            raise OpTypeError(f"{op}: {what} has {len(ty.fields)} values for {len(fields)} inputs", arg)
        for k, f in enumerate(ty.fields):
            _scalar(op, f, f"{what}[{k}]", arg, dtype)
    _scalar(op, out_scale, "output_scale", 3, "float32")
    _scalar(op, out_zp, "output_zero_point", 4, "int32")
    return get_op("concatenate").type_relation(data, attrs)


@qnn_concatenate.reference
def _(xs, scales, zero_points, out_scale, out_zp, attrs):
    parts = []
    for x, scale, zp in zip(xs, scales, zero_points):
        if _same_scalar(scale, out_scale) and _same_scalar(zp, out_zp):
            parts.append(x)
        else:
            parts.append(_requantize(x, scale, zp, out_scale, out_zp, _integer_data("qnn.concatenate", x)))
    return np.concatenate(parts, axis=attrs.axis)


# ---- qnn.conv2d_transpose -------------------------------------------------------------------------

def _transpose_attrs() -> tuple[Attr, ...]:
    """nn.conv2d_transpose's attributes (TVM's Conv2DTransposeAttrs), out_dtype as qnn's."""
    out_dtype = Attr("out_dtype", STR, "", "int16, int32 or int64 (empty: int32)")
    return tuple(out_dtype if a.name == "out_dtype" else a for a in get_op("nn.conv2d_transpose").attrs)


qnn_conv2d_transpose = define(
    "qnn.conv2d_transpose", ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale",
                             "kernel_scale"), None, attrs=_transpose_attrs(),
    doc="Quantized transposed 2-D convolution: nn.conv2d_transpose of (data - input_zero_point) and "
        "(weight - kernel_zero_point), both in int16, accumulated in out_dtype (int32 by default); the "
        "output's scale is input_scale * kernel_scale, its zero point 0.  A per-channel kernel zero point "
        "is subtracted along the weight's axis 1 (TVM's nn.bias_add).")


def transpose_attrs(attrs) -> dict:
    """The nn.conv2d_transpose attributes of a qnn.conv2d_transpose, out_dtype written."""
    values = dict(attrs)
    values["out_dtype"] = attrs.out_dtype or "int32"
    return values


@qnn_conv2d_transpose.relation
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    op = "qnn.conv2d_transpose"
    d = tensor(data, f"{op}: data", 0)
    w = tensor(weight, f"{op}: weight", 1)
    if d.dtype not in ("int8", "uint8", "int16", "uint16"):
        raise OpTypeError(f"{op}: data must be int8, uint8, int16 or uint16, found {type_text(d)}", 0)
    if w.dtype not in ("int8", "uint8"):
        raise OpTypeError(f"{op}: weight must be int8 or uint8, found {type_text(w)}", 1)
    out_dtype = attrs.out_dtype or "int32"
    if out_dtype not in ("int16", "int32", "int64"):
        raise OpTypeError(f"{op}: out_dtype must be int16, int32 or int64, got '{attrs.out_dtype}'")
    params = ((input_zp, "input_zero_point", 2, "int32"), (input_scale, "input_scale", 4, "float32"))
    for ty, what, arg, dtype in params:
        t = tensor(ty, f"{op}: {what}", arg)
        if t.dtype != dtype or not (t.ndim == 0 or (t.ndim == 1 and dims(t)[0] in (1,))):
            raise OpTypeError(f"{op}: {what} must be a {dtype} scalar or a vector with one element, "
                              f"found {type_text(t)}", arg)
    kzp = tensor(kernel_zp, f"{op}: kernel_zero_point", 3)
    if kzp.dtype != "int32" or kzp.ndim > 1:
        raise OpTypeError(f"{op}: kernel_zero_point must be an int32 scalar or vector, found {type_text(kzp)}", 3)
    if kzp.ndim == 1 and w.ndim > 1 and known(dims(kzp)[0], dims(w)[1]) and dims(kzp)[0] != dims(w)[1]:
        raise OpTypeError(f"{op}: a per-channel kernel_zero_point is subtracted along the weight's axis 1 "
                          f"({dims(w)[1]} values), found {type_text(kzp)}", 3)
    layout = attrs.kernel_layout
    if "O" not in layout or "I" not in layout or len(layout) != w.ndim:
        raise OpTypeError(f"{op}: unsupported kernel_layout {layout}")
    o = dims(w)[layout.index("O")]
    channels = o if attrs.groups == 1 else (dims(w)[layout.index("I")] * o if known(o, dims(w)[layout.index("I")])
                                            else None)
    _scalar_or_channels(op, kernel_scale, "kernel_scale", 5, "float32", channels)
    return get_op("nn.conv2d_transpose").infer([d, w], transpose_attrs(attrs))


@qnn_conv2d_transpose.reference
def _(data, weight, input_zp, kernel_zp, input_scale, kernel_scale, attrs):
    with np.errstate(over="ignore"):
        shift_data = data.astype(np.int16) - np.asarray(input_zp).astype(np.int16).reshape(())
        kzp = np.asarray(kernel_zp).astype(np.int16)
        if kzp.ndim == 1:
            kzp = kzp.reshape((1, -1) + (1,) * (weight.ndim - 2))
        shift_kernel = weight.astype(np.int16) - kzp
    return get_op("nn.conv2d_transpose").evaluate([shift_data.astype(np.int16), shift_kernel.astype(np.int16)],
                                                  transpose_attrs(attrs))


# ---- qnn.batch_matmul ---------------------------------------------------------------------------

qnn_batch_matmul = define(
    "qnn.batch_matmul", ("x", "y", "x_zero_point", "y_zero_point", "x_scale", "y_scale"), None,
    attrs=(Attr("out_dtype", STR, "int32", "int32 (the only one TVM takes)"),
           Attr("transpose_a", BOOL, False, "False (the only form TVM takes)"),
           Attr("transpose_b", BOOL, True, "True (the only form TVM takes): y is (B, N, K)")),
    doc="Quantized batched product: (x - x_zero_point) (B, M, K) times (y - y_zero_point) (B, N, K) "
        "transposed, accumulated in int32; a batch of 1 broadcasts.  Scales and zero points are "
        "scalars; the result's scale is x_scale * y_scale, its zero point 0.")


@qnn_batch_matmul.relation
def _(x, y, x_zp, y_zp, x_scale, y_scale, attrs):
    op = "qnn.batch_matmul"
    a = tensor(x, f"{op}: x", 0)
    b = tensor(y, f"{op}: y", 1)
    for t, name, arg in ((a, "x", 0), (b, "y", 1)):
        if t.dtype not in ("int8", "uint8"):
            raise OpTypeError(f"{op}: {name} must be int8 or uint8, found {type_text(t)}", arg)
    for ty, what, arg, dtype in ((x_zp, "x_zero_point", 2, "int32"), (y_zp, "y_zero_point", 3, "int32"),
                                 (x_scale, "x_scale", 4, "float32"), (y_scale, "y_scale", 5, "float32")):
        _scalar(op, ty, what, arg, dtype)
    if attrs.out_dtype != "int32":
        raise OpTypeError(f"{op}: out_dtype must be int32, got '{attrs.out_dtype}'")
    if attrs.transpose_a or not attrs.transpose_b:
        raise OpTypeError(f"{op} takes only transpose_a=False, transpose_b=True")
    return get_op("nn.batch_matmul").type_relation(x, y, attrs)


@qnn_batch_matmul.reference
def _(x, y, x_zp, y_zp, x_scale, y_scale, attrs):
    a = x.astype(np.int64) - np.int64(np.asarray(x_zp))
    b = y.astype(np.int64) - np.int64(np.asarray(y_zp))
    return np.matmul(a, np.swapaxes(b, -1, -2)).astype(np.int32)
