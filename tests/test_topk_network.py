"""topk past SELECT_MAX on a long axis (te/topi/algorithm.py's bitonic network over the
keys) compiled against the numpy reference: ties broken by the lower index both ways,
NaN the largest, an axis that is not a power of two (the padding sorts last), along the
first axis, and k covering the whole axis."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.te.topi.algorithm import NETWORK_MIN, SELECT_MAX
from relaylens.compiler.ops import get_op

PASSES = ["InferType", "FuseOps", "InferType"]


def _data(shape, dtype="float32") -> np.ndarray:
    rng = np.random.default_rng(5)
    x = rng.integers(-50, 50, size=shape).astype(dtype)  # many ties
    if dtype == "float32":
        x.flat[::97] = np.nan
        x.flat[1::89] = -0.0
    return x


@pytest.mark.parametrize("shape, dtype, attrs", [
    ((2, NETWORK_MIN + 77), "float32", {"k": SELECT_MAX + 8, "axis": -1}),
    ((NETWORK_MIN, 2), "int32", {"k": 0, "axis": 0, "is_ascend": True}),
], ids=["float32-ties-nan", "int32-axis0-all-ascend"])
def test_topk_by_the_network_equals_numpy(shape, dtype, attrs):
    x = _data(shape, dtype)
    call = ", ".join(f"{k}={v}" for k, v in attrs.items())
    text = f'''#[version = "0.0.5"]
def @main(%x: Tensor[{shape}, {dtype}]) {{
  topk(%x, {call})
}}'''
    result = compile(text, "topk.relay", passes=PASSES)
    assert result.ok, [d.message for d in result.diagnostics]
    (fn,) = result.lowered.functions.values()
    assert any("T_topk_net" in s.args for s in fn.schedule.record)
    assert not any("T_topk_rank" in s.args for s in fn.schedule.record)
    values, indices = result.executable.run(x)
    want_values, want_indices = get_op("topk").evaluate([x], attrs)
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_array_equal(values, want_values)
