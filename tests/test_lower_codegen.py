"""LLVM code generation and the JIT, on hand-built loop nests.

Each test builds PrimFuncs directly from loopnest/te nodes, compiles them (several per
module to keep the run short) and compares with numpy; the debug-info tests build spans
from a real Source and read the IR back through llvm_map.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from relaylens.compiler.ir.span import LayerSpan, Source, Span, sequential
from relaylens.compiler.lower.codegen.debuginfo import source_location
from relaylens.compiler.lower.codegen.llvm import generate
from relaylens.compiler.lower.codegen.llvm_map import function_ranges, line_locations
from relaylens.compiler.lower.errors import LoweringError
from relaylens.compiler.lower.runtime import jit as jit_module
from relaylens.compiler.lower.runtime.jit import JIT, SPIN_COUNT, spin_count
from relaylens.compiler.support import aligned_empty
from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.te import evaluate as te_eval
from relaylens.compiler.lower.te import expr as te

N = 37  # not a multiple of any vector width


@pytest.fixture(scope="module")
def jit():
    return JIT(num_threads=2)


def buf(name, shape, dtype):
    return te.Buffer(name, tuple(shape) if isinstance(shape, (tuple, list)) else (shape,), dtype)


def load(b, index):
    return te.BufferLoad(b, te.as_expr(index), b.dtype)


def elementwise(name, inputs, out_dtype, fn, n=N, kind="serial", loc=None):
    """`out[i] = fn(*inputs[i])` over a flat loop of `n`."""
    ins = [buf(f"in{k}", n, d) for k, d in enumerate(inputs)]
    out = buf("out", n, out_dtype)
    i = te.Var("i")
    body = ln.For(i, n, ln.Store(out, i, fn(*[load(b, i) for b in ins]), loc=loc), kind)
    return ln.PrimFunc(name, (*ins, out), body)


def values(dtype, n=N, seed=0, nonneg=False):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(n) < 0.5
    if te.is_float(dtype):
        v = rng.uniform(0.1 if nonneg else -4, 4, n)
        return v.astype(dtype)
    info = np.iinfo(dtype)
    lo = 0 if nonneg else max(info.min + 1, -50)
    return rng.integers(lo, min(info.max, 50), n, endpoint=True).astype(dtype)


# --------------------------------------------------------------------------- elementwise


ALL = ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
       "uint8", "uint16", "uint32", "uint64", "bool")


def test_add_every_dtype(jit):
    funcs = [elementwise(f"add_{d}", [d, d], d, lambda a, b: a + b) for d in ALL]
    kernels = jit.compile(funcs, "t.relay")
    for d in ALL:
        x, y = values(d, seed=1), values(d, seed=2)
        expect = np.logical_or(x, y) if d == "bool" else (x + y).astype(d)
        got = kernels[f"add_{d}"](x, y)
        assert got.dtype == np.dtype(d)
        np.testing.assert_array_equal(got, expect, err_msg=d)


def _binary_inputs(op, dtype):
    x, y = values(dtype, seed=3), values(dtype, seed=4)
    if op in ("shl", "shr") and dtype != "bool":
        y = (np.arange(N) % (te.bits(dtype) + 3)).astype(dtype)
        if op == "shl" and te.is_signed(dtype):
            x = np.abs(x)
    if op == "pow":
        x = values(dtype, seed=3, nonneg=True) if te.is_float(dtype) else (np.arange(N) % 5 - 2).astype(dtype)
        y = values(dtype, seed=4, nonneg=True) if te.is_float(dtype) else (np.arange(N) % 4).astype(dtype)
    if op in ("div", "floordiv", "floormod", "truncmod") and not te.is_float(dtype):
        y[::5] = 0  # division by zero does not trap: divisor 1
    if te.is_float(dtype) and op in te.COMPARISONS + ("min", "max"):
        x[::7] = np.nan
    if te.is_float(dtype) and op in ("min", "max"):  # NaN propagates from either side
        y[3::7] = np.nan
    return x, y


BINARY_CASES = [(op, d) for d in ("float32", "float64", "int8", "int32", "int64", "uint8", "uint32")
                for op in te.BINARY_OPS
                if not (te.is_float(d) and op in ("and", "or", "xor", "shl", "shr"))]
BINARY_CASES += [(op, "bool") for op in ("and", "or", "xor", "min", "max") + te.COMPARISONS]


def test_binary_ops(jit):
    funcs = [elementwise(f"{op}_{d}", [d, d], "bool" if op in te.COMPARISONS else d,
                         lambda a, b, op=op: te.binary(op, a, b)) for op, d in BINARY_CASES]
    kernels = jit.compile(funcs, "t.relay")
    for op, d in BINARY_CASES:
        x, y = _binary_inputs(op, d)
        expect = te_eval._binary(op, x, y, d)
        got = kernels[f"{op}_{d}"](x, y)
        if te.is_float(d):
            np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-6, err_msg=f"{op} {d}")
        else:
            np.testing.assert_array_equal(got, np.asarray(expect).astype(got.dtype), err_msg=f"{op} {d}")


def test_min_max_against_a_number_propagate_nan(jit):
    """relu and clip compare with a constant: one instruction, NaN in x still NaN."""
    clip = elementwise("clip_f32", ["float32"], "float32",
                       lambda a: te.minimum(te.maximum(a, te.const(0.0, "float32")), te.const(6.0, "float32")))
    low = elementwise("min_first_f32", ["float32"], "float32", lambda a: te.minimum(te.const(1.0, "float32"), a))
    k = jit.compile([clip, low], "t.relay")
    x = values("float32", seed=5) * 10
    x[::5] = np.nan
    np.testing.assert_array_equal(k["clip_f32"](x), np.minimum(np.maximum(x, 0), 6))
    np.testing.assert_array_equal(k["min_first_f32"](x), np.minimum(1, x))


def test_min_max_of_two_values_propagate_nan_in_three_instructions(jit):
    """x's NaN test is a select of its own (a constant NaN), so LLVM does not merge it
    with the comparison into one select on an `or` (four instructions; a branch when
    scalar); NaN from either side, y when the two compare equal (-0 and +0)."""
    funcs = [elementwise(f"{op}_two", ["float32", "float32"], "float32", lambda a, b, op=op: te.binary(op, a, b))
             for op in ("max", "min")]
    text = jit.optimize(generate(funcs, "t.relay"))
    assert "@max_two" in text and not re.search(r"= or (<\d+ x )?i1|select (<\d+ x )?i1>? [^,]+, (<\d+ x )?i1", text)
    k = jit.compile(funcs, "t.relay")
    x, y = values("float32", seed=7), values("float32", seed=8)
    x[::7], y[3::7] = np.nan, np.nan
    x[5], y[5], x[6], y[6] = -0.0, 0.0, 0.0, -0.0
    for op, ref in (("max", np.maximum), ("min", np.minimum)):
        got = k[f"{op}_two"](x, y)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(x) | np.isnan(y))
        fine = ~np.isnan(got)
        np.testing.assert_array_equal(got[fine], ref(x, y)[fine])
        assert [np.signbit(got[5]), np.signbit(got[6])] == [False, True]  # y's zero


def test_max_nnan_is_one_compare_and_select(jit):
    """te.max_nnan (softmax's row maximum) looks for no NaN: a if a > b else b, one
    `maxps`; the maximum wherever neither is NaN, b where either is."""
    func = elementwise("max_nnan_two", ["float32", "float32"], "float32", lambda a, b: te.binary("max_nnan", a, b))
    text = jit.optimize(generate([func], "t.relay"))
    assert "fcmp uno" not in text and "fcmp ogt" in text
    x, y = values("float32", seed=9), values("float32", seed=10)
    x[::7], y[3::7] = np.nan, np.nan
    got = jit.compile([func], "t.relay")["max_nnan_two"](x, y)
    np.testing.assert_array_equal(got, np.where(x > y, x, y))


def test_integer_edge_cases(jit):
    """MIN / -1 wraps, floor division rounds down, truncating division toward zero."""
    f = [elementwise(f"{op}_i32", ["int32", "int32"], "int32", lambda a, b, op=op: te.binary(op, a, b))
         for op in ("div", "floordiv", "floormod", "truncmod")]
    kernels = jit.compile(f, "t.relay")
    x = np.array([-2**31, 7, -7, 7, -7, 5] * 7, np.int32)[:N]
    y = np.array([-1, 2, 2, -2, -2, 0] * 7, np.int32)[:N]
    assert list(kernels["div_i32"](x, y)[:6]) == [-2**31, 3, -3, -3, 3, 5]
    assert list(kernels["floordiv_i32"](x, y)[:6]) == [-2**31, 3, -4, -4, 3, 5]
    assert list(kernels["floormod_i32"](x, y)[:6]) == [0, 1, 1, -1, -1, 0]
    assert list(kernels["truncmod_i32"](x, y)[:6]) == [0, 1, -1, 1, -1, 0]


def test_division_by_constants(jit):
    """A constant divisor needs no guard: floor and truncating division and remainders by
    3, -3 and -1 as numpy computes them; an index that loop bounds prove non-negative is
    divided unsigned (no sign fix-up)."""
    x = np.arange(N, dtype=np.int64) - N // 2
    funcs = {}
    for op in ("div", "floordiv", "floormod", "truncmod"):
        for c in (3, -3, -1):
            name = f"{op}_{'m' if c < 0 else ''}{abs(c)}"
            funcs[name] = elementwise(name, ["int64"], "int64", lambda a, op=op, c=c: te.binary(op, a, te.const(c, "int64")))
    kernels = jit.compile(list(funcs.values()), "t.relay")
    for name in funcs:
        op, c = name.split("_")
        c = -int(c[1:]) if c.startswith("m") else int(c)
        truncated = np.trunc(x / c).astype(np.int64)
        expected = {"div": truncated, "truncmod": x - truncated * c, "floordiv": x // c, "floormod": x % c}[op]
        np.testing.assert_array_equal(kernels[name](x), expected, err_msg=name)
    out, i = buf("out", N, "int64"), te.Var("i")
    index = ln.PrimFunc("index_div", (out,), ln.For(i, N, ln.Store(out, i, i // 4 + i % 7)))
    text = str(generate([index], "t.relay"))
    assert "udiv i64" in text and "urem i64" in text and "sdiv" not in text and "select" not in text
    assert list(jit.compile([index], "t.relay")["index_div"]()) == [k // 4 + k % 7 for k in range(N)]


def test_fused_counter_quotients_are_carried(jit):
    """A loop around a register tile's reduction loop carries its counter's quotient and
    remainder by a constant as phis instead of dividing each trip (codegen/carried.py), so
    LLVM's strength reduction of the loop inside has no division of the counter to combine
    into every address; a parallel piece starts them from its first counter value.  Where
    a condition reads the counter, it is divided as before."""
    rows, cols, k = 3, 7, 5
    a, w = buf("a", (k, rows * cols, 4), "float32"), buf("w", (k, 4), "float32")
    out = buf("out", (rows * cols, 4), "float32")
    funcs = {}
    for kind in ("serial", "parallel"):
        i, r, c = te.Var("i"), te.Var("r"), te.Var("c")
        pixel = (i // cols) * cols + i % cols  # the fused row and column, as a schedule's fuse spells them
        tile = ln.For(c, 4, ln.Store(out, pixel * 4 + c, load(out, pixel * 4 + c)
                                     + load(a, (r * rows * cols + pixel) * 4 + c) * load(w, r * 4 + c)), "unrolled")
        body = ln.Seq((ln.For(c, 4, ln.Store(out, pixel * 4 + c, te.const(0.0, "float32")), "unrolled"),
                       ln.For(r, k, tile)))
        funcs[kind] = ln.PrimFunc(f"carried_{kind}", (a, w, out), ln.For(i, rows * cols, body, kind))
    serial, parallel = (str(generate([f], "t.relay")) for f in funcs.values())
    assert "urem" not in serial and "udiv" not in serial
    assert '.mod7" = phi' in serial and '.div7" = phi' in serial
    assert parallel.count("urem i64 %\"begin\", 7") == 1  # once, before the piece's loop
    kernels = jit.compile(list(funcs.values()), "t.relay")
    av = values("float32", a.size).reshape(a.shape)
    wv = values("float32", w.size, seed=1).reshape(w.shape)
    for kind in funcs:
        np.testing.assert_allclose(kernels[f"carried_{kind}"](av, wv), np.einsum("kpc,kc->pc", av, wv), rtol=1e-5)

    i, r = te.Var("i"), te.Var("r")
    guarded = ln.For(i, rows * cols, ln.For(r, k, ln.For(c, 4, ln.Store(
        out, i * 4 + c, te.select(te.lt(i % cols, 6), load(a, (r * rows * cols + i) * 4 + c), load(out, i * 4 + c))),
        "unrolled")))
    text = str(generate([ln.PrimFunc("carried_not", (a, out), guarded)], "t.relay"))
    assert "urem i64" in text and ".mod7" not in text


def test_unrolled_index_arithmetic_is_folded(jit):
    """An unrolled loop's indices are constants in the IR, not arithmetic on constants."""
    a, out = buf("a", (4, 8), "float32"), buf("out", (4, 8), "float32")
    r, c = te.Var("r"), te.Var("c")
    body = ln.For(r, 4, ln.For(c, 8, ln.Store(out, r * 8 + c, load(a, r * 8 + c) * 2.0), "unrolled"), "unrolled")
    f = ln.PrimFunc("unrolled_fold", (a, out), body)
    text = str(generate([f], "t.relay"))
    assert not re.search(r"= (add|mul|sub) i64 -?\d+, -?\d+", text)
    assert "getelementptr inbounds float, ptr %\"a\", i64 31" in text
    x = values("float32", n=32).reshape(4, 8)
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["unrolled_fold"](x), x * 2)


