"""The lowering driver: the compile cache (an edit re-lowers only what changed, a moved
function keeps its kernel under its new lines and name), and errors that leave the rest
built."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.build import build_text, relay_build_passes
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.lower.codegen.llvm_map import function_ranges, line_locations
from relaylens.compiler.lower.pipeline import LoweringCache, lower_build
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.ops import get_op

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16), float32], %w1: Tensor[(32, 16), float32], %w2: Tensor[(24, 32), float32],
          %w3: Tensor[(8, 24), float32]) {
  %0 = nn.dense(%x, %w1, units=32);
  %1 = nn.relu(%0);
  %2 = nn.dense(%1, %w2, units=24);
  %3 = nn.leaky_relu(%2, alpha=0.1f);
  %4 = nn.dense(%3, %w3, units=8);
  tanh(%4)
}
"""


@pytest.fixture(scope="module")
def jit():
    return JIT()


def inputs():
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s).astype("float32") for s in ((1, 16), (32, 16), (24, 32), (8, 24))]


def lower(text: str, cache: LoweringCache, jit):
    built = build_text(text, "mlp.relay")
    assert built.ok, built.diagnostics
    lowered = lower_build(built, cache=cache, jit=jit)
    assert lowered.ok, lowered.diagnostics
    np.testing.assert_allclose(lowered.executable.run(*inputs()), interpret(built.checked.module, *inputs()),
                               rtol=1e-5, atol=1e-6)
    return lowered


def test_editing_one_layer_relowers_only_that_layer(jit):
    cache = LoweringCache()
    first = lower(MLP, cache, jit)
    # three packed denses (x86's AlterOpLayout) and three packs of their weights (parameters here)
    assert (cache.hits, cache.misses) == (0, 6)
    second = lower(MLP.replace("alpha=0.1f", "alpha=0.2f"), cache, jit)
    assert (cache.hits, cache.misses) == (5, 7)
    changed = [n for n in first.functions if first.functions[n].address != second.functions[n].address]
    assert changed == ["tvmgen_default_fused_nn_contrib_dense_pack_nn_leaky_relu"]


def test_the_executable_takes_the_builds_kernel_names(jit, monkeypatch):
    """The build named its primitive functions (structural hashes of every one); the
    executable plans with those names instead of hashing them all again."""
    from relaylens.compiler.lower.runtime import executable

    def refused(module):
        raise AssertionError("the executable named the kernels again")

    monkeypatch.setattr(executable, "name_primitive_functions", refused)
    lower(MLP, LoweringCache(), jit)


def test_a_build_without_machine_code_has_the_same_llvm_ir_and_cannot_run(jit):
    from relaylens.compiler.lower.te import expr as te

    built = build_text(MLP, "mlp.relay")
    cache = LoweringCache()
    text_only = lower_build(built, cache=cache, jit=jit, machine_code=False)
    assert text_only.ok and all(f.address == 0 and f.engine is None for f in text_only.functions.values())
    with pytest.raises(te.LoweringError, match="cannot run"):
        text_only.executable.run(*inputs())
    full = lower_build(built, cache=cache, jit=jit)  # the cache's text-only entries are not reused
    assert all(f.address != 0 for f in full.functions.values())
    assert (text_only.llvm_ir, text_only.optimized_ir) == (full.llvm_ir, full.optimized_ir)
    np.testing.assert_allclose(full.executable.run(*inputs()), interpret(built.checked.module, *inputs()),
                               rtol=1e-5, atol=1e-6)


def test_a_kernel_is_parsed_once_on_its_way_to_machine_code():
    """O3 and MCJIT share one parsed module: the optimised text is printed, not parsed
    again; it is the text `optimize` gives, and the machine code runs."""
    from relaylens.compiler.lower.pipeline import lower_function

    class CountingJIT(JIT):
        parsed = 0

        def parse(self, text, context=None):
            CountingJIT.parsed += 1
            return super().parse(text, context)

    built = build_text(MLP, "mlp.relay")
    func, name = next(iter(built.fused_names.items()))
    counting = CountingJIT()
    fn = lower_function(func, name, "mlp.relay", counting)
    assert CountingJIT.parsed == 1 and fn.address != 0
    assert fn.optimized_ir == JIT().optimize(fn.llvm_ir)


def test_a_moved_function_keeps_its_kernel_with_new_debug_lines(jit):
    cache = LoweringCache()
    before = lower(MLP, cache, jit)
    moved_text = MLP.replace('#[version = "0.0.5"]\n', '#[version = "0.0.5"]\n// a comment line\n')
    after = lower(moved_text, cache, jit)
    assert cache.misses == 6 and cache.hits == 6
    name = "tvmgen_default_fused_nn_contrib_dense_pack_tanh"
    assert after.functions[name].address == before.functions[name].address
    text = after.functions[name].llvm_ir
    first, last = function_ranges(text)[name]
    relay_lines = {loc[0] for n, loc in line_locations(text).items() if first <= n <= last}
    assert relay_lines == {9, 10}  # dense and tanh, one line lower than in MLP
    assert "line: 9," in next(ln for ln in text.splitlines() if "DISubprogram" in ln and name + '"' in ln)


