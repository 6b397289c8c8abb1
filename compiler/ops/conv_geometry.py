"""The geometry of the convolutions, shared by their relations and numpy references
(nn_conv.py) and their compute rules (lower/te/topi/nn_conv.py, conv_blocked.py): TVM's
layout strings as index maps (`NCHW8c`: channel = outer * 8 + inner), the conversions to
and from a canonical layout, the checked attribute lists, the result dtype, and the
`ConvPlan` a relation works out and a compute rule reuses.
"""

from __future__ import annotations

import math

import re
from dataclasses import dataclass
from functools import lru_cache

from ..lazy_modules import numpy as np
from .attrs import AttrError, OpAttrs
from .registry import OpTypeError
from .shapes import Dim, check_dtype, known, mul


@dataclass(frozen=True)
class Layout:
    """A parsed layout string: each axis is (letter, factor); factor None for a primal
    (upper-case) axis, the split factor for a sub-axis (`8c` -> ("c", 8))."""

    name: str
    axes: tuple[tuple[str, int | None], ...]

    @property
    def primal(self) -> str:
        return "".join(a for a, f in self.axes if f is None)

    def index(self, letter: str) -> int:
        for i, (a, _) in enumerate(self.axes):
            if a == letter:
                return i
        raise KeyError(letter)

    def factor(self, primal: str) -> int | None:
        """The factor `primal` is split by, or None when it is not: the product of its
        sub-axes when it is split more than once (TVM's FactorOf; OHWI16i64o2i splits I by
        16 then 2, 32 in all, the first sub-axis the outer)."""
        factors = [f for a, f in self.axes if a == primal.lower() and f is not None]
        return math.prod(factors) if factors else None

    def subs(self, primal: str) -> list[int]:
        """The positions of the sub-axes of `primal`, outer to inner."""
        return [k for k, (a, f) in enumerate(self.axes) if a == primal.lower() and f is not None]


_TOKEN = re.compile(r"[A-Z]|[0-9]+[a-z]")


@lru_cache(maxsize=None)
def parse_layout(text: str, canonical: str) -> Layout | None:
    """`text` as a layout convertible to `canonical` (same primal axes), or None."""
    pos = 0
    axes: list[tuple[str, int | None]] = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        tok = m.group(0)
        if tok.isupper():
            axes.append((tok, None))
        else:
            factor = int(tok[:-1])
            if factor <= 0:
                return None
            axes.append((tok[-1], factor))
        pos = m.end()
    primal = [a for a, f in axes if f is None]  # a sub-axis may repeat (TVM's Layout allows it)
    if sorted(primal) != sorted(canonical):
        return None
    if any(a.upper() not in primal for a, f in axes if f is not None):
        return None
    return Layout(text, tuple(axes))


def forward_shape(layout: Layout, shape: tuple[Dim, ...], canonical: str) -> tuple[Dim, ...]:
    """The shape in the canonical layout (sub-axes merged into their primal axis)."""
    out: list[Dim] = []
    for letter in canonical:
        d = shape[layout.index(letter)]
        f = layout.factor(letter)
        out.append(d if f is None else mul(d, f))
    return tuple(out)


