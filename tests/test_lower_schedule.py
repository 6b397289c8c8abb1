"""Schedules (compiler/lower/schedule.py) and default schedules (default_schedules.py): each
primitive alone and combined, lowered and run by the loop-nest interpreter against te_eval,
the step record, clear errors, and the defaults on odd, tiny and large shapes."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from loopnest_interp import run

from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.schedule.conv_tile_end import FORK_MIN
from relaylens.compiler.lower.schedule.defaults import default_schedule
from relaylens.compiler.lower.schedule.primitives import Schedule, ScheduleError
from relaylens.compiler.lower.schedule.row_reduce import rows_together
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512, SSE, host_unit
from relaylens.compiler.lower.te import evaluate as te_eval
from relaylens.compiler.lower.te import expr as te

# ---------------------------------------------------------------------- computes


def elementwise(shape=(5, 7)):
    x = te.placeholder(shape, "float32", "x")
    y = te.compute(shape, lambda *i: x[i] * 2.0 + 1.0, "T_mul")
    z = te.compute(shape, lambda *i: te.maximum(y[i], 0.0), "T_relu")
    return [x], z, y


def broadcast():
    a = te.placeholder((5, 7), "float32", "a")
    b = te.placeholder((7,), "float32", "b")
    return [a, b], te.compute((5, 7), lambda i, j: a[i, j] + b[j], "T_add")


def matmul(m=5, k=7, n=6):
    a = te.placeholder((m, k), "float32", "a")
    b = te.placeholder((k, n), "float32", "b")
    r = te.reduce_axis(k, "k")
    mm = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=[r]), "T_matmul", tag="nn.matmul")
    relu = te.compute((m, n), lambda i, j: te.maximum(mm[i, j], 0.0), "T_relu")
    return [a, b], relu, mm


def conv(n=1, c=2, h=5, w=6, k=3, bias=True):
    """A 3x3 convolution with padding 1 (NCHW), optionally with bias and relu."""
    x = te.placeholder((n, c, h, w), "float32", "x")
    wt = te.placeholder((k, c, 3, 3), "float32", "w")
    pad = te.compute((n, c, h + 2, w + 2), lambda a, b, y, z: te.select(
        te.all_of(te.ge(y, 1), te.lt(y, h + 1), te.ge(z, 1), te.lt(z, w + 1)), x[a, b, y - 1, z - 1], 0.0),
        "T_pad")
    rc, ry, rx = te.reduce_axis(c, "rc"), te.reduce_axis(3, "ry"), te.reduce_axis(3, "rx")
    out = te.compute((n, k, h, w), lambda a, o, y, z: te.sum(pad[a, rc, y + ry, z + rx] * wt[o, rc, ry, rx],
                                                             axis=[rc, ry, rx]), "T_conv2d", tag="nn.conv2d")
    if not bias:
        return [x, wt], out, pad, out
    b = te.placeholder((k,), "float32", "bias")
    add = te.compute(out.shape, lambda a, o, y, z: out[a, o, y, z] + b[o], "T_add")
    relu = te.compute(out.shape, lambda *i: te.maximum(add[i], 0.0), "T_relu")
    return [x, wt, b], relu, pad, out


def argmax(rows=4, cols=6, dtype="float32"):
    x = te.placeholder((rows, cols), dtype, "x")
    r = te.reduce_axis(cols, "k")
    return [x], te.compute((rows,), lambda i: te.argmax(x[i, r], r, r), "T_argmax")


def values(inputs, seed=0, ints=False):
    rng = np.random.default_rng(seed)
    out = []
    for t in inputs:
        if ints or not te.is_float(t.dtype):
            out.append(rng.integers(-3, 4, size=t.shape).astype(t.dtype))
        else:
            out.append(rng.standard_normal(t.shape).astype(t.dtype))
    return out


def check(sch: Schedule, arrays=None, rtol=1e-5, atol=1e-5):
    """The lowered schedule, run by the interpreter, equals te_eval on every output."""
    arrays = values(sch.inputs) if arrays is None else arrays
    got = run(sch.lower(), arrays)
    want = te_eval.evaluate(sch.outputs, list(zip(sch.inputs, arrays)))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


def lines(sch: Schedule, step: int = -1) -> list[str]:
    return [line.strip() for line in sch.record[step].snapshot.splitlines()]


# ---------------------------------------------------------------------- initial schedule and record


def test_initial_schedule_is_one_nest_per_stage_and_step_zero():
    ins, out, mid = elementwise()
    sch = Schedule([out], ins, "fused")
    assert len(sch.record) == 1 and sch.record[0].primitive == "create_schedule"
    assert sch.record[0].args == "fused: outputs T_relu; inputs x"
    text = sch.record[0].snapshot
    assert text.startswith("def fused(x: float32[5, 7], T_relu: float32[5, 7]):")
    assert "T_mul = allocate(float32, [5, 7])" in text
    assert "T_relu[ax0 * 7 + ax1] = max(T_mul[ax0 * 7 + ax1], float32(0.0))" in text
    assert [a.name for a in sch[out].axes] == ["ax0", "ax1"]
    assert [a.name for a in sch[mid].axes] == ["ax0_1", "ax1_1"]  # names are unique in the function
    check(sch)
    assert sch.record_text().startswith("# step 0: create_schedule(fused: outputs T_relu; inputs x)\ndef fused(")


def test_lowered_function_is_clean_ir_with_locations():
    ins, out, pad, conv_t = conv()
    for t in te.post_order([out]):
        if t.op is not None:
            t.op.span = f"span:{t.name}"
    sch = Schedule([out], ins, "f")
    with pytest.raises(ScheduleError, match="cannot compute T_conv2d at T_relu: T_relu does not read T_conv2d"):
        sch.compute_at(conv_t, out, sch[out].axes[1])
    sch.compute_inline(sch.stages[-2].tensor)  # T_add
    sch.compute_at(conv_t, out, sch[out].axes[1])
    f = sch.lower()
    assert [b.name for b in f.params] == ["x", "w", "bias", "T_relu"] and f.num_outputs == 1
    names = []
    for s in ln.walk(f.body):
        if isinstance(s, (ln.For, ln.Store)):
            assert s.loc is not None and s.loc.startswith("span:")
        if isinstance(s, ln.For):
            assert isinstance(s.var, te.Var) and s.var.dtype == "int64"
            names.append(s.var.name)
        if isinstance(s, ln.Store):
            stack = [s.index, s.value]
            while stack:
                e = stack.pop()
                assert not isinstance(e, (te.Load, te.Reduce, te.IterVar))
                stack.extend(te.children(e))
    assert len(names) == len(set(names))
    stores = {s.buffer.name: s.loc for s in ln.walk(f.body) if isinstance(s, ln.Store)}
    assert stores == {"T_pad": "span:T_pad", "T_conv2d": "span:T_conv2d", "T_relu": "span:T_relu"}


# ---------------------------------------------------------------------- loop primitives


def test_split_with_and_without_guard():
    ins, out = broadcast()
    sch = Schedule([out], ins, "f")
    o, i = sch.split(out, sch[out].axes[1], 3)
    assert (o.name, o.extent, i.name, i.extent) == ("ax1.outer", 3, "ax1.inner", 3)
    assert sch.record[1].args == "T_add: ax1 by 3 -> ax1.outer, ax1.inner"
    text = lines(sch)
    assert "for ax1.outer in range(3):" in text and "for ax1.inner in range(3):" in text
    assert "if ax1.outer * 3 + ax1.inner < 7:" in text
    check(sch)
    sch.split(out, sch[out].axes[0], 5)  # divides: no guard
    assert sum(line.startswith("if ") for line in lines(sch)) == 1
    check(sch)


def test_split_with_a_tail_makes_the_remainder_apart_without_a_guard():
    ins, out = broadcast()
    sch = Schedule([out], ins, "f")
    o, i = sch.split(out, sch[out].axes[1], 3, tail=True)
    assert sch.record[1].args == "T_add: ax1 by 3 with a tail -> ax1.outer, ax1.inner"
    text = lines(sch)
    assert not any(t.startswith("if ") for t in text)
    # in the loop they share: the whole tiles (2 of 3), then the remainder, the 7th
    # column (outer fixed at 2)
    assert text[1:5] == ["for ax0 in range(5):", "for ax1.outer in range(2):", "for ax1.inner in range(3):",
                         "T_add[ax0 * 7 + ax1.outer * 3 + ax1.inner] = a[ax0 * 7 + ax1.outer * 3 + ax1.inner]"
                         " + b[ax1.outer * 3 + ax1.inner]"]
    assert text[5:] == ["T_add[ax0 * 7 + 6] = a[ax0 * 7 + 6] + b[6]"]
    check(sch)
    sch.split(out, sch[out].axes[0], 5, tail=True)  # divides: no remainder
    assert sum(t.startswith("for ax0") for t in lines(sch)) == 1
    check(sch)
    ins, out, mm = matmul(6, 8, 8)
    sch = Schedule([mm], ins, "g")
    with pytest.raises(ScheduleError, match="only a data axis may be split with a tail"):
        sch.split(mm, sch[mm].reduce_axes[0], 3, tail=True)


def test_a_stage_computed_outside_a_tail_is_computed_once_for_both_nests():
    ins, out, mm = matmul(6, 5, 7)
    sch = Schedule([out], ins, "f")
    i, j = sch[out].axes
    sch.split(out, j, 3, tail=True)
    sch.compute_at(mm, out, i)  # the matmul's row at the relu's row: once, for the whole tiles and the remainder
    text = lines(sch)
    assert text.count("for ax0 in range(6):") == 1 and "for ax0_1 in range(6):" not in text
    assert text.count("T_matmul = allocate(float32, [1, 7])") == 1  # the whole row, all 7 columns
    assert text[-1] == "T_relu[ax0 * 7 + 6] = max(T_matmul[6], float32(0.0))"  # the remainder reads it
    check(sch)


def test_a_stage_outside_two_tails_is_computed_by_each_nest():
    ins, out, mm = matmul(7, 5, 7)
    sch = Schedule([out], ins, "f")
    i, j = sch[out].axes
    io, _ = sch.split(out, i, 4, tail=True)
    sch.split(out, j, 3, tail=True)
    sch.compute_at(mm, out, io)  # outside the columns' tail, inside the rows': each nest its own
    text = lines(sch)
    assert sum(t.startswith("T_matmul") and "allocate" in t for t in text) > 1
    check(sch)


def test_a_tail_keeps_a_register_tile_under_cache_accumulator():
    ins, out, mm = matmul(6, 8, 11)
    sch = Schedule([mm], ins, "f")
    (k,) = sch[mm].reduce_axes
    ko, ki = sch.split(mm, k, 4)
    jo, ji = sch.split(mm, sch[mm].axes[1], 3, tail=True)  # 11 = 3 * 3 + 2
    sch.reorder(mm, ko, sch[mm].axes[0], jo, ki, ji)
    sch.cache_accumulator(mm, ki)
    sch.unroll(mm, ji)
    text = lines(sch)
    assert "T_matmul.acc = allocate(float32, [3])" in text and "T_matmul.acc_1 = allocate(float32, [2])" in text
    # the remainder's tile in the block of k and the row of the whole tiles, after them
    assert text.count("for k.outer in range(2):") == 1
    assert text.index("for ax1.outer in range(3):") < text.index("T_matmul.acc_1 = allocate(float32, [2])")
    assert "T_matmul.acc_1[ax1.inner_1.load] = T_matmul[ax0 * 11 + 9 + ax1.inner_1.load]" in text
    check(sch)
    plain = Schedule([mm], ins, "g")
    arrays = values(ins, seed=3)
    np.testing.assert_array_equal(run(sch.lower(), arrays)[0], run(plain.lower(), arrays)[0])


def test_split_by_more_than_the_extent_keeps_one_loop():
    ins, out = broadcast()
    sch = Schedule([out], ins, "f")
    sch.split(out, sch[out].axes[1], 16)
    text = lines(sch)
    assert "for ax1.inner in range(7):" in text and not any("ax1.outer in" in t or "if" in t for t in text)
    check(sch)


def test_tile_reorders_outer_then_inner():
    ins, out, mm = matmul(7, 5, 9)
    sch = Schedule([out], ins, "f")
    i, j = sch[mm].axes
    xo, yo, xi, yi = sch.tile(mm, i, j, 2, 4)
    assert [a.name for a in sch[mm].leaf_axes] == [n.name for n in (xo, yo, xi, yi)] + ["k"]
    assert sch.record[-1].args == ("T_matmul: ax0_1, ax1_1 by 2, 4 -> ax0_1.outer, ax1_1.outer, "
                                   "ax0_1.inner, ax1_1.inner")
    assert len(sch.record) == 2
    check(sch)


def test_reorder_reduce_outside_data_initialises_before_the_reduction():
    ins, out, mm = matmul()
    sch = Schedule([out], ins, "f")
    i, j = sch[mm].axes
    (k,) = sch[mm].reduce_axes
    sch.reorder(mm, k, i)
    assert [a.name for a in sch[mm].leaf_axes] == ["k", "ax1_1", "ax0_1"]
    assert sch.record[-1].args == "T_matmul: k, ax0_1 (loops now k, ax1_1, ax0_1)"
    text = lines(sch)
    assert text[2:6] == ["for ax1_1.init in range(6):", "for ax0_1.init in range(5):",
                         "T_matmul[ax0_1.init * 6 + ax1_1.init] = float32(0.0)", "for k in range(7):"]
    check(sch)


def test_split_and_reorder_reduce_loops():
    a = te.placeholder((3, 4, 5), "float32", "a")
    r1, r2 = te.reduce_axis(4, "r1"), te.reduce_axis(5, "r2")
    s = te.compute((3,), lambda i: te.sum(a[i, r1, r2], axis=[r1, r2]), "T_sum")
    sch = Schedule([s], [a], "f")
    r1a, r2a = sch[s].reduce_axes
    o, i = sch.split(s, r2a, 2)
    sch.reorder(s, i, r1a, o)
    sch.reorder(s, i, sch[s].axes[0])  # a data loop inside a reduction loop
    assert [a.name for a in sch[s].leaf_axes] == ["r2.inner", "ax0", "r1", "r2.outer"]
    assert "if r2.outer * 2 + r2.inner < 5:" in lines(sch)
    check(sch)


def test_fuse_and_annotations():
    ins, out = broadcast()
    sch = Schedule([out], ins, "f")
    fused = sch.fuse(out, *sch[out].axes)
    assert (fused.name, fused.extent) == ("ax0.ax1.fused", 35)
    o, i = sch.split(out, fused, 8)
    sch.vectorize(out, i)
    sch.parallel(out, o)
    text = lines(sch)
    assert text[1:4] == ["for ax0.ax1.fused.outer in parallel(5):", "for ax0.ax1.fused.inner in vectorized(8):",
                         "if ax0.ax1.fused.outer * 8 + ax0.ax1.fused.inner < 35:"]
    assert "T_add[ax0.ax1.fused.outer * 8 + ax0.ax1.fused.inner] = " in text[4]
    check(sch)
    sch2 = Schedule([out], ins, "g")
    o2, i2 = sch2.split(out, sch2[out].axes[1], 4)
    sch2.reorder(out, o2, sch2[out].axes[0], i2)
    f2 = sch2.fuse(out, sch2[out].axes[0], i2)
    sch2.unroll(out, o2)
    assert "for ax1.outer in unrolled(2):" in lines(sch2)
    assert "ax0.ax1.inner.fused" in sch2.record[-1].snapshot
    check(sch2)
    assert f2.extent == 20


def test_fuse_of_reduction_axes_and_unroll_of_a_reduction():
    a = te.placeholder((3, 4, 5), "int32", "a")
    r1, r2 = te.reduce_axis(4, "r1"), te.reduce_axis(5, "r2")
    s = te.compute((3,), lambda i: te.max(a[i, r1, r2], axis=[r1, r2]), "T_max")
    sch = Schedule([s], [a], "f")
    f = sch.fuse(s, *sch[s].reduce_axes)
    sch.unroll(s, f)
    assert "T_max[ax0] = int32(-2147483648)" in lines(sch)
    check(sch)


# ---------------------------------------------------------------------- inline and compute_at


def test_compute_inline_substitutes_bodies():
    ins, out, mid = elementwise()
    sch = Schedule([out], ins, "f")
    sch.compute_inline(mid)
    assert sch.record[-1].args == "T_mul"
    assert lines(sch)[-1] == "T_relu[ax0 * 7 + ax1] = max(x[ax0 * 7 + ax1] * float32(2.0) + float32(1.0), float32(0.0))"
    assert "allocate" not in sch.record[-1].snapshot
    check(sch)


def test_inlined_padding_in_a_convolution_reads_only_where_selected():
    ins, out, pad, c = conv()
    sch = Schedule([out], ins, "f")
    sch.compute_inline(pad)
    assert "select(" in sch.record[-1].snapshot
    check(sch)  # the interpreter fails on any out-of-bounds read


def test_compute_at_a_matmul_inside_its_epilogue():
    ins, out, mm = matmul()
    sch = Schedule([out], ins, "f")
    sch.compute_at(mm, out, sch[out].axes[0])
    assert sch.record[-1].args == "T_matmul at T_relu.ax0"
    text = lines(sch)
    assert text[1:3] == ["for ax0 in range(5):", "T_matmul = allocate(float32, [1, 6])"]
    assert "T_relu[ax0 * 6 + ax1] = max(T_matmul[ax1], float32(0.0))" in text
    check(sch)
    sch.compute_at(mm, out, sch[out].axes[1])  # innermost: one element per iteration
    assert "T_matmul = allocate(float32, [1, 1])" in lines(sch)
    check(sch)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_compute_at_padding_region_with_split_consumer(level):
    ins, out, pad, c = conv(1, 2, 5, 7, 3)
    sch = Schedule([out], ins, "f")
    sch.compute_inline(sch.stages[-2].tensor)  # T_add
    sch.compute_at(c, out, sch[out].axes[1])
    n, k, y, x = sch[c].axes
    xo, xi = sch.split(c, x, 3)  # 7 by 3: a guard
    sch.reorder(c, n, k, y, xo, *sch[c].reduce_axes, xi)
    sch.compute_at(pad, c, sch[c].leaf_axes[level + 1])
    check(sch)
    if level == 2:  # the window of x.outer: 3 columns + 2 of halo, clamped into the padded input
        assert "T_pad = allocate(float32, [1, 2, 3, 5])" in lines(sch)
        assert "min(ax3_2.outer * 3, 4)" in sch.record[-1].snapshot


def test_chained_compute_at_and_reduction_at_a_reduction_axis():
    a = te.placeholder((4, 6), "float32", "a")
    b = te.placeholder((6, 5), "float32", "b")
    a2 = te.compute((4, 6), lambda i, j: a[i, j] * a[i, j], "T_sq")
    r = te.reduce_axis(6, "k")
    mm = te.compute((4, 5), lambda i, j: te.sum(a2[i, r] * b[r, j], axis=[r]), "T_mm")
    out = te.compute((4, 5), lambda i, j: mm[i, j] + 1.0, "T_out")
    sch = Schedule([out], [a, b], "f")
    sch.compute_at(mm, out, sch[out].axes[0])
    sch.compute_at(a2, mm, sch[mm].reduce_axes[0])
    assert "T_sq = allocate(float32, [1, 1])" in lines(sch)
    check(sch)


# ---------------------------------------------------------------------- reductions


def test_argmax_first_position_on_ties_and_nan():
    ins, out = argmax(4, 6)
    x = np.array([[1, 3, 3, 0, 2, 3], [5, 5, 5, 5, 5, 5], [0, np.nan, 9, np.nan, 1, 1], [-np.inf] * 6],
                 dtype="float32")
    sch = Schedule([out], ins, "f")
    np.testing.assert_array_equal(check(sch, [x])[0], [1, 0, 1, 0])
    text = sch.record[-1].snapshot
    assert "T_argmax.value = allocate(float32, [1])" in text and "isnan(" in text
    o, i = sch.split(out, sch[out].reduce_axes[0], 4)
    check(sch, [x])


def test_argmin_over_reordered_reduction_axes_compares_indices():
    x = te.placeholder((3, 4, 5), "int32", "x")
    r1, r2 = te.reduce_axis(4, "r1"), te.reduce_axis(5, "r2")
    am = te.compute((3,), lambda i: te.argmin(x[i, r1, r2], [r1, r2], r1 * 5 + r2), "T_argmin")
    sch = Schedule([am], [x], "f")
    data = values([x], ints=True)
    data[0][1] = 2  # all tied: the first position wins
    check(sch, data)
    sch.reorder(am, sch[am].reduce_axes[1], sch[am].reduce_axes[0])
    assert "r1 * 5 + r2 < T_argmin[ax0]" in sch.record[-1].snapshot
    assert check(sch, data)[0][1] == 0
    sch.reorder(am, sch[am].reduce_axes[1], sch[am].axes[0])  # data loop inside: the value is per element
    assert "T_argmin.value = allocate(int32, [3])" in lines(sch)
    check(sch, data)


def test_zero_dim_reduction_and_zero_dim_output():
    a = te.placeholder((3, 4), "float32", "a")
    r1, r2 = te.reduce_axis(3, "i"), te.reduce_axis(4, "j")
    total = te.compute((), lambda: te.sum(a[r1, r2], axis=[r1, r2]), "T_sum")
    scaled = te.compute((), lambda: total[()] * 0.5, "T_scale")
    sch = Schedule([scaled, total], [a], "f")
    assert lines(sch)[-1] == "T_scale[0] = T_sum[0] * float32(0.5)"
    check(sch)
    ds = default_schedule([scaled, total], [a], "g")
    check(ds)


# ---------------------------------------------------------------------- cache_write


def test_cache_write_accumulates_in_a_local_tile():
    ins, out, mm = matmul(6, 5, 8)
    sch = Schedule([mm], ins, "f")
    cache = sch.cache_write(mm)
    assert sch.record[-1].args == "T_matmul -> T_matmul.local"
    i, j = sch[mm].axes
    jo, ji = sch.split(mm, j, 4)
    sch.compute_at(cache, mm, jo)
    text = lines(sch)
    assert "T_matmul.local = allocate(float32, [1, 4])" in text
    assert text[-1] == "T_matmul[ax0 * 8 + ax1.outer * 4 + ax1.inner] = T_matmul.local[ax1.inner]"
    check(sch)


def test_cache_accumulator_keeps_a_tile_across_an_inner_block_of_the_reduction():
    ins, out, mm = matmul(6, 8, 8)
    sch = Schedule([mm], ins, "f")
    i, j = sch[mm].axes
    (k,) = sch[mm].reduce_axes
    ko, ki = sch.split(mm, k, 4)
    jo, ji = sch.split(mm, j, 4)
    sch.reorder(mm, ko, i, jo, ki, ji)  # every tile of the output per block of k
    sch.cache_accumulator(mm, ki)
    sch.unroll(mm, ji)
    assert sch.record[-2].args == "T_matmul at k.inner"
    text = lines(sch)
    assert "T_matmul.acc = allocate(float32, [4])" in text
    # loaded before the block of k, accumulated, stored back after it
    load = text.index("T_matmul.acc[ax1.inner.load] = T_matmul[ax0 * 8 + ax1.outer * 4 + ax1.inner.load]")
    update = text.index("T_matmul.acc[ax1.inner] = T_matmul.acc[ax1.inner] + a[ax0 * 8 + k.outer * 4 + k.inner]"
                        " * b[(k.outer * 4 + k.inner) * 8 + ax1.outer * 4 + ax1.inner]")
    back = text.index("T_matmul[ax0 * 8 + ax1.outer * 4 + ax1.inner.store] = T_matmul.acc[ax1.inner.store]")
    assert text.index("for k.outer in range(2):") < load < update < back
    check(sch)
    # the sums are the very same: each output adds the same terms in the same order
    plain = Schedule([mm], ins, "g")
    arrays = values(ins, seed=3)
    np.testing.assert_array_equal(run(sch.lower(), arrays)[0], run(plain.lower(), arrays)[0])


def test_prefetch_is_a_hint_first_in_its_loop():
    ins, out, mm = matmul(6, 8, 8)
    a, _ = ins
    sch = Schedule([mm], ins, "f")
    i, j = sch[mm].axes
    (k,) = sch[mm].reduce_axes
    sch.reorder(mm, i, k, j)
    row, _ = mm.op.axes
    (rk,) = mm.op.body.axes
    sch.prefetch(mm, k, a, (row + 1) * 8 + rk)  # the next row of a: past a's end at the last
    assert sch.record[-1].args == "a at T_matmul.k"
    text = lines(sch)
    at = text.index("for k in range(8):")
    assert text[at + 1].startswith("prefetch(a[") and text[at + 2] == "for ax1 in range(8):"
    check(sch)  # the interpreter evaluates the index and reads nothing: the same values


def test_prefetch_refuses_what_is_not_an_input_or_an_axis():
    ins, out, mm = matmul(6, 8, 8)
    a, _ = ins
    sch = Schedule([out], ins, "f")
    (k,) = sch[mm].reduce_axes
    with pytest.raises(ScheduleError, match="'T_relu' is not an input of f nor an operand of T_matmul computed whole"):
        sch.prefetch(mm, k, out, te.const(0, te.INDEX))
    with pytest.raises(ScheduleError, match="the index uses ax0, which is not an axis of T_matmul"):
        sch.prefetch(mm, k, a, out.op.axes[0] * 8)
    with pytest.raises(ScheduleError, match="belongs to stage T_relu"):
        sch.prefetch(mm, sch[out].axes[0], a, mm.op.axes[0] * 8)
    sch.prefetch(mm, sch[mm].axes[1], a, mm.op.axes[0] * 8)
    sch.split(mm, sch[mm].axes[1], 4)
    with pytest.raises(ScheduleError, match="prefetch's loop ax1_1 is no longer a loop"):
        sch.lower()


def test_prefetch_may_ask_for_an_operand_computed_whole():
    """A stage's operand that the schedule computes whole before it (a padded copy, here
    the matmul read by relu) has a buffer of its own to ask lines of; one inlined or
    computed at another's loop since has not, and lowering says so."""
    ins, out, mm = matmul(6, 8, 8)
    sch = Schedule([out], ins, "f")
    sch.prefetch(out, sch[out].axes[0], mm, (out.op.axes[0] + 1) * 8)  # the next row of the sums
    assert any(line.strip().startswith("prefetch(T_matmul[") for line in lines(sch))
    check(sch)
    sch.compute_at(mm, out, sch[out].axes[0])
    with pytest.raises(ScheduleError, match="prefetch's T_matmul is no longer computed whole"):
        sch.lower()