def test_index_terms_are_emitted_once_where_they_dominate(jit):
    """The same index operation on the same values is one instruction: an unrolled
    iteration's terms serve the iterations after it (`r * 16` once for the three), but
    nothing emitted in a loop body or a branch is used after it (LLVM's verifier would
    reject the module)."""
    a, out, side = buf("a", (4, 16), "float32"), buf("out", (4, 16), "float32"), buf("side", (4,), "float32")
    r, k, c = te.Var("r"), te.Var("k"), te.Var("c")
    body = ln.For(r, 4, ln.seq(
        ln.For(c, 13, ln.Store(out, r * 16 + (c + 3), load(a, r * 16 + (c + 3)) * 2.0)),
        ln.For(k, 3, ln.Store(out, r * 16 + k, load(a, r * 16 + k) + 1.0), "unrolled"),
        ln.Store(side, r, load(a, r * 16 + 15))))
    f = ln.PrimFunc("numbered", (a, out, side), body, num_outputs=2)
    text = str(generate([f], "t.relay"))
    assert len(re.findall(r'mul nuw nsw i64 %"r", 16', text)) == 2  # in the inner loop; in the first iteration
    x = values("float32", n=64).reshape(4, 16)
    got, got_side = jit.compile([f], "t.relay")["numbered"](x)
    np.testing.assert_array_equal(got, np.concatenate([x[:, :3] + 1, x[:, 3:] * 2], axis=1))
    np.testing.assert_array_equal(got_side, x[:, 15])


