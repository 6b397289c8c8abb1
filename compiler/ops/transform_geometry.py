"""Shape and index geometry of the transform and indexing ops, shared by their relations
and numpy references (transform.py, transform_index.py) and their compute rules
(lower/te/topi/transform*.py): one function per rule, public, so no layer reaches into
another's private names.

Every function takes the input types (`TensorType`) and the normalized attributes, checks
what it needs (raising `OpTypeError` or `AttrError` like the relations do) and returns the
plan: an axis, a permutation, per-axis slice bounds, the source and destination layouts.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import ANY, TensorType
from .attrs import AttrError
from .registry import OpTypeError
from .shapes import Dim, axis_index, check_fields, check_rank, dims, known, mul, same_dim, type_text


def ints_text(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def require_attr(op: str, attrs, name: str):
    value = attrs[name]
    if value is None:
        raise AttrError(f"{op}: attribute {name} is None but must be set", name)
    return value


def type_of_array(x: np.ndarray) -> TensorType:
    """The type of a numpy value, so that computes can reuse the relations' checks."""
    return TensorType(tuple(int(d) for d in x.shape), str(x.dtype))


def permutation(t: TensorType, axes) -> list[int]:
    n = t.ndim
    if axes is None:
        return list(range(n - 1, -1, -1))
    if len(axes) != n:
        raise OpTypeError(f"transpose: axes {ints_text(axes)} has {len(axes)} entries but data "
                          f"{type_text(t)} has rank {n}")
    perm = [axis_index(a, n, "transpose: axis") for a in axes]
    if len(set(perm)) != n:
        raise OpTypeError(f"transpose: axes {ints_text(axes)} names an axis twice (data {type_text(t)})")
    return perm


def expand_pivot(t: TensorType, attrs) -> int:
    if attrs.num_newaxis < 0:
        raise AttrError(f"expand_dims: attribute num_newaxis is {attrs.num_newaxis}; it must be "
                        "0 or more", "num_newaxis")
    n = t.ndim
    check_rank(n + attrs.num_newaxis, "expand_dims: the result")
    if not -n - 1 <= attrs.axis <= n:
        raise OpTypeError(f"expand_dims: axis {attrs.axis} is out of range for data {type_text(t)} "
                          f"(expected {-n - 1} to {n})")
    return attrs.axis + n + 1 if attrs.axis < 0 else attrs.axis


def squeezed_axes(t: TensorType, axis) -> list[int]:
    """The axes of t that squeeze removes."""
    ds = dims(t)
    if axis is None:
        if not known(*ds):
            raise OpTypeError(f"squeeze: data {type_text(t)} has a dimension unknown until run time; "
                              "give the axes to remove with axis=[...]")
        return [k for k, d in enumerate(ds) if d == 1]
    gone = []
    for a in axis:
        k = axis_index(a, t.ndim, "squeeze: axis")
        if known(ds[k]) and ds[k] != 1:
            raise OpTypeError(f"squeeze: axis {a} of data {type_text(t)} has length {ds[k]}, not 1")
        gone.append(k)
    return gone


