"""What ForwardFoldScaleAxis and BackwardFoldScaleAxis share (fold_scale_axis.py says what
the two passes do).

* `Message`: what a consumer can absorb: the sorted axes of its input (forward) or of the
  producer's output (backward) that may carry a per-channel scale, and whether that scale
  must be a non-negative constant (it crosses a relu), a constant (the weight it would go
  into is one) or a constant without a zero element (an add divides by it).
* The scale-shape condition, TVM's MatchBroadcastToLeftAxes: `broadcasts_onto` (does an
  operand broadcast onto exactly these axes of the other?) and `squeezed_scale` (the scale
  with only the scaled axes left; a scalar is expanded and repeated to the axes' extents).
* `expand_to_axis` / `reshape_to_axes`: the squeezed scale shaped to broadcast along the
  axes of a tensor (expand_dims for one axis, reshape for a blocked pair).
* `is_all_positive_constant`: a constant (through expand_dims/reshape/transpose/squeeze/
  repeat) of f32/f64/i8/i32/u8/u32 with no negative element, as TVM tests it;
  `is_constant` (computed from constants alone) and `is_nonzero_constant`.
* `ConvInfo`: the layouts of a conv2d/conv3d and the axes TVM folds on: the channel axes
  `C` (and `c` for blocked layouts) when the conv has groups=1 or is depthwise and its
  layouts are either all simple or blocked on both kernel channel axes.

Four places differ from TVM v0.16.  Three where its code gives wrong results or ill-typed
IR: a scalar scale on two axes is repeated to each axis's own extent (TVM used the first
axis's extent twice); dense is folded only when its data is 2-D (TVM sent axis 1 on N-D
data too, the rows, which a weight cannot absorb); and a forward scale crosses an add or
subtract, which divides the other operand by it, only when it is a constant without a
zero element (TVM divided by any scale: a GRU's h = (1 - z) * n + z * h, its n = tanh(..)
folded into the next step's weight, gave NaN for n = 0, an all-zero input).  One for
speed: a scale that is not a constant is not folded into a weight that is one (TVM folds
it: a batch-1 LSTM's h = o * tanh(c) went into the next step's recurrent weight, which
was then scaled and re-packed at every step, 3.6x onnxruntime's time; a scale computed at
run time belongs on the data, whose one row is smaller than the weight).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...ir.attrs import IntImm
from ...ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem
from ...ir.functor import children
from ...ir.types import TensorType
from ...ops import get_op
from ...ops.conv_geometry import Layout, forward_shape, parse_layout
from ...ops.shapes import dims
from .simplify_inference import call, expand_to_axis

__all__ = ["Message", "intersect", "op_name", "tensor_type", "same_shape", "broadcasts_onto",
           "squeezed_scale", "expand_to_axis", "reshape_to_axes", "reshape_or_expand",
           "is_all_positive_constant", "is_constant", "is_nonzero_constant", "scale_allowed",
           "ConvInfo", "conv_info", "dense_ok", "call"]


@dataclass(frozen=True, slots=True)
class Message:
    axes: tuple[int, ...]
    require_positive: bool = False
    require_constant: bool = False  # the weight it goes into is a constant
    require_nonzero: bool = False  # an add or subtract divides by it (forward)


def intersect(a: Message | None, b: Message | None) -> Message | None:
    """Both requests at once: the common axes, each condition if either needs it (None:
    none)."""
    if a is None or b is None:
        return None
    return Message(tuple(sorted(set(a.axes) & set(b.axes))), a.require_positive or b.require_positive,
                   a.require_constant or b.require_constant, a.require_nonzero or b.require_nonzero)


def op_name(expr: Expr) -> str | None:
    return expr.op.name if isinstance(expr, Call) and isinstance(expr.op, Op) else None


def tensor_type(expr: Expr) -> TensorType | None:
    return expr.ty if isinstance(expr.ty, TensorType) else None


def _same_dim(a: object, b: object) -> bool:
    a = a.value if isinstance(a, IntImm) else a
    b = b.value if isinstance(b, IntImm) else b
    return a == b


def same_shape(a: TensorType, b: TensorType) -> bool:
    return a.ndim == b.ndim and all(_same_dim(x, y) for x, y in zip(a.shape, b.shape))


def _is_one(d: object) -> bool:
    return _same_dim(d, 1)


def _static(d: object) -> int | None:
    d = d.value if isinstance(d, IntImm) else d
    return d if isinstance(d, int) and not isinstance(d, bool) else None


# --- the scale-shape condition ------------------------------------------------------------


def broadcasts_onto(lhs: TensorType, rhs: TensorType, axes: Sequence[int]) -> bool:
    """Whether `rhs`, right-aligned on `lhs`, has lhs's extent on each of `axes` and 1 on
    every other axis it has (a scalar matches no axis)."""
    if rhs.ndim > lhs.ndim:
        return False
    base = lhs.ndim - rhs.ndim
    for i in range(lhs.ndim):
        if i in axes:
            if i < base or not _same_dim(lhs.shape[i], rhs.shape[i - base]):
                return False
        elif i >= base and not _is_one(rhs.shape[i - base]):
            return False
    return True


def squeezed_scale(lhs: TensorType, rhs: TensorType, axes: Sequence[int], scale: Expr) -> Expr | None:
    """`scale` (typed `rhs`) as a scale of `lhs` on `axes`, with only those axes left, or
    None when it does not broadcast onto exactly them.  A scalar scale becomes a vector
    (`repeat(expand_dims(s, axis=0), repeats=C, axis=0)`)."""
    if rhs.ndim == 0 and axes:
        extents = [_static(lhs.shape[a]) if a < lhs.ndim else None for a in axes]
        if any(e is None for e in extents):
            return None
        out = call("expand_dims", scale, axis=0, num_newaxis=len(axes))
        for i, extent in enumerate(extents):
            out = call("repeat", out, repeats=extent, axis=i)
        return out
    if not broadcasts_onto(lhs, rhs, axes):
        return None
    base = lhs.ndim - rhs.ndim
    squeeze = [i - base for i in range(base, lhs.ndim) if i not in axes]
    return call("squeeze", scale, axis=squeeze) if squeeze else scale


def reshape_to_axes(scale: Expr, shape: Sequence[object], axes: Sequence[int]) -> Expr | None:
    """The squeezed scale reshaped to broadcast along `axes` of a tensor of `shape` (None
    when one of those extents is not static)."""
    newshape = []
    for i, d in enumerate(shape):
        extent = _static(d) if i in axes else 1
        if extent is None:
            return None
        newshape.append(extent)
    return call("reshape", scale, newshape=newshape)


def reshape_or_expand(scale: Expr, shape: Sequence[object], axes: Sequence[int]) -> Expr | None:
    """expand_dims for a single axis, reshape for several (TVM's ReshapeOrExpandToMatchAxis)."""
    if len(axes) > 1:
        return reshape_to_axes(scale, shape, axes)
    return expand_to_axis(scale, len(shape), axes[0])


# --- positivity ---------------------------------------------------------------------------

PEELED = {"expand_dims", "reshape", "transpose", "squeeze", "repeat"}
CHECKED_DTYPES = {"float32", "float64", "int8", "int32", "uint8", "uint32"}


def is_all_positive_constant(expr: Expr) -> bool:
    while op_name(expr) in PEELED and expr.args:
        expr = expr.args[0]
    if not isinstance(expr, Constant) or expr.data is None:
        return False
    return str(expr.data.dtype) in CHECKED_DTYPES and not bool((expr.data < 0).any())


def is_constant(expr: Expr) -> bool:
    """Whether `expr` is computed from constants alone (operators applied to constants,
    tuples of them): FoldConstant computes it once, at build time."""
    stack, seen = [expr], set()
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, Constant):
            continue
        seen.add(id(node))
        if isinstance(node, Call):
            if not isinstance(node.op, Op):
                return False
            stack.extend(node.args)
        elif isinstance(node, (Tuple, TupleGetItem)):
            stack.extend(children(node))
        else:  # a variable, a function, a let, an if ...
            return False
    return True