def test_prefetch_for_writing_may_ask_for_an_output():
    ins, out, mm = matmul(6, 8, 8)
    sch = Schedule([out], ins, "f")
    (k,) = sch[mm].reduce_axes
    with pytest.raises(ScheduleError, match="'T_relu' is not an input of f nor an operand"):
        sch.prefetch(mm, k, out, mm.op.axes[0] * 8)
    with pytest.raises(ScheduleError, match="'T_matmul' is not an input or output of f"):
        sch.prefetch(out, sch[out].axes[0], mm, out.op.axes[0] * 8, write=True)
    sch.prefetch(mm, sch[mm].axes[0], out, (mm.op.axes[0] + 1) * 8, write=True)  # the next row of the output
    assert sch.record[-1].args.startswith("T_relu for writing at T_matmul.ax0")
    assert any(line.strip().startswith("prefetch_write(T_relu[") for line in lines(sch))
    check(sch)


def test_cache_accumulator_into_its_epilogue_starts_from_zero_and_ends_there():
    """`into`: the first block of k starts the tile at 0 (no initial store, no load), the
    last goes through relu straight into T_relu (no store back, no loop of T_relu's over
    the tile); the sums are the same, in the same order."""
    ins, out, mm = matmul(6, 8, 8)
    sch = Schedule([out], ins, "f")
    i, j = sch[out].axes
    sch.compute_at(mm, out, i)
    (k,) = sch[mm].reduce_axes
    ko, ki = sch.split(mm, k, 4)
    jo, ji = sch.split(mm, sch[mm].axes[1], 4)
    sch.reorder(mm, ko, jo, ki, ji)
    sch.cache_accumulator(mm, ki, into=out)
    sch.unroll(mm, ji)
    assert sch.record[-2].args == "T_matmul at k.inner into T_relu"
    text = lines(sch)
    assert not any("= float32(0.0)" in t and "T_matmul[" in t.split("=")[0] for t in text)
    start = text.index("if k.outer == 0:")
    assert text[start + 2] == "T_matmul.acc[ax1_1.inner.start] = float32(0.0)"
    end = text.index("if k.outer == 1:")
    assert text[end + 2] == ("T_relu[ax0 * 8 + ax1_1.outer * 4 + ax1_1.inner.end] = "
                             "max(T_matmul.acc[ax1_1.inner.end], float32(0.0))")
    assert not any(t.startswith("for ax1 in") for t in text)  # T_relu's own loop over j: gone
    check(sch)
    plain = Schedule([out], ins, "g")
    arrays = values(ins, seed=3)
    np.testing.assert_array_equal(run(sch.lower(), arrays)[0], run(plain.lower(), arrays)[0])