def test_an_address_is_emitted_once_where_it_dominates(jit):
    """A row total's element is read and written at one address: one getelementptr for
    its first store, the three unrolled reads and the three writes."""
    a, out = buf("a", (4, 3), "float32"), buf("out", (4,), "float32")
    r, k = te.Var("r"), te.Var("k")
    body = ln.For(r, 4, ln.seq(
        ln.Store(out, r, te.const(0.0, "float32")),
        ln.For(k, 3, ln.Store(out, r, load(out, r) + load(a, r * 3 + k)), "unrolled")))
    f = ln.PrimFunc("row_total", (a, out), body)
    text = str(generate([f], "t.relay"))
    assert text.count('getelementptr inbounds float, ptr %"out", i64 %"r"') == 1
    x = values("float32", n=12).reshape(4, 3)
    np.testing.assert_allclose(jit.compile([f], "t.relay")["row_total"](x), x.sum(axis=1), rtol=1e-6)


def test_an_unrolled_tiles_addresses_are_one_base_and_constant_offsets(jit):
    """Sums and products by constants in an index are gathered into a base and a constant
    offset (llvm.py `affine`): the three unrolled reads of `a[(r * 4 + (k + 1)) * 8]`
    are one base, `r * 4 * 8`, and the offsets 8, 16, 24, not an add and two multiplies
    each (which LLVM's InstCombine spent much of O3's time gathering)."""
    a, out = buf("a", (4, 4, 8), "float32"), buf("out", (4, 3), "float32")
    r, k = te.Var("r"), te.Var("k")
    body = ln.For(r, 4, ln.For(k, 3, ln.Store(out, r * 3 + k, load(a, (r * 4 + (k + 1)) * 8)), "unrolled"))
    f = ln.PrimFunc("tile", (a, out), body)
    text = str(generate([f], "t.relay"))
    assert len(re.findall(r"= mul ", text)) == 3  # r * 4 * 8 for the reads, r * 3 for the writes
    for offset in (8, 16, 24):
        assert re.search(rf'add nuw nsw i64 %"?\.\d+"?, {offset}', text)
    x = values("float32", n=128).reshape(4, 4, 8)
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["tile"](x), x[:, 1:, 0])


def test_a_shared_subexpression_is_emitted_once_across_unrolled_iterations(jit):
    """A node that every unrolled iteration uses and that does not use the iteration's
    variable (a Winograd transform's inner sum) is emitted once, loads and all, in
    vector code too (codegen/emitted.py)."""
    a, out = buf("a", (16,), "float32"), buf("out", (4, 8), "float32")
    t, v = te.Var("t"), te.Var("v")
    shared = load(a, v) + load(a, v + 8)
    body = ln.For(t, 4, ln.For(v, 8, ln.Store(out, t * 8 + v, shared * te.cast(t + 1, "float32")), "vectorized"),
                  "unrolled")
    f = ln.PrimFunc("shared_sum", (a, out), body)
    text = str(generate([f], "t.relay"))
    assert text.count("load <8 x float>") == 2 and text.count("fadd <8 x float>") == 1
    assert text.count("fmul <8 x float>") == 4
    x = values("float32", n=16)
    expected = (x[:8] + x[8:]) * np.arange(1, 5, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["shared_sum"](x), expected)


def test_a_shared_load_is_read_again_after_a_store_into_its_buffer(jit):
    """A value read from a buffer is not reused once something is stored into that buffer:
    in the same unrolled iteration or a later one, or in a loop (whose body may run after
    its own store, so it reuses nothing loaded before it)."""
    a, acc, res = buf("a", (1,), "float32"), buf("acc", (1,), "float32"), buf("res", (5,), "float32")
    k, i = te.Var("k"), te.Var("i")
    first = load(acc, 0)  # one node, read everywhere
    zero = te.as_expr(0)
    body = ln.seq(
        ln.Store(acc, zero, load(a, 0)),
        ln.For(k, 3, ln.seq(ln.Store(acc, zero, first * 2.0), ln.Store(res, k, first)), "unrolled"),
        ln.Store(res, te.as_expr(3), first),
        ln.For(i, 2, ln.Store(acc, zero, first * 2.0)),
        ln.Store(res, te.as_expr(4), first))
    f = ln.PrimFunc("reload", (a, acc, res), body, num_outputs=2)
    got_acc, got_res = jit.compile([f], "t.relay")["reload"](np.array([1.5], np.float32))
    np.testing.assert_array_equal(got_res, [3.0, 6.0, 12.0, 12.0, 48.0])
    np.testing.assert_array_equal(got_acc, [48.0])


def test_a_register_tiles_input_is_read_and_broadcast_once_for_every_block(jit):
    """A register tile's input, read at an index that uses the inner unrolled loop only,
    is read (and broadcast to the lanes) once for all the blocks of the outer unrolled
    loop: the read is kept by its address, the broadcast by its value, both good after
    the iteration that made them (codegen/emitted.py), until something is stored into
    the input's buffer."""
    x, w = buf("x", (3,), "float32"), buf("w", (4, 8), "float32")
    inp, out = buf("inp", (3,), "float32"), buf("out", (4, 3, 8), "float32")
    c, j, v = te.Var("c"), te.Var("j"), te.Var("v")
    tile = ln.For(c, 4, ln.For(j, 3, ln.For(v, 8, ln.Store(out, (c * 3 + j) * 8 + v, load(inp, j) * load(w, c * 8 + v)),
                                             "vectorized"), "unrolled"), "unrolled")
    body = ln.seq(ln.For(j, 3, ln.Store(inp, j, load(x, j)), "unrolled"), tile,
                  ln.Store(inp, te.as_expr(0), te.const(2.0, "float32")), tile)
    f = ln.PrimFunc("tile", (x, w, inp, out), body, num_outputs=2)
    text = str(generate([f], "t.relay"))
    assert len(re.findall(r'%"inp(\.\d+)?" = load float', text)) == 3 + 3  # all of inp again after a store into it
    assert text.count("shufflevector <8 x float>") == 3 + 3
    a, b = values("float32", n=3), values("float32", n=32, seed=1).reshape(4, 8)
    got_inp, got = jit.compile([f], "t.relay")["tile"](a, b)
    a[0] = 2.0
    np.testing.assert_array_equal(got_inp, a)
    np.testing.assert_array_equal(got, a[None, :, None] * b[:, None, :])


def test_an_inlined_call_in_vector_code_is_expanded_again_for_another_argument(jit):
    """The same exp node in every unrolled iteration, on an argument that changes with the
    iteration: each iteration expands it on its own argument."""
    a, out = buf("a", (3, 8), "float32"), buf("out", (3, 8), "float32")
    t, v = te.Var("t"), te.Var("v")
    body = ln.For(t, 3, ln.For(v, 8, ln.Store(out, t * 8 + v, te.intrinsic("exp", load(a, t * 8 + v))), "vectorized"),
                  "unrolled")
    f = ln.PrimFunc("exps", (a, out), body)
    x = values("float32", n=24).reshape(3, 8)
    np.testing.assert_allclose(jit.compile([f], "t.relay")["exps"](x), np.exp(x), rtol=2e-6)


def test_prefetch_is_a_hint_that_may_pass_the_buffer(jit):
    """`llvm.prefetch` at an address that is not `inbounds`: 16 KiB past a 37-float buffer
    the kernel still runs and computes the same values."""
    a, out = buf("a", N, "float32"), buf("out", N, "float32")
    i = te.Var("i")
    body = ln.For(i, N, ln.seq(ln.Prefetch(a, i + 4096), ln.Store(out, i, load(a, i) * te.const(2.0, "float32"))))
    f = ln.PrimFunc("twice", (a, out), body)
    text = str(generate([f], "t.relay"))
    assert 'call void @"llvm.prefetch.p0"(ptr' in text
    assert text.count('getelementptr float, ptr %"a"') == 1  # the prefetch's address: not inbounds
    assert "prefetch(a[i + 4096])" in ln.print_stmt(body)[1]
    x = values("float32")
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["twice"](x), x * 2)


