"""topk as tensor expressions, without a sort (TVM calls an external C++ sort here; a
compute rule has only index arithmetic and reductions).  Three ways, by k and n:

* k <= SELECT_MAX and data of at most 32 bits: each element gets one int64 key that orders
  as topk does (ops/algorithm.py: larger first, or smaller with is_ascend; NaN largest;
  equal values lower index first):

      T_topk_key[.., j, ..] = order(x) * n + (n - 1 - j)        (n the axis' extent)

  with order(x) the value's rank among all values of its dtype, in [0, 2^32) (a float's
  bits made monotone, -0.0 as 0.0, NaN above +inf; negated for is_ascend).  Keys are
  distinct, so the r-th element is the r-th largest key: T_topk_max0 = max of the keys,
  T_topk_max{r} = max of the keys below T_topk_max{r-1}: k reductions of n, O(n k).
* k > SELECT_MAX, data of at most 32 bits and an axis of at least NETWORK_MIN: the keys
  above sorted, largest first, by a bitonic network (padded to a power of two P with -1,
  below every key): log2(P) merges of log2(P)/2 layers on average, each layer a
  compare-exchange of j with j ^ step, O(n log^2 n) per row; NETWORK_LAYERS layers make
  one stage (T_topk_net*), whose element reads the 2^layers keys it depends on.  The first
  k keys give the positions (n - 1 - key % n).
* otherwise: T_topk_rank[.., j, ..] = the number of positions that come before j in that
  order, and T_topk_pos[.., r, ..] = the j whose rank is r (ranks are a permutation, so
  one j matches): n^2 comparisons per row, n k for the positions.

Then T_topk_values = data at the positions, T_topk_indices = them in dtype.  Measured ad
hoc (1 thread, 2 cores shared with other work, load 9-10, NOT IDLE), float32 (8, 4096):
k=10 by keys 0.28 ms, k=17 by ranks 149 ms (numpy's stable argsort of the rows: 7-11 ms);
k=64 by keys runs in 1.3 ms but takes 9.5 s to compile (64 loops), hence SELECT_MAX.
The network (1 thread, CPU time, load 3-5): (8, 4096) k=64 from 68 ms by ranks to 13 ms
(numpy 2.4-2.6), (8, 1024) from 4.6 to 1.5 ms; but it compiles slower, 26 stages for
4096 (LLVM's share most of it): 16 s against 6 s, 10 s against 2.8 s at 1024, and at 256
7 s against 3.8 s for 0.44 ms against 0.51 (one layer a stage: 43 s; six: 16 s and slower
code), hence NETWORK_MIN.
"""

from __future__ import annotations

from ....ops.algorithm import topk_plan
from .. import expr as te
from .registry import register_compute
from .transform import type_of


def _before(a: te.PrimExpr, ia: te.PrimExpr, b: te.PrimExpr, ib: te.PrimExpr, ascend: bool) -> te.PrimExpr:
    """Whether the element a (at ia) comes before b (at ib) in topk's order."""
    first, second = (b, a) if ascend else (a, b)  # `first` must be the larger one
    larger = te.gt(first, second)
    equal = te.eq(a, b)
    if te.is_float(a.dtype):
        nan_a, nan_b = te.intrinsic("isnan", first), te.intrinsic("isnan", second)
        larger = te.logical_or(larger, te.logical_and(nan_a, te.intrinsic("not", nan_b)))
        equal = te.logical_or(equal, te.logical_and(nan_a, nan_b))
    return te.logical_or(larger, te.logical_and(equal, te.lt(ia, ib)))


SELECT_MAX = 32  # the largest k taken by repeated maxima of keys (k loops of n); above, by ranks (n^2)
NETWORK_MIN = 1024  # the shortest axis whose keys a sorting network orders, past SELECT_MAX