def test_cache_accumulator_into_with_the_whole_reduction_needs_no_buffer():
    """A reduction not split (one iteration outside the tile): the tile starts at 0 and
    ends in the epilogue, and the stage's own buffer is not allocated."""
    ins, out, mm = matmul(6, 8, 8)
    sch = Schedule([out], ins, "f")
    i, j = sch[out].axes
    sch.compute_at(mm, out, i)
    (k,) = sch[mm].reduce_axes
    sch.reorder(mm, k, sch[mm].axes[1])
    sch.cache_accumulator(mm, k, into=out)
    text = lines(sch)
    assert not any("T_matmul = allocate" in t for t in text) and not any(t.strip().startswith("if") for t in text)
    check(sch)


def test_cache_accumulator_into_refuses_what_is_not_its_epilogue():
    ins, out, mm = matmul(6, 8, 8)
    sch = Schedule([out], ins, "f")
    (k,) = sch[mm].reduce_axes
    with pytest.raises(ScheduleError, match="not computed at T_relu"):
        sch.cache_accumulator(mm, k, into=out)
    a, b = ins
    r = te.reduce_axis(8, "k")
    mm = te.compute((8, 8), lambda x, y: te.sum(a[x % 6, r] * b[r, y], axis=[r]), "T_matmul")
    flipped = te.compute((8, 8), lambda x, y: mm[y, x], "T_flip")  # reads it transposed
    sch = Schedule([flipped], ins, "g")
    sch.compute_at(mm, flipped, sch[flipped].axes[0])
    with pytest.raises(ScheduleError, match="must read it at its own positions"):
        sch.cache_accumulator(mm, sch[mm].reduce_axes[0], into=flipped)


