"""Output channels padded to whole vectors (transform/x86_pad_channels.py): which channel
counts are padded, a bound conv2d of 40 channels computed as 48 in blocks of 16 and sliced
back (SqueezeNet 1.1's classifier, 1000 channels, as 1008), against numpy, and a weight
given at run time left alone."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform.x86_conv2d_layout import host_simd_lanes
from relaylens.compiler.transform.x86_pad_channels import padded_channels


def test_channels_whose_block_fills_fewer_lanes_than_padding_are_padded():
    assert padded_channels(1000, 16) == 1008  # block 20: 16 + 4 lanes, 62% busy; 1008: 99%
    assert padded_channels(40, 16) == 48  # block 20 again
    assert padded_channels(116, 16) == 128  # block 29: 16 + 8 + 4 + 1
    assert padded_channels(24, 16) is None  # block 24 (16 + 8) fills 75%, as 32 would
    assert padded_channels(20, 16) is None  # 20/32 is no better than the block of 20
    assert padded_channels(1024, 16) is None and padded_channels(3, 16) is None


CLASSIFIER = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 32, 7, 7), float32], %w: Tensor[(40, 32, 1, 1), float32], %b: Tensor[(40), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0], channels=40, kernel_size=[1, 1]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.global_avg_pool2d(%2);
  reshape(%3, newshape=[1, 40])
}"""


def _case():
    rng = np.random.default_rng(40)
    x = rng.standard_normal((1, 32, 7, 7)).astype("float32")
    w = (rng.standard_normal((40, 32, 1, 1)) / 6).astype("float32")
    b = rng.standard_normal(40).astype("float32")
    conv = np.einsum("oc,nchw->nohw", w[:, :, 0, 0].astype("float64"), x.astype("float64")) + b[:, None, None]
    return x, w, b, np.maximum(conv, 0).mean(axis=(2, 3))


@pytest.mark.skipif(host_simd_lanes() < 16, reason="padding applies to 16-lane hosts")
def test_a_bound_conv2d_of_40_channels_runs_as_48_in_blocks_of_16_and_equals_numpy():
    x, w, b, want = _case()
    result = compile(CLASSIFIER, "case.relay", params={"w": w, "b": b})
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    text = print_module(result.snapshots[-1].module)
    assert "channels=48" in text and 'kernel_layout="OIHW16i16o"' in text and 'out_layout="NCHW16c"' in text
    assert "strided_slice" in text and "NCHW20c" not in text
    np.testing.assert_allclose(np.asarray(result.executable.run(x)), want, rtol=1e-4, atol=1e-5)


def test_a_weight_given_at_run_time_is_not_padded():
    x, w, b, want = _case()
    result = compile(CLASSIFIER, "case.relay")
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    text = print_module(result.snapshots[-1].module)
    assert "channels=48" not in text and "strided_slice" not in text
    np.testing.assert_allclose(np.asarray(result.executable.run(x, w, b)), want, rtol=1e-4, atol=1e-5)