def backward_shape(layout: Layout, shape: tuple[Dim, ...], canonical: str) -> tuple[Dim, ...]:
    """A canonical shape in `layout` (split axes divided by their factor)."""
    out: list[Dim] = []
    for a, f in layout.axes:
        if f is not None:
            out.append(f)
            continue
        d = shape[canonical.index(a)]
        sub = layout.factor(a)
        out.append(d if sub is None or not known(d) else d // sub)
    return tuple(out)


def to_canonical(x: np.ndarray, layout: Layout, canonical: str) -> np.ndarray:
    if layout.name == canonical:
        return x
    perm: list[int] = []
    shape: list[int] = []
    for letter in canonical:
        i = layout.index(letter)
        perm.append(i)
        extent = x.shape[i]
        for j in layout.subs(letter):
            perm.append(j)
            extent *= x.shape[j]
        shape.append(extent)
    return x.transpose(perm).reshape(shape)


def from_canonical(x: np.ndarray, layout: Layout, canonical: str) -> np.ndarray:
    if layout.name == canonical:
        return x
    positions: list[int] = []
    split: list[int] = []
    for k, letter in enumerate(canonical):
        f = layout.factor(letter)
        positions.append(layout.index(letter))
        if f is None:
            split.append(x.shape[k])
        else:
            subs = layout.subs(letter)
            positions += subs
            split += [x.shape[k] // f] + [layout.axes[j][1] for j in subs]
    perm = [positions.index(k) for k in range(len(layout.axes))]
    return np.ascontiguousarray(x.reshape(split).transpose(perm))


def list_text(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def checked_layout(op: str, attr: str, text: str, canonical: str, examples: str) -> Layout:
    layout = parse_layout(text, canonical)
    if layout is None:
        raise AttrError(f'{op}: unsupported layout {attr}="{text}" (expected a layout of the '
                        f"axes {', '.join(canonical)}, such as {examples})", attr)
    return layout


def int_list(op: str, attr: str, values: tuple[int, ...], n: int, *, positive: bool = True) -> tuple[int, ...]:
    """A list attribute of n values; one value stands for all (TVM's Python API does that)."""
    if len(values) == 1 and n > 1:
        values = values * n
    if len(values) != n:
        raise AttrError(f"{op}: {attr} expects {n} value{'s' if n > 1 else ''}, got {len(values)} "
                        f"({attr}={list_text(values)})", attr)
    if positive and any(v < 1 for v in values):
        raise AttrError(f"{op}: {attr} must be positive, got {attr}={list_text(values)}", attr)
    if not positive and any(v < 0 for v in values):
        raise AttrError(f"{op}: {attr} must not be negative, got {attr}={list_text(values)}", attr)
    return values


def padding_pairs(op: str, padding: tuple[int, ...], n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """TVM's padding forms: 1 value for every side, n values (same before and after), or
    2n values (all befores, then all afters: [top, left, bottom, right] in 2-D)."""
    if len(padding) == 1:
        before = after = padding * n
    elif len(padding) == n:
        before = after = tuple(padding)
    elif len(padding) == 2 * n:
        before, after = tuple(padding[:n]), tuple(padding[n:])
    else:
        counts = "1 or 2" if n == 1 else f"1, {n} or {2 * n}"
        raise AttrError(f"{op}: padding expects {counts} values, got {len(padding)} "
                        f"(padding={list_text(padding)})", "padding")
    if any(p < 0 for p in before + after):
        raise AttrError(f"{op}: padding must not be negative, got padding={list_text(padding)}",
                        "padding")
    return before, after


def result_dtype(attrs: OpAttrs, default: str) -> str:
    value = attrs.out_dtype
    if value in ("", "void"):
        return default
    try:
        return check_dtype(value, "out_dtype")
    except OpTypeError as e:
        raise AttrError(e.message, "out_dtype") from None


def checked_groups(op: str, groups: int) -> int:
    if groups < 1:
        raise AttrError(f"{op}: groups must be positive, got groups={groups}", "groups")
    return groups


@dataclass(frozen=True)
class ConvSpec:
    """What differs between the convolution ops."""

    name: str
    spatial: str  # "W", "HW", "DHW"
    transpose: bool = False

    @property
    def ndim(self) -> int:
        return len(self.spatial)

    @property
    def data_canonical(self) -> str:
        return "NC" + self.spatial

    @property
    def kernel_canonical(self) -> str:
        return ("IO" if self.transpose else "OI") + self.spatial

    @property
    def data_examples(self) -> str:
        c = self.data_canonical
        return f"{c}, N{self.spatial}C or {c}8c"

    @property
    def kernel_examples(self) -> str:
        k = self.kernel_canonical
        if self.transpose:
            return f"{k}, {self.spatial}IO or OI{self.spatial}"
        return f"{k}, {self.spatial}IO or {k}8i8o"


@dataclass(frozen=True)
class ConvPlan:
    """Everything a relation works out, reused by the compute."""

    data_layout: Layout
    kernel_layout: Layout
    out_layout: Layout
    strides: tuple[int, ...]
    dilation: tuple[int, ...]
    pad_before: tuple[int, ...]
    pad_after: tuple[int, ...]
    output_padding: tuple[int, ...]
    groups: int


def conv_plan(spec: ConvSpec, attrs: OpAttrs) -> ConvPlan:
    op, n = spec.name, spec.ndim
    data_layout = checked_layout(op, "data_layout", attrs.data_layout, spec.data_canonical, spec.data_examples)
    kernel_layout = checked_layout(op, "kernel_layout", attrs.kernel_layout, spec.kernel_canonical,
                            spec.kernel_examples)
    out_text = attrs.out_layout or attrs.data_layout
    out_layout = checked_layout(op, "out_layout", out_text, spec.data_canonical, spec.data_examples)
    strides = int_list(op, "strides", attrs.strides, n)
    dilation = int_list(op, "dilation", attrs.dilation, n)
    before, after = padding_pairs(op, attrs.padding, n)
    output_padding = (0,) * n
    if spec.transpose:
        output_padding = int_list(op, "output_padding", attrs.output_padding, n, positive=False)
    return ConvPlan(data_layout, kernel_layout, out_layout, strides, dilation, before, after,
                    output_padding, checked_groups(op, attrs.groups))


def is_depthwise(groups: int, in_channels: Dim, weight_out: Dim) -> bool:
    """TVM's depthwise case: groups equal to the input channels and to the weight's O
    extent; the weight's I extent is then the channel multiplier."""
    return groups > 1 and known(in_channels, weight_out) and groups == in_channels == weight_out