def test_prefetch_for_writing_is_llvm_prefetch_with_rw_1(jit):
    """A `Prefetch` with `write`: `llvm.prefetch`'s second argument 1 (PREFETCHW on x86),
    of a line the loop writes later; the values are the same."""
    a, out = buf("a", N, "float32"), buf("out", N, "float32")
    i = te.Var("i")
    body = ln.For(i, N, ln.seq(ln.Prefetch(out, i + 16, write=True),
                               ln.Store(out, i, load(a, i) * te.const(2.0, "float32"))))
    f = ln.PrimFunc("twice", (a, out), body)
    assert 'i32 1, i32 2, i32 1)' in str(generate([f], "t.relay"))
    assert "prefetch_write(out[i + 16])" in ln.print_stmt(body)[1]
    x = values("float32")
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["twice"](x), x * 2)


def test_widened_loops(jit):
    """Vector code for a vectorized loop (lanes.py): a contiguous read is one vector load,
    a loop-invariant read a broadcast scalar, a strided write one store per lane, and a
    mixed int/float body computes what the scalar loop computes."""
    a, s, out = buf("a", (4, 16), "float32"), buf("s", (4,), "float32"), buf("out", (16, 4), "float32")
    r, v = te.Var("r"), te.Var("v")
    value = te.maximum(load(a, r * 16 + v) * load(s, r) + te.cast(v, "float32"), te.const(0.5, "float32"))
    body = ln.For(r, 4, ln.For(v, 16, ln.Store(out, v * 4 + r, value), "vectorized"))
    f = ln.PrimFunc("widened", (a, s, out), body)
    text = str(generate([f], "t.relay"))
    assert "llvm.loop.vectorize" not in text
    assert "load <16 x float>" in text and "shufflevector <16 x float>" in text
    assert "sitofp <16 x i64>" in text and re.search(r"select\s+<16 x i1>", text)  # max against a constant
    assert text.count("extractelement <16 x float>") == 16
    x, y = values("float32", n=64).reshape(4, 16), values("float32", n=4, seed=3)
    expected = np.maximum(x * y[:, None] + np.arange(16, dtype=np.float32), 0.5).T
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["widened"](x, y), expected)


def test_widened_guarded_read(jit):
    """A padding guard the same on every lane, around a read, is a branch in vector code:
    the read happens only where the guard holds."""
    a, out = buf("a", (3, 16), "float32"), buf("out", (4, 16), "float32")
    r, v = te.Var("r"), te.Var("v")
    value = te.select(te.ge(r, 1), load(a, (r - 1) * 16 + v), te.const(0.0, "float32")) + 1.0
    f = ln.PrimFunc("guarded", (a, out), ln.For(r, 4, ln.For(v, 16, ln.Store(out, r * 16 + v, value), "vectorized")))
    text = str(generate([f], "t.relay"))
    assert "llvm.loop.vectorize" not in text and "load <16 x float>" in text
    assert re.search(r"phi\s+<16 x float>", text)
    x = values("float32", n=48).reshape(3, 16)
    expected = np.concatenate([np.zeros((1, 16), np.float32), x]) + 1
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["guarded"](x), expected)


def test_index_arithmetic_says_it_does_not_wrap(jit):
    """An index add or mul whose operands the loop extents keep non-negative carries
    `nuw nsw` (LLVM's scalar evolution needs not prove it); one that may go negative (a
    padding offset: r - 1 is r + -1, (r - 1) * 16 + c the store's r * 16 + c, then
    + -16) only `nsw`, and the select guarding it still works."""
    a, out = buf("a", (3, 16), "float32"), buf("out", (4, 16), "float32")
    r, c = te.Var("r"), te.Var("c")
    value = te.select(te.ge(r - 1, 0), load(a, (r - 1) * 16 + c), te.const(0.0, "float32"))
    f = ln.PrimFunc("flags", (a, out), ln.For(r, 4, ln.For(c, 16, ln.Store(out, r * 16 + c, value))))
    text = str(generate([f], "t.relay"))
    assert re.search(r'mul nuw nsw i64 %"r", 16', text) and re.search(r'add nuw nsw i64 %"?\.\d+"?, %"c"', text)
    assert re.search(r'add nsw i64 %"r", -1', text) and re.search(r'add nsw i64 %"?\.\d+"?, -16', text)
    assert not re.search(r'nuw.*, -', text)
    x = values("float32", n=48).reshape(3, 16)
    expected = np.concatenate([np.zeros((1, 16), np.float32), x])
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["flags"](x), expected)


def test_widened_loop_around_unrolled_window(jit):
    """A vectorized loop whose body holds unrolled loops (a pooling window: an initial
    store, then a guarded max per window position) is vector code too: each unrolled
    iteration once, on vectors, the guard a branch; no scalar loop for LLVM to widen."""
    a, out = buf("a", (5, 16), "float32"), buf("out", (4, 16), "float32")
    r, k, v = te.Var("r"), te.Var("k"), te.Var("v")
    row = r + k - 1
    read = te.select(te.ge(row, 0), load(a, row * 16 + v), te.const(-1e30, "float32"))
    body = ln.For(r, 4, ln.For(v, 16, ln.seq(
        ln.Store(out, r * 16 + v, te.const(-np.inf, "float32")),
        ln.For(k, 3, ln.Store(out, r * 16 + v, te.maximum(load(out, r * 16 + v), read)), "unrolled")),
        "vectorized"))
    f = ln.PrimFunc("window", (a, out), body)
    text = str(generate([f], "t.relay"))
    assert "llvm.loop.vectorize" not in text and '%"v" = phi' not in text and '%"k" = phi' not in text
    assert text.count("load <16 x float>") >= 3 and re.search(r"phi\s+<16 x float>", text)
    x = values("float32", n=80).reshape(5, 16)
    padded = np.concatenate([np.full((1, 16), -1e30, np.float32), x])
    expected = np.stack([padded[i:i + 3].max(axis=0) for i in range(4)])
    np.testing.assert_array_equal(jit.compile([f], "t.relay")["window"](x), expected)


FLOAT_INTRINSICS = ("exp", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "atan", "tanh",
                    "erf", "sigmoid", "abs", "floor", "ceil", "round", "trunc", "neg")


def test_float_intrinsics(jit):
    cases = [(name, d) for d in ("float32", "float64") for name in FLOAT_INTRINSICS]
    funcs = [elementwise(f"{name}_{d}", [d], d, lambda a, name=name: te.intrinsic(name, a)) for name, d in cases]
    kernels = jit.compile(funcs, "t.relay")
    for name, d in cases:
        x = values(d, seed=5, nonneg=name in ("log", "log2", "log10", "sqrt", "rsqrt"))
        if name == "round":
            x[:4] = [2.5, -2.5, 0.5, -1.5]
        got = kernels[f"{name}_{d}"](x)
        np.testing.assert_allclose(got, te_eval._call(name, [x]), rtol=2e-6, atol=1e-6, err_msg=f"{name} {d}")


def test_predicates_and_integer_intrinsics(jit):
    special = np.array([0.0, -1.5, np.nan, np.inf, -np.inf, 3.0] * 7, np.float32)[:N]
    funcs = [elementwise(f"{p}_f32", ["float32"], "bool", lambda a, p=p: te.intrinsic(p, a))
             for p in ("isnan", "isinf", "isfinite")]
    funcs += [elementwise("not_bool", ["bool"], "bool", lambda a: te.intrinsic("not", a)),
              elementwise("abs_i32", ["int32"], "int32", te.abs),
              elementwise("neg_i8", ["int8"], "int8", lambda a: te.intrinsic("neg", a)),
              elementwise("floor_i16", ["int16"], "int16", te.floor),
              elementwise("isnan_i32", ["int32"], "bool", lambda a: te.intrinsic("isnan", a)),
              elementwise("exp_i32", ["int32"], "int32", te.exp)]
    k = jit.compile(funcs, "t.relay")
    for p, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
        np.testing.assert_array_equal(k[f"{p}_f32"](special), ref(special))
    b = values("bool")
    np.testing.assert_array_equal(k["not_bool"](b), ~b)
    i = values("int32")
    np.testing.assert_array_equal(k["abs_i32"](i), np.abs(i))
    np.testing.assert_array_equal(k["neg_i8"](values("int8")), -values("int8"))
    np.testing.assert_array_equal(k["floor_i16"](values("int16")), values("int16"))
    assert not k["isnan_i32"](i).any()
    small = (np.arange(N) % 5).astype(np.int32)
    np.testing.assert_array_equal(k["exp_i32"](small), np.exp(small.astype(np.float64)).astype(np.int32))


