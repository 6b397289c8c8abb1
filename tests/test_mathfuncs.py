"""The float32 math of te/mathfuncs.py against float64 numpy, over the whole float32 range.

Every function is evaluated (te_eval, float32 step for step) on a dense grid of bit
patterns covering all finite float32 values of both signs, subnormals included, plus
±0, ±inf and NaN, and its error is held to the bound its docstring states.  The same
expressions compiled (inlined by the code generator into a vectorised loop) must give
the very same bits, so the bounds hold for compiled code too.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from relaylens.compiler.lower.codegen.llvm import generate
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.te import evaluate as te_eval
from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.lower.te import mathfuncs

STEP = 2039  # every 2039th bit pattern: a million values per sign
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -149, -(2.0 ** -149), 2.0 ** -126, 88.72283, 88.72284,
           -87.33655, -103.97, -103.98, 9.0, 9.1, 3.92, -3.92, 0.625, 0.921875, 3.6875, 4.0]


def _grid() -> np.ndarray:
    bits = np.arange(0, 0x7F800000, STEP, dtype=np.int64).astype(np.int32)
    x = bits.view(np.float32)
    return np.concatenate([x, -x, np.asarray(SPECIAL, dtype=np.float32)])


X = _grid()
X64 = X.astype(np.float64)
_erf = np.frompyfunc(math.erf, 1, 1)


def _exact(name: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if name == "exp":
            return np.exp(X64)
        if name == "tanh":
            return np.tanh(X64)
        if name == "erf":
            return np.asarray(_erf(X64), dtype=np.float64)
        if name == "log":
            return np.log(X64)
        return 1 / (1 + np.exp(-X64))


def _evaluate(fn) -> np.ndarray:
    x = te.placeholder(X.shape, "float32", "x")
    return te_eval.evaluate(te.compute(X.shape, lambda i: fn(x[i]), "y"), {x: X})[0]


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the float32 spacing at exact (0 where equal, NaN alike)."""
    with np.errstate(all="ignore"):
        rounded = exact.astype(np.float32)
        spacing = np.maximum(np.spacing(np.abs(rounded)).astype(np.float64), 2.0 ** -149)
        err = np.abs(got.astype(np.float64) - exact) / spacing
    same = (got == rounded) | (np.isnan(got) & np.isnan(exact))
    return np.where(same, 0.0, err)


def _specials_agree(got: np.ndarray, exact: np.ndarray) -> None:
    """NaN exactly where the exact value is NaN; infinities and signed zeros as exact."""
    with np.errstate(all="ignore"):
        rounded = exact.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(rounded))
    inf = np.isinf(rounded)
    np.testing.assert_array_equal(got[inf], rounded[inf])
    zero = rounded == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(rounded[zero]))


@pytest.mark.parametrize("name, bound", [("exp", 2.0), ("tanh", 3.0), ("erf", 3.0), ("log", 2.0)])
def test_accurate_functions_within_their_ulp_bound(name, bound):
    got, exact = _evaluate(mathfuncs.INLINED[name]), _exact(name)
    assert got.dtype == np.float32
    _specials_agree(got, exact)
    ulps = _ulps(got, exact)
    worst = int(np.argmax(ulps))
    assert ulps[worst] <= bound, f"{name}({X[worst]!r}) = {got[worst]!r}, exact {exact[worst]!r}: {ulps[worst]:.2f} ulp"


def test_exp_subnormal_results_round_once():
    """Where e^x is subnormal, the result is the exact value rounded (within 1 spacing)."""
    got, exact = _evaluate(mathfuncs.exp), _exact("exp")
    sub = (exact < 2.0 ** -126) & (exact > 0)
    assert sub.sum() > 1000
    assert np.max(np.abs(got[sub].astype(np.float64) - exact[sub])) <= 2.0 ** -149


def test_tanh_and_erf_are_odd_and_bounded():
    for name in ("tanh", "erf"):
        got = _evaluate(mathfuncs.INLINED[name])
        finite = ~np.isnan(got)
        assert np.all(np.abs(got[finite]) <= 1)
        half = (len(X) - len(SPECIAL)) // 2
        np.testing.assert_array_equal(got[:half], -got[half:2 * half])


def test_sigmoid_within_4_ulp_and_as_the_reference_below_normal_results():
    got, exact = _evaluate(mathfuncs.sigmoid), _exact("sigmoid")
    normal = exact >= 2.0 ** -126
    ulps = _ulps(got, exact)
    assert np.nanmax(np.where(normal, ulps, 0)) <= 4
    with np.errstate(all="ignore"):
        reference = (1 / (1 + np.exp(-X))).astype(np.float32)  # the op's float32 formula
    tiny = ~normal & ~np.isnan(exact)
    assert np.all(np.abs(got[tiny].astype(np.float64) - reference[tiny]) <= 2.0 ** -126 * 4e-7 + 2.0 ** -148)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(X))


