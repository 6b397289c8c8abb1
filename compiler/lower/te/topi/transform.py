"""Shape and layout transforms (reference §7.6): each result element is one element of the
input at a computed index (the collapse_sums sum several).

The reshape family reads the input at the row-major position of the output element (its
flat index unravelled in the input's shape).  The attribute checks and plans (permutation,
split points, layouts) are the op library's own, so rule and reference cannot disagree.
"""

from __future__ import annotations

from typing import Sequence

from ....ir.types import TensorType
from ....ops.transform_geometry import Layout, expand_pivot, layout_extents, layouts, permutation, split_plan, squeezed_axes
from ...errors import LoweringError
from .. import expr as te
from ..arith import flat_index
from .common import broadcast_read
from .registry import register_compute


def type_of(t: te.Tensor) -> TensorType:
    """The Relay type of a tensor, for the op library's plans."""
    return TensorType(t.shape, t.dtype)


def unravel(flat: te.PrimExpr, shape: Sequence[int]) -> tuple[te.PrimExpr, ...]:
    """The row-major indices in `shape` of the flat position `flat`."""
    indices: list[te.PrimExpr] = []
    stride = 1
    for k in range(len(shape) - 1, -1, -1):
        q = flat // stride if stride > 1 else flat
        indices.append(te.const(0, te.INDEX) if shape[k] == 1 else q if k == 0 else q % shape[k])
        stride *= shape[k]
    return tuple(reversed(indices))


def _reshape(x: te.Tensor, shape: Sequence[int], name: str) -> te.Tensor:
    return te.compute(shape, lambda *i: x[unravel(flat_index(tuple(shape), i), x.shape)], name)


@register_compute("reshape")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _reshape(x, out_type.shape, "T_reshape")


@register_compute("reshape_like")
def _(x: te.Tensor, like: te.Tensor, attrs, out_type) -> te.Tensor:
    return _reshape(x, out_type.shape, "T_reshape_like")


@register_compute("nn.batch_flatten")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _reshape(x, out_type.shape, "T_batch_flatten")


@register_compute("transpose")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """Result axis k is data axis perm[k]."""
    perm = permutation(type_of(x), attrs.axes)

    def body(*i):
        idx = [None] * x.ndim
        for k, a in enumerate(perm):
            idx[a] = i[k]
        return x[tuple(idx)]

    return te.compute(out_type.shape, body, "T_transpose")


@register_compute("expand_dims")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    p, n = expand_pivot(type_of(x), attrs), attrs.num_newaxis
    return te.compute(out_type.shape, lambda *i: x[i[:p] + i[p + n:]], "T_expand_dims")


@register_compute("squeeze")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    gone = set(squeezed_axes(type_of(x), attrs.axis))

    def body(*i):
        kept = iter(i)
        return x[tuple(te.const(0, te.INDEX) if k in gone else next(kept) for k in range(x.ndim))]

    return te.compute(out_type.shape, body, "T_squeeze")


def _shifted(i: Sequence[te.PrimExpr], axis: int, delta: int) -> tuple[te.PrimExpr, ...]:
    """`i` with `delta` added on `axis`."""
    def move(v: te.PrimExpr) -> te.PrimExpr:
        return v + delta if delta > 0 else v - (-delta) if delta < 0 else v

    return tuple(move(v) if k == axis else v for k, v in enumerate(i))


@register_compute("concatenate")
def _(xs: tuple[te.Tensor, ...], attrs, out_type) -> te.Tensor:
    """A chain of selects on the position along axis, last field innermost."""
    axis = attrs.axis % xs[0].ndim
    offsets = [0]
    for t in xs:
        offsets.append(offsets[-1] + t.shape[axis])

    def body(*i):
        value = xs[-1][_shifted(i, axis, -offsets[-2])]
        for t, begin, end in reversed(list(zip(xs[:-1], offsets, offsets[1:]))):
            value = te.select(te.lt(i[axis], end), t[_shifted(i, axis, -begin)], value)
        return value

    return te.compute(out_type.shape, body, "T_concat")