def test_an_op_without_lowering_is_reported_and_the_rest_builds(jit, monkeypatch):
    # every op a fused function can hold has a compute rule: take leaky_relu's away
    monkeypatch.setattr(get_op("nn.leaky_relu"), "compute", None)
    built = build_text(MLP, "leaky.relay")
    assert built.ok, built.diagnostics
    lowered = lower_build(built, jit=jit)
    assert not lowered.ok and lowered.executable is None
    (diag,) = lowered.diagnostics
    assert "no lowering for operator nn.leaky_relu" in diag.message and diag.span.line == 7
    assert "tvmgen_default_fused_nn_contrib_dense_pack_tanh" in lowered.functions


ADD_RELU = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 16), float32], %y: Tensor[(16), float32]) {
  %0 = add(%x, %y);
  nn.relu(%0)
}
"""


def test_golden_llvm_of_a_fused_add_relu(jit):
    """The unoptimised LLVM IR of `relu(add(x, y))`: one function with aligned noalias
    buffers, its subprogram at the fused function's first line, the fadd at the add's
    line and the maximum with 0 (a compare and select) at the relu's, and the entry calling it through the kernel table
    at the call of the fused group (its first expression)."""
    built = build_text(ADD_RELU, "add_relu.relay")
    text = lower_build(built, jit=jit).llvm_ir
    lines = text.splitlines()
    locations = line_locations(text)
    assert ("define void @tvmgen_default_fused_add_nn_relu(ptr noalias align 64 %p0, "
            "ptr noalias align 64 %p1, ptr noalias align 64 %T_relu)") in text
    fadd = next(n for n, ln in enumerate(lines, 1) if "= fadd float %p0.1, %p1.1" in ln)
    maximum = next(n for n, ln in enumerate(lines, 1) if "= select i1" in ln and "float 0.000000e+00" in ln)
    store = next(n for n, ln in enumerate(lines, 1) if ln.strip().startswith("store float"))
    call = next(n for n, ln in enumerate(lines, 1) if "call void %tvmgen_default_fused_add_nn_relu(" in ln)
    assert (locations[fadd], locations[maximum], locations[store], locations[call]) == ((3, 8), (4, 3), (4, 3), (3, 8))
    assert ('!DISubprogram(name: "tvmgen_default_fused_add_nn_relu", scope: !1, file: !1, line: 3,'
            in text)
    assert '!DIFile(filename: "add_relu.relay"' in text
    assert '!{!"llvm.loop.vectorize.enable", i1 true}' in text
    ranges = function_ranges(text)
    entry = "tvmgen_default___tvm_main__"  # and its steps, run on the inference's team (codegen/team.py)
    team = {f"relaylens.team.{part}" for part in ("run", "dispatch", "region", "worker", "now")}
    assert set(ranges) == {"tvmgen_default_fused_add_nn_relu", entry, f"{entry}.steps", f"{entry}.packed"} | team


DENSE_K128 = """#[version = "0.0.5"]
def @main(%x: Tensor[(5, 128), float32], %w: Tensor[(7, 128), float32], %b: Tensor[(7), float32]) {
  %0 = nn.dense(%x, %w, units=7);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}
"""


@pytest.mark.parametrize("epilogue", [True, False])
def test_dense_along_a_long_reduction_is_split_across_lanes(jit, epilogue):
    """K = 128: the product becomes lane sums `T_dense.rf` and their total (rfactor), at
    odd row and column counts, with and without an epilogue reading it.  Built without
    AlterOpLayout (which would make it an nn.contrib_dense_pack): this is nn.dense's schedule."""
    text = DENSE_K128 if epilogue else DENSE_K128.replace(
        "  %1 = nn.bias_add(%0, %b);\n  nn.relu(%1)\n", "  %0\n").replace(", %b: Tensor[(7), float32]", "")
    passes = [p for p in relay_build_passes(3) if p != "AlterOpLayout"]
    built = build_text(text, "dense.relay", passes=passes)
    lowered = lower_build(built, jit=jit)
    assert lowered.ok, lowered.diagnostics
    (fn,) = lowered.functions.values()
    assert ".rf" in fn.schedule.record_text()
    rng = np.random.default_rng(2)
    args = [rng.standard_normal(p.type_annotation.shape).astype("float32") for p in built.module["main"].params]
    np.testing.assert_allclose(lowered.executable.run(*args), interpret(built.checked.module, *args),
                               rtol=1e-5, atol=1e-5)