def is_nonzero_constant(expr: Expr) -> bool:
    """A constant (through PEELED ops) none of whose known elements is zero; unknown values
    (text printed without its metadata) pass, as they pass `is_constant`."""
    while op_name(expr) in PEELED and expr.args:
        expr = expr.args[0]
    if not isinstance(expr, Constant):
        return False
    return expr.data is None or bool((expr.data != 0).all())


def scale_allowed(message: Message, scale: Expr) -> bool:
    """Whether `scale` meets every condition of `message`."""
    return ((not message.require_positive or is_all_positive_constant(scale))
            and (not message.require_constant or is_constant(scale))
            and (not message.require_nonzero or is_nonzero_constant(scale)))


# --- convolutions and dense ------------------------------------------------------------------

CANONICAL = {"nn.conv2d": ("NCHW", "OIHW"), "nn.conv3d": ("NCDHW", "OIDHW")}


def _index(layout: Layout, letter: str) -> int:
    for i, (a, _) in enumerate(layout.axes):
        if a == letter:
            return i
    return -1


@dataclass(frozen=True, slots=True)
class ConvInfo:
    data: Layout
    kernel: Layout
    out: Layout
    depthwise: bool

    def channel_axes(self, layout: Layout) -> tuple[int, ...] | None:
        """The axes of `layout` (the data's, or the output's) a scale may sit on: `C`
        alone for simple layouts, `C` and `c` when data and kernel are both blocked."""
        big, small = _index(layout, "C"), _index(layout, "c")
        ko, ki = _index(self.kernel, "o"), _index(self.kernel, "i")
        if ko < 0 and ki < 0 and small < 0:
            return (big,)
        if ko >= 0 and ki >= 0 and small >= 0:
            return tuple(sorted((big, small)))
        return None

    @property
    def kernel_ndim(self) -> int:
        return len(self.kernel.axes)

    def kernel_axes(self, letter: str) -> tuple[int, int]:
        """(position of the primal axis, position of its block or -1) in the kernel."""
        return _index(self.kernel, letter), _index(self.kernel, letter.lower())