def test_float16(jit):
    funcs = [elementwise("mul_f16", ["float16", "float16"], "float16", lambda a, b: a * b),
             elementwise("exp_f16", ["float16"], "float16", te.exp),
             elementwise("tanh_f16", ["float16"], "float16", te.tanh)]
    k = jit.compile(funcs, "t.relay")
    x, y = values("float16", seed=1), values("float16", seed=2)
    np.testing.assert_array_equal(k["mul_f16"](x, y), x * y)
    np.testing.assert_allclose(k["exp_f16"](x), np.exp(x), rtol=2e-3)
    np.testing.assert_allclose(k["tanh_f16"](x), np.tanh(x), rtol=2e-3, atol=1e-3)


CASTS = [("float32", "int32"), ("int32", "float32"), ("float64", "float32"), ("float32", "float64"),
         ("int8", "int64"), ("uint8", "int32"), ("int32", "int8"), ("int64", "uint16"), ("float32", "bool"),
         ("int32", "bool"), ("bool", "float32"), ("bool", "int32"), ("uint32", "float64"), ("float32", "uint8"),
         ("float16", "float32"), ("float32", "float16"), ("int16", "uint16"), ("uint64", "int8")]


def test_casts(jit):
    funcs = [elementwise(f"cast_{s}_{d}", [s], d, lambda a, d=d: te.cast(a, d)) for s, d in CASTS]
    k = jit.compile(funcs, "t.relay")
    for s, d in CASTS:
        x = values(s, seed=6, nonneg=d.startswith("uint") and te.is_float(s))
        if s == "float32" and d == "bool":
            x[:3] = [0.0, np.nan, -0.0]
        expect = (x != 0) if d == "bool" else x.astype(d)
        np.testing.assert_array_equal(k[f"cast_{s}_{d}"](x), expect, err_msg=f"{s} -> {d}")


# --------------------------------------------------------------------------- control flow, memory


def _pad_func(name, far):
    """out[i] = in[i - 1] for 1 <= i <= n, else 0: the load is only valid inside."""
    n = 16
    x, out = buf("x", n, "float32"), buf("out", n + 2, "float32")
    i = te.Var("i")
    inside = te.logical_and(te.ge(i, 1), te.le(i, n))
    index = i - 1 if not far else te.select(inside, i - 1, te.const(-(2**40), te.INDEX))
    value = te.select(inside, load(x, index) * 2.0, te.const(0.0, "float32"))
    return ln.PrimFunc(name, (x, out), ln.For(i, n + 2, ln.Store(out, i, value)))


def test_select_is_lazy(jit):
    funcs = [_pad_func("pad", far=False), _pad_func("pad_far", far=True)]
    ir_text = str(generate(funcs, "t.relay"))
    body = ir_text[ir_text.index('define void @"pad"'):ir_text.index('define void @"pad_far"')]
    assert re.search(r"select\.then:\n(.*\n)*?.*load float", body)  # the load sits in the taken branch
    k = jit.compile(funcs, "t.relay")
    x = np.arange(16, dtype=np.float32)
    expect = np.concatenate([[0], 2 * x, [0]]).astype(np.float32)
    np.testing.assert_array_equal(k["pad"](x), expect)
    np.testing.assert_array_equal(k["pad_far"](x), expect)  # evaluating the far read would fault


def test_plain_select_and_if(jit):
    x, out = buf("x", N, "int32"), buf("out", N, "int32")
    i = te.Var("i")
    xi = load(x, i)
    body = ln.For(i, N, ln.IfThenElse(te.lt(xi, 0), ln.Store(out, i, te.const(-1, "int32")),
                                      ln.Store(out, i, te.select(te.gt(xi, 10), xi, te.const(10, "int32")))))
    f = ln.PrimFunc("clip_if", (x, out), body)
    o2 = buf("out", N, "int32")
    g = ln.PrimFunc("then_only", (x, o2), ln.For(i, N, ln.IfThenElse(te.ge(xi, 0), ln.Store(o2, i, xi * 3))))
    k = jit.compile([f, g], "t.relay")
    v = values("int32")
    np.testing.assert_array_equal(k["clip_if"](v), np.where(v < 0, -1, np.maximum(v, 10)))
    o = aligned_empty((N,), "int32")
    o[...] = 7
    np.testing.assert_array_equal(k["then_only"](v, out=o), np.where(v >= 0, v * 3, 7))


def _row_sum(name, rows, cols):
    """out[i] = sum_k a[i, k] through a one-element local accumulator."""
    a, out = buf("a", (rows, cols), "float32"), buf("out", rows, "float32")
    acc = te.Buffer("acc", (1,), "float32", scope="local")
    i, k = te.Var("i"), te.Var("k")
    body = ln.For(i, rows, ln.Allocate(acc, ln.seq(
        ln.Store(acc, te.const(0, te.INDEX), te.const(0.0, "float32")),
        ln.For(k, cols, ln.Store(acc, te.const(0, te.INDEX), load(acc, 0) + load(a, i * cols + k))),
        ln.Store(out, i, load(acc, 0)))))
    return ln.PrimFunc(name, (a, out), body)


def _reverse_through_temp(name, n):
    """tmp[i] = 2 x[i]; out[i] = tmp[n - 1 - i] + 1 with `tmp` a local buffer of n."""
    x, out = buf("x", n, "float32"), buf("out", n, "float32")
    tmp = te.Buffer("tmp", (n,), "float32", scope="local")
    i, j = te.Var("i"), te.Var("j")
    body = ln.Allocate(tmp, ln.seq(ln.For(i, n, ln.Store(tmp, i, load(x, i) * 2.0)),
                                   ln.For(j, n, ln.Store(out, j, load(tmp, n - 1 - j) + 1.0))))
    return ln.PrimFunc(name, (x, out), body)


def test_reduction_and_local_buffers(jit):
    funcs = [_row_sum("row_sum", 9, 13), _reverse_through_temp("small_tmp", 16),
             _reverse_through_temp("large_tmp", 4096)]
    ir_text = str(generate(funcs, "t.relay"))
    assert 'alloca [16 x float]' in ir_text or 'alloca float, i64 16' in ir_text
    assert '@"aligned_alloc"' in ir_text and '@"free"' in ir_text
    k = jit.compile(funcs, "t.relay")
    a = values("float32", n=9 * 13).reshape(9, 13)
    np.testing.assert_allclose(k["row_sum"](a), a.sum(axis=1), rtol=1e-5)
    for name, n in (("small_tmp", 16), ("large_tmp", 4096)):
        x = values("float32", n=n)
        np.testing.assert_array_equal(k[name](x), x[::-1] * 2 + 1)


