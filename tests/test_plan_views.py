"""Reshape-only kernels in the execution plan (runtime/plan.py): a view on their
argument's memory, not a call; their argument live until the view's last reader; a view
that is an output of @main still a call."""

from __future__ import annotations

import json

import numpy as np

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.runtime.jit import JIT

HEAD = '#[version = "0.0.5"]\n'


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _build(text: str):
    result = compile(HEAD + text, "views.relay", jit=JIT(num_threads=1))
    assert result.executable is not None, [d.render() for d in result.diagnostics]
    return result.lowered.executable


def test_a_reshape_between_kernels_is_a_view_and_keeps_its_source_alive():
    # %1 views %0's memory; %2, computed before %1 is read, must not take that memory
    exe = _build("""def @main(%x: Tensor[(1, 2, 4, 4), float32], %y: Tensor[(2, 4, 4), float32]) {
  %0 = nn.softmax(%x, axis=3);
  %1 = reshape(%0, newshape=[2, 4, 4]);
  %2 = nn.softmax(%y, axis=2);
  nn.batch_matmul(%1, %2, transpose_a=False, transpose_b=False)
}
""")
    plan = exe.plan
    assert len(plan.views) == 1 and len(plan.steps) == 3
    view, source = plan.views[0]
    assert view.shape == (2, 4, 4) and view.ref == source.ref
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    y = rng.standard_normal((2, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(exe.run(x, y), _softmax(x).reshape(2, 4, 4) @ _softmax(y), rtol=1e-5, atol=1e-6)
    graph = json.loads(plan.graph_json())
    nop = next(n for n in graph["nodes"] if n["name"] == "__nop")
    storage = graph["attrs"]["storage_id"][1]
    rows = graph["node_row_ptr"]
    nop_at = graph["nodes"].index(nop)
    assert storage[rows[nop_at]] == storage[rows[nop["inputs"][0][0]]]  # the same storage


def test_a_reshape_that_is_an_output_is_still_computed():
    exe = _build("""def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
  %0 = nn.softmax(%x, axis=3);
  (reshape(%0, newshape=[8, 4]), %0)
}
""")
    assert not exe.plan.views
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 4)).astype(np.float32)
    got = exe.run(x)
    np.testing.assert_allclose(got[0], _softmax(x).reshape(8, 4), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], _softmax(x), rtol=1e-5, atol=1e-6)
