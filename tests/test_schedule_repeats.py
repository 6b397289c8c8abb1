"""A costly stage read through a gather is computed once per element (schedule/repeats.py,
defaults.py `_inline_injective`): `repeats` on the index maps its docstring names; a
softplus read through a nearest resize and a concatenation (a detector's neck) keeps the
softplus as a stage the size of its input, and matches numpy compiled; a layer norm's
rsqrt, read along its row (hoisted by LLVM), stays inlined, read through a reshape too."""

from __future__ import annotations

import numpy as np
import pytest
from test_lower_schedule import check

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule.defaults import default_schedule
from relaylens.compiler.lower.schedule.repeats import repeats
from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.lower.te.compose import compose
from relaylens.compiler.transform.fused_names import name_primitive_functions

HEAD = '#[version = "0.0.5"]\n'


def axes(*extents: int) -> list[te.IterVar]:
    return [te.IterVar(f"ax{k}", n) for k, n in enumerate(extents)]


# ---------------------------------------------------------------------- repeats


def test_an_index_invariant_in_the_inner_loop_is_computed_once_per_row():
    i, j = axes(128, 768)
    assert repeats([i], [i, j], 1, (128,)) == 1.0


def test_a_row_read_back_through_a_reshape_is_still_invariant_in_the_inner_loop():
    i, j = axes(128, 768)
    assert repeats([te.const(0, te.INDEX), (i * 768 + j) // 768 % 128, te.const(0, te.INDEX)],
                   [i, j], 1, (1, 128, 1)) == 1.0


def test_a_nearest_upscale_reads_each_element_four_times():
    c, y, x = axes(3, 8, 10)
    assert repeats([c, y // 2, x // 2], [c, y, x], 1, (3, 4, 5)) == 4.0


def test_an_index_invariant_in_an_outer_loop_only_is_computed_again_per_row():
    i, j = axes(6, 70)
    assert repeats([j], [i, j], 1, (70,)) == 6.0


def test_an_index_invariant_in_part_of_the_fused_inner_loop_is_not_hoisted():
    c, h, w = axes(4, 7, 7)  # h and w fused with c into the inner loop (49 < 64 iterations)
    assert repeats([c], [c, h, w], 3, (4,)) == 49.0
    assert repeats([c], [c, h, w], 2, (4,)) == 1.0  # a loop over h, w alone: hoisted


def test_a_concatenation_reads_each_element_once_however_wide_its_output():
    c, y = axes(48, 5)
    assert repeats([c, y], [c, y], 1, (32, 5)) == 1.0  # c >= 32 reads the other input


def test_a_read_under_a_select_counts_only_where_the_select_takes_it():
    (j,) = axes(256)  # two halves stacked and flattened: the first half's read at j % 128
    assert repeats([j % 128], [j], 1, (128,)) == 2.0
    assert repeats([j % 128], [j], 1, (128,), guard=te.eq(j // 128, 0)) == 1.0
    s, k = axes(32, 128)  # the last of 32 steps stacked: read in row 31 alone
    assert repeats([k], [s, k], 1, (128,)) == 32.0
    assert repeats([k], [s, k], 1, (128,), guard=te.eq(s, 31)) == 1.0


def test_an_index_read_from_a_tensor_is_bounded_by_the_stage():
    ids = te.placeholder((50,), "int64", "ids")
    i, j = axes(50, 16)
    assert repeats([ids[i], j], [i, j], 1, (10, 16)) == 5.0
    assert repeats([ids[i], j], [i, j], 1, (100, 16)) == 1.0


# ---------------------------------------------------------------------- schedules


def _schedules(text: str) -> dict[str, str]:
    result = compile(HEAD + text, "repeats.relay", stop_after="passes")
    assert not any(d.is_error for d in result.diagnostics), [d.render() for d in result.diagnostics]
    found = {}
    for func, name in name_primitive_functions(result.snapshots[-1].module).items():
        composed = compose(func)
        sch = default_schedule(composed.outputs, composed.placeholders, name)
        found[name] = sch
    return found


NECK = """def @main(%x: Tensor[(1, 8, 6, 6), float32], %y: Tensor[(1, 4, 12, 12), float32]) {
  %0 = exp(%x);
  %1 = add(%0, 1f);
  %2 = log(%1);
  %3 = image.resize2d(%2, size=[12, 12], method="nearest_neighbor",
                      coordinate_transformation_mode="half_pixel", rounding_method="round_prefer_floor");
  concatenate((%3, %y), axis=1)
}
"""


def test_a_softplus_read_through_a_nearest_resize_is_computed_once_per_input_element():
    (sch,) = [s for n, s in _schedules(NECK).items() if "resize" in n]
    text = sch.record[-1].snapshot
    assert text.count("log(") == 1 and text.count("exp(") == 1
    kept = [line.strip() for line in text.splitlines() if "allocate" in line]
    assert kept == ["T_log = allocate(float32, [1, 8, 6, 6])"]
    log_line = next(line for line in text.splitlines() if "log(" in line)
    assert log_line.strip().startswith("T_log[")
    check(sch)


def test_a_softplus_read_through_a_nearest_resize_matches_numpy_compiled():
    result = compile(HEAD + NECK, "repeats.relay", jit=JIT(num_threads=1))
    assert result.executable is not None, [d.render() for d in result.diagnostics]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 8, 6, 6)).astype("float32")
    y = rng.standard_normal((1, 4, 12, 12)).astype("float32")
    up = np.log1p(np.exp(x)).repeat(2, axis=2).repeat(2, axis=3)
    np.testing.assert_allclose(result.lowered.executable.run(x, y), np.concatenate([up, y], axis=1),
                               rtol=1e-5, atol=1e-6)


def test_two_costly_halves_joined_by_a_select_stay_inlined():
    x = te.placeholder((2, 128), "float32", "x")
    halves = [te.compute((128,), lambda j, k=k: te.tanh(x[k, j]), f"T_tanh{k}") for k in range(2)]
    out = te.compute((256,), lambda j: te.select(te.eq(j // 128, 0), halves[0][j % 128], halves[1][j % 128]),
                     "T_join")
    sch = default_schedule([out], [x], "f")
    assert "allocate" not in sch.record[-1].snapshot
    check(sch)


def test_a_costly_row_broadcast_down_the_rows_is_computed_once():
    b = te.placeholder((70,), "float32", "b")
    e = te.compute((70,), lambda j: te.exp(b[j]), "T_exp")
    out = te.compute((6, 70), lambda i, j: e[j] * te.const(2.0, "float32"), "T_mul")
    sch = default_schedule([out], [b], "f")
    assert "T_exp = allocate(float32, [70])" in sch.record[-1].snapshot
    check(sch)


@pytest.mark.parametrize("rows, cols", [(128, 768), (16, 64)])
def test_a_layer_norms_rsqrt_stays_inlined_in_its_row(rows, cols):
    text = f"""def @main(%x: Tensor[(1, {rows}, {cols}), float32], %g: Tensor[({cols}), float32],
          %b: Tensor[({cols}), float32]) {{
  %0 = nn.layer_norm(%x, %g, %b, axis=-1, epsilon=1e-05f);
  reshape(%0, newshape=[{rows}, {cols}])
}}
"""
    (sch,) = [s for n, s in _schedules(text).items() if "rsqrt" in n]
    lowered = sch.record[-1].snapshot
    assert "allocate" not in lowered
    (line,) = [line for line in lowered.splitlines() if "rsqrt(" in line]
    assert line.strip().startswith("T_reshape[")
