"""conv_window_inside.py: a strided convolution whose padded window is made at each tile
(conv_tile_pad.py) reads its input in place where the window lies inside it: what the
schedule record and the loop nest show (the tile's nest twice, under `if`, one reading
the input and allocating no window), that the outputs are bit-identical to the window's
everywhere and match numpy (borders on every side, stride 3, 5x5, two threads), and
that a window the rewrite cannot read so stays as it was.  The unit is AVX-512's
whatever the host."""

from __future__ import annotations

import numpy as np
import pytest
from test_lower_conv_square import LANES, assert_matches_numpy, bottleneck_end

from relaylens.compiler.lower.pipeline import lower_function
from relaylens.compiler.lower.runtime.executable import _KernelCall
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import conv, conv_chunks, conv_tile_pad, loopnest
from relaylens.compiler.lower.schedule.conv_window_inside import read_inside
from relaylens.compiler.lower.schedule.defaults import default_schedule
from relaylens.compiler.lower.schedule.vector_unit import AVX512
from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.lower.te.compose import compose


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(conv, "host_unit", lambda: AVX512)
    monkeypatch.setattr(conv_chunks, "host_unit", lambda: AVX512)


def lowered_nest(ci: int, co: int, size: int, k: int = 3, stride: int = 2):
    composed = compose(bottleneck_end(ci, co, size, k, stride))
    sch = default_schedule(composed.outputs, composed.placeholders, "tvmgen_default_fused_conv")
    return sch, sch.lower()


def reads(stmt, name: str) -> list[te.BufferLoad]:
    found = []
    for s in loopnest.walk(stmt):
        exprs = [s.index, s.value] if isinstance(s, loopnest.Store) else []
        for e in exprs:
            found += [n for n in te.nodes(e) if isinstance(n, te.BufferLoad) and n.buffer.name == name]
    return found


def test_the_tile_reads_the_input_in_place_where_its_window_lies_inside(avx512):
    sch, func = lowered_nest(128, 128, 56)  # ResNet-50's layer2.0 stride-2 3x3
    assert any(s.primitive == "rewrite" and s.args.startswith("T_pad read in place") for s in sch.record)
    versions = [s for s in loopnest.walk(func.body) if isinstance(s, loopnest.IfThenElse)
                and isinstance(s.else_case, loopnest.Allocate) and s.else_case.buffer.name == "T_pad"]
    assert len(versions) == 1
    inside, window = versions[0].then_case, versions[0].else_case
    assert not any(isinstance(s, loopnest.Allocate) and s.buffer.name == "T_pad" for s in loopnest.walk(inside))
    assert len(reads(inside, "p0")) == 1 and not reads(inside, "T_pad")  # the broadcast, from the input
    assert reads(window, "T_pad") and len(reads(window, "p0")) == 1  # the window's copy, as before
    # the read's tile origin under max(., 0): never negative inside, so the addresses carry no-wrap flags
    (load,) = reads(inside, "p0")
    assert any(isinstance(n, te.Binary) and n.op == "max" for n in te.nodes(load.index))
    assert "T_pad read in place where its window lies inside its input" in sch.record_text()


def test_the_window_skips_the_filter_rows_that_read_only_padding(avx512):
    _, func = lowered_nest(128, 128, 56)
    (version,) = [s for s in loopnest.walk(func.body) if isinstance(s, loopnest.IfThenElse)
                  and isinstance(s.else_case, loopnest.Allocate) and s.else_case.buffer.name == "T_pad"]
    taps = [s for s in loopnest.walk(version.else_case) if isinstance(s, loopnest.For) and s.var.name == "ry"]
    assert len(taps) == 1 and isinstance(taps[0].body, loopnest.IfThenElse)  # the top row's first tap skipped
    guard = taps[0].body.cond
    assert any(n is taps[0].var for n in te.nodes(guard))
    assert not any(isinstance(s, loopnest.IfThenElse) and any(n is taps[0].var for n in te.nodes(s.cond))
                   for s in loopnest.walk(version.then_case))  # inside, every tap reads the input