def test_cache_accumulator_refuses_what_it_cannot_keep():
    ins, out, mm = matmul(6, 8, 8)
    sch = Schedule([mm], ins, "f")
    with pytest.raises(ScheduleError, match="ax0 is not a reduction loop"):
        sch.cache_accumulator(mm, sch[mm].axes[0])
    (k,) = sch[mm].reduce_axes
    sch.cache_accumulator(mm, k)
    with pytest.raises(ScheduleError, match="split: T_matmul accumulates at k"):
        sch.split(mm, k, 2)
    check(sch)  # at the first reduction loop: the tile of all data loops inside it
    sch = Schedule([mm], ins, "f")
    ko, ki = sch.split(mm, sch[mm].reduce_axes[0], 4)
    jo, ji = sch.split(mm, sch[mm].axes[1], 3)  # 3 does not divide 8: a guard inside k.inner
    sch.reorder(mm, ko, sch[mm].axes[0], jo, ki, ji)
    sch.cache_accumulator(mm, ki)
    with pytest.raises(ScheduleError, match="every split inside it to divide its loop"):
        sch.lower()
    xs, am = argmax()
    sch = Schedule([am], xs, "h")
    with pytest.raises(ScheduleError, match="argmax reduction"):
        sch.cache_accumulator(am, sch[am].reduce_axes[0])


# ---------------------------------------------------------------------- errors


def test_invalid_uses_name_what_is_wrong():
    ins, out, mm = matmul()
    sch = Schedule([out], ins, "f")
    with pytest.raises(ScheduleError, match="cannot inline T_matmul: it is a reduction"):
        sch.compute_inline(mm)
    with pytest.raises(ScheduleError, match="cannot inline T_relu: it is an output"):
        sch.compute_inline(out)
    with pytest.raises(ScheduleError, match="axis k belongs to stage T_matmul, not T_relu"):
        sch.split(out, sch[mm].reduce_axes[0], 2)
    with pytest.raises(ScheduleError, match="is a te.IterVar; use the schedule's axes"):
        sch.split(mm, mm.op.axes[0], 2)
    with pytest.raises(ScheduleError, match="a is an input \\(placeholder\\)"):
        sch[ins[0]]
    with pytest.raises(ScheduleError, match="positive integer"):
        sch.split(mm, sch[mm].axes[0], 0)
    with pytest.raises(ScheduleError, match="parallel: T_matmul.k is a reduction axis"):
        sch.parallel(mm, sch[mm].reduce_axes[0])
    with pytest.raises(ScheduleError, match="cannot fuse data and reduction axes"):
        sch.fuse(mm, sch[mm].axes[1], sch[mm].reduce_axes[0])
    with pytest.raises(ScheduleError, match="not consecutive loops"):
        sch.fuse(mm, sch[mm].axes[0], sch[mm].reduce_axes[0])
    with pytest.raises(ScheduleError, match="T_relu does not read T_relu|computed at itself"):
        sch.compute_at(out, out, sch[out].axes[0])
    with pytest.raises(ScheduleError, match="split: axis ax0_1 belongs to another schedule, not T_matmul"):
        sch.split(mm, Schedule([out], ins, "g")[mm].axes[0], 2)
    with pytest.raises(ScheduleError, match="expected an axis of T_matmul, got 'ax0'"):
        sch.split(mm, "ax0", 2)
    old = sch[mm].axes[0]
    sch.split(mm, old, 2)
    with pytest.raises(ScheduleError, match="axis ax0_1 of T_matmul is no longer a loop .*current loops: "
                                            "ax0_1.outer, ax0_1.inner, ax1_1, k"):
        sch.vectorize(mm, old)


def test_compute_at_errors_and_failed_primitives_change_nothing():
    a = te.placeholder((4,), "float32", "a")
    p = te.compute((4,), lambda i: a[i] + 1.0, "T_p")
    q = te.compute((4,), lambda i: p[i] * 2.0, "T_q")
    r = te.compute((4,), lambda i: p[i] + q[i], "T_r")
    sch = Schedule([r], [a], "f")
    with pytest.raises(ScheduleError, match="cannot compute T_p at T_q: T_p is also read by T_r"):
        sch.compute_at(p, q, sch[q].axes[0])
    with pytest.raises(ScheduleError, match="cannot compute T_r at T_q: T_r is an output"):
        sch.compute_at(r, q, sch[q].axes[0])
    sch.compute_at(q, r, sch[r].axes[0])
    with pytest.raises(ScheduleError, match="T_q is computed at T_r.ax0"):
        sch.split(r, sch[r].axes[0], 2)
    with pytest.raises(ScheduleError, match="cannot inline T_r: it is an output"):
        sch.compute_inline(r)
    assert len(sch.record) == 2 and sch.record[-1].snapshot == ln.print_func(sch.lower())
    assert "T_q = allocate(float32, [1])" in lines(sch)
    check(sch)
    s = te.compute((4,), lambda i: q[i] - 1.0, "T_s")
    sch = Schedule([s], [a], "g")
    sch.compute_at(p, q, sch[q].axes[0])
    with pytest.raises(ScheduleError, match="cannot inline T_q: T_p is computed at T_q.ax0_1"):
        sch.compute_inline(q)
    check(sch)


def test_a_body_with_a_foreign_axis_is_refused():
    a = te.placeholder((4,), "float32", "a")
    p = te.compute((4,), lambda i: a[i] + 1.0, "T_p")
    q = te.compute((4,), lambda i: a[i] + te.cast(p.op.axes[0], "float32"), "T_q")
    with pytest.raises(ScheduleError, match="T_q: its body uses ax0, which is not one of its axes"):
        Schedule([q], [a], "f")
    with pytest.raises(ScheduleError, match="placeholder a is read but not among the inputs"):
        Schedule([p], [], "f")
    with pytest.raises(ScheduleError, match="T_p is output twice"):
        Schedule([p, p], [a], "f")


# ---------------------------------------------------------------------- default schedules


def softmax(rows=3, cols=5):
    x = te.placeholder((rows, cols), "float32", "x")
    k1, k2 = te.reduce_axis(cols, "k"), te.reduce_axis(cols, "k")
    mx = te.compute((rows,), lambda i: te.max(x[i, k1], axis=[k1]), "T_max")
    ex = te.compute((rows, cols), lambda i, j: te.exp(x[i, j] - mx[i]), "T_exp")
    sm = te.compute((rows,), lambda i: te.sum(ex[i, k2], axis=[k2]), "T_sum")
    return [x], te.compute((rows, cols), lambda i, j: ex[i, j] / sm[i], "T_div")