def test_parallel_loops(jit):
    rows, cols = 23, 40
    a, out = buf("a", (rows, cols), "float32"), buf("out", (rows, cols), "float32")
    i, j = te.Var("i"), te.Var("j")
    f = ln.PrimFunc("par_exp", (a, out), ln.For(i, rows, ln.For(
        j, cols, ln.Store(out, i * cols + j, te.exp(load(a, i * cols + j))), "vectorized"), "parallel"))
    # a serial outer loop whose variable the parallel loop captures, a nested parallel
    # loop (run serially), and a local buffer inside the parallel body
    b, out2 = buf("b", (rows, cols), "int32"), buf("out", (rows, cols), "int32")
    tmp = te.Buffer("tmp", (1,), "int32", scope="local")
    i2, j2 = te.Var("i"), te.Var("j")
    inner = ln.For(j2, cols, ln.Allocate(tmp, ln.seq(
        ln.Store(tmp, te.const(0, te.INDEX), load(b, i2 * cols + j2) * 3),
        ln.Store(out2, i2 * cols + j2, load(tmp, 0) + te.cast(i2, "int32")))), "parallel")
    g = ln.PrimFunc("par_nested", (b, out2), ln.For(i2, rows, inner, "parallel"))
    c, out3 = buf("c", (rows, cols), "float64"), buf("out", (rows, cols), "float64")
    i3, j3 = te.Var("i"), te.Var("j")
    h = ln.PrimFunc("serial_then_par", (c, out3), ln.For(i3, rows, ln.For(
        j3, cols, ln.Store(out3, i3 * cols + j3, load(c, i3 * cols + j3) + te.cast(i3, "float64")), "parallel")))
    ir_text = str(generate([f, g, h], "t.relay"))
    assert ir_text.count('call void @"GOMP_parallel"') == 3
    assert '@"omp_get_thread_num"' in ir_text
    k = jit.compile([f, g, h], "t.relay")
    x = values("float32", n=rows * cols).reshape(rows, cols)
    np.testing.assert_allclose(k["par_exp"](x), np.exp(x), rtol=1e-6)
    y = values("int32", n=rows * cols).reshape(rows, cols)
    np.testing.assert_array_equal(k["par_nested"](y), y * 3 + np.arange(rows, dtype=np.int32)[:, None])
    z = values("float64", n=rows * cols).reshape(rows, cols)
    np.testing.assert_array_equal(k["serial_then_par"](z), z + np.arange(rows)[:, None])


