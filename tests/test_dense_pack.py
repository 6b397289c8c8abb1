"""nn.contrib_dense_pack as AlterOpLayout makes it on x86: the op's relation, the compiled
kernel (te/topi/dense_pack.py's compute, schedule/dense_pack.py's register tile over the
packed weight) against the interpreter and nn.dense's numpy reference on the unpacked
weight, and the whole relay.build pipeline with the weight bound (packed at build time)."""

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.lower.schedule.dense_pack import dense_tile
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512
from relaylens.compiler.ops import get_op
from relaylens.compiler.transform.x86_dense_layout import pack_block

CASES = [  # (M, K, N, bn): power-of-two lanes, odd lanes (NC25n as TVM packs 1000 units), M prime;
    # the last two odd lanes with M a multiple of 16 (rows in the vectors, the data transposed)
    (4, 64, 64, 32),
    (1, 96, 1000, 25),
    (5, 40, 21, 7),
    (3, 16, 40, 20),
    (32, 40, 50, 25),
    (16, 24, 10, 10),
    (32, 16, 48, 8),  # 8 row tiles of 3 blocks: each prefetches a piece of the next block's weight
    (32, 18, 48, 8),  # the same with k not a multiple of the unrolled steps: one step a loop body
]


@pytest.mark.parametrize("case", CASES, ids=[f"{m}x{k}to{n}_NC{bn}n" for m, k, n, bn in CASES])
def test_dense_pack_compiled_equals_interpreter_and_numpy(case):
    m, k, n, bn = case
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({m}, {k}), float32], %w: Tensor[({n // bn}, {k}, {bn}), float32], %b: Tensor[({n}), float32]) {{
  %0 = nn.contrib_dense_pack(%x, %w, units=None, out_dtype="float32", weight_layout="NC{bn}n");
  %1 = add(%0, %b);
  nn.relu(%1)
}}"""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    wp = get_op("layout_transform").evaluate([w], {"src_layout": "NC", "dst_layout": f"NC{bn}n"})
    assert wp.shape == (n // bn, k, bn)
    result = compile(text, "dense_pack.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    assert "tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu" in result.fused_names.values()
    got = result.executable.run(x, wp, b)
    interpreted = np.asarray(Interpreter(result.checked.module).call("main", [x, wp, b]))
    want = np.maximum(x @ w.T + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(interpreted, want, rtol=1e-4, atol=1e-4)


def _prefetches(m: int, k: int, n: int, bn: int) -> list[tuple[str, str]]:
    """(the loop variable, the buffer) of every prefetch in the compiled dense's loop nest."""
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({m}, {k}), float32], %w: Tensor[({n // bn}, {k}, {bn}), float32]) {{
  nn.contrib_dense_pack(%x, %w, units=None, out_dtype="float32", weight_layout="NC{bn}n")
}}"""
    result = compile(text, "dense_pack.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    (fn,) = result.lowered.functions.values()
    return loop_prefetches(fn.prim.body)


def loop_prefetches(body) -> list[tuple[str, str]]:
    """(the loop variable, the buffer) of every prefetch that opens a loop's body in a loop nest."""
    from relaylens.compiler.lower.schedule import loopnest as ln

    found = []
    for s in ln.walk(body):
        if isinstance(s, ln.For):
            first = s.body.stmts[0] if isinstance(s.body, ln.Seq) else s.body
            if isinstance(first, ln.Prefetch):
                found.append((s.var.name, first.buffer.name))
    return found


def test_row_tiles_prefetch_the_next_blocks_weight():
    # 32 rows: 8 tiles of 4, each loop body (UNROLL_STEPS of k) prefetching in the next
    # block's panel (module doc); one step a body when k is not a multiple of them
    assert _prefetches(32, 16, 48, 8) == [("k.outer", "p1")]
    assert _prefetches(32, 18, 48, 8) == [("k", "p1")]
    # one tile per block (4 rows): a step would skip lines of the next panel, no prefetch
    assert _prefetches(4, 16, 48, 8) == []


def test_relation_names_the_mismatch():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(2, 9, 4), float32]) {
  nn.contrib_dense_pack(%x, %w, units=None, out_dtype="float32", weight_layout="NC4n")
}"""
    result = compile(text, "bad.relay", stop_after="check")
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert errors and "8 input features but weight expects 9" in errors[0]


def test_pack_block_is_tvms_fallback():
    # the largest divisor of N up to 2 * simd_lanes (topi/x86/dense.py _default_dense_pack_config)
    assert pack_block(1000, 16) == 25
    assert pack_block(3072, 16) == 32
    assert pack_block(48, 8, "int8") == 16
    assert pack_block(1000, 8, "int8") == 10
    assert pack_block(48, 8) == 8 and pack_block(1000, 8) == 8  # float32 on AVX2: one register (module doc)
    assert pack_block(37, 16) == 1


def test_tile_has_no_guard_and_fits_registers():
    # AVX-512: 20 accumulators of 16 lanes
    assert dense_tile(128, 24, 32, AVX512) == (4, 2)   # 4 rows x 2 blocks x 2 vectors = 16 accumulators
    assert dense_tile(1, 40, 25, AVX512) == (1, 4)     # odd lanes: rows x blocks <= 4
    assert dense_tile(5, 3, 7, AVX512) == (1, 3)
    # AVX2: 12 accumulators of 8 lanes; 16 lanes take two
    assert dense_tile(128, 384, 8, AVX2) == (4, 3)
    assert dense_tile(128, 192, 16, AVX2) == (4, 1)
    assert dense_tile(128, 24, 32, AVX2) == (4, 1)     # 4 vectors a block: 16 accumulators, spilled


def test_odd_lanes_with_rows_by_sixteen_keep_rows_in_the_vectors():
    from relaylens.compiler.lower.te.topi.dense_pack import rows_in_vectors

    assert rows_in_vectors(128, 25) and rows_in_vectors(16, 10)
    assert not rows_in_vectors(128, 32) and not rows_in_vectors(5, 25) and not rows_in_vectors(1, 25)


def test_bound_weight_is_packed_at_build_time():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 64), float32], %w: Tensor[(96, 64), float32]) {
  nn.dense(%x, %w, units=96)
}"""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((96, 64)).astype("float32")
    x = rng.standard_normal((4, 64)).astype("float32")
    result = compile(text, "bound.relay", params={"w": w})
    assert result.ok, [d.message for d in result.diagnostics]
    names = list(result.fused_names.values())
    assert any("contrib_dense_pack" in name for name in names), names
    assert not any("layout_transform" in name for name in names), names  # folded: no copy per call
    np.testing.assert_allclose(result.executable.run(x), x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("data, weight, lanes, packed", [
    ("float32", (48, 64), 8, "NC8n"),       # TVM's test_alter_op_dense (core-avx2) has NC16n: one register here
    ("float32", (1000, 64), 8, "NC8n"),     # (TVM: NC10n)
    ("float32", (1000, 64), 16, "NC25n"),   # AVX-512: up to 32
    ("int8", (32, 64), 16, "NC32n"),        # int8 data: dense_pack.x86 too
    ("uint8", (32, 64), 16, None),          # uint8 x int8 on AVX-512: VNNI's NC16n4c, not done
    ("uint8", (30, 64), 16, "NC30n"),       # ... unless the units do not divide by 16
    ("uint8", (32, 64), 8, "NC16n"),        # ... or the target has no AVX-512
])
def test_x86_packs_the_weight_as_tvm_chooses(data, weight, lanes, packed):
    from relaylens.compiler.transform.infra import PassContext
    from relaylens.compiler.transform.passes.alter_op_layout import AlterOpLayout

    wdtype = "int8" if data in ("int8", "uint8") else data
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(4, {weight[1]}), {data}], %w: Tensor[{weight}, {wdtype}]) {{
  nn.dense(%x, %w, units={weight[0]}, out_dtype="{'int32' if wdtype == 'int8' else data}")
}}"""
    built = compile(text, "d.relay", stop_after="passes", passes=["InferType"])
    assert built.ok, [d.message for d in built.diagnostics]
    out = AlterOpLayout(simd_lanes=lanes)(built.module, PassContext(opt_level=3))
    body = out["main"].body
    if packed is None:
        assert body.op.name == "nn.dense"
    else:
        assert body.op.name == "nn.contrib_dense_pack" and body.attrs["weight_layout"] == packed