def dense(m, n, k, tag="nn.dense"):
    a = te.placeholder((m, k), "float32", "a")
    w = te.placeholder((n, k), "float32", "w")
    r = te.reduce_axis(k, "k")
    return [a, w], te.compute((m, n), lambda i, j: te.sum(a[i, r] * w[j, r], axis=[r]), "T_dense", tag=tag)


def batch_matmul(b, m, n, k):
    x = te.placeholder((b, m, k), "float32", "x")
    y = te.placeholder((b, n, k), "float32", "y")
    r = te.reduce_axis(k, "k")
    return [x, y], te.compute((b, m, n), lambda s, i, j: te.sum(x[s, i, r] * y[s, j, r], axis=[r]),
                              "T_batch_matmul", tag="nn.batch_matmul")


def _default(ins, outs):
    sch = default_schedule(outs, ins, "fused")
    check(sch)
    return sch, sch.record[-1].snapshot


def _default_text(ins, outs) -> str:
    """The default schedule's last text, not run: for shapes too large for the loop-nest
    interpreter (a fork decision needs 2^19 multiply-adds: minutes in Python)."""
    return default_schedule(outs, ins, "fused").record[-1].snapshot


@pytest.mark.parametrize("shape", [(3, 5, 7), (1,), (1, 1), (2, 1, 3), (4, 33)])
def test_default_injective_inlines_and_vectorizes(shape):
    ins, out, _ = elementwise(shape)
    sch, text = _default(ins, [out])
    assert "allocate" not in text and "parallel" not in text
    if np.prod(shape) > 1:
        assert "vectorized(" in text


def test_default_injective_inner_loop_and_parallel_outer():
    ins, out = broadcast()
    sch, text = _default(ins, [out])
    assert [line.split(" in ")[1] for line in lines(sch) if line.startswith("for")] == ["vectorized(35):"]
    x = te.placeholder((128, 131), "float32", "x")
    b = te.placeholder((131,), "float32", "b")
    y = te.compute((128, 131), lambda i, j: x[i, j] - b[j], "T_sub")
    sch, text = _default([x, b], [y])
    assert lines(sch)[1:3] == ["for ax0 in parallel(128):", "for ax1 in vectorized(131):"]