def _order(x: te.PrimExpr, ascend: bool) -> te.PrimExpr:
    """x's place among the values of its dtype as an int64 in [0, 2^32): larger values
    higher (lower with `ascend`), -0.0 with 0.0, NaN above everything."""
    if te.is_float(x.dtype):
        f = te.cast(x, "float32")
        f = te.select(te.eq(f, te.const(0.0, "float32")), te.const(0.0, "float32"), f)  # -0.0 -> 0.0
        b = te.cast(te.reinterpret(f, "int32"), te.INDEX)
        key = te.select(te.lt(b, 0), te.const(-1, te.INDEX) - b, b + (1 << 31))
        key = te.select(te.intrinsic("isnan", f), te.const((1 << 32) - 1, te.INDEX), key)
    elif te.is_signed(x.dtype):
        key = te.cast(x, te.INDEX) + (1 << 31)
    else:
        key = te.cast(x, te.INDEX)
    return te.const((1 << 32) - 1, te.INDEX) - key if ascend else key


def _by_keys(data: te.Tensor, axis: int, kept: int, ascend: bool) -> te.Tensor:
    """The positions of the first `kept` elements in topk's order, by repeated maxima."""
    n = data.shape[axis]
    keys = _topk_keys(data, axis, ascend)
    rows = data.shape[:axis] + data.shape[axis + 1:]
    maxima: list[te.Tensor] = []

    def largest(previous: te.Tensor | None):
        def body(*row):
            j = te.reduce_axis(n, "j")
            key = keys[row[:axis] + (j,) + row[axis:]]
            if previous is not None:
                key = te.select(te.lt(key, previous[row]), key, te.const(-1, te.INDEX))
            return te.max(key, [j])
        return body

    for r in range(kept):
        maxima.append(te.compute(rows, largest(maxima[-1] if maxima else None), f"T_topk_max{r}", tag="topk"))

    def position(*i):
        row = i[:axis] + i[axis + 1:]
        key = maxima[-1][row]
        for r in range(kept - 2, -1, -1):
            key = te.select(te.eq(i[axis], r), maxima[r][row], key)
        return te.const(n - 1, te.INDEX) - key % n

    return te.compute(data.shape[:axis] + (kept,) + data.shape[axis + 1:], position, "T_topk_pos")


@register_compute("topk")
def _(data: te.Tensor, attrs, out_type) -> te.Tensor | tuple[te.Tensor, te.Tensor]:
    axis, kept = topk_plan(type_of(data), attrs)
    ascend = bool(attrs.is_ascend)
    if kept <= SELECT_MAX and te.bits(data.dtype) <= 32:
        positions = _by_keys(data, axis, kept, ascend)
    elif te.bits(data.dtype) <= 32 and data.shape[axis] >= NETWORK_MIN:
        positions = _by_sorting_keys(data, axis, kept, ascend)
    else:
        positions = _by_ranks(data, axis, kept, ascend)
    shape = positions.shape
    values = te.compute(shape, lambda *r: data[r[:axis] + (positions[r],) + r[axis + 1:]], "T_topk_values")
    indices = te.compute(shape, lambda *r: te.cast(positions[r], attrs.dtype), "T_topk_indices")
    if attrs.ret_type == "both":
        return values, indices
    return values if attrs.ret_type == "values" else indices


def _topk_keys(data: te.Tensor, axis: int, ascend: bool) -> te.Tensor:
    """T_topk_key: each element's distinct int64 key, larger first in topk's order."""
    n = data.shape[axis]
    return te.compute(data.shape, lambda *j: _order(data[j], ascend) * n + (n - 1 - j[axis]), "T_topk_key")


