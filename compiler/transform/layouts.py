"""Layouts as TVM writes them, and the algebra the layout rules need (TVM:
src/tir/ir/data_layout.cc, src/relay/transforms/infer_layout_utils.cc).

    parse("NCHW16c")    ->  Layout("NCHW16c", (("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 16)))

Upper-case letters are primal axes, `16c` a sub-axis of C of 16.  `UNDEF` is TVM's
Layout::Undef(), the "any layout" a broadcast of two layout-less inputs reports; a layout
with no axes (`make(())`, a scalar's) is a layout, as TVM's Layout built from an empty
axis list is.  A string that is no layout (an upper-case letter twice, `4C`) is a
LayoutError.  A sub-axis may repeat, as TVM v0.16's Layout allows (src/tir/ir/data_layout.cc
checks only that each sub-axis has its primal axis): `OHWI16i64o2i` splits I by 16 then by
2, the first sub-axis the outer (I = (I' * 16 + i1) * 2 + i2), and its factor is 32.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache


class LayoutError(Exception):
    """A string that is no layout, or two layouts that no layout_transform converts between."""


# ---------------------------------------------------------------------- layouts

_AXIS = re.compile(r"([0-9]*)([A-Za-z])")


@dataclass(frozen=True)
class Layout:
    """A layout string as its axes: (letter, factor), factor 0 for a primal axis."""

    name: str
    axes: tuple[tuple[str, int], ...]

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def ndim_primal(self) -> int:
        return sum(1 for a, _ in self.axes if a.isupper())

    def index_of(self, letter: str) -> int:
        """The position of axis `letter` (upper: primal, lower: its sub-axis), or -1."""
        return next((i for i, (a, _) in enumerate(self.axes) if a == letter), -1)

    def factor_of(self, primal: str) -> int:
        """The factor `primal` is split by, or -1 when it is not: the product of its
        sub-axes when it is split more than once (TVM's FactorOf)."""
        factors = [f for a, f in self.axes if a == primal.lower()]
        return math.prod(factors) if factors else -1

    def sub_layout(self, pos: int, length: int) -> "Layout":
        return make(self.axes[pos:pos + length])

    def expand_primal(self, dst: "Layout") -> "Layout":
        """This layout with the primal axes of `dst` it lacks put in front (TVM's ExpandPrimal)."""
        missing = "".join(a for a, _ in dst.axes if a.isupper() and self.index_of(a) < 0)
        return parse(missing + self.name)

    def __str__(self) -> str:
        return self.name


def make(axes) -> Layout:
    return Layout("".join(f"{f}{a}" if f else a for a, f in axes), tuple(axes))


@lru_cache(maxsize=None)
def parse(text: str) -> Layout:
    """A layout string as a Layout; LayoutError when it is not one."""
    if text == "__undef__":
        return UNDEF
    axes, pos = [], 0
    for m in _AXIS.finditer(text):
        if m.start() != pos:
            break
        pos = m.end()
        digits, letter = m.groups()
        if letter.isupper() != (digits == ""):
            raise LayoutError(f"'{text}' is not a layout")
        axes.append((letter, int(digits) if digits else 0))
    letters = [a for a, _ in axes]
    primal = [a for a in letters if a.isupper()]
    if pos != len(text) or len(set(primal)) != len(primal) or any(
            a.islower() and a.upper() not in letters for a in letters):
        raise LayoutError(f"'{text}' is not a layout")
    return Layout(text, tuple(axes))


UNDEF = Layout("__undef__", ())
MaybeLayout = Layout | None


def same(a: MaybeLayout, b: MaybeLayout) -> bool:
    return (a.name if a else None) == (b.name if b else None)


def convertible(src: Layout, dst: Layout) -> bool:
    """Whether a layout_transform converts `src` to `dst` (the same primal axes)."""
    return sorted(a for a, _ in src.axes if a.isupper()) == sorted(a for a, _ in dst.axes if a.isupper())


# ---------------------------------------------------------------------- broadcasting helpers


def try_transform_like(old: Layout, ref_old: Layout, ref_new: Layout) -> Layout | None:
    """`old` changed as `ref_old` changed into `ref_new`, axes matched from the right
    (TVM's TryTransformLike); None when the two are not alike enough."""
    large, small = (ref_old, old) if ref_old.ndim > old.ndim else (old, ref_old)
    tail = large.sub_layout(large.ndim - small.ndim, small.ndim)
    rest = large.sub_layout(0, large.ndim - small.ndim)
    for a, _ in rest.axes:
        if tail.index_of(a.upper()) >= 0 or tail.index_of(a.lower()) >= 0:
            return None
    if not _isomorphic(tail, small):
        return None
    if old.ndim == 0:
        return old
    mapping: dict[str, str] = {}
    used: set[str] = set()
    for (ra, _), (oa, _) in zip(reversed(ref_old.axes), reversed(old.axes)):
        mapping[ra.upper()] = oa.upper()
        used.add(oa.upper())
    for ra, _ in reversed(ref_old.axes):
        key = ra.upper()
        if key not in mapping:
            pick = key if key not in used else next(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used)
            mapping[key] = pick
            used.add(pick)
    axes = []
    for a, f in ref_new.axes:
        letter = mapping.get(a.upper())
        if letter is None:
            return None
        axes.append((letter if a.isupper() else letter.lower(), f))
    return make(axes)


def _isomorphic(lhs: Layout, rhs: Layout) -> bool:
    if lhs.ndim != rhs.ndim:
        return False
    to, back = {}, {}
    for (a, fa), (b, fb) in zip(lhs.axes, rhs.axes):
        if a.isupper() != b.isupper() or to.setdefault(a, b) != b or back.setdefault(b, a) != a:
            return False
        if a.islower() and lhs.factor_of(a) != rhs.factor_of(b):
            return False
    return True


def adjust_subordinate_factors(src: Layout, old: Layout, old_shape) -> Layout:
    """`src` with the factor of a sub-axis set to 1 where `old` has no such axis or
    broadcasts it (extent 1) (TVM's AdjustSubordinateFactors)."""
    axes = []
    for a, f in src.axes:
        if a.islower():
            i = old.index_of(a.upper())
            if i < 0 or (old_shape[i] == 1 and old.index_of(a) < 0):
                f = 1
            else:
                f = src.factor_of(a.upper())
        axes.append((a, f))
    return make(axes)