def test_no_window_no_rewrite():
    func = loopnest.PrimFunc("f", (), loopnest.Seq(()))
    assert read_inside(func) is func


def one_row_window(read_at) -> loopnest.PrimFunc:
    """out[o] = sum over i < 3 of x[o + i - 1] * 2 (0 outside x's 8), its window of 3
    made at o; `read_at(i)`: where the sum reads the window."""
    x, out = te.Buffer("x", (8,), "float32"), te.Buffer("out", (8,), "float32")
    w = te.Buffer("W", (3,), "float32", scope="local")
    o, a, i = te.Var("o"), te.Var("a"), te.Var("i")
    at = o + a - 1
    inside = te.binary("and", te.binary("ge", at, te.const(0, te.INDEX)), te.binary("lt", at, te.const(8, te.INDEX)))
    window = loopnest.For(a, 3, loopnest.Store(w, a, te.Select(inside, te.BufferLoad(x, at, "float32"),
                                                                 te.const(0, "float32"), "float32")))
    acc = te.BufferLoad(out, o, "float32")
    step = loopnest.Store(out, o, acc + te.BufferLoad(w, read_at(i), "float32") * te.const(2, "float32"))
    body = loopnest.Allocate(w, loopnest.Seq((window, loopnest.For(i, 3, step))))
    return loopnest.PrimFunc("f", (x, out), loopnest.For(o, 8, body))


def test_a_window_read_in_place_or_left_as_it_was():
    func = read_inside(one_row_window(lambda i: i))
    text = loopnest.print_func(func)
    assert "if o - 1 >= 0 and o - 1 < 8 and o + 2 - 1 >= 0 and o + 2 - 1 < 8:" in text, text
    assert "x[max(o - 1, 0) + i]" in text, text  # the tile's origin, then what the tap adds
    assert "x[max(o - 1, 0) + i * i % 3]" in loopnest.print_func(read_inside(one_row_window(lambda i: i * i % 3)))
    unproven = one_row_window(lambda i: te.Var("n"))  # a position no loop bounds: the window as it was
    assert read_inside(unproven) is unproven


def kernel(func, in_place: bool, monkeypatch):
    monkeypatch.setattr(conv_tile_pad, "READ_INSIDE", in_place)
    return _KernelCall(lower_function(func, "tvmgen_default_fused_conv", "<case>", JIT(num_threads=1)))


@pytest.mark.parametrize("ci, co, size, k, stride", [
    (128, 128, 56, 3, 2),  # 7 tiles a row: the first row and the first tile of each row keep the window
    (32, 64, 24, 3, 2),  # to 12x12
    (64, 64, 36, 3, 3),  # stride 3
    (32, 64, 32, 5, 2),  # 5x5, padding 2: the last tile of each row and the last rows keep it too
])
def test_outputs_bit_identical_to_the_window_everywhere(avx512, monkeypatch, ci, co, size, k, stride):
    func = bottleneck_end(ci, co, size, k, stride)
    rng = np.random.default_rng(size)
    out = (size + 2 * (k // 2) - k) // stride + 1
    args = [rng.standard_normal(shape).astype("float32") for shape in [
        (1, ci // LANES, size, size, LANES), (co // LANES, ci // LANES, k, k, LANES, LANES),
        (1, co // LANES, 1, 1, LANES), (1, co // LANES, out, out, LANES)]]
    window, in_place = kernel(func, False, monkeypatch)(*args), kernel(func, True, monkeypatch)(*args)
    np.testing.assert_array_equal(in_place, window)


@pytest.mark.parametrize("threads", [1, 2])
def test_in_place_reads_match_numpy(avx512, threads):
    assert_matches_numpy(bottleneck_end(128, 128, 56, 3, 2), 128, 128, 56, 3, 2, threads=threads)
    assert_matches_numpy(bottleneck_end(32, 64, 32, 5, 2), 32, 64, 32, 5, 2, threads=threads)