def split_plan(t: TensorType, attrs) -> tuple[int, list[Dim]]:
    """The axis and the length of each piece along it."""
    if t.ndim == 0:
        raise OpTypeError(f"split: data must have at least one dimension, found {type_text(t)}", 0)
    axis = axis_index(attrs.axis, t.ndim, "split: axis")
    d = dims(t)[axis]
    ios = attrs.indices_or_sections
    if isinstance(ios, int):
        if ios <= 0:
            raise AttrError(f"split: attribute indices_or_sections is {ios}; a number of sections "
                            "must be positive", "indices_or_sections")
        check_fields(ios, "split: the result")
        if known(d) and d % ios:
            raise OpTypeError(f"split: axis {attrs.axis} of data {type_text(t)} has length {d}, "
                              f"which cannot be divided into {ios} equal sections")
        return axis, [d // ios if known(d) else ANY] * ios  # type: ignore[operator]
    pieces: list[Dim] = []
    begin = 0
    for k in ios:
        if k <= begin:
            raise AttrError(f"split: attribute indices_or_sections {ints_text(ios)} must be ascending "
                            "and positive", "indices_or_sections")
        pieces.append(k - begin)
        begin = k
    if known(d) and begin >= d:
        raise OpTypeError(f"split: index {begin} of indices_or_sections {ints_text(ios)} is not "
                          f"inside axis {attrs.axis} of data {type_text(t)} (length {d})")
    pieces.append(d - begin if known(d) else ANY)
    return axis, pieces


class Layout:
    """A parsed layout string: its axes in order, each (letter, block factor or None)."""

    def __init__(self, op: str, text: str, attr: str) -> None:
        self.text = text
        self.axes: list[tuple[str, int | None]] = []
        factor = ""
        for c in text:
            if c.isdigit():
                factor += c
            elif c.isupper() and c.isascii() and not factor:
                self.axes.append((c, None))
            elif c.islower() and c.isascii() and factor and int(factor) > 0:
                self.axes.append((c, int(factor)))
                factor = ""
            else:
                raise AttrError(f"{op}: attribute {attr} is \"{text}\", which is not a layout "
                                "(upper-case axes, each optionally blocked by a number and its "
                                "lower-case letter, e.g. NCHW8c)", attr)
        letters = [a for a, _ in self.axes]
        primal = [a for a in letters if a.isupper()]
        if not text or factor or len(set(primal)) != len(primal) or any(
                a.upper() not in letters for a in letters if a.islower()):
            raise AttrError(f"{op}: attribute {attr} is \"{text}\", which is not a layout (each "
                            "upper-case axis once, a block only of an axis present, e.g. NCHW8c)", attr)

    @property
    def primal(self) -> list[str]:
        return [a for a, _ in self.axes if a.isupper()]

    def block(self, axis: str) -> int | None:
        """The product of the axis's blocks (TVM's FactorOf): a block may be split again,
        OHWI16i64o2i splitting I into 16 x 2, the first the outer (TVM's Layout reads it so)."""
        factors = [f for a, f in self.axes if a == axis.lower()]
        return int(np.prod(factors)) if factors else None

    def blocks(self, axis: str) -> list[tuple[int, int, int]]:
        """(position, factor, inner) of each block of `axis` in order; inner is the product of
        the blocks after it, so block k of index x is (x // inner) % factor."""
        found = [(k, f) for k, (a, f) in enumerate(self.axes) if a == axis.lower()]
        out = []
        for n, (k, f) in enumerate(found):
            out.append((k, f, int(np.prod([g for _, g in found[n + 1:]])) if n + 1 < len(found) else 1))
        return out

    def position(self, letter: str) -> int:
        return next(k for k, (a, _) in enumerate(self.axes) if a == letter)


def layouts(t: TensorType, attrs) -> tuple[Layout, Layout]:
    src = Layout("layout_transform", attrs.src_layout, "src_layout")
    dst = Layout("layout_transform", attrs.dst_layout, "dst_layout")
    if sorted(src.primal) != sorted(dst.primal):
        raise OpTypeError(f"layout_transform: cannot convert from {src.text} to {dst.text}: the "
                          "layouts must have the same upper-case axes")
    if t.ndim != len(src.axes):
        raise OpTypeError(f"layout_transform: data {type_text(t)} has rank {t.ndim} but "
                          f"src_layout {src.text} has {len(src.axes)} axes", 0)
    ds = dims(t)
    for k, (a, f) in enumerate(src.axes):
        if f is not None and known(ds[k]) and ds[k] != f:
            raise OpTypeError(f"layout_transform: axis {k} ('{a}') of data {type_text(t)} has "
                              f"length {ds[k]} but src_layout {src.text} blocks it by {f}", 0)
    return src, dst


def layout_extents(t: TensorType, src: Layout) -> dict[str, Dim]:
    """The whole extent of each upper-case axis (the outer part times its block)."""
    ds = dims(t)
    return {a: mul(ds[src.position(a)], src.block(a) or 1) for a in src.primal}


_MAX = 2**63 - 1  # "to the end" for an omitted begin or end, as TVM's int64 max


def _canonical(index: int, extent: int, stride: int) -> int:
    """A bound wrapped (if negative) and clamped into the range a stride can reach."""
    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    if index < 0:
        index += extent
    return min(max(index, lo), hi)


def slice_plan(t: TensorType, attrs) -> list[tuple[int, int | None, int, Dim]]:
    """(axis, first index, step, length) per sliced axis; the first index is None when the
    axis has a run-time extent."""
    begin = list(require_attr("strided_slice", attrs, "begin"))
    end = list(require_attr("strided_slice", attrs, "end"))
    strides = list(require_attr("strided_slice", attrs, "strides"))
    mode = attrs.slice_mode
    if mode not in ("end", "size"):
        raise AttrError(f"strided_slice: attribute slice_mode is \"{mode}\"; expected \"end\" or "
                        "\"size\"", "slice_mode")
    n = t.ndim
    if attrs.axes is not None:
        if not len(attrs.axes) == len(begin) == len(end) == len(strides):
            raise OpTypeError(f"strided_slice: axes, begin, end and strides must have one length, "
                              f"found {len(attrs.axes)}, {len(begin)}, {len(end)} and {len(strides)}")
        axes = [axis_index(a, n, "strided_slice: axis") for a in attrs.axes]
    else:
        for name, values in (("begin", begin), ("end", end), ("strides", strides)):
            if len(values) > n:
                raise OpTypeError(f"strided_slice: attribute {name} {ints_text(values)} has {len(values)} "
                                  f"values but data {type_text(t)} has rank {n}")
        axes = list(range(n))
        strides += [1] * (n - len(strides))
        begin += [0 if strides[k] > 0 else _MAX for k in range(len(begin), n)]
        end += [_MAX if strides[k] > 0 else 0 for k in range(len(end), n)]
    ds = dims(t)
    plan = []
    for k, axis in enumerate(axes):
        step = strides[k] if mode == "end" else 1
        if step == 0:
            raise AttrError(f"strided_slice: attribute strides {ints_text(strides)} has a step of 0", "strides")
        b, e = begin[k], end[k]
        if mode == "size":
            e = (0 if step < 0 else _MAX) if e < 0 else b + e
        d = ds[axis]
        if not known(d):
            plan.append((axis, None, step, ANY))
            continue
        bc, ec = _canonical(b, d, step), _canonical(e, d, step)  # type: ignore[arg-type]
        if (ec > bc) if step < 0 else (bc > ec):
            raise OpTypeError(f"strided_slice: on axis {axis} of data {type_text(t)}, begin {b} and "
                              f"end {end[k]} (as {bc} and {ec}) run against the step {step}")
        plan.append((axis, bc, step, -(-abs(ec - bc) // abs(step))))
    return plan


TAKE_MODES = ("clip", "wrap", "fast")


def take_plan(d: TensorType, i: TensorType, attrs) -> tuple[int | None, int]:
    if attrs.mode not in TAKE_MODES:
        raise AttrError(f"take: attribute mode is \"{attrs.mode}\"; expected \"clip\", \"wrap\" or "
                        "\"fast\"", "mode")
    if attrs.axis is None:
        return None, 0
    axis = axis_index(attrs.axis, d.ndim, "take: axis")
    batch = attrs.batch_dims + i.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    if not 0 <= batch <= min(i.ndim, axis):
        raise OpTypeError(f"take: batch_dims {attrs.batch_dims} must be within the rank of indices "
                          f"{type_text(i)} and not after axis {attrs.axis}")
    for k in range(batch):
        if not same_dim(dims(d)[k], dims(i)[k]):
            raise OpTypeError(f"take: batch axis {k} has length {dims(d)[k]} in data {type_text(d)} "
                              f"but {dims(i)[k]} in indices {type_text(i)}", 1)
    return axis, batch


def gather_axis(d: TensorType, i: TensorType, attrs) -> int:
    if d.ndim != i.ndim:
        raise OpTypeError(f"gather: indices {type_text(i)} must have the rank of data {type_text(d)}", 1)
    axis = axis_index(require_attr("gather", attrs, "axis"), d.ndim, "gather: axis")
    for k, (a, b) in enumerate(zip(dims(d), dims(i))):
        if k != axis and not same_dim(a, b):
            raise OpTypeError(f"gather: indices {type_text(i)} and data {type_text(d)} differ on axis "
                              f"{k}; only axis {axis} may differ", 1)
    return axis


def gather_nd_m(d: TensorType, i: TensorType, attrs) -> int:
    if i.ndim == 0:
        raise OpTypeError(f"gather_nd: indices must have at least one axis, found {type_text(i)}", 1)
    m = dims(i)[0]
    if not known(m):
        if attrs.index_rank is None:
            raise OpTypeError(f"gather_nd: the first axis of indices {type_text(i)} is known only at "
                              "run time; give its length with index_rank", 1)
        m = attrs.index_rank
    b = attrs.batch_dims
    if b < 0 or b + 1 > i.ndim or m + b > d.ndim:  # type: ignore[operator]
        raise OpTypeError(f"gather_nd: index tuples of length {m} after {b} batch axes do not fit "
                          f"data {type_text(d)} with indices {type_text(i)}", 1)
    for k in range(b):
        if not same_dim(dims(d)[k], dims(i)[k + 1]):
            raise OpTypeError(f"gather_nd: batch axis {k} has length {dims(d)[k]} in data "
                              f"{type_text(d)} but {dims(i)[k + 1]} in indices {type_text(i)}", 1)
    return m  # type: ignore[return-value]


def repeat_axis(t: TensorType, attrs) -> int:
    if attrs.repeats < 1:
        raise AttrError(f"repeat: attribute repeats is {attrs.repeats}; it must be 1 or more", "repeats")
    return axis_index(require_attr("repeat", attrs, "axis"), t.ndim, "repeat: axis")


def window_check(t: TensorType, attrs) -> int:
    axis = attrs.axis
    if not 0 <= axis < t.ndim:
        raise OpTypeError(f"sliding_window: axis {axis} is out of range for data {type_text(t)} "
                          f"(expected 0 to {t.ndim - 1})")
    n = t.ndim - axis
    for name in ("window_shape", "strides"):
        values = attrs[name]
        if len(values) != n:
            raise OpTypeError(f"sliding_window: attribute {name} {ints_text(values)} has {len(values)} "
                              f"values but data {type_text(t)} has {n} axes from axis {axis} on")
        if any(v <= 0 for v in values):
            raise AttrError(f"sliding_window: attribute {name} {ints_text(values)} must be positive", name)
    for k, (d, w) in enumerate(zip(dims(t)[axis:], attrs.window_shape)):
        if known(d) and w > d:
            raise OpTypeError(f"sliding_window: window length {w} is longer than axis {axis + k} "
                              f"of data {type_text(t)}")
    return axis


def one_hot_axis(i: TensorType, attrs) -> int:
    if attrs.depth <= 0:
        raise AttrError(f"one_hot: attribute depth is {attrs.depth}; it must be positive", "depth")
    n = i.ndim
    if not -n - 1 <= attrs.axis <= n:
        raise OpTypeError(f"one_hot: axis {attrs.axis} is out of range for indices {type_text(i)} "
                          f"(expected {-n - 1} to {n})")
    return attrs.axis + n + 1 if attrs.axis < 0 else attrs.axis