@pytest.mark.parametrize("name, bound", [("exp", 5e-6), ("tanh", 4e-7), ("erf", 4e-7)])
def test_fast_functions_within_their_relative_bound(name, bound):
    got, exact = _evaluate(mathfuncs.FAST[name]), _exact(name)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(X))
    check = ~np.isnan(X)
    if name == "exp":  # no subnormal results: 0 below -87.33, inf where e^x overflows
        assert np.all(got[X < -87.33] == 0) and np.all(got[X > 88.7229] == np.inf)
        check &= (X >= -87.33) & (X <= 88.7228)
    else:
        assert np.all(np.abs(got[check]) <= 1)
        tiny = check & (np.abs(exact) < 2.0 ** -126)  # subnormal results: within a spacing or two
        assert np.all(np.abs(got[tiny].astype(np.float64) - exact[tiny]) <= 2.0 ** -148)
        check &= ~tiny
    with np.errstate(all="ignore"):
        rel = np.abs(got[check].astype(np.float64) - exact[check]) / np.abs(exact[check])
    rel = np.where(got[check] == exact[check], 0, rel)  # ±0 exactly
    assert np.max(rel) <= bound, f"fast_{name}: relative error {np.max(rel):.3g} at x={X[check][np.argmax(rel)]!r}"


@pytest.fixture(scope="module")
def jit():
    return JIT(num_threads=1)


@pytest.mark.parametrize("name", ["exp", "tanh", "erf", "sigmoid", "softmax_exp", "log", "fast_exp", "fast_tanh",
                                  "fast_erf"])
def test_compiled_code_gives_the_evaluated_bits(jit, name):
    """The code generator inlines the same expression: a vectorised loop over the grid
    returns exactly what te_eval computed (so the accuracy tests above cover it); te_eval
    computes a fast intrinsic by that expression too."""
    n = len(X)
    a, out = te.Buffer("a", (n,), "float32"), te.Buffer("out", (n,), "float32")
    i = te.Var("i")
    value = te.intrinsic(name, te.BufferLoad(a, i, "float32"))
    func = ln.PrimFunc(f"grid_{name}", (a, out), ln.For(i, n, ln.Store(out, i, value), "vectorized"))
    text = str(generate([func], "t.relay"))
    assert "llvm.fma.f32" in text  # the expansion's multiply-adds fused (te.fma), in the loop vectoriser's loop
    # a long loop of a math expansion: vectors side by side (llvm.py MATH_INTERLEAVE), the same bits
    assert re.search(r'!"llvm.loop.interleave.count", i32 4\b', text)
    jit.load(jit.optimize(text))
    got = jit.kernel(func)(X)
    want = _evaluate(mathfuncs.INLINED[name])
    if name.startswith("fast_"):
        np.testing.assert_array_equal(_evaluate(lambda v: te.intrinsic(name, v)).view(np.int32), want.view(np.int32))
    np.testing.assert_array_equal(got.view(np.int32)[~np.isnan(want)], want.view(np.int32)[~np.isnan(want)])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


def test_only_loops_of_math_expansions_ask_for_vectors_side_by_side():
    a, out = te.Buffer("a", (4096,), "float32"), te.Buffer("out", (4096,), "float32")
    i = te.Var("i")
    func = ln.PrimFunc("plain", (a, out), ln.For(i, 4096, ln.Store(out, i, te.BufferLoad(a, i, "float32") * 2.0),
                                                 "vectorized"))
    text = str(generate([func], "t.relay"))
    assert "llvm.loop.vectorize.enable" in text and "interleave" not in text


@pytest.mark.parametrize("name", ["exp", "tanh", "erf", "sigmoid", "softmax_exp", "log", "fast_exp", "fast_tanh",
                                  "fast_erf"])
def test_vector_code_gives_the_evaluated_bits(jit, name):
    """Inside a vectorized loop of a power-of-two width with a straight-line body (a fused
    kernel's epilogue), the expansion is emitted on vectors (codegen/lanes.py), not left to
    the loop vectoriser: the IR has no vectorize hint and computes <8 x float> values, and
    the bits are still te_eval's (so the accuracy tests above cover vector code too)."""
    width = 8
    n = len(X) // width * width
    a, out = te.Buffer("a", (n,), "float32"), te.Buffer("out", (n,), "float32")
    o, v = te.Var("o"), te.Var("v")
    value = te.intrinsic(name, te.BufferLoad(a, o * width + v, "float32")) * 2.0
    func = ln.PrimFunc(f"lanes_{name}", (a, out), ln.For(o, n // width, ln.For(
        v, width, ln.Store(out, o * width + v, value), "vectorized")))
    text = str(generate([func], "t.relay"))
    assert "llvm.loop.vectorize" not in text and "<8 x float>" in text and "llvm.fma.v8f32" in text
    assert not re.search(r"call .*@\"?llvm\.(exp|tanh)", text)
    jit.load(jit.optimize(text))
    got = jit.kernel(func)(X[:n])
    want = _evaluate(lambda x: mathfuncs.INLINED[name](x) * 2.0)[:n]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got.view(np.int32)[~np.isnan(want)], want.view(np.int32)[~np.isnan(want)])


