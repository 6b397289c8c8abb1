"""Winograd convolution (reference §7.1; TVM: src/relay/op/nn/convolution.cc, the
`Conv2DWinograd*` relations, and python/tvm/topi/nn/winograd_util.py for the matrices).

Ops:

* `nn.contrib_conv2d_winograd_weight_transform(weight, tile_size)`: an OIHW weight
  (O, I, r, r) -> (alpha, alpha, O, I), alpha = tile_size + r - 1, each filter g
  mapped to G g G^T.  Opaque: AlterOpLayout puts it on a constant weight and FoldConstant
  evaluates it at build time.
* `nn.contrib_conv2d_winograd_without_weight_transform(data, weight, tile_size, <conv2d
  attrs>)`: the 2-D convolution of F(m x m, r x r), m = tile_size, on a weight
  transformed already: (alpha, alpha, O, I), or packed (alpha, alpha, O/v, I, v) (the
  output channels split into blocks of v, the block's channels innermost, as TVM's ARM
  AlterOpLayout packs it).  Data and output in NCHW or NCHW[x]c (`data_layout`,
  `out_layout`); stride 1, dilation 1, groups 1, `channels` and `kernel_size` written
  (TVM requires both).  Same arithmetic as nn.conv2d up to rounding.  OutEWiseFusable.

The matrices are Toom-Cook's for the finite interpolation points POINTS[:alpha - 1] and
the point at infinity: for the correlation y = A^T [(G g) . (B^T d)],

    A[j, i]   = a_j^i                (the last row: [0 .. 0 1])
    G[j, k]   = a_j^k / f_j,  f_j = prod_{l != j} (a_j - a_l)   (the last row: [0 .. 0 1])
    B^T[j, :] = the coefficients of prod_{l != j} (x - a_l), lowest first
                (the last row: those of prod_l (x - a_l))

computed in exact fractions.  F(2, 3) (points 0, 1, -1) has only 0 and +-1 in A and
B; F(4, 3) adds +-1/2 (powers of two: exact in float32) and rounds worse, as
interpolation on more points does.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from ..lazy_modules import numpy as np
from ..ir.types import TensorType
from .attrs import OPT_INT, Attr, AttrError
from .conv_geometry import backward_shape, checked_layout, from_canonical, padding_pairs, result_dtype, to_canonical
from .nn_conv import canonical_shape, conv2d
from .registry import OPAQUE, OUT_EWISE_FUSABLE, OpTypeError, define
from .shapes import known, tensor, type_text

POINTS = (Fraction(0), Fraction(1), Fraction(-1), Fraction(1, 2), Fraction(-1, 2), Fraction(2), Fraction(-2))
WEIGHT_OP = "nn.contrib_conv2d_winograd_weight_transform"
CONV_OP = "nn.contrib_conv2d_winograd_without_weight_transform"


@lru_cache(maxsize=None)
def winograd_matrices(m: int, r: int) -> tuple[tuple[tuple[Fraction, ...], ...], ...]:
    """(A (alpha x m), B^T (alpha x alpha), G (alpha x r)) of F(m, r), exact (module doc)."""
    alpha = m + r - 1
    if not 1 <= alpha - 1 <= len(POINTS) or m < 1 or r < 1:
        raise ValueError(f"F({m}, {r}) needs {alpha - 1} interpolation points; {len(POINTS)} are defined")
    pts = POINTS[:alpha - 1]

    def poly(roots) -> list[Fraction]:  # coefficients of prod (x - root), lowest first
        c = [Fraction(1)]
        for root in roots:
            c = [(c[k - 1] if k else 0) - root * (c[k] if k < len(c) else 0) for k in range(len(c) + 1)]
        return c

    last = lambda n: tuple(Fraction(int(k == n - 1)) for k in range(n))  # noqa: E731
    a = tuple(tuple(p ** i for i in range(m)) for p in pts) + (last(m),)
    g = tuple(tuple(p ** k / _prod(p - q for q in pts if q != p) for k in range(r)) for p in pts) + (last(r),)
    bt = tuple(tuple(poly([q for q in pts if q != p]) + [Fraction(0)]) for p in pts) + (tuple(poly(pts)),)
    return a, bt, g


def _prod(values) -> Fraction:
    out = Fraction(1)
    for v in values:
        out *= v
    return out


def matrices_f64(m: int, r: int):
    """winograd_matrices as float64 arrays (A, B^T, G)."""
    return tuple(np.array([[float(v) for v in row] for row in mat]) for mat in winograd_matrices(m, r))


def _tile_size(op: str, tile_size: int, r: int) -> int:
    try:
        winograd_matrices(tile_size, r)
    except ValueError as e:
        raise AttrError(f"{op}: tile_size={tile_size} is not supported for a {r}x{r} kernel ({e})",
                        "tile_size") from None
    return tile_size


# ---- the weight transform

weight_transform = define(WEIGHT_OP, ("weight",), OPAQUE, attrs=(
    Attr("tile_size", OPT_INT, None, "m of F(m x m, r x r): the output tile's side"),
), doc="Winograd weight transform: OIHW (O, I, r, r) -> (alpha, alpha, O, I), each filter g "
       "as G g G^T, alpha = tile_size + r - 1.")


@weight_transform.relation
def _(weight, attrs):
    w = tensor(weight, f"{WEIGHT_OP}: weight", 0)
    if w.ndim != 4:
        raise OpTypeError(f"{WEIGHT_OP}: weight must be OIHW (4 dimensions), found {type_text(w)}", 0)
    o, i, kh, kw = w.shape
    if known(kh, kw) and kh != kw:
        raise OpTypeError(f"{WEIGHT_OP}: the kernel must be square, found {type_text(w)}", 0)
    if attrs.tile_size is None:
        raise AttrError(f"{WEIGHT_OP}: tile_size is required", "tile_size")
    if not known(kh):
        raise OpTypeError(f"{WEIGHT_OP}: the kernel size must be static, found {type_text(w)}", 0)
    alpha = _tile_size(WEIGHT_OP, attrs.tile_size, kh) + kh - 1
    return TensorType((alpha, alpha, o, i), w.dtype)


# OpenBLAS multiplies on the calling thread up to 65536 * 4 multiply-adds (its
# GEMM_MULTITHREAD_THRESHOLD); half of that, for a margin
SERIAL_PRODUCT = 1 << 17


@weight_transform.reference
def _(weight, attrs):
    """G g G^T of every filter as one matrix product: (G kron G) (alpha^2 x r^2) times the
    filters as columns (r^2 x O*I), whose rows are then (alpha, alpha, O, I) in order; in
    float32 unless the weight is float64, as the compute rule (te/topi/winograd.py).
    FoldConstant runs it on every Winograd weight of a model: numpy's einsum in float64
    took 0.5-0.65 CPU s of ResNet-50's cold build (13 weights), this 0.08-0.14 s.

    The product is taken a few hundred filters at a time (SERIAL_PRODUCT multiply-adds),
    each small enough that OpenBLAS runs it on the calling thread.  As one product,
    OpenBLAS split it over its threads, which then spin waiting for more work: the check
    and passes of ResNet-50's cold build took 1.47 CPU s where they take 0.97 (median of
    4 in one process, load 5-8); the pieces take no longer than the whole (7 weights:
    88-102 CPU ms against 172-177, spin included).  Rounding differs from the one product
    by a unit in the last place, as OpenBLAS's own from one thread count to another."""
    _, _, g = matrices_f64(attrs.tile_size, weight.shape[2])
    o, i, r, _ = weight.shape
    acc = np.float64 if weight.dtype == np.float64 else np.float32
    k = np.kron(g, g).astype(acc)
    columns = weight.reshape(o * i, r * r).astype(acc, copy=False)
    u = np.empty((len(k), o * i), acc)
    step = max(1, SERIAL_PRODUCT // k.size)
    for start in range(0, o * i, step):
        np.matmul(k, columns[start:start + step].T, out=u[:, start:start + step])
    return u.reshape(len(g), len(g), o, i).astype(weight.dtype, copy=False)


# ---- the convolution on a transformed weight

conv = define(CONV_OP, ("data", "weight"), OUT_EWISE_FUSABLE, attrs=(
    Attr("tile_size", OPT_INT, None, "m of F(m x m, r x r): the output tile's side (required)"),
    *conv2d.attrs,  # TVM's Conv2DWinogradAttrs: Conv2DAttrs and tile_size; kernel_layout the untransformed weight's
), doc="2-D convolution by Winograd's F(m x m, r x r) on a weight transformed by "
       f"{WEIGHT_OP} ((alpha, alpha, O, I), or packed (alpha, alpha, O/v, I, v)); data and "
       "result NCHW or NCHW[x]c; stride 1, dilation 1, groups 1.")


class Plan:
    """What the relation checks, reused by the reference and the compute rule."""

    def __init__(self, attrs) -> None:
        op = CONV_OP
        if attrs.tile_size is None or attrs.channels is None or attrs.kernel_size is None:
            missing = next(a for a in ("tile_size", "channels", "kernel_size") if getattr(attrs, a) is None)
            raise AttrError(f"{op}: {missing} is required", missing)
        ks = tuple(attrs.kernel_size) * (2 if len(attrs.kernel_size) == 1 else 1)
        if len(ks) != 2 or ks[0] != ks[1] or ks[0] < 1:
            raise AttrError(f"{op}: kernel_size must be square, got {list(attrs.kernel_size)}", "kernel_size")
        for name in ("strides", "dilation"):
            if any(v != 1 for v in getattr(attrs, name)):
                raise AttrError(f"{op}: {name} must be 1, got {list(getattr(attrs, name))}", name)
        if attrs.groups != 1:
            raise AttrError(f"{op}: groups must be 1, got groups={attrs.groups}", "groups")
        self.r = ks[0]
        self.m = _tile_size(op, attrs.tile_size, self.r)
        self.alpha = self.m + self.r - 1
        self.channels = attrs.channels
        self.data_layout = checked_layout(op, "data_layout", attrs.data_layout, "NCHW", "NCHW or NCHW8c")
        self.out_layout = checked_layout(op, "out_layout", attrs.out_layout or attrs.data_layout, "NCHW",
                                         "NCHW or NCHW8c")
        for layout, attr in ((self.data_layout, "data_layout"), (self.out_layout, "out_layout")):
            if layout.factor("H") or layout.factor("W") or layout.factor("N"):
                raise AttrError(f"{op}: {attr} {layout.name} splits a spatial axis", attr)
        self.pad_before, self.pad_after = padding_pairs(op, attrs.padding, 2)

    def out_hw(self, h: int, w: int) -> tuple[int, int]:
        return (h + self.pad_before[0] + self.pad_after[0] - self.r + 1,
                w + self.pad_before[1] + self.pad_after[1] - self.r + 1)


@conv.relation
def _(data, weight, attrs):
    op = CONV_OP
    d = tensor(data, f"{op}: data", 0)
    w = tensor(weight, f"{op}: weight", 1)
    plan = Plan(attrs)
    n, c, h, wd = canonical_shape(op, "data", d, plan.data_layout, "NCHW", 0)
    if w.ndim not in (4, 5):
        raise OpTypeError(f"{op}: weight must be (alpha, alpha, O, I) or (alpha, alpha, O/v, I, v), "
                          f"found {type_text(w)}", 1)
    o = w.shape[2] * w.shape[4] if w.ndim == 5 and known(w.shape[2], w.shape[4]) else w.shape[2]
    i = w.shape[3]
    want = (plan.alpha, plan.alpha)
    if any(known(x) and x != y for x, y in zip(w.shape[:2], want)) or (known(o) and o != plan.channels) \
            or (known(i, c) and i != c):
        raise OpTypeError(f"{op}: weight {type_text(w)} does not fit F({plan.m}, {plan.r}) from {c} to "
                          f"{plan.channels} channels (alpha {plan.alpha})", 1)
    oh, ow = plan.out_hw(h, wd) if known(h, wd) else (h, wd)
    if known(oh, ow) and (oh < 1 or ow < 1):
        raise OpTypeError(f"{op}: a {plan.r}x{plan.r} kernel does not fit data {type_text(d)}", 0)
    oshape = backward_shape(plan.out_layout, (n, plan.channels, oh, ow), "NCHW")
    if plan.out_layout.factor("C") and plan.channels % plan.out_layout.factor("C"):
        raise AttrError(f"{op}: out_layout {plan.out_layout.name} does not divide {plan.channels} channels",
                        "out_layout")
    return TensorType(oshape, result_dtype(attrs, d.dtype))


def unpacked_weight(weight: np.ndarray) -> np.ndarray:
    """A transformed weight as (alpha, alpha, O, I), from either form."""
    if weight.ndim == 4:
        return weight
    a1, a2, ob, i, v = weight.shape
    return weight.transpose(0, 1, 2, 4, 3).reshape(a1, a2, ob * v, i)


@conv.reference
def _(data, weight, attrs):
    plan = Plan(attrs)
    m, r, alpha = plan.m, plan.r, plan.alpha
    x = to_canonical(data, plan.data_layout, "NCHW").astype(np.float64)
    u = unpacked_weight(weight).astype(np.float64)
    n, c, h, w = x.shape
    oh, ow = plan.out_hw(h, w)
    th, tw = -(-oh // m), -(-ow // m)
    (pt, pl), (pb, pr) = plan.pad_before, plan.pad_after
    hp, wp = th * m + r - 1, tw * m + r - 1
    x = np.pad(x, [(0, 0), (0, 0), (pt, hp - h - pt), (pl, wp - w - pl)])
    a, bt, _ = matrices_f64(m, r)
    s = x.strides
    tiles = np.lib.stride_tricks.as_strided(x, (n, c, th, tw, alpha, alpha),
                                            (s[0], s[1], m * s[2], m * s[3], s[2], s[3]), writeable=False)
    v = np.einsum("ai,ncyxij,bj->abncyx", bt, tiles, bt)
    mm = np.einsum("aboc,abncyx->abnoyx", u, v)
    y = np.einsum("ai,abnoyx,bj->noyixj", a, mm, a).reshape(n, u.shape[2], th * m, tw * m)[:, :, :oh, :ow]
    out = np.ascontiguousarray(y).astype(result_dtype(attrs, str(data.dtype)))
    return from_canonical(out, plan.out_layout, "NCHW")