def test_default_injective_inner_loop_a_contiguous_run():
    """Heads merged back, (4, 8, 32) -> (8, 128) (schedule/runs.py; GPT-2's are (12, 128,
    64) -> (128, 768)): the row read a head's 32 at a time, each run one contiguous
    vector, not 128 lanes gathered."""
    x = te.placeholder((4, 8, 32), "float32", "x")
    y = te.compute((8, 128), lambda i, j: x[j // 32, i, j % 32], "T_merge")
    sch, text = _default([x], [y])
    assert lines(sch)[1:3] == ["for ax0.ax1.outer.fused in range(32):", "for ax1.inner in vectorized(32):"]
    assert "x[(ax0.ax1.outer.fused % 4 * 8 + ax0.ax1.outer.fused // 4) * 32 + ax1.inner]" in text
    z = te.compute((8, 128), lambda i, j: x[j // 32, i, (j + 1) % 32], "T_shifted")  # j not only divided
    sch, text = _default([x], [z])
    assert lines(sch)[2] == "for ax1 in vectorized(128):"


@pytest.mark.parametrize("n, loops", [(20000, ["parallel(4):", "vectorized(5000):"]),
                                      (16411, ["parallel(5):", "vectorized(4096):"])])
def test_default_injective_long_loop_in_parallel_chunks(n, loops):
    x = te.placeholder((n,), "int8", "x")
    y = te.compute((n,), lambda i: x[i] * te.const(3, "int8"), "T_mul")
    sch, text = _default([x], [y])
    assert [line.split(" in ")[1] for line in lines(sch) if line.startswith("for")] == loops
    assert ("if " in text) == (n == 16411)  # 16411 is prime: the last chunk is guarded


def test_default_zero_dim_and_multiple_outputs():
    x = te.placeholder((2, 3), "float32", "x")
    c = te.compute((), lambda: te.const(2.0, "float32"), "T_const")
    e = te.compute((2, 3), lambda i, j: te.exp(x[i, j]), "T_exp")
    y = te.compute((2, 3), lambda i, j: e[i, j] * c[()], "T_mul")
    z = te.compute((), lambda: x[1, 2] + c[()], "T_add")
    sch, text = _default([x], [y, z, e])
    assert "T_add[0] = x[5] + float32(2.0)" in lines(sch) and "T_const" not in text


def test_default_reduction_and_argmax():
    a = te.placeholder((3, 5, 4), "float32", "a")
    sq = te.compute((3, 5, 4), lambda i, j, k: a[i, j, k] * a[i, j, k], "T_sq")
    r = te.reduce_axis(5, "r")
    s = te.compute((3, 1, 4), lambda i, o, k: te.sum(sq[i, r, k], axis=[r]), "T_sum")
    mean = te.compute((3, 1, 4), lambda *i: s[i] / 5.0, "T_mean")
    sch, text = _default([a], [mean])
    assert "for ax0_1.ax1_1.ax2_1.fused in range(12):" in lines(sch)
    ins, am = argmax(5, 9)
    _default(ins, [am])
    big = te.placeholder((64, 300), "float32", "big")
    r2 = te.reduce_axis(300, "r")
    tot = te.compute((64,), lambda i: te.sum(big[i, r2], axis=[r2]), "T_sum")
    sch = default_schedule([tot], [big], "f")
    assert lines(sch)[1] == "for ax0 in parallel(64):"


def test_default_softmax_keeps_the_exponential_once():
    ins, out = softmax()
    sch, text = _default(ins, [out])
    assert "T_exp = allocate(float32, [3, 5])" in lines(sch)
    assert text.count("exp(") == 1


def test_default_row_reductions_run_in_vector_lanes():
    ins, out = softmax(rows=3, cols=64)
    sch, text = _default(ins, [out])
    assert "T_max.rf = allocate(float32, [1, 16])" in lines(sch) and "T_sum.rf = allocate(float32, [1, 16])" in text
    # a row at a time (row_reduce.schedule_row_group; 3 rows: no group of them): its
    # exponentials for the sum and the division
    assert lines(sch)[1:3] == ["for ax0 in range(3):", "T_exp = allocate(float32, [1, 64])"]
    assert "T_sum.rf[ax1_1] = T_sum.rf[ax1_1] + T_exp[k.outer * 16 + ax1_1]" in lines(sch)
    assert "T_div[ax0 * 64 + ax1] = T_exp[ax1] / T_sum[0]" in lines(sch)
    assert "for k.lane in unrolled(16):" in lines(sch)
    x = sch.inputs[0]
    nan = values([x])[0]
    nan[2, 40] = np.nan
    got = check(sch, [nan])[0]
    assert np.isnan(got[2]).all() and not np.isnan(got[[0, 1]]).any()
    short = te.placeholder((4, 24), "float32", "x")  # fewer than 2 vectors a row: a scalar loop
    r = te.reduce_axis(24, "k")
    sch, text = _default([short], [te.compute((4,), lambda i: te.max(short[i, r], axis=[r]), "T_max")])
    assert ".rf" not in text


@pytest.mark.parametrize("rows", [16, 6])
def test_default_row_group_computes_rows_together(rows):
    """Rows of a row group in groups (row_reduce.rows_together): each step of a row
    reduction updates every row of the group (independent chains side by side), each
    stage covers the group, and the output's loop runs over the groups."""
    together = 2 if rows == 6 else {AVX512: 8, AVX2: 2}.get(host_unit(), 1)
    if together == 1:
        pytest.skip("the host keeps one row at a time")
    ins, out = softmax(rows=rows, cols=64)
    sch, text = _default(ins, [out])
    assert lines(sch)[1:3] == [f"for ax0.outer in range({rows // together}):",
                               f"T_exp = allocate(float32, [{together}, 64])"]
    assert f"T_max.rf = allocate(float32, [{together}, 16])" in lines(sch)
    body = lines(sch)
    k = body.index("for k.outer_1 in range(4):")
    assert body[k + 1].startswith("for ax0_") and body[k + 1].endswith(f"in unrolled({together}):")
    assert body[-3:-1] == [f"for ax0.inner in unrolled({together}):", "for ax1 in vectorized(64):"]
    e = next(i for i, line in enumerate(body) if line.startswith("T_exp["))  # a vector of each row in turn
    assert re.fullmatch(r"for ax1_\d+\.outer in range\(4\):", body[e - 3])
    assert body[e - 2].endswith(f"in unrolled({together}):") and body[e - 1].endswith("in vectorized(16):")
    x = sch.inputs[0]
    special = values([x])[0]
    special[1, 40] = np.nan
    special[2, :] = -np.inf
    special[3, 1:] = -np.inf
    got = check(sch, [special])[0]
    assert np.isnan(got[[1, 2]]).all() and not np.isnan(np.delete(got, [1, 2], axis=0)).any()
    np.testing.assert_allclose(got[3], np.eye(64)[0], atol=0)


def test_rows_together_by_vector_unit():
    """As many rows as a quarter of the vector registers holds row accumulators (a
    power of two dividing the rows), in 16 KiB at most."""
    x = te.placeholder((128, 128), "float32", "x")
    assert [rows_together(x, unit) for unit in (AVX512, AVX2, SSE)] == [8, 2, 1]
    assert rows_together(te.placeholder((12, 128), "float32", "x"), AVX512) == 4
    assert rows_together(te.placeholder((8, 2048), "float32", "x"), AVX512) == 2  # 16 KiB of rows at most
    assert rows_together(te.placeholder((8, 4096), "float32", "x"), AVX512) == 1
    assert rows_together(te.placeholder((7, 64), "float32", "x"), AVX512) == 1


@pytest.mark.parametrize("n, c, h, w, k", [(1, 3, 7, 9, 5), (2, 2, 1, 1, 1), (1, 1, 5, 20, 2)])
def test_default_convolution_with_epilogue(n, c, h, w, k):
    ins, out, pad, cv = conv(n, c, h, w, k)
    sch, text = _default(ins, [out])
    assert "T_pad = allocate(" in text  # kept: the padded input read by the tile
    assert "T_conv2d = allocate(float32, [1, 1, " in text  # a tile, computed at the epilogue's loop
    if (h, w) == (7, 9):
        assert [s.primitive for s in sch.record] == [
            "create_schedule", "compute_inline", "fuse", "fuse", "vectorize",  # T_add inlined; T_pad
            "split", "split", "reorder", "unroll", "vectorize",  # the convolution's tile
            "split", "split", "reorder", "unroll", "vectorize", "fuse", "compute_at"]  # the epilogue's
        assert sch.record[-1].args == "T_conv2d at T_relu.ax0.ax1.ax2.outer.ax3.outer.fused"
        assert sch.record[7].args == ("T_conv2d: ax0_2, ax1_2, ax2_2.outer, ax3_2.outer, rc, ry, rx, "
                                      "ax2_2.inner, ax3_2.inner")
        assert "for ax2_2.inner in unrolled(4):" in lines(sch) and "for ax3_2.inner in vectorized(9):" in lines(sch)


def test_default_anchor_without_epilogue_uses_a_cache():
    ins, out, pad, cv = conv(1, 1, 5, 17, 2, bias=False)
    sch, text = _default(ins, [out])
    assert "T_conv2d.local = allocate(float32, [1, 1, 4, 16])" in lines(sch)
    relu = te.compute(cv.shape, lambda *i: te.maximum(cv[i], 0.0), "T_relu")
    _default(ins, [cv, relu])  # the convolution is an output and read by the other one


@pytest.mark.parametrize("m, n, k", [(5, 6, 7), (1, 1, 3), (9, 33, 2)])
def test_default_dense_and_batch_matmul(m, n, k):
    ins, out = dense(m, n, k)
    _default(ins, [out])
    ins, out = batch_matmul(2, m, n, k)
    _default(ins, [out])


@pytest.mark.parametrize("equation, shapes, out_shape, copied", [
    ("bhqk,bkhd->bqhd", [(1, 2, 7, 5), (1, 5, 2, 32)], (1, 7, 2, 32), None),  # attention's values
    ("bqhd,bkhd->bhqk", [(1, 16, 2, 5), (1, 16, 2, 5)], (1, 2, 16, 16), (1, 2, 5, 16)),  # its scores
])
def test_an_einsum_that_is_a_batched_matmul_takes_batch_matmuls_tile(equation, shapes, out_shape, copied):
    """batch_matmul.py `_roles`: an einsum of two operands over one label, the output's
    last axis j read along by one operand, takes the register tile of rows x a strip of j
    summed in registers (it took defaults.py's 4 x 16 tile over h and d: attention's values
    4x the time), its batch axes (b, h) fused and parallel; te/topi/einsum.py: an operand
    that holds j before its last axis, the summed one (the scores' keys), is read through
    a copy with j last (it took the lane sums); check() runs the loop nests against the
    computes."""
    import relaylens.compiler.lower.te.topi  # noqa: F401  (registers the compute rules)
    from relaylens.compiler.ir.types import TensorType
    from relaylens.compiler.ops import get_op

    ins = [te.placeholder(s, "float32", f"p{k}") for k, s in enumerate(shapes)]
    rule = get_op("einsum")
    out = rule.compute(tuple(ins), rule.normalize_attrs({"equation": equation}), TensorType(out_shape, "float32"))
    sch, _ = _default(ins, [out])
    body = lines(sch)
    steps = [f"{s.primitive}({s.args})" for s in sch.record]
    assert any(s.startswith("cache_accumulator(T_einsum at ") for s in steps), steps
    assert any(s.startswith("split(T_einsum: ") and " by 6 with a tail " in s for s in steps), steps
    assert not any(".rf" in line for line in body)
    if copied is None:
        assert "T_einsum_operand" not in sch.record[-1].snapshot
    else:
        assert f"T_einsum_operand = allocate(float32, {list(copied)})" in body


@pytest.mark.parametrize("equation, shapes, copied", [
    ("bqhd,bkhd->bhqk", [(1, 128, 12, 64), (1, 128, 12, 64)], 1),  # the keys, k last
    ("ij,kj->ik", [(32, 64), (48, 64)], 1),
    ("ij,kj->ik", [(1, 64), (48, 64)], None),  # one row: the copy would move the matrix twice
    ("ij,kj->ik", [(32, 64), (40, 64)], None),  # k not a multiple of COPY_MIN
    ("bhqk,bkhd->bqhd", [(1, 12, 128, 128), (1, 128, 12, 64)], None),  # d is the values' last axis
    ("ij,jk->ik", [(32, 64), (64, 48)], None),
])
def test_an_einsum_copies_the_operand_it_would_read_across_the_outputs_vectors(equation, shapes, copied):
    """te/topi/einsum.py `_along_output`: which operand, if any, is read through a copy with
    the output's last label moved last."""
    from relaylens.compiler.lower.te.topi.einsum import _along_output
    from relaylens.compiler.ops.einsum_geometry import einsum_plan

    xs = tuple(te.placeholder(s, "float32", f"p{k}") for k, s in enumerate(shapes))
    assert _along_output(einsum_plan(equation, shapes), xs) == copied


def test_default_dense_tile_is_parallel_when_large():
    ins, out = dense(64, 64, 32)
    sch = default_schedule([out], ins, "f")
    text = lines(sch)
    assert text[1] == "for ax0.outer.ax1.outer.fused in parallel(64):"
    assert "T_dense.local = allocate(float32, [4, 16])" in text
    assert "for k in range(32):" in text


# ---------------------------------------------------------------------- record and index tidying


def test_failed_primitive_is_undone_and_old_snapshots_stay():
    ins, out, mm = matmul()
    sch = Schedule([out], ins, "f")
    i, j = sch[mm].axes
    first = sch.record[0].snapshot
    with pytest.raises(ScheduleError, match="axis ax0_1 of T_matmul is no longer a loop"):
        sch.tile(mm, i, i, 2, 2)  # the first split happens, then the second fails
    assert sch[mm].leaf_axes == (i, j, sch[mm].reduce_axes[0]) and len(sch.record) == 1
    sch.split(mm, j, 4)
    sch.compute_at(mm, out, sch[out].axes[0])
    assert sch.record[0].snapshot == first and "allocate(float32, [5, 6])" in first
    assert "T_matmul = allocate(float32, [1, 6])" in sch.record[2].snapshot
    assert "ax1_1.outer" in sch.record[1].snapshot and "[1, 6]" not in sch.record[1].snapshot
    assert sch.record_text().count("# step ") == 3


def test_indices_are_tidied_with_loop_bounds():
    a = te.placeholder((5,), "float32", "a")
    y = te.compute((5,), lambda i: a[te.minimum(i, 2)] + a[te.maximum(i, 0)] + a[te.minimum(i, 9) // 5]
                   + a[te.maximum(i, 4) - 4] + a[te.maximum(i, 2) - 2], "T_y")
    sch = Schedule([y], [a], "f")
    assert lines(sch)[-1] == "T_y[ax0] = a[min(ax0, 2)] + a[ax0] + a[0] + a[0] + a[max(ax0, 2) - 2]"
    check(sch)


def test_a_fused_loop_flattened_again_is_the_loop_even_through_a_bounded_quotient():
    from relaylens.compiler.lower.te.arith import tidy

    f = te.Var("f")
    # (n, c, y) fused, n of extent 1: n = f // 56 // 64 is 0, c = f // 56 % 64 is f // 56
    flat = (f // 56 // 64 * 64 + f // 56 % 64) * 56 + f % 56
    assert tidy(flat, {id(f): 64 * 56}) is f


def test_a_flattened_position_read_through_rows_and_columns_is_the_position():
    from relaylens.compiler.lower.te.arith import tidy

    b, p, t, u = te.Var("b"), te.Var("p"), te.Var("t"), te.Var("u")
    extents = {id(b): 4, id(p): 112, id(t): 37, id(u): 1000}
    # conv_chunks.py's flat tile: position p of a buffer of 2 rows x 56 columns, block b
    assert ln.print_expr(tidy((b * 2 + p // 56) * 56 + p % 56, extents)) == "b * 112 + p"  # the constant factors as one (arith.py `scale_once`)
    # the same through a tile's own sum (t * 3 + 1), and with the row term alone
    q = t * 3 + 1
    assert ln.print_expr(tidy((b * 2 + q // 56) * 56 + q % 56, extents)) == "b * 112 + t * 3 + 1"
    assert tidy((p // 56) * 56 + p % 56, extents) is p
    # another divisor, or another dividend, is left as it is
    assert ln.print_expr(tidy((b * 2 + p // 56) * 28 + p % 28, extents)) == "(b * 2 + p // 56) * 28 + p % 28"
    assert ln.print_expr(tidy((b * 2 + u // 56) * 56 + p % 56, extents)) == "(b * 2 + u // 56) * 56 + p % 56"


def test_a_quotient_by_a_multiple_of_the_scaled_terms_drops_the_bounded_rest():
    from relaylens.compiler.lower.te.arith import tidy

    f, j, g = te.Var("f"), te.Var("j"), te.Var("g")
    extents = {id(f): 96, id(j): 128, id(g): 768}
    # a transpose's flattened index read back: (f*128 + j) // 8192 is f // 64 for j < 128
    assert ln.print_expr(tidy((f * 128 + j) // 8192, extents)) == "f // 64"
    assert ln.print_expr(tidy((f * 128 + j) % 8192, extents)) == "f % 64 * 128 + j"
    assert ln.print_expr(tidy((j * 12 + g // 64) // 24, extents)) == "j // 2"
    # the rest may reach g: nothing to take out
    assert ln.print_expr(tidy((f * 128 + g) // 8192, extents)) == "(f * 128 + g) // 8192"
    x = te.placeholder((4, 6, 8), "float32", "x")  # transpose (2, 0, 1) of x, read flat
    t = te.compute((8, 24), lambda i, k: x[(i * 24 + k) // 48, (i * 24 + k) // 8 % 6, (i * 24 + k) % 8], "T_t")
    check(Schedule([t], [x], "f"))


def test_a_rule_result_is_tidied_again():
    """GPT-2's keys transposed between reshapes, (1, 128, 768) -> (12, 64, 128): a
    division's result divides again, a remainder's result is bounded again, so each
    element reads t * 768 + h * 64 + d, not divisions by 512 and 12 (a scalar division a
    lane in the kernel: 4.7x its time)."""
    from relaylens.compiler.lower.te.arith import tidy

    f, d, j = te.Var("f"), te.Var("d"), te.Var("j")
    extents = {id(f): 96, id(d): 64, id(j): 16}
    head = ((f // 8 * 64 + d) * 8 + f % 8) // 512
    assert ln.print_expr(tidy(head, extents)) == "f // 8"
    assert ln.print_expr(tidy((f % 8 * 16 + j) % 128, extents)) == "f % 8 * 16 + j"
    t = f % 8 * 16 + j
    flat = (t * 12 + head) // 12 * 768 + (t * 12 + head) % 12 * 64 + d
    assert ln.print_expr(tidy(flat, extents)) == "(f % 8 * 16 + j) * 768 + f // 8 * 64 + d"


def test_shared_compute_at_checks_that_every_reader_stays_in_the_region():
    x = te.placeholder((4, 8), "float32", "x")
    p = te.compute((4, 8), lambda i, j: x[i, j] * 2.0, "T_p")
    for flip, ok in ((lambda i, j: (i, 7 - j), True), (lambda i, j: (3 - i, j), False)):
        q = te.compute((4, 8), lambda i, j: p[flip(i, j)] + 1.0, "T_q")
        out = te.compute((4, 8), lambda i, j: p[i, j] + q[i, j], "T_out")
        sch = Schedule([out], [x], "f")
        with pytest.raises(ScheduleError, match="T_p is also read by T_q"):
            sch.compute_at(p, out, sch[out].axes[0])
        sch.compute_at(q, out, sch[out].axes[0])
        sch.compute_at(p, out, sch[out].axes[0], shared=True)
        if ok:
            assert "T_p = allocate(float32, [1, 8])" in lines(sch)
            check(sch)
        else:  # q reads another row than the one computed
            with pytest.raises(ScheduleError, match="a read of it .* may fall outside the region"):
                sch.lower()
    sch = Schedule([out], [x], "g")
    sch.compute_at(p, out, sch[out].axes[0], shared=True)  # q is computed outside the loop
    with pytest.raises(ScheduleError, match="T_p is computed at T_out but read by T_q, T_out"):
        sch.lower()


def test_default_transpose_reads_blocks_of_input_rows():
    x = te.placeholder((2, 32, 24), "float32", "x")
    t = te.compute((2, 24, 32), lambda b, j, i: x[b, i, j] + 1.0, "T_transpose")
    sch, text = _default([x], [t])
    assert [line for line in lines(sch) if line.startswith("for")] == [
        "for ax0.ax2.outer.fused in range(4):", "for ax1 in range(24):", "for ax2.inner in vectorized(16):"]
    x = te.placeholder((32, 24), "float32", "x")  # rows of 24: each element of a row 24 apart
    t = te.compute((24, 40), lambda j, i: x[i % 32, j], "T_wrap")  # not affine along i: left alone
    sch, text = _default([x], [t])
    assert "outer" not in text
    t = te.compute((24, 32), lambda j, i: x[i, j], "T_t")
    sch, text = _default([x], [t])
    assert "for ax1.inner in vectorized(16):" in lines(sch)


def test_default_empty_and_bool_tensors():
    ins, out, _ = elementwise((0, 3))
    _default(ins, [out])
    x = te.placeholder((3, 70), "int32", "x")
    r = te.reduce_axis(70, "k")
    pos = te.compute((3, 70), lambda i, j: te.gt(x[i, j], 0), "T_greater")
    anyp = te.compute((3,), lambda i: te.max(pos[i, r], axis=[r]), "T_any")
    sch, text = _default([x], [pos, anyp])
    assert "T_any[ax0] = False" in lines(sch)


def _op_compute(name: str, shapes, attrs, out_shape):
    """The compute rule of op `name` on placeholders of `shapes` (float32)."""
    import relaylens.compiler.lower.te.topi  # noqa: F401  (registers the compute rules)
    from relaylens.compiler.ir.types import TensorType
    from relaylens.compiler.ops import get_op

    ins = [te.placeholder(s, "float32", f"p{k}") for k, s in enumerate(shapes)]
    rule = get_op(name)
    return ins, rule.compute(*ins, rule.normalize_attrs(attrs), TensorType(out_shape, "float32"))


def test_a_reblocking_layout_transform_reads_each_block_as_vectors():
    """NCHW16c to NCHW12c: the 12 lanes of a result block alone in the vector loop, read
    at consecutive lanes of one or two source blocks (no division of the lane index)."""
    ins, out = _op_compute("layout_transform", [(1, 3, 2, 5, 16)],
                           {"src_layout": "NCHW16c", "dst_layout": "NCHW12c"}, (1, 4, 2, 5, 12))
    sch, text = _default(ins, [out])
    inner = lines(sch)[-2:]
    assert inner[0] == "for ax4 in vectorized(12):" and "ax4 //" not in inner[1] and "ax4 %" not in inner[1]
    assert "for ax1.inner in unrolled(4):" in lines(sch)  # 4 blocks of 12 cover 3 of 16: unrolled


def test_a_strided_max_pool_reads_its_rows_by_phases_computed_per_output_row():
    ins, out = _op_compute("nn.max_pool2d", [(1, 2, 8, 32)],
                           {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)}, (1, 2, 4, 16))
    sch, text = _default(ins, [out])
    body = lines(sch)
    assert body[1].startswith("for ax0.ax1.ax2.fused in range(8)")  # a loop per output row
    assert "T_phases = allocate(float32, [1, 1, 3, 2, 16])" in body  # the 3 input rows it reads, 2 phases
    assert "for rv0 in unrolled(3):" in body and "for rv1 in unrolled(3):" in body
    update = [line for line in body if line.startswith("T_max_pool2d[") and "max(" in line]
    assert update and all("T_phases[" in line and "p0[" not in line for line in update)


def test_packing_into_blocks_vectorizes_the_row_with_the_lanes_unrolled_inside():
    """NCHW to NCHW3c (a model's input before its first NCHWc convolution): each lane reads
    a row of its own channel plane as vectors, instead of a gather per lane."""
    ins, out = _op_compute("layout_transform", [(1, 6, 4, 20)],
                           {"src_layout": "NCHW", "dst_layout": "NCHW3c"}, (1, 2, 4, 20, 3))
    sch, text = _default(ins, [out])
    assert lines(sch)[-3:-1] == ["for ax3 in vectorized(20):", "for ax4 in unrolled(3):"]


def test_packing_a_long_power_of_two_row_vectorizes_it_by_eights():
    """NCHW to NCHW8c with rows of 64: vectors of 8 lanes of the row, its 8 channels
    unrolled inside (a <64 x float> a channel, shuffled together, made O3 take 1.7 s)."""
    ins, out = _op_compute("layout_transform", [(1, 16, 2, 64)],
                           {"src_layout": "NCHW", "dst_layout": "NCHW8c"}, (1, 2, 2, 64, 8))
    sch, text = _default(ins, [out])
    assert lines(sch)[-3:-1] == ["for ax3.inner in vectorized(8):", "for ax4 in unrolled(8):"]


@pytest.mark.parametrize("blocks, block, rows, width", [(2, 8, 3, 5), (1, 16, 2, 16)])
def test_unblocking_runs_a_blocks_channels_inside_each_row(blocks, block, rows, width):
    """NCHW8c to NCHW (a model's output after NCHWc convolutions): the block's channels
    unrolled inside the vectorized row, so a row of x is read whole for all of them (an
    interleaved load LLVM turns into wide loads and shuffles) instead of a gather per
    channel that comes back to x's lines a plane later."""
    ins, out = _op_compute("layout_transform", [(1, blocks, rows, width, block)],
                           {"src_layout": f"NCHW{block}c", "dst_layout": "NCHW"}, (1, blocks * block, rows, width))
    sch, text = _default(ins, [out])
    assert lines(sch)[-3:-1] == [f"for ax3 in vectorized({width}):", f"for ax1.inner in unrolled({block}):"]


@pytest.mark.parametrize("block, width, split", [(16, 64, True), (16, 32, True), (8, 64, True), (8, 128, False),
                                                  (4, 64, False)])
def test_unblocking_a_wide_row_of_many_channels_vectorizes_it_by_sixteens(block, width, split):
    """NCHW16c to NCHW with rows of 64 (stop 30's detector's output): the whole row as one
    vector a channel, 16 of them from a 1,024-float interleaved group, took O3 10.5 s on
    the AVX-512 host (rows of 32: 1.1 s; 8c rows of 64: 0.8 s); by vectors of 16 lanes,
    0.13 s, as fast.  A row longer than 64 is not made one vector (a loop stays for LLVM's
    vectoriser), nor a small group."""
    ins, out = _op_compute("layout_transform", [(1, 2, 3, width, block)],
                           {"src_layout": f"NCHW{block}c", "dst_layout": "NCHW"}, (1, 2 * block, 3, width))
    sch, text = _default(ins, [out])
    row = "for ax3.inner in vectorized(16):" if split else f"for ax3 in vectorized({width}):"
    assert lines(sch)[-3:-1] == [row, f"for ax1.inner in unrolled({block}):"]


def test_a_global_pool_sums_a_few_channels_side_by_side_inside_the_window():
    ins, out = _op_compute("nn.global_avg_pool2d", [(1, 64, 7, 7)], {}, (1, 64, 1, 1))
    sch, text = _default(ins, [out])
    body = lines(sch)
    window = body.index("for rv1 in range(7):")
    assert body[window - 1] == "for rv0 in range(7):" and body[window + 1].startswith("for ") \
        and body[window + 1].endswith("in unrolled(4):")


@pytest.mark.parametrize("channels, parallel", [(2048, False), (16384, True)])
def test_a_global_pool_forks_only_for_the_work_a_fork_is_worth(channels, parallel):
    """ResNet-50's global pool (2048 channels of 7x7: 100,352 additions, a few
    microseconds) runs on the calling thread; from conv_tile_end.FORK_MIN it forks.  (The
    pool's loops are checked against te_eval on 64 channels above.)"""
    ins, out = _op_compute("nn.global_avg_pool2d", [(1, channels, 7, 7)], {}, (1, channels, 1, 1))
    text = _default_text(ins, [out])
    assert ("parallel" in text) == parallel


@pytest.mark.parametrize("blocks, parallel", [(160, False), (8192, True)])
def test_a_blocked_global_pool_forks_only_for_the_work_a_fork_is_worth(blocks, parallel):
    """MobileNet v2's global pool in NCHW8c (1x160x7x7x8, a pooling window with lanes:
    62,720 additions) runs on the calling thread, as the NCHW one does; from
    conv_tile_end.FORK_MIN it forks."""
    assert (blocks * 8 * 49 >= FORK_MIN) == parallel
    ins, out = _op_compute("nn.global_avg_pool2d", [(1, blocks, 7, 7, 8)], {"layout": "NCHW8c"}, (1, blocks, 1, 1, 8))
    text = _default_text(ins, [out])
    assert ("parallel" in text) == parallel


def test_a_product_with_a_quotient_on_the_right_keeps_its_parentheses():
    """x * (1 / s) (nn.fast_softmax's normalisation) is not (x * 1) / s."""
    x, s = te.Var("x", "float32"), te.Var("s", "float32")
    assert ln.print_expr(x * (1.0 / s)) == "x * (float32(1.0) / s)"
    assert ln.print_expr(x * 2.0 / s) == "x * float32(2.0) / s"


TWO_ANCHORS = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 27, 19, 19), float32], %w1: Tensor[(13, 27, 1, 1), float32],
          %w2: Tensor[(27, 13, 1, 1), float32], %mean: Tensor[(13), float32], %var: Tensor[(13), float32]) {
  %0 = fn (%a: Tensor[(3, 27, 19, 19), float32], %b: Tensor[(13, 27, 1, 1), float32],
           %c: Tensor[(27, 13, 1, 1), float32], %m: Tensor[(13), float32], %v: Tensor[(13), float32], Primitive=1) {
    %1 = nn.conv2d(%a, %b, channels=13, kernel_size=[1, 1]);
    %2 = nn.batch_norm(%1, %v, %m, %m, %v);
    nn.conv2d(%2.0, %c, channels=27, kernel_size=[1, 1])
  };
  %0(%x, %w1, %w2, %mean, %var)
}
"""


def test_a_primitive_function_with_two_convolutions_schedules_and_runs():
    """A hand-written (or BYOC-partitioned) primitive function holding two anchors: the
    second convolution's schedule takes the batch norm between them as its input, so the
    first must not take it again as its epilogue (it did: 'split: axis ... of T_batch_norm
    is no longer a loop')."""
    from relaylens.compiler.driver import compile
    from relaylens.compiler.interpreter import Interpreter

    built = compile(TWO_ANCHORS, "two.relay", passes=["InferType"], strict=True)
    assert built.executable is not None, [d.message for d in built.diagnostics]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(shape).astype("float32")
            for shape in ((3, 27, 19, 19), (13, 27, 1, 1), (27, 13, 1, 1), (13,), (13,))]
    args[4] = np.abs(args[4]) + 0.5  # a variance
    want = Interpreter(built.snapshots[0].module).call("main", args)
    np.testing.assert_allclose(built.executable.run(*args), np.asarray(want), rtol=1e-4, atol=1e-4)


def test_a_transposed_convolution_by_phases_unrolls_its_taps_over_channels_inside_rows():
    """conv_transpose.py, interleave.py: the 4x4 stride-2 phases' sum loops over the input
    channels with the 2 x 2 taps unrolled inside, reading the padded input whose channels lie
    inside its rows (n, y, c, x); the interpreter's result equals the compute's."""
    ins, out = _op_compute("nn.conv2d_transpose", [(1, 8, 9, 6), (8, 6, 4, 4)],
                           {"channels": 6, "kernel_size": (4, 4), "strides": (2, 2), "padding": (1, 1)},
                           (1, 6, 18, 12))
    sch, text = _default(ins, [out])
    body = lines(sch)
    assert "T_pad_phases = allocate(float32, [1, 11, 8, 8])" in body
    rc = body.index("for rc in range(8):")
    assert body[rc + 1:rc + 3] == ["for rh in unrolled(2):", "for rw in unrolled(2):"]


@pytest.mark.parametrize("op,shapes,attrs,out_shape,pad_shape", [
    ("nn.conv2d_transpose", [(1, 8, 5, 6), (8, 6, 2, 2)], {"channels": 6, "kernel_size": (2, 2), "strides": (2, 2)},
     (1, 6, 10, 12), (1, 5, 8, 6)),
    ("nn.conv2d_transpose", [(1, 8, 9, 6), (8, 6, 4, 4)],
     {"channels": 6, "kernel_size": (4, 4), "strides": (2, 2), "padding": (1, 1)}, (1, 6, 18, 12), (1, 11, 8, 8)),
    ("nn.conv1d_transpose", [(1, 8, 5), (8, 4, 3)],
     {"channels": 4, "kernel_size": (3,), "strides": (2,), "padding": (1,), "output_padding": (1,)}, (1, 4, 10),
     (1, 8, 7)),
])
def test_a_transposed_convolutions_input_copy_runs_in_the_inputs_order(op, shapes, attrs, out_shape, pad_shape):
    """phase_pad.py: the copy with the channels inside the rows (n, y, c, x) loops over
    (n, c, y) fused, then x vectorized, so it reads the input front to back (it read every
    channel's row y for each y: the decoder's 2x2 layer 1.11-1.15x the time from memory);
    check() runs the loop nest against the compute (the zeros around included)."""
    ins, out = _op_compute(op, shapes, attrs, out_shape)
    sch, _ = _default(ins, [out])
    body = lines(sch)
    assert f"T_pad_phases = allocate(float32, {list(pad_shape)})" in body
    store = next(k for k, line in enumerate(body) if line.startswith("T_pad_phases["))
    outer = math.prod(pad_shape[:-1])
    assert re.fullmatch(rf"for \S+ in (range|parallel)\({outer}\):", body[store - 2]), body[store - 2]
    assert body[store - 1].endswith(f"in vectorized({pad_shape[-1]}):"), body[store - 1]
    steps = [s.args for s in sch.record if s.primitive == "reorder" and s.args.startswith("T_pad_phases")]
    assert steps, "the copy keeps its own loop order"


def test_a_transposed_convolution_by_phases_tiles_as_many_output_channels_as_registers_allow():
    """interleave.py `phase_rows`: the phases product's tile is 16 output channels on
    AVX-512 (4 kept too few FMAs in flight), 6 on AVX2, a divisor of the channels; the
    interpreter's result equals the compute's."""
    from relaylens.compiler.lower.schedule.interleave import phase_rows
    from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512, host_unit

    assert [phase_rows(c, 16, AVX512) for c in (64, 32, 8, 24, 7)] == [16, 16, 8, 12, 7]
    assert [phase_rows(c, 16, AVX2) for c in (64, 32, 7)] == [4, 4, 1]
    ins, out = _op_compute("nn.conv2d_transpose", [(1, 8, 4, 5), (8, 32, 2, 2)],
                           {"channels": 32, "kernel_size": (2, 2), "strides": (2, 2)}, (1, 32, 8, 10))
    sch, _ = _default(ins, [out])
    body = lines(sch)
    rc = body.index("for rc in range(8):")
    assert body[rc + 1] == f"for ax4_2.inner in unrolled({phase_rows(32, 16, host_unit())}):"