def conv_info(conv: Call) -> ConvInfo | None:
    """The layouts of a typed conv2d/conv3d that TVM folds scales into: groups=1 or
    depthwise (the weight in OIHW has O == groups and I == 1); None otherwise."""
    canonical = CANONICAL.get(op_name(conv))
    weight = tensor_type(conv.args[1]) if len(conv.args) == 2 else None
    if canonical is None or weight is None:
        return None
    try:
        attrs = get_op(conv.op.name).normalize_attrs(conv.attrs)
    except Exception:  # noqa: BLE001 -- bad attributes: the type checker reports them
        return None
    data_c, kernel_c = canonical
    data = parse_layout(attrs.data_layout, data_c)
    kernel = parse_layout(attrs.kernel_layout, kernel_c)
    out = parse_layout(attrs.out_layout or attrs.data_layout, data_c)
    if data is None or kernel is None or out is None or weight.ndim != len(kernel.axes):
        return None
    o, i = forward_shape(kernel, dims(weight), kernel_c)[:2]
    depthwise = o == attrs.groups and i == 1
    if attrs.groups != 1 and not depthwise:
        return None
    return ConvInfo(data, kernel, out, depthwise)


def dense_ok(dense: Call) -> bool:
    """A dense whose data is 2-D: axis 1 is the reduced one, a scale there (forward) or on
    the output's axis 1 (backward) belongs to the weight."""
    data = tensor_type(dense.args[0]) if len(dense.args) == 2 else None
    return data is not None and data.ndim == 2