def test_object_code_without_an_engine_is_mcjits(jit):
    """`optimize_to_object` (a worker's: no engine) gives the optimised text and the very
    object code `optimize_and_load` gives, and that code loads and runs: a parallel loop
    (libgomp's symbols, the number-of-threads global) and a libm call."""
    rows, cols = 9, 40
    a, out = buf("a", (rows, cols), "float32"), buf("out", (rows, cols), "float32")
    i, j = te.Var("i"), te.Var("j")
    f = ln.PrimFunc("par_exp_obj", (a, out), ln.For(i, rows, ln.For(
        j, cols, ln.Store(out, i * cols + j, te.intrinsic("tanh", load(a, i * cols + j))), "serial"), "parallel"))
    text = str(generate([f], "t.relay"))
    optimized, obj = jit.optimize_to_object(text)
    optimized_here, _, obj_here = JIT(num_threads=2).optimize_and_load(text)
    assert optimized == optimized_here and obj == obj_here and obj
    jit.load_object(obj, {"par_exp_obj": "par_exp_obj"})
    x = values("float32", n=rows * cols).reshape(rows, cols)
    np.testing.assert_allclose(jit.kernel(f)(x), np.tanh(x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("load, given, expected", [
    (0.5, {}, str(SPIN_COUNT)),
    (99.0, {}, "0"),
    (0.5, {"OMP_WAIT_POLICY": "ACTIVE"}, "30000000000"),
    (0.5, {"OMP_WAIT_POLICY": "PASSIVE"}, "0"),
    (99.0, {"GOMP_SPINCOUNT": "50"}, "50"),
])
def test_libgomp_spins_briefly_on_a_spare_core_unless_told_otherwise(load, given, expected):
    """The JIT sets GOMP_SPINCOUNT before libgomp loads, on its first use (jit.py's module
    doc): SPIN_COUNT when the load average leaves a core to spare, else 0 (a passive wait),
    unless the environment says how to wait (OMP_WAIT_POLICY or GOMP_SPINCOUNT); libgomp
    reports the spin count it uses (OMP_DISPLAY_ENV=verbose)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["OMP_DISPLAY_ENV"] = "verbose"
    env.update(given)
    code = (f"import os; os.getloadavg = lambda: ({load}, 0.0, 0.0); os.sched_getaffinity = lambda pid: {{0, 1}}; "
            "from relaylens.compiler.lower.runtime.jit import JIT; JIT(num_threads=1).target_machine")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert re.search(rf"GOMP_SPINCOUNT = '{expected}'", run.stderr), run.stderr


def test_spin_count_wants_a_spare_core(monkeypatch):
    """A spin only while the 1-minute load is below the CPUs the process may use; none when
    the load cannot be read."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    for load, expected in ((0.0, SPIN_COUNT), (1.9, SPIN_COUNT), (2.0, 0), (7.5, 0)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert spin_count() == expected

    def unreadable():
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", unreadable)
    assert spin_count() == 0


def test_a_runtime_library_is_loaded_by_soname_else_where_ctypes_finds_it(monkeypatch):
    """libgomp and libgcc_s load by their sonames without a child process; a soname the
    loader does not find falls back to ctypes' search, and a library found nowhere is a
    LoweringError that says what to install."""
    searched = []

    def find_library(name):
        searched.append(name)
        return "libgomp.so.1" if name == "gomp" else None

    monkeypatch.setattr(jit_module.ctypes.util, "find_library", find_library)
    jit_module._load_library("gomp", "libgomp.so.1", "install libgomp1")
    assert searched == []
    jit_module._load_library("gomp", "libgomp-not-here.so.7", "install libgomp1")
    assert searched == ["gomp"]
    with pytest.raises(LoweringError, match="libnothing.so.3 cannot be loaded.*install libnothing"):
        jit_module._load_library("nothing", "libnothing.so.3", "install libnothing")


def _vector_func(name, fn, n=64, width=16):
    """out[o*width + v] = fn(a, b, index) with the inner loop vectorized."""
    a, b, out = buf("a", n, "float32"), buf("b", n, "float32"), buf("out", n, "float32")
    o, v = te.Var("o"), te.Var("v")
    idx = o * width + v
    return ln.PrimFunc(name, (a, b, out), ln.For(o, n // width, ln.For(
        v, width, ln.Store(out, idx, fn(a, b, idx)), "vectorized")))


def test_vectorized_loop(jit, capfd):
    fma = _vector_func("vec_fma", lambda a, b, i: load(a, i) * load(b, i) + 1.0)
    o, v = te.Var("o"), te.Var("v")
    acc, src = buf("acc", 64, "float32"), buf("src", 64, "float32")  # acc[i] = acc[i] + src[i]
    accumulate = ln.PrimFunc("vec_acc", (src, acc), ln.For(o, 4, ln.For(v, 16, ln.Store(
        acc, o * 16 + v, load(acc, o * 16 + v) + load(src, o * 16 + v)), "vectorized")))
    # straight-line bodies are vector instructions already (lanes.py): no loop to widen
    text = str(generate([accumulate, fma], "t.relay"))
    assert "llvm.loop.vectorize" not in text and '"v.loop"' not in text
    assert re.search(r"fadd contract <16 x float>", text) and re.search(r"load <16 x float>", text)
    # a select whose side reads memory (a guard) is left to the loop vectoriser
    shift = _vector_func("vec_shift", lambda a, b, i: te.select(te.ge(i, 1), load(a, i - 1), load(b, i)))
    ir_text = str(generate([fma, shift], "t.relay"))
    assert '!"llvm.loop.vectorize.enable", i1 1' in ir_text
    assert '!"llvm.loop.vectorize.width", i32 16' in ir_text
    optimized = jit.optimize(ir_text)
    body = optimized[optimized.index("@vec_fma("):optimized.index("@vec_shift(")]
    assert re.search(r"fmul (contract )?<(8|16) x float>", body)
    assert re.search(r"<(8|16) x float>", optimized[optimized.index("@vec_shift("):])
    jit.load(optimized)
    x, y = values("float32", n=64, seed=1), values("float32", n=64, seed=2)
    np.testing.assert_allclose(jit.kernel(fma)(x, y), x * y + 1, rtol=1e-6)
    np.testing.assert_array_equal(jit.kernel(shift)(x, y), np.concatenate([y[:1], x[:-1]]))
    # bodies the vectoriser cannot take (a libm call: erf on float64; reading where another
    # iteration writes) are not forced, so LLVM stays quiet
    erf = _vector_func("vec_erf", lambda a, b, i: te.cast(te.erf(te.cast(load(a, i), "float64")), "float32"))
    o, v = te.Var("o"), te.Var("v")
    out = buf("out", 65, "float32")
    recurrence = ln.PrimFunc("vec_recurrence", (out,), ln.For(o, 4, ln.For(v, 16, ln.Store(
        out, o * 16 + v + 1, load(out, o * 16 + v) * 0.5), "vectorized")))
    for f in (erf, recurrence):
        text = str(generate([f], "t.relay"))
        assert "llvm.loop.vectorize" not in text
        capfd.readouterr()
        jit.optimize(text)
        assert "not vectorized" not in capfd.readouterr().err


def test_a_vectorized_loop_of_12_lanes_is_a_vector_of_8_then_one_of_4(jit, capfd):
    """A register tile of NCHW12c: 12 lanes are not one loop of 4-lane vectors (three
    iterations, the accumulators in memory) but a vector of 8 and one of 4, whole: vector
    code already (lanes.py), with no loop left for the loop vectoriser, which took 0.6 s
    of O3 on each of MobileNet v2's two NCHW12c convolutions (a loop of 8 and one of 4 for
    each accumulator).  An odd width, whose last piece is one lane, is left to the loop
    vectoriser, a loop per piece."""
    tile = _vector_func("vec12", lambda a, b, i: load(a, i) * load(b, i) + 1.0, n=48, width=12)
    text = str(generate([tile], "t.relay"))
    assert "llvm.loop.vectorize" not in text and '"v.loop"' not in text
    assert re.search(r"fmul <8 x float>", text) and re.search(r"fmul <4 x float>", text)
    odd = _vector_func("vec13", lambda a, b, i: load(a, i) * load(b, i) + 1.0, n=52, width=13)
    odd_text = str(generate([odd], "t.relay"))
    assert '!"llvm.loop.vectorize.width", i32 8' in odd_text and '!"llvm.loop.vectorize.width", i32 4' in odd_text
    capfd.readouterr()
    optimized = jit.optimize(text)
    assert "not vectorized" not in capfd.readouterr().err
    assert re.search(r"<8 x float>", optimized) and re.search(r"<4 x float>", optimized)
    jit.load(optimized)
    jit.load(jit.optimize(odd_text))
    for f, n in ((tile, 48), (odd, 52)):
        x, y = values("float32", n=n, seed=1), values("float32", n=n, seed=2)
        np.testing.assert_allclose(jit.kernel(f)(x, y), x * y + 1, rtol=1e-6)


@pytest.mark.parametrize("name", ["exp", "tanh", "erf", "sigmoid"])
def test_float32_math_is_inlined_and_vectorised(jit, capfd, name):
    """exp, tanh, erf and sigmoid on float32 are straight-line code (te/mathfuncs.py): in a
    vectorized loop of 16 lanes they are vector instructions already (lanes.py), with no
    loop left for the vectoriser and no call in them."""
    f = _vector_func(f"vec_{name}", lambda a, b, i: te.intrinsic(name, load(a, i)))
    text = str(generate([f], "t.relay"))
    assert "llvm.loop.vectorize" not in text and "<16 x float>" in text
    capfd.readouterr()
    optimized = jit.optimize(text)
    assert "not vectorized" not in capfd.readouterr().err
    body = optimized[optimized.index(f"@vec_{name}("):]
    assert re.search(r"<(8|16) x float>", body)
    assert not re.search(r"call .*@(llvm\.(exp|tanh)\.|expf|tanhf|erff)", body)
    jit.load(optimized)
    x = np.linspace(-12, 12, 64, dtype=np.float32)
    reference = {"exp": np.exp, "tanh": np.tanh, "erf": te_eval._erf,
                 "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[name](x.astype(np.float64))
    np.testing.assert_allclose(jit.kernel(f)(x, x), reference, rtol=3e-7)


def test_unrolled_loop_and_multiple_outputs(jit):
    n = 4
    a, s, d = buf("a", (3, n), "int64"), buf("sum", 3, "int64"), buf("diff", (3, n), "int64")
    i, j = te.Var("i"), te.Var("j")
    body = ln.For(i, 3, ln.seq(
        ln.Store(s, i, te.const(0, "int64")),
        ln.For(j, n, ln.seq(ln.Store(s, i, load(s, i) + load(a, i * n + j)),
                            ln.Store(d, i * n + j, load(a, i * n + j) - load(a, i * n))), "unrolled")))
    f = ln.PrimFunc("two_outputs", (a, s, d), body, num_outputs=2)
    ir_text = str(generate([f], "t.relay"))
    assert '%"j" = phi' not in ir_text and '%"i" = phi' in ir_text
    k = jit.compile([f], "t.relay")["two_outputs"]
    x = values("int64", n=3 * n).reshape(3, n)
    total, diff = k(x)
    np.testing.assert_array_equal(total, x.sum(axis=1))
    np.testing.assert_array_equal(diff, x - x[:, :1])


# --------------------------------------------------------------------------- the kernel wrapper, errors


def test_kernel_checks_arguments(jit):
    k = jit.compile([elementwise("copy_f32", ["float32"], "float32", lambda a: a)], "t.relay")["copy_f32"]
    x = values("float32")
    with pytest.raises(ValueError, match="must be float32"):
        k(x.astype(np.float64))
    with pytest.raises(ValueError, match="shape"):
        k(x[:-1])
    with pytest.raises(ValueError, match="takes 1 inputs"):
        k(x, x)
    misaligned = np.empty(N + 1, np.float32)[1:]
    misaligned[...] = x
    np.testing.assert_array_equal(k(misaligned), x)  # copied to an aligned buffer
    with pytest.raises(ValueError, match="aligned"):
        k(x, out=misaligned)
    assert aligned_empty((3, 5), "float64").ctypes.data % 64 == 0
    strided = np.repeat(x, 2)[::2]  # not contiguous: copied
    np.testing.assert_array_equal(k(strided), x)
    frozen = aligned_empty(x.shape, "float32")
    frozen[...] = x
    frozen.flags.writeable = False  # read-only input: read in place
    np.testing.assert_array_equal(k(frozen), x)
    with pytest.raises(ValueError, match="writeable"):
        k(x, out=frozen)
    out = aligned_empty(x.shape, "float32")
    assert k(x[::-1], out=[out]) is out and (out == x[::-1]).all()


def test_errors(jit):
    out = buf("out", 4, "float32")
    stray = te.Var("stray")
    with pytest.raises(LoweringError, match="unbound variable stray"):
        generate([ln.PrimFunc("f", (out,), ln.Store(out, stray, te.const(1.0, "float32")))], "t.relay")
    with pytest.raises(LoweringError, match="storing int32"):
        generate([ln.PrimFunc("g", (out,), ln.Store(out, te.const(0, te.INDEX), te.const(1, "int32")))], "t.relay")
    with pytest.raises(LoweringError, match="LLVM rejected the generated IR"):
        jit.optimize("define void @f() {\n  ret i32 0\n}\n")


# --------------------------------------------------------------------------- debug info


RELAY = """\
def @main(%x: Tensor[(37), float32], %y: Tensor[(37), float32]) {
  %0 = add(%x, %y);
  %1 = exp(%0);
  multiply(%1, 2f)
}
"""


def _span(source, needle):
    start = source.text.index(needle)
    return Span(source, start, start + len(needle))


def _debug_func():
    """out[i] = exp(x[i] + y[i]) * 2, each node at its Relay call."""
    src = Source("models/demo.relay", RELAY)
    add_at, exp_at, mul_at = _span(src, "add(%x, %y)"), _span(src, "exp(%0)"), _span(src, "multiply(%1, 2f)")
    x, y, out = buf("x", N, "float32"), buf("y", N, "float32"), buf("out", N, "float32")
    i = te.Var("i")
    s = te.Binary("add", load(x, i), load(y, i), "float32", loc=add_at)
    e = te.Call("exp", (s,), "float32", loc=sequential(LayerSpan("conv1/Exp"), exp_at))
    m = te.Binary("mul", e, te.const(2.0, "float32"), "float32", loc=mul_at)
    body = ln.For(i, N, ln.Store(out, i, m, loc=mul_at), loc=mul_at)
    return ln.PrimFunc("fused_add_exp_multiply", (x, y, out), body, span=_span(src, "def @main")), src


def test_source_location():
    src = Source("a.relay", "x\n  add(%a, %b)\n")
    at = _span(src, "add")
    assert source_location(at) == (2, 3)
    assert source_location(sequential(LayerSpan("conv1"), at)) == (2, 3)
    assert source_location(LayerSpan("conv1", 4, 5)) is None
    assert source_location(None) is None


def _instruction_lines(text, name):
    first, last = function_ranges(text)[name]
    lines = text.splitlines()[first:last - 1]
    return [(first + 1 + k, line) for k, line in enumerate(lines)
            if line.startswith("  ") and not line.strip().startswith(";")]


def test_debug_info_unoptimized(jit):
    f, _ = _debug_func()
    text = str(generate([f], "models/demo.relay"))
    jit.parse(text)  # verifies
    instructions = _instruction_lines(text, "fused_add_exp_multiply")
    assert instructions and all("!dbg !" in line for _, line in instructions)
    where = line_locations(text)
    # exp is inlined (te/mathfuncs.py): its arithmetic is at the exp call
    assert {where[n] for n, line in instructions if "fadd float" in line} == {(2, 8), (3, 8)}
    assert {where[n] for n, line in instructions if "llvm.fma.f32" in line} == {(3, 8)}
    assert {where[n] for n, line in instructions if "bitcast" in line} == {(3, 8)}
    assert {where[n] for n, line in instructions if "fmul float" in line and "0x4000000000000000" in line} == {(4, 3)}
    assert {where[n] for n, line in instructions if "store float" in line} == {(4, 3)}


def test_debug_info_survives_optimization(jit):
    f, _ = _debug_func()
    optimized = jit.optimize(generate([f], "models/demo.relay"))
    where = line_locations(optimized)
    lines = optimized.splitlines()
    fadds = [where[n] for n, line in enumerate(lines, 1) if re.search(r"= fadd (<\d+ x )?float", line)]
    assert fadds and set(fadds) == {(2, 8), (3, 8)}  # add, and the inlined exp
    assert {(2, 8), (3, 8), (4, 3)} <= set(where.values())


def test_debug_info_in_outlined_parallel_functions(jit):
    src = Source("p.relay", "a\nb\n  c = negative(%x)\n")
    at, loop_at = _span(src, "negative"), _span(src, "c =")
    x, out = buf("x", (8, 8), "float32"), buf("out", (8, 8), "float32")
    i, j = te.Var("i"), te.Var("j")
    neg = te.Call("neg", (load(x, i * 8 + j),), "float32", loc=at)
    f = ln.PrimFunc("par_neg", (x, out), ln.For(i, 8, ln.For(j, 8, ln.Store(out, i * 8 + j, neg)), "parallel", loc=loop_at))
    text = str(generate([f], "p.relay"))
    ranges = function_ranges(text)
    assert set(ranges) == {"par_neg", "par_neg.par0", "par_neg.par0.body"}
    for name in ranges:
        assert all("!dbg !" in line for _, line in _instruction_lines(text, name)), name
    optimized = jit.optimize(text)  # the body stays a function of its own (llvm.py: noinline)
    assert "inlinedAt:" not in optimized and "par_neg.par0.body" in function_ranges(optimized)
    where = line_locations(optimized)
    lines = optimized.splitlines()
    fneg = [where[n] for n, line in enumerate(lines, 1) if "fneg" in line]
    assert (3, 7) in fneg  # the instruction's own location, not the call site's (3, 3)
    gomp = [where[n] for n, line in enumerate(lines, 1) if "call void @GOMP_parallel" in line]
    assert gomp == [(3, 3)]


def test_thread_count(monkeypatch):
    from relaylens.compiler.lower.runtime.jit import default_num_threads

    monkeypatch.setenv("RELAYLENS_NUM_THREADS", "3")
    assert default_num_threads() == 3
    monkeypatch.setenv("RELAYLENS_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="RELAYLENS_NUM_THREADS"):
        default_num_threads()
    monkeypatch.delenv("RELAYLENS_NUM_THREADS")
    assert default_num_threads() >= 1


def test_entry_debug(jit):
    import llvmlite.ir as ir

    from relaylens.compiler.lower.codegen.debuginfo import entry_debug, source_location

    src = Source("m.relay", "def @main() {\n  %0 = f(%x);\n  g(%0)\n}\n")
    module = ir.Module("entry")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "entry")
    callee = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "kernel")
    location = entry_debug(module, fn, "m.relay")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.debug_metadata = location(source_location(_span(src, "f(%x)")))
    b.call(callee, [])
    b.debug_metadata = location(None)
    b.ret_void()
    text = str(module)
    jit.parse(text)
    call_line = next(n for n, line in enumerate(text.splitlines(), 1) if "call void" in line)
    assert line_locations(text) == {call_line: (2, 8)}


def test_golden_snippet():
    f, _ = _debug_func()
    text = str(generate([f], "models/demo.relay"))
    assert ('define void @"fused_add_exp_multiply"(ptr noalias align 64 %"x", ptr noalias align 64 %"y", '
            'ptr noalias align 64 %"out") nounwind !dbg !') in text
    for snippet in ('!DIFile(directory: "models", filename: "demo.relay")',
                    'distinct !DICompileUnit(emissionKind: FullDebug',
                    '!{ i32 2, !"Debug Info Version", i32 3 }',
                    '!{ i32 7, !"Dwarf Version", i32 4 }',
                    'line: 1, name: "fused_add_exp_multiply"',
                    '%"i" = phi  i64 [0, %"body"], [%"i.next", %"i.loop"]',
                    'getelementptr inbounds float, ptr %"x", i64 %"i"',
                    'call float @"llvm.fma.f32"(',  # in the inlined exp
                    'icmp slt i64 %"i.next", 37',
                    'ret void, !dbg !'):
        assert snippet in text, snippet
    assert re.search(r'!\d+ = !DILocation\(column: 8, line: 2, scope: !\d+\)', text)


def test_only_accumulations_may_contract_into_fma(jit):
    """`acc[i] = acc[i] + a[i] * b[i]` carries `contract` (LLVM may fuse an FMA); an
    ordinary `out[i] = a[i] * b[i] + 1` keeps exact IEEE steps."""
    a, b, acc, out = (buf(n, (16,), "float32") for n in ("a", "b", "acc", "out"))
    i = te.Var("i")
    product = te.BufferLoad(a, i, "float32") * te.BufferLoad(b, i, "float32")
    body = ln.seq(ln.For(i, 16, ln.Store(acc, i, te.BufferLoad(acc, i, "float32") + product)),
                  ln.For(i, 16, ln.Store(out, i, product + 1.0)))
    text = str(generate([ln.PrimFunc("fma_or_not", (a, b, acc, out), body, num_outputs=2)], "f.relay"))
    arithmetic = [line.split("=", 1)[1].split()[0:2] for line in text.splitlines()
                  if re.search(r"= f(add|mul) ", line)]
    assert sorted(map(tuple, arithmetic)) == [("fadd", "contract"), ("fadd", "float"),
                                              ("fmul", "contract"), ("fmul", "float")]
