"""nn.deformable_conv2d compiled (te/topi/nn_deformable.py: the bilinear corners per
deformable group stored once, the sampled columns, a product tiled over positions by
filters) against the numpy reference, with offsets that send points outside the data and
neighbours past its far edges, groups and deformable groups, strides and asymmetric
padding, and a layout other than NCHW."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.ops import get_op

PASSES = ["InferType", "FuseOps", "InferType"]

CASES = [  # (data shape, offset shape, weight shape, attrs)
    ((1, 16, 9, 10), (1, 36, 9, 10), (24, 8, 3, 3),
     {"padding": (1, 1, 1, 1), "groups": 2, "deformable_groups": 2, "channels": 24, "kernel_size": (3, 3)}),
    ((2, 6, 11, 8), (2, 18, 5, 4), (20, 6, 3, 3),
     {"strides": (2, 2), "padding": (1, 0, 0, 1), "channels": 20, "kernel_size": (3, 3)}),
]


def _text(shapes, attrs, dtype="float32") -> str:
    def value(v):
        return f"[{', '.join(map(str, v))}]" if isinstance(v, tuple) else v
    call = ", ".join(f"{k}={value(v)}" for k, v in attrs.items())
    x, o, w = (f"Tensor[({', '.join(map(str, s))}), {dtype}]" for s in shapes)
    return f'''#[version = "0.0.5"]
def @main(%x: {x}, %off: {o}, %w: {w}) {{
  nn.deformable_conv2d(%x, %off, %w, {call})
}}'''


@pytest.mark.parametrize("case", CASES, ids=["groups-dg2-pad", "batch2-strided-asym"])
def test_deformable_compiled_equals_numpy(case):
    *shapes, attrs = case
    rng = np.random.default_rng(21)
    x = rng.standard_normal(shapes[0]).astype("float32")
    off = (rng.standard_normal(shapes[1]) * 4).astype("float32")  # many points outside, past the edges
    w = rng.standard_normal(shapes[2]).astype("float32")
    result = compile(_text(shapes, attrs), "deform.relay", passes=PASSES)
    assert result.ok, [d.message for d in result.diagnostics]
    want = get_op("nn.deformable_conv2d").evaluate([x, off, w], attrs)
    np.testing.assert_allclose(result.executable.run(x, off, w), want, rtol=1e-4, atol=1e-4)
