"""A build's check and passes kept on disk (compiler/passes_cache.py): the same text built
again, by this process or another, restores every snapshot instead of running the passes,
and reads as the build that wrote it; anything else that decides the passes is another
key; a damaged entry, a build with errors and a deeply nested module are handled."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.ir.deferred import resolved
from relaylens.compiler.ir.expr import Call, Constant, op
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.lower.disk_cache import PASSES, DiskCache, Entry
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.passes_cache import OUT_OF_BAND_BYTES, PassesCache
from relaylens.compiler.printer import print_module

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 12, 12), float32], %w: Tensor[(16, 16, 3, 3), float32], %b: Tensor[(16), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2])
}
"""


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"w": rng.standard_normal((16, 16, 3, 3)).astype("float32"),
            "b": rng.standard_normal(16).astype("float32")}


def _x() -> np.ndarray:
    return np.random.default_rng(2).standard_normal((1, 16, 12, 12)).astype("float32")


def _build(directory, text: str = MODEL, name: str = "m.relay", **options):
    passes: list[str] = []
    result = compile(text, name, params=_weights(), disk_cache=DiskCache(directory), jit=JIT(),
                     progress=lambda step: passes.append(step.name) if step.stage == "passes" else None, **options)
    assert result.ok, result.diagnostics
    return result, passes


def test_the_same_text_built_again_reads_its_passes_from_disk(tmp_path) -> None:
    cold, ran = _build(tmp_path)
    assert ran and DiskCache(tmp_path).part(PASSES).info().entries == 1
    warm, ran_again = _build(tmp_path)
    assert ran_again == []  # no pass ran
    assert [s.pass_name for s in warm.snapshots] == [s.pass_name for s in cold.snapshots]
    for before, after in zip(cold.snapshots, warm.snapshots):
        assert print_module(after.module, spans=True) == print_module(before.module, spans=True), after.pass_name
    assert sorted(warm.fused_names.values()) == sorted(cold.fused_names.values())
    calls = [n for n in post_order(warm.module["main"]) if isinstance(n, Call)]
    assert any(c.op is op("layout_transform") for c in calls)  # one operator object: AlterOpLayout's rewrite kept
    np.testing.assert_array_equal(warm.executable.run(_x()), cold.executable.run(_x()))
    conv = next(n for n in post_order(warm.checked.module["main"]) if isinstance(n, Call) and n.op is op("nn.conv2d"))
    (key,) = warm.provenance.keys_of(conv)  # the restored spans are of the restored source
    assert [len(nodes) for _, nodes in warm.provenance.trace(key)] == [len(nodes) for _, nodes in cold.provenance.trace(key)]
    assert warm.provenance.fused_function(key)[0] == cold.provenance.fused_function(key)[0]