def _by_sorting_keys(data: te.Tensor, axis: int, kept: int, ascend: bool) -> te.Tensor:
    """The positions of the first `kept` elements in topk's order: the keys sorted
    largest first by a bitonic network (see the module doc), the first `kept` decoded."""
    n = data.shape[axis]
    width = 1 << max(0, (n - 1).bit_length())  # the network's: a power of two
    keys = _topk_keys(data, axis, ascend)
    rows = data.shape[:axis] + data.shape[axis + 1:]
    shape = rows + (width,)  # the sorted axis last, contiguous

    def padded(*i):  # the keys along the last axis, -1 (below every key) past n
        j = i[-1]
        at = i[:axis] + (te.minimum(j, n - 1),) + i[axis:-1]
        return te.select(te.lt(j, n), keys[at], te.const(-1, te.INDEX))

    current = te.compute(shape, padded, "T_topk_net")
    size = 2
    while size <= width:
        steps = []
        step = size // 2
        while step >= 1:
            steps.append(step)
            step //= 2
        for first in range(0, len(steps), NETWORK_LAYERS):
            current = _network_layers(current, size, steps[first:first + NETWORK_LAYERS])
        size *= 2

    def position(*i):
        row = i[:axis] + i[axis + 1:]
        return te.const(n - 1, te.INDEX) - current[row + (i[axis],)] % n

    return te.compute(data.shape[:axis] + (kept,) + data.shape[axis + 1:], position, "T_topk_pos")


NETWORK_LAYERS = 4  # layers of the bitonic network per stage: 2^layers reads an element


def _network_layers(x: te.Tensor, size: int, steps: list[int]) -> te.Tensor:
    """Layers of the bitonic network over the last axis of `x` that sort blocks of `size`
    (largest first where j & size is 0, which is every block in the last merge; smallest
    first elsewhere), one per step of `steps` (distinct powers of two, largest first): at
    each, j and its partner j ^ step exchange.  Position j of the result reads the
    2^len(steps) elements j ^ mask, masks made of the steps, each exchange
    `s * max(s * a, s * b)` with s = 1 where j keeps the larger, -1 the smaller (a and b
    read once: with a select between a max and a min each layer would double the reads).
    A reduction over one position, so that the stage is a loop of its own: inlined into
    the next, the reads would multiply across stages."""
    one = te.reduce_axis(1, "t")

    def body(*i):
        row, j = i[:-1], i[-1]
        descending = te.eq(j // size % 2, 0)

        def low(b: int, mask: int) -> te.PrimExpr:  # whether j ^ mask is the first of its pair at step b
            bit = j // b % 2
            return te.eq(bit, 1 if mask & b else 0)

        def at(mask: int) -> te.PrimExpr:  # the index j ^ mask
            index = j
            for b in steps:
                if mask & b:
                    index = index + te.select(low(b, 0), te.const(b, te.INDEX), te.const(-b, te.INDEX))
            return index

        def value(level: int, mask: int) -> te.PrimExpr:
            if level == 0:
                return x[row + (at(mask),)]
            b = steps[level - 1]
            a, c = value(level - 1, mask), value(level - 1, mask ^ b)
            keep_max = te.eq(te.cast(low(b, mask), te.INDEX), te.cast(descending, te.INDEX))
            sign = te.select(keep_max, te.const(1, te.INDEX), te.const(-1, te.INDEX))
            return sign * te.maximum(sign * a, sign * c)

        return te.max(value(len(steps), 0) + one * 0, [one])

    return te.compute(x.shape, body, f"T_topk_net{size}_{steps[0]}", tag="topk")


def _by_ranks(data: te.Tensor, axis: int, kept: int, ascend: bool) -> te.Tensor:
    """The positions of the first `kept` elements in topk's order, by each one's rank."""
    n = data.shape[axis]

    def rank(*j):
        i = te.reduce_axis(n, "i")
        other = j[:axis] + (i,) + j[axis + 1:]
        ahead = _before(data[other], i, data[j], j[axis], ascend)
        return te.sum(te.select(ahead, te.const(1, te.INDEX), te.const(0, te.INDEX)), [i])

    ranks = te.compute(data.shape, rank, "T_topk_rank", tag="topk")
    shape = data.shape[:axis] + (kept,) + data.shape[axis + 1:]

    def position(*r):
        j = te.reduce_axis(n, "j")
        at = r[:axis] + (j,) + r[axis + 1:]
        return te.sum(te.select(te.eq(ranks[at], r[axis]), te.cast(j, te.INDEX), te.const(0, te.INDEX)), [j])

    return te.compute(shape, position, "T_topk_pos", tag="topk")
