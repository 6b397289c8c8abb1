"""`compile()`, the one build driver: its stages, where it stops, what it reports."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.build import relay_build_passes
from relaylens.compiler.driver import STAGES, Step, compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.ir.expr import Constant
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.lower.pipeline import LoweringCache
from relaylens.compiler.transform import get_pass

TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32], %b: Tensor[(4), float32],
          %w2: Tensor[(3, 4), float32]) {
  %0 = nn.dense(%x, %w, units=4);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.dense(%2, %w2, units=3);
  tanh(%3)
}
"""
BROKEN = TEXT.replace("nn.relu(%1)", "nn.relu(%9)")


def test_every_stage_runs_and_the_executable_agrees_with_the_interpreter():
    steps: list[Step] = []
    result = compile(TEXT, "m.relay", progress=steps.append)
    assert result.ok and result.stage == "machine_code", [d.message for d in result.diagnostics]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in ((2, 8), (4, 8), (4,), (3, 4))]
    got = result.executable.run(*args)
    want = Interpreter(result.checked.module).call("main", args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    passes = [s for s in steps if s.stage == "passes"]
    kernels = [s for s in steps if s.stage == "llvm"]
    assert [s.name for s in passes if s.name != "InferType"] == [n for n in relay_build_passes(3) if n != "InferType"]
    assert passes[-1].index == passes[-1].total == len(relay_build_passes(3))
    total = len(result.lowered.functions)  # lowering begins (0, no name), then each kernel as it is done
    assert [(s.index, s.total) for s in kernels] == [(i, total) for i in range(total + 1)]
    assert str(kernels[0]) == f"lowering 0/{total}"
    assert str(kernels[1]).startswith(f"lowering 1/{total} tvmgen_default_fused_")
    assert {s.name for s in kernels[1:]} == set(result.lowered.functions)


@pytest.mark.parametrize("stop_after", STAGES)
def test_stop_after(stop_after):
    result = compile(TEXT, "m.relay", stop_after=stop_after)
    assert result.ok and result.stage == stop_after
    assert bool(result.snapshots) == (stop_after != "check")
    assert (result.lowered is not None) == (stop_after in ("llvm", "machine_code"))
    assert (result.executable is not None) == (stop_after == "machine_code")
    if result.lowered is not None:
        assert "!dbg" in result.lowered.optimized_ir


def test_errors_stop_the_later_stages_and_are_reported_once():
    result = compile(BROKEN, "m.relay")
    assert not result.ok and result.stage == "check"
    assert result.snapshots == [] and result.lowered is None and result.executable is None
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert len(errors) == len(set(errors)) >= 1


def test_provenance_is_built_once_on_demand():
    result = compile(TEXT, "m.relay", stop_after="passes")
    assert "provenance" not in vars(result)
    prov = result.provenance
    assert prov is result.provenance and prov.fused  # every call ended in a fused function


def test_a_cache_relowers_only_what_changed():
    cache = LoweringCache()
    compile(TEXT, "m.relay", stop_after="llvm", cache=cache)
    misses = cache.misses
    compile(TEXT.replace("tanh(%3)", "sigmoid(%3)"), "m.relay", stop_after="llvm", cache=cache)
    # the first kernel and the two weight packs (AlterOpLayout's layout_transforms) reused, the second new
    assert (cache.hits, cache.misses) == (3, misses + 1)


def test_unknown_stage_and_unknown_pass():
    with pytest.raises(ValueError, match="stop_after"):
        compile(TEXT, stop_after="assembly")
    result = compile(TEXT, "m.relay", passes=["NoSuchPass"])
    assert not result.ok and "NoSuchPass" in result.diagnostics[-1].message


def weights(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((4, 8)).astype("float32"), "b": rng.standard_normal(4).astype("float32"),
            "w2": rng.standard_normal((3, 4)).astype("float32")}


def test_bound_weights_leave_only_the_inputs_and_fold_into_constants():
    params = weights()
    result = compile(TEXT, "m.relay", params=params, params_origin="m.npz")
    assert result.ok, [d.message for d in result.diagnostics]
    assert [p.name for p in result.module["main"].params] == ["x"]
    x = np.random.default_rng(2).standard_normal((2, 8)).astype("float32")
    unbound = compile(TEXT, "m.relay")
    want = unbound.executable.run(x, params["w"], params["b"], params["w2"])
    np.testing.assert_allclose(np.asarray(result.executable.run(x)), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_a_bound_constant_keeps_the_parameters_span():
    result = compile(TEXT, "m.relay", params=weights(), stop_after="passes")
    bound = [n for n in post_order(result.snapshots[1].module["main"]) if isinstance(n, Constant)]
    assert bound and all(n.span is not None and n.span.start > 0 for n in bound)
    assert {TEXT[n.span.start:n.span.end].split(":")[0] for n in bound} == {"%w", "%b", "%w2"}


@pytest.mark.parametrize("params, message", [
    ({"w": np.zeros((8, 4), "float32")},
     "parameter %w is Tensor[(4, 8), float32] but m.npz gives Tensor[(8, 4), float32]"),
    ({"b": np.zeros(4, "float64")}, "parameter %b is Tensor[(4), float32] but m.npz gives Tensor[(4), float64]"),
    ({"bias": np.zeros(4, "float32")}, "m.npz: 'bias' is not a parameter of @main (its parameters: %x, %w, %b, %w2)"),
])
def test_weights_that_do_not_fit_are_errors_naming_parameter_types_and_file(params, message):
    result = compile(TEXT, "m.relay", params=params, params_origin="m.npz")
    assert not result.ok and result.snapshots == []
    assert [d.message for d in result.diagnostics if d.is_error] == [message]


def test_a_pass_that_only_renumbers_an_expression_did_not_change_it():
    prov = compile(TEXT, "m.relay", stop_after="passes").provenance
    relu = TEXT.index("nn.relu(%1)")
    key = prov.key_at(relu)
    assert TEXT[key[0]:key[1]] == "nn.relu(%1)"
    # CanonicalizeOps rewrites the bias_add under it (a new object, renumbered): not the relu
    assert [stage.pass_name for stage, _ in prov.changes(key)] == ["FuseOps"]
    bias = prov.key_at(TEXT.index("nn.bias_add"))
    assert "CanonicalizeOps" in [stage.pass_name for stage, _ in prov.changes(bias)]


def test_fused_functions_have_names_a_person_reads():
    result = compile(TEXT, "m.relay", stop_after="passes")
    names = {name: result.provenance.display_name(func) for func, name in result.fused_names.items()}
    assert names == {"tvmgen_default_fused_nn_contrib_dense_pack_expand_dims_add_nn_relu": "dense + bias_add + relu",
                     "tvmgen_default_fused_nn_contrib_dense_pack_tanh": "dense + tanh",
                     # AlterOpLayout packs the weights (parameters here, not bound): a kernel each
                     "tvmgen_default_fused_layout_transform": "layout_transform",
                     "tvmgen_default_fused_layout_transform_1": "layout_transform"}
    layered = TEXT.replace("nn.relu(%1)", "nn.relu(%1) /* span=/block1/Relu:0:0 */")
    result = compile(layered, "m.relay", stop_after="passes")
    assert "dense + bias_add + relu · /block1/Relu" in {result.provenance.display_name(f) for f in result.fused_names}


def test_weights_that_do_not_fit_are_reported_by_a_check_alone():
    result = compile(TEXT, "m.relay", params={"w": np.zeros((8, 4), "float32")}, params_origin="m.npz",
                     stop_after="check")
    assert not result.ok and "m.npz gives Tensor[(8, 4), float32]" in result.diagnostics[-1].message