def test_another_process_reads_them_too(tmp_path) -> None:
    script = textwrap.dedent(f"""
        import numpy as np
        from relaylens.compiler.driver import compile
        from relaylens.compiler.lower.disk_cache import DiskCache
        rng = np.random.default_rng(1)
        params = {{"w": rng.standard_normal((16, 16, 3, 3)).astype("float32"),
                   "b": rng.standard_normal(16).astype("float32")}}
        result = compile({MODEL!r}, "m.relay", params=params, disk_cache=DiskCache({str(tmp_path)!r}))
        assert result.executable is not None, result.diagnostics
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    warm, ran = _build(tmp_path)
    assert ran == [] and warm.executable is not None
    cold = compile(MODEL, "m.relay", params=_weights(), jit=JIT())
    np.testing.assert_array_equal(warm.executable.run(_x()), cold.executable.run(_x()))


def test_a_kept_build_brings_its_kernels_compositions_which_lower_as_composed_ones(tmp_path) -> None:
    cold, _ = _build(tmp_path)
    for kernel in DiskCache(tmp_path).directory.glob("*.kernel"):
        kernel.unlink()  # the kernel cache lost them: lowered again from the kept compositions
    warm, ran = _build(tmp_path)
    assert ran == [] and warm.compositions and DiskCache(tmp_path).misses == 0
    assert set(warm.compositions) == {f.func for f in warm.lowered.functions.values()}
    for name, fn in warm.lowered.functions.items():
        assert fn.composed is warm.compositions[fn.func]  # not composed again
        assert fn.llvm_ir == cold.lowered.functions[name].llvm_ir, name  # debug locations too
        assert fn.optimized_ir == cold.lowered.functions[name].optimized_ir, name
    np.testing.assert_array_equal(warm.executable.run(_x()), cold.executable.run(_x()))


def test_anything_that_decides_the_passes_is_another_key(tmp_path) -> None:
    kept = PassesCache(DiskCache(tmp_path))
    options = {"opt_level": 3, "config": None}
    weights = _weights()
    base = kept.key(MODEL, "m.relay", weights, options)
    other_weights = {**weights, "b": weights["b"] + 1}
    keys = {base, kept.key(MODEL + " ", "m.relay", weights, options), kept.key(MODEL, "n.relay", weights, options),
            kept.key(MODEL, "m.relay", other_weights, options), kept.key(MODEL, "m.relay", None, options),
            kept.key(MODEL, "m.relay", weights, {**options, "opt_level": 2})}
    assert len(keys) == 6 and base == kept.key(MODEL, "m.relay", _weights(), dict(options))
    small = PassesCache(DiskCache(tmp_path, max_bytes=1 << 20))  # kept builds: half of it
    large = {"w": np.zeros((1 << 19) // 4 + 1, "float32")}
    assert small.key(MODEL, "m.relay", large, options) is None  # not kept: it could not fit
    assert small.key(MODEL, "m.relay", {"w": large["w"][1:]}, options) is not None


def test_a_build_that_stops_before_machine_code_reads_but_does_not_write(tmp_path) -> None:
    _build(tmp_path, stop_after="llvm")
    assert DiskCache(tmp_path).part(PASSES).info().entries == 0  # the editor's builds: one per edit
    _build(tmp_path)
    shown, ran = _build(tmp_path, stop_after="llvm")
    assert ran == [] and shown.lowered.ok


def test_an_entry_that_does_not_unpickle_is_built_again_and_written_over(tmp_path) -> None:
    _build(tmp_path)
    builds = DiskCache(tmp_path).part(PASSES)
    (path,) = builds.directory.iterdir()
    builds.put(path.stem, Entry({"name": "m.relay"}, {"build": b"not a pickle"}))  # intact, but unreadable
    result, ran = _build(tmp_path)
    assert ran and result.executable is not None
    state = pickle.loads(builds.get(path.stem).blobs["build"])
    assert len(state[1]) == len(result.snapshots)


def test_a_build_with_errors_is_not_kept(tmp_path) -> None:
    text = MODEL.replace("nn.relu(%1)", "nn.relu(%1, %1)")
    result = compile(text, "m.relay", params=_weights(), disk_cache=DiskCache(tmp_path), jit=JIT())
    assert not result.ok
    assert DiskCache(tmp_path).part(PASSES).info().entries == 0


WIDE = MODEL.replace("16", "64")  # a 64x64x3x3 weight: 147 KB, past OUT_OF_BAND_BYTES


def test_weights_are_kept_beside_the_pickle_and_the_bound_ones_not_at_all(tmp_path) -> None:
    rng = np.random.default_rng(3)
    weights = {"w": rng.standard_normal((64, 64, 3, 3)).astype("float32"),
               "b": rng.standard_normal(64).astype("float32")}
    x = rng.standard_normal((1, 64, 12, 12)).astype("float32")
    cold = compile(WIDE, "wide.relay", params=weights, disk_cache=DiskCache(tmp_path), jit=JIT())
    (path,) = DiskCache(tmp_path).part(PASSES).directory.iterdir()
    entry = DiskCache(tmp_path).part(PASSES).get(path.stem)
    assert "w" in entry.meta["slots"] and entry.arrays  # the bound weight by name; what the passes made of it stored
    assert all(a.nbytes != weights["w"].nbytes or bytes(a) != weights["w"].tobytes() for a in entry.arrays)
    warm = compile(WIDE, "wide.relay", params=weights, disk_cache=DiskCache(tmp_path), jit=JIT())
    constants = [n.data for n in post_order(warm.snapshots[0].module["main"]) if isinstance(n, Constant)]
    assert any(np.shares_memory(c, weights["w"]) for c in constants)  # the caller's own array, given back
    large = [(c, given) for c, given in zip(map(resolved, warm.executable.plan.constants), warm.executable._constants)
             if c.nbytes >= OUT_OF_BAND_BYTES]  # a weight folded into its layout: a deferred value (ir/deferred.py)
    assert large and all(c.ctypes.data % 64 == 0 and given is c for c, given in large)  # read in place, not copied
    np.testing.assert_array_equal(warm.executable.run(x), cold.executable.run(x))
    other = {**weights, "w": weights["w"] * 2}  # other weights: another key, not these arrays
    assert PassesCache(DiskCache(tmp_path)).get(PassesCache(DiskCache(tmp_path)).key(
        WIDE, "wide.relay", other, {})) is None


@pytest.mark.parametrize("depth", [1500])
def test_a_deeply_nested_module_is_kept(tmp_path, depth) -> None:
    lines = [f"  %{i} = add(%{i - 1}, 1f);" if i else "  %0 = add(%x, 1f);" for i in range(depth)]
    text = ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(4), float32]) {\n' + "\n".join(lines)
            + f"\n  %{depth - 1}\n}}\n")
    built = compile(text, "deep.relay", stop_after="passes")
    assert built.ok, built.diagnostics[:3]
    with pytest.raises(RecursionError):  # what the pickling thread's deep stack is for
        pickle.dumps(built.snapshots[0].module)
    kept = PassesCache(DiskCache(tmp_path))
    key = kept.key(text, "deep.relay", None, {})
    kept.put(key, built)
    again = kept.get(key)
    assert again is not None
    assert print_module(again.snapshots[0].module) == print_module(built.snapshots[0].module)
    assert print_module(again.module) == print_module(built.module)
