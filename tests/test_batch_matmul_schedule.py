"""schedule/batch_matmul.py: attention's batch_matmul (b read along its rows) in a register
tile of rows x a vector width of columns, computed at its epilogue's column strips: the
compiled kernel against numpy for row counts with and without a remainder tile, reductions
with and without unrolled steps, with an epilogue and as an output (its tiles stored into
the output, no copy), b broadcast over the batch; shapes it leaves to defaults.py's tile."""

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.schedule.vector_unit import host_unit

CASES = [  # (B, M, K, N)
    (2, 12, 8, 16),   # whole tiles of 6 rows, 2 steps of 4
    (3, 13, 20, 32),  # a remainder tile of 1 row, two column strips
    (1, 5, 7, 16),    # fewer rows than a tile; k not a multiple of the unrolled steps
    (1, 130, 8, 16),  # rows in chunks of 26 (a stack buffer), each 4 tiles and a remainder of 2
    (1, 40, 12, 48),  # one batch: an output's tiles in parallel, three strips, a remainder of 4 rows
]


def _text(b: int, m: int, k: int, n: int, epilogue: bool, b_batch: int | None = None) -> str:
    body = "nn.batch_matmul(%x, %y, transpose_a=False, transpose_b=False)"
    if epilogue:
        body = f"add(multiply({body}, 0.125f), %z)"
    yb = b if b_batch is None else b_batch
    return f"""#[version = "0.0.5"]
def @main(%x: Tensor[({b}, {m}, {k}), float32], %y: Tensor[({yb}, {k}, {n}), float32], %z: Tensor[({n}), float32]) {{
  {body}
}}"""


@pytest.mark.parametrize("epilogue", [True, False], ids=["epilogue", "output"])
@pytest.mark.parametrize("case", CASES, ids=[f"{b}x{m}x{k}by{n}" for b, m, k, n in CASES])
def test_batch_matmul_tile_equals_numpy(case, epilogue):
    b, m, k, n = case
    result = compile(_text(b, m, k, n, epilogue), "bmm.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    (fn,) = result.lowered.functions.values()
    assert "cache_accumulator(T_batch_matmul" in fn.schedule_text  # this schedule, not defaults.py's tile
    assert ("compute_at(T_batch_matmul" in fn.schedule_text) == epilogue  # an output: no copy of the tiles
    rng = np.random.default_rng(4)
    x = rng.standard_normal((b, m, k)).astype("float32")
    y = rng.standard_normal((b, k, n)).astype("float32")
    z = rng.standard_normal(n).astype("float32")
    want = x @ y * 0.125 + z if epilogue else x @ y
    np.testing.assert_allclose(result.executable.run(x, y, z), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("epilogue", [True, False], ids=["epilogue", "output"])
def test_b_broadcast_over_the_batch(epilogue):
    b, m, k, n = 3, 13, 8, 32
    result = compile(_text(b, m, k, n, epilogue, b_batch=1), "bmm.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    (fn,) = result.lowered.functions.values()
    assert "cache_accumulator(T_batch_matmul" in fn.schedule_text
    rng = np.random.default_rng(5)
    x = rng.standard_normal((b, m, k)).astype("float32")
    y = rng.standard_normal((1, k, n)).astype("float32")
    z = rng.standard_normal(n).astype("float32")
    want = x @ y * 0.125 + z if epilogue else x @ y
    np.testing.assert_allclose(result.executable.run(x, y, z), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case, parallel", [((12, 128, 64, 128), "ax0"), ((1, 40, 12, 48), "ax1.outer"),
                                            ((3, 13, 20, 64), "ax1.outer")], ids=["batches", "one-batch", "few-batches"])
def test_an_output_walks_a_tiles_rows_against_every_strip(case, parallel):
    """The output's nest: batch, the tiles' rows, then the column strips (module doc), a
    strip two vector registers wide (16 columns on AVX2, 32 with AVX-512) where the
    columns divide by it."""
    result = compile(_text(*case, False), "bmm.relay", passes=["InferType", "FuseOps", "InferType"])
    (fn,) = result.lowered.functions.values()
    final = fn.schedule_text.rsplit("# step", 1)[1]
    assert final.index("for ax1.outer") < final.index("for ax2.outer")
    assert f"for {parallel} in parallel(" in final
    strip = 16 * max(1, 2 // host_unit().registers_for(16))
    assert f"vectorized({strip if case[-1] % strip == 0 else 16}):" in final


def test_columns_not_a_vector_width_keep_the_default_tile():
    result = compile(_text(2, 8, 8, 12, False), "bmm.relay", passes=["InferType", "FuseOps", "InferType"])
    (fn,) = result.lowered.functions.values()
    assert "cache_accumulator" not in fn.schedule_text
