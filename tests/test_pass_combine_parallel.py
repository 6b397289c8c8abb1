"""CombineParallelConv2D / Dense / BatchMatmul beyond their golden cases (TVM's own test
cases are golden files in tests/passes/combine_parallel_*/, run by test_golden_passes.py):
their place in relay.build's pipeline (opt level 4 only), the CLI by TVM's names, and the
span and value invariants over the real corpus."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.build import NOT_IMPLEMENTED, RELAY_BUILD_PIPELINE, build_text
from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types
from relaylens.compiler.unknown_values import fill_unknown_constants

from conftest import CORPUS
from golden import _flat, _runnable, random_args

PASSES = ("CombineParallelConv2D", "CombineParallelDense", "CombineParallelBatchMatmul")
RELAYLENS = Path(sys.executable).parent / "relaylens"

THREE_CONVS = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w1: Tensor[(4, 4, 1, 1), float32], %w2: Tensor[(8, 4, 1, 1), float32], %w3: Tensor[(2, 4, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w1);
  %1 = nn.relu(%0);
  %2 = nn.conv2d(%x, %w2);
  %3 = nn.relu(%2);
  %4 = nn.conv2d(%x, %w3);
  %5 = nn.relu(%4);
  (%1, %3, %5)
}
"""


def test_the_pipeline_has_them_after_cse_as_tvm_does():
    at = RELAY_BUILD_PIPELINE.index("EliminateCommonSubexpr")
    assert RELAY_BUILD_PIPELINE[at + 1:at + 4] == PASSES
    assert RELAY_BUILD_PIPELINE[at + 4] == "FoldConstant"
    assert not set(PASSES) & set(NOT_IMPLEMENTED)
    assert all(get_pass(n).opt_level == 4 for n in PASSES)


@pytest.mark.parametrize("opt_level,combined", [(3, False), (4, True)])
def test_relay_build_combines_three_branches_only_at_opt_level_4(opt_level, combined):
    result = build_text(THREE_CONVS, "m.relay", opt_level=opt_level)
    assert result.ok, [d.message for d in result.diagnostics]
    ran = {s.pass_name: s for s in result.snapshots}
    assert ("CombineParallelConv2D" in ran) == combined
    if combined:
        assert ran["CombineParallelConv2D"].changed
        assert "channels=14" in print_module(ran["CombineParallelConv2D"].module)
    for snap in result.snapshots:
        assert spanless(snap.module) == [], snap.pass_name


def test_the_cli_runs_them_by_tvms_names(tmp_path):
    path = tmp_path / "m.relay"
    path.write_text(THREE_CONVS)
    proc = subprocess.run([str(RELAYLENS), "build", str(path), "--passes", "CombineParallelConv2D",
                           "--opt-level", "4"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "concatenate(" in proc.stdout and 'slice_mode="size"' in proc.stdout


# --- the invariants over the corpus ------------------------------------------------------

CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*.relay")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS_FILES, reason="shared/corpus is not beside the checkout")
@pytest.mark.parametrize("name", PASSES)
def test_spans_types_and_values_over_the_corpus(name):
    changed = []
    for file in CORPUS_FILES:
        result = check_text((CORPUS / file).read_text(), file)
        if any(d.is_error for d in result.diagnostics):
            continue
        mod, _ = fill_unknown_constants(result.module, seed=0)  # text printed without its metadata
        with PassContext(opt_level=4):
            out = type(get_pass(name))(min_num_branches=2)(mod)  # the corpus has no three
            out = get_pass("InferType")(out)
        if out is mod:
            continue
        changed.append(file)
        assert spanless(out) == [], file
        assert [d.message for d in infer_types(out) if d.is_error] == [], file
        if _runnable(mod):
            args = random_args(mod, np.random.default_rng(0))
            for want, got in zip(_flat(interpret(mod, *args)), _flat(interpret(out, *args))):
                # float16 sums round at every step, in an order numpy picks by shape and CPU
                tol = 1e-2 if np.asarray(want).dtype == np.float16 else 1e-4
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=file)
    print(f"{name} rewrote: {changed}")
    if name == "CombineParallelConv2D":
        assert changed, "no parallel convolutions in the corpus: the test lost its teeth"