def test_fast_intrinsics_on_float64_are_exact(jit):
    x = np.linspace(-5, 5, 33)
    a, out = te.Buffer("a", (33,), "float64"), te.Buffer("out", (33,), "float64")
    i = te.Var("i")
    value = te.intrinsic("fast_erf", te.BufferLoad(a, i, "float64"))
    func = ln.PrimFunc("fast_f64", (a, out), ln.For(i, 33, ln.Store(out, i, value)))
    jit.load(jit.optimize(str(generate([func], "t.relay"))))
    np.testing.assert_allclose(jit.kernel(func)(x), [math.erf(v) for v in x], rtol=1e-15)


def test_float16_goes_through_float32():
    x16 = np.linspace(-6, 6, 97).astype(np.float16)
    a, out = te.Buffer("a", (97,), "float16"), te.Buffer("out", (97,), "float16")
    i = te.Var("i")
    value = te.tanh(te.BufferLoad(a, i, "float16"))
    func = ln.PrimFunc("tanh_f16", (a, out), ln.For(i, 97, ln.Store(out, i, value)))
    jit = JIT(num_threads=1)
    jit.load(jit.optimize(str(generate([func], "t.relay"))))
    np.testing.assert_array_equal(jit.kernel(func)(x16), np.tanh(x16.astype(np.float64)).astype(np.float16))


def test_reinterpret_reads_the_same_bits():
    x = te.placeholder((3,), "float32", "x")
    bits = te.compute((3,), lambda i: te.reinterpret(x[i], "int32"), "bits")
    values = np.asarray([1.0, -0.0, np.inf], dtype=np.float32)
    np.testing.assert_array_equal(te_eval.evaluate(bits, {x: values})[0], values.view(np.int32))
    with pytest.raises(TypeError, match="widths differ"):
        te.reinterpret(te.Var("n", "int64"), "float32")


@pytest.mark.parametrize("exponent", [1, 2, 3, 4])
def test_a_small_whole_power_is_products_not_a_pow_call(exponent: int) -> None:
    """GPT-2's GELU computes `x ** 3`: 16 scalar powf calls per vector before."""
    from relaylens.compiler.driver import compile

    text = f'#[version = "0.0.5"]\ndef @main(%x: Tensor[(4096), float32]) {{\n  power(%x, {exponent}f)\n}}\n'
    built = compile(text, "pow.relay")
    assert not re.search(r"@(llvm\.)?pow", built.lowered.optimized_ir)
    x = np.random.default_rng(exponent).standard_normal(4096).astype(np.float32) * 30
    x[:7] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e38]
    got, want = built.executable.run(x), np.power(x, np.float32(exponent))
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.signbit(got), np.signbit(want))
    finite = np.isfinite(want) & (want != 0)
    assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    assert np.max(np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))) <= 2


def _round_to_float32(exact: Fraction) -> np.float32:
    """`exact` rounded once to the nearest float32, ties to even."""
    near = np.float32(float(exact))
    candidates = [near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(-np.inf))]
    return min(candidates, key=lambda f: (abs(Fraction(float(f)) - exact), int(np.asarray(f).view(np.int32)) & 1))


def test_fma_is_evaluated_with_one_rounding():
    """te_eval's fma rounds a*b+c once: where a*b+c rounded to float64 lands on a midpoint
    between two float32 (1 + 2^-11 + 2^-24, plus or minus 2^-80), rounding twice would
    go to the even neighbour both times; and on random triples, the exact value rounded."""
    a = np.float32(1 + 2.0 ** -12)
    tiny = np.float32(2.0 ** -80)
    got = te_eval.fma(np.array([a, a]), np.array([a, a]), np.array([tiny, -tiny]))
    assert got[0] == np.float32(1 + 2.0 ** -11 + 2.0 ** -23) and got[1] == np.float32(1 + 2.0 ** -11)
    rng = np.random.default_rng(3)
    x, y = ((rng.standard_normal(2000) * 2.0 ** rng.integers(-30, 30, 2000)).astype(np.float32) for _ in range(2))
    z = (-(x.astype(np.float64) * y) * (1 + rng.standard_normal(2000) * 2.0 ** -20)).astype(np.float32)  # cancelling
    got = te_eval.fma(x, y, z)
    want = [_round_to_float32(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r))) for p, q, r in zip(x, y, z)]
    np.testing.assert_array_equal(got.view(np.int32), np.asarray(want, np.float32).view(np.int32))
    assert np.isnan(te_eval.fma(np.float32([np.inf]), np.float32([0.0]), np.float32([1.0])))[0]
    assert te_eval.fma(np.float32([-0.0]), np.float32([1.0]), np.float32([-0.0]))[0] == 0
    assert np.signbit(te_eval.fma(np.float32([-0.0]), np.float32([1.0]), np.float32([-0.0]))[0])