@register_compute("stack")
def _(xs: tuple[te.Tensor, ...], attrs, out_type) -> te.Tensor:
    axis = attrs.axis % (xs[0].ndim + 1)

    def body(*i):
        rest = i[:axis] + i[axis + 1:]
        value = xs[-1][rest]
        for k in range(len(xs) - 2, -1, -1):
            value = te.select(te.eq(i[axis], k), xs[k][rest], value)
        return value

    return te.compute(out_type.shape, body, "T_stack")


@register_compute("split")
def _(x: te.Tensor, attrs, out_type) -> tuple[te.Tensor, ...]:
    axis, pieces = split_plan(type_of(x), attrs)
    outs, begin = [], 0
    for piece, field in zip(pieces, out_type.fields):
        outs.append(te.compute(field.shape, lambda *i, b=begin: x[_shifted(i, axis, b)], "T_split"))
        begin += piece
    return tuple(outs)


@register_compute("layout_transform")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """Through the whole index of each upper-case axis: assembled from the result's outer
    and block parts, split again by data's blocks.  Positions past the extent of an axis
    (the padding of a block that does not divide it) are 0."""
    src, dst = layouts(type_of(x), attrs)
    extent = layout_extents(type_of(x), src)
    reblocked = _reblocked_axis(src, dst)

    def body(*i):
        at = {a: i[k] for k, (a, _) in enumerate(dst.axes)}  # (a block split again: only for _reblock)
        whole = {a: _join(i, a, dst) for a in dst.primal}
        value = (_reblock(x, at, whole, reblocked, src, dst) if reblocked is not None
                 else x[tuple(_part(whole, k, src) for k in range(len(src.axes)))])
        padded = [te.lt(whole[a], extent[a]) for a in dst.primal if extent[a] % (dst.block(a) or 1)]
        return te.select(te.all_of(*padded), value, te.const(0, x.dtype)) if padded else value

    tag = REBLOCK if reblocked is not None and dst.axes[-1][0] == reblocked.lower() else ""
    if _packs_last(src, dst):
        tag = PACK
    elif _packs_last(dst, src):
        tag = UNPACK
    return te.compute(out_type.shape, body, "T_layout_trans", tag=tag)


REBLOCK = "layout_transform.reblock"  # the tag of a transform between two blockings of an axis
PACK = "layout_transform.pack"  # the tag of a transform that blocks an axis into a new last one
UNPACK = "layout_transform.unpack"  # the tag of the way back (NCHW8c to NCHW)


def _packs_last(src: Layout, dst: Layout) -> bool:
    """Whether dst is src (no blocks) with one axis blocked into a new last axis and the
    rest in src's order (NCHW to NCHW3c): the result's lanes are then read from planes
    apart and its second-to-last axis is src's contiguous one.  With the two swapped:
    whether a transform unblocks (NCHW8c to NCHW)."""
    if any(f is not None for _, f in src.axes) or len(dst.axes) != len(src.axes) + 1:
        return False
    lane, factor = dst.axes[-1]
    return factor is not None and [a for a, _ in dst.axes[:-1]] == [a for a, _ in src.axes] \
        and lane.upper() in dst.primal and src.axes[-1][0] != lane.upper()


def _reblocked_axis(src: Layout, dst: Layout) -> str | None:
    """The one axis both layouts block, by src's factor at least dst's (NCHW16c to
    NCHW12c), when it is the only axis either blocks; else None."""
    blocked = [a.upper() for a, f in src.axes if f is not None]
    if len(blocked) != 1 or [a.upper() for a, f in dst.axes if f is not None] != blocked:
        return None
    a = blocked[0]
    return a if dst.block(a) <= src.block(a) else None


