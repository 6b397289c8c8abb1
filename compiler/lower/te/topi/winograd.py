"""Winograd convolution as tensor expressions (ops/winograd.py; TVM:
topi/arm_cpu/conv2d_spatial_pack.py and topi/cuda/conv2d_winograd.py compute the same
three steps).  For F(m x m, r x r), alpha = m + r - 1, tiles of m x m outputs, P tiles
in all (batch x tile rows x tile columns), t = eps * alpha + nu a position of the
alpha x alpha transformed tile:

    T_pad             the input padded to cover every tile (in its own layout)
    T_wino_input[t, p, c]      = (B^T d_p,c B)[eps, nu]                   (alpha^2, P, C)
    T_wino_gemm_m{m}[t, p, kb, kl] = sum_c input[t, p, c] * U[t, kb, c, kl]  (alpha^2, P, K/v, v)
    T_wino_output[n, k, y, x]  = (A^T M A)[y % m, x % m] of tile p(n, y // m, x // m)

in the output's layout (NCHW[v]c).  U is the transformed weight, packed (alpha, alpha,
K/v, C, v), v output channels side by side, or (alpha, alpha, K, C) (v = 1).  The two
transforms are written term by term from the exact matrices: a coefficient 0 adds no
term, +-1 no multiplication.  Their position (t, or the output's (y % m, x % m)) picks
one expression by a chain of selects, which a schedule that unrolls the position turns
into straight code (code generation takes the side of a select whose condition is a
constant).  The product is tagged GEMM_TAG for the schedule (schedule/winograd.py); the
output transform is injective, the stage an epilogue (bias, relu, a residual add) is
inlined into.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

from ....ops.conv_geometry import result_dtype
from ....ops.winograd import CONV_OP, WEIGHT_OP, Plan, winograd_matrices
from .. import expr as te
from .nn_conv import canonical_indices, finish, pad_spatial, read_in_layout
from .registry import register_compute

GEMM_TAG = "nn.contrib_conv2d_winograd"
INPUT_NAME = "T_wino_input"
GEMM_NAME = "T_wino_gemm_m"


def tile_side(gemm: te.Tensor) -> int:
    """m of the product's name (the output transform's tiles are m x m)."""
    return int(gemm.name.removeprefix(GEMM_NAME).split(".")[0])


def combination(coefs: list[tuple[Fraction, te.PrimExpr]], dtype: str) -> te.PrimExpr:
    """sum of coef * value, zero coefficients left out, +-1 without a multiplication."""
    out: te.PrimExpr | None = None
    for coef, value in sorted(coefs, key=lambda cv: cv[0] < 0):  # a positive term first: no 0 - x
        if coef == 0:
            continue
        if abs(coef) != 1:
            value = value * te.const(float(abs(coef)), dtype)
        if out is None:
            out = value if coef > 0 else te.const(0.0, dtype) - value
        else:
            out = out + value if coef > 0 else out - value
    return te.const(0.0, dtype) if out is None else out


def by_position(position: te.PrimExpr, count: int, case: Callable[[int], te.PrimExpr]) -> te.PrimExpr:
    """case(position) for a position in [0, count): a chain of selects on its value."""
    out = case(count - 1)
    for k in range(count - 2, -1, -1):
        out = te.select(te.eq(position, k), case(k), out)
    return out


def transform2(mat, value: Callable[[int, int], te.PrimExpr], dtype: str) -> list[list[te.PrimExpr]]:
    """X^T V X for the exact matrix X (rows a), every [i][j]: sum_a X[a, i] (sum_b X[b, j]
    V[a, b]).  Each V[a, b] is read once and each inner sum written once, shared by every
    position that uses it: the expression is a DAG, which the builder converts (and
    te.transform rewrites) once per node, not once per position (a 6x6 tile's input
    transform repeated its 36 reads in each of its 36 positions: 1.0-1.2 s of Python per
    F(4x4) kernel in the schedule's loads)."""
    rows, cols = range(len(mat)), range(len(mat[0]))
    reads = {(a, b): value(a, b) for a in rows for b in rows}
    inner = {(a, j): combination([(mat[b][j], reads[a, b]) for b in rows], dtype) for a in rows for j in cols}
    return [[combination([(mat[a][i], inner[a, j]) for a in rows if mat[a][i]], dtype) for j in cols]
            for i in cols]


@register_compute(CONV_OP)
def _(data: te.Tensor, weight: te.Tensor, attrs, out_type) -> te.Tensor:
    plan = Plan(attrs)
    m, r, alpha = plan.m, plan.r, plan.alpha
    out_dtype = result_dtype(attrs, data.dtype)
    acc = "float64" if "float64" in (data.dtype, weight.dtype, out_dtype) else "float32"
    dl, ol = plan.data_layout, plan.out_layout
    canonical = lambda t, layout: [t.shape[layout.index(a)] * (layout.factor(a) or 1) for a in "NCHW"]  # noqa: E731
    n, c, h, w = canonical(data, dl)
    _, k, oh, ow = canonical(te.placeholder(out_type.shape, out_dtype), ol)
    th, tw = -(-oh // m), -(-ow // m)
    tiles = n * th * tw
    (pt, pl), _ = plan.pad_before, plan.pad_after
    padded = pad_spatial(data, dl, "HW", (pt, pl), (th * m + r - 1 - h - pt, tw * m + r - 1 - w - pl))
    a_mat, bt, _ = winograd_matrices(m, r)
    b_rows = [list(row) for row in zip(*bt)]  # B[a, eps] = B^T[eps, a]

    def input_body(t, p, ch):
        b, rest = p // (th * tw), p % (th * tw)
        y0, x0 = (rest // tw) * m, (rest % tw) * m

        def read(a, bb):
            return te.cast(read_in_layout(padded, dl, {"N": b, "C": ch, "H": y0 + a, "W": x0 + bb}), acc)

        table = transform2(b_rows, read, acc)
        return by_position(t, alpha * alpha, lambda q: table[q // alpha][q % alpha])

    transformed = te.compute((alpha * alpha, tiles, c), input_body, INPUT_NAME)
    packed = weight.ndim == 5
    lanes = weight.shape[4] if packed else 1
    rc = te.reduce_axis(c, "rc")

    def gemm_body(t, p, kb, kl):
        u = (weight[t // alpha, t % alpha, kb, rc, kl] if packed
             else weight[t // alpha, t % alpha, kb, rc])
        return te.sum(transformed[t, p, rc] * te.cast(u, acc), axis=[rc])

    gemm = te.compute((alpha * alpha, tiles, k // lanes, lanes), gemm_body, f"{GEMM_NAME}{m}", tag=GEMM_TAG)

    def output_body(*axes):
        idx = canonical_indices(ol, axes)
        ch, y, x = idx["C"], idx["H"], idx["W"]
        p = idx["N"] * (th * tw) + (y // m) * tw + x // m
        kb, kl = (ch // lanes, ch % lanes) if lanes > 1 else (ch, 0)

        def read(e, nu):
            return gemm[e * alpha + nu, p, kb, kl]

        table = transform2(a_mat, read, acc)
        return by_position((y % m) * m + x % m, m * m, lambda q: table[q // m][q % m])

    result = te.compute(tuple(out_type.shape), output_body, "T_wino_output")
    return finish(result, out_dtype)


@register_compute(WEIGHT_OP)
def _(weight: te.Tensor, attrs, out_type) -> te.Tensor:
    """G g G^T per filter (a weight that is not a constant; constants are folded)."""
    r = weight.shape[2]
    _, _, g = winograd_matrices(attrs.tile_size, r)
    alpha = len(g)
    gt = [list(col) for col in zip(*g)]  # G^T[k, eps]

    dtype = "float64" if weight.dtype == "float64" else "float32"

    def body(e, nu, o, i):
        def read(a, b):
            return te.cast(weight[o, i, a, b], dtype)

        q = e * alpha + nu
        table = transform2(gt, read, dtype)
        return te.cast(by_position(q, alpha * alpha, lambda s: table[s // alpha][s % alpha]), weight.dtype)

    return te.compute(tuple(out_type.shape), body, "T_wino_weight")