@pytest.mark.parametrize("name", ["tanh", "erf"])
def test_tanh_and_erf_scale_their_exponential_once(name):
    """Their exponentials are normal floats: 2^k in one multiply, not exp's two halves
    for subnormal results (the bounds above hold the values to exp's)."""
    v = te.Var("v", "float32")

    def shifts(e):
        return sum(1 for n in te.nodes(e) if isinstance(n, te.Binary) and n.op == "shr")

    assert shifts(mathfuncs.exp(v)) == 1 and shifts(mathfuncs.INLINED[name](v)) == 0


@pytest.mark.parametrize("name", ["exp", "tanh", "erf"])
def test_exponentials_are_rounded_without_a_float_to_int_conversion(name):
    """k = round(x log2 e) is read from the bits of x log2 e + 1.5 * 2^23: no floor and no
    conversion (LLVM's fptosi of a NaN is poison; the clamps let NaN through)."""
    v = te.Var("v", "float32")
    body = mathfuncs.INLINED[name](v)
    assert not any(isinstance(n, te.Cast) or isinstance(n, te.Call) and n.name == "floor" for n in te.nodes(body))


def test_tanh_is_one_branch():
    """tanh is sign(x) m / (m + 2), m = e^{2|x|} - 1, over the whole range: its one select
    is the clamp of |x| (no polynomial beside the exponential for small arguments)."""
    v = te.Var("v", "float32")
    assert sum(1 for n in te.nodes(mathfuncs.tanh(v)) if isinstance(n, te.Select)) == 1


def test_softmax_exp_is_2_to_the_64_times_exp_within_2_ulp():
    """Softmax's exponential: 2^64 e^x within 2 ulp on [SOFTMAX_EXP_LOW, 43.6] (no
    subnormal results there), 0 below (-inf included: a quotient by the sum that would
    be subnormal or 0), NaN kept; one fused multiply-add applies 2^(k + 64), no clamp
    from above, one select (the zeros); te_eval's exact reference is 2^64 e^x, 0 below."""
    low = mathfuncs.SOFTMAX_EXP_LOW
    got = _evaluate(mathfuncs.softmax_exp)
    with np.errstate(all="ignore"):
        exact = np.where(X64 < low, 0.0, np.exp(X64) * mathfuncs.SOFTMAX_EXP_SCALE)
    inside = (X >= low) & (X <= 43.6)
    assert inside.sum() > 100000
    ulps = _ulps(got[inside], exact[inside])
    assert ulps.max() <= 2, f"{ulps.max():.2f} ulp at x={X[inside][np.argmax(ulps)]!r}"
    assert np.all(got[inside] >= 2.0 ** -126 * 2.0 ** 64)  # e^x itself a normal float
    below = X < low
    assert below.sum() > 1000 and np.all(got[below] == 0) and np.exp(np.float64(low)) >= 2.0 ** -126
    assert np.isnan(got[np.isnan(X)]).all()
    v = te.Var("v", "float32")
    nodes = list(te.nodes(mathfuncs.softmax_exp(v)))
    assert sum(1 for n in nodes if isinstance(n, te.Select)) == 1  # the zeros below SOFTMAX_EXP_LOW only
    assert not any(isinstance(n, te.Binary) and n.op == "shr" for n in nodes)
    evaluated, kept = _evaluate(lambda x: te.intrinsic("softmax_exp", x)), ~np.isnan(X) & (X <= 43.6)
    np.testing.assert_array_equal(evaluated[kept], exact[kept].astype(np.float32))


def test_softmax_exp_on_float64_is_the_exact_function(jit):
    x = np.array([-800.0, -1.5, -0.0, 0.0, 2.0, np.nan])
    a, out = te.Buffer("a", (6,), "float64"), te.Buffer("out", (6,), "float64")
    i = te.Var("i")
    func = ln.PrimFunc("softmax_exp64", (a, out), ln.For(i, 6, ln.Store(
        out, i, te.intrinsic("softmax_exp", te.BufferLoad(a, i, "float64")))))
    jit.load(jit.optimize(str(generate([func], "t.relay"))))
    got = jit.kernel(func)(x)
    np.testing.assert_array_equal(got, np.exp(x) * 2.0 ** 64)