def _reblock(x: te.Tensor, at: dict, whole: dict, axis: str, src: Layout, dst: Layout) -> te.PrimExpr:
    """x at the position of `whole[axis]` = C * fo + c (C the result's block, c its lane)
    read as src's block q and lane r + c, with q = C * fo // fi and r = C * fo % fi
    depending on C alone: the fo lanes of a result block are consecutive lanes of at most
    two source blocks (exactly one when fi is a multiple of fo), read where the lane
    falls, each run a vector load (where `whole // fi`, `whole % fi` per lane would be
    a gather)."""
    fi, fo = src.block(axis), dst.block(axis)
    start = at[axis] * fo
    q, r = start // fi, start % fi
    lane = r + at[axis.lower()]

    def read(block: te.PrimExpr, offset: te.PrimExpr) -> te.PrimExpr:
        parts = {axis: block, axis.lower(): offset}
        return x[tuple(parts[a] if a.upper() == axis else _part(whole, k, src) for k, (a, _) in enumerate(src.axes))]

    if fi % fo == 0:
        return read(q, lane)
    return te.select(te.lt(lane, fi), read(q, lane), read(q + 1, lane - fi))


def _join(i: Sequence[te.PrimExpr], axis: str, layout: Layout) -> te.PrimExpr:
    """The whole index of `axis` from the result's position `i`: its outer part, then each
    of its blocks in order (OHWI16i64o2i: I = (I' * 16 + i1) * 2 + i2)."""
    value = i[layout.position(axis)]
    for k, factor, _ in layout.blocks(axis):
        value = value * factor + i[k]
    return value


def _part(whole: dict[str, te.PrimExpr], k: int, layout: Layout) -> te.PrimExpr:
    """The index along axis k of `layout` of the element whose whole indices are `whole`."""
    letter, factor = layout.axes[k]
    if factor is not None:  # a block axis ('c' of NCHW8c; a block split again reads its digit)
        inner = next(n for p, _, n in layout.blocks(letter) if p == k)
        return (whole[letter.upper()] // inner if inner > 1 else whole[letter.upper()]) % factor
    block = layout.block(letter)
    return whole[letter] // block if block else whole[letter]


def _broadcast(x: te.Tensor, out_type, name: str) -> te.Tensor:
    return te.compute(out_type.shape, lambda *i: broadcast_read(x, i), name)


@register_compute("broadcast_to")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _broadcast(x, out_type, "T_broadcast_to")


@register_compute("broadcast_to_like")
def _(x: te.Tensor, like: te.Tensor, attrs, out_type) -> te.Tensor:
    return _broadcast(x, out_type, "T_broadcast_to_like")


def _collapse_sum(x: te.Tensor, shape: Sequence[int], name: str) -> te.Tensor:
    """Sum over the leading axes data has beyond `shape` and over the axes where `shape`
    has 1 and data does not (for bools: any, as numpy's sum cast back to bool)."""
    lead = x.ndim - len(shape)
    summed = {k: te.reduce_axis(d, f"k{k}") for k, d in enumerate(x.shape)
              if k < lead or (shape[k - lead] == 1 and d != 1)}
    if not summed:
        return te.compute(shape, lambda *i: x[i], name)
    combine = te.max if x.dtype == "bool" else te.sum

    def body(*i):
        idx = tuple(summed[k] if k in summed else i[k - lead] for k in range(x.ndim))
        return combine(x[idx], list(summed.values()))

    return te.compute(shape, body, name)


@register_compute("collapse_sum_like")
def _(x: te.Tensor, like: te.Tensor, attrs, out_type) -> te.Tensor:
    return _collapse_sum(x, out_type.shape, "T_collapse_sum_like")


@register_compute("collapse_sum_to")
def _(x: te.Tensor, shape: te.Tensor, attrs, out_type) -> te.Tensor:
    """The target shape comes from the result type (the shape argument is its value)."""
    if not out_type.is_static:
        raise LoweringError("collapse_sum_to: the target shape is known only at run time; "
                               "give it as the shape attribute")
    return _collapse_sum(x, out_type.shape, "T_collapse_sum_to")
