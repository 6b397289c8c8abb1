"""A grouped nn.contrib_conv2d_NCHWc (AlterOpLayout's rule for groups of whole vectors,
transform/x86_grouped_conv2d.py): the compiled kernel (conv_blocked.py `nchwc_conv2d` with
groups, conv.py's schedule) and the interpreter against nn.conv2d's numpy reference on the
unblocked tensors,
and a grouped nn.conv2d built through the whole pipeline against the same reference."""

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.ops import get_op

CASES = [  # (in channels, out channels, groups, block, kernel, stride, padding, size)
    (160, 160, 10, 16, 3, 2, 1, 15),  # RegNet's: one input block per output block, stride 2
    (64, 64, 4, 16, 3, 1, 1, 9),
    (64, 64, 2, 16, 3, 1, 1, 7),  # 32 a group: two input blocks summed, two output blocks a group
    (32, 64, 2, 16, 3, 1, 0, 8),  # 16 in, 32 out a group
    (32, 32, 4, 8, 3, 1, 1, 7),  # AVX2's blocks of 8
    (64, 64, 4, 16, 1, 2, 0, 9),  # strided 1x1 (T_strided)
]


def _blocked(a, src, dst):
    return get_op("layout_transform").evaluate([a], {"src_layout": src, "dst_layout": dst})


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}to{c[1]}_g{c[2]}_{c[3]}c_k{c[4]}s{c[5]}p{c[6]}" for c in CASES])
def test_grouped_nchwc_conv_compiled_equals_numpy(case):
    ci, co, g, b, k, s, p, n = case
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {ci // b}, {n}, {n}, {b}), float32], %w: Tensor[({co // b}, {ci // g // b}, {k}, {k}, {b}, {b}), float32]) {{
  %0 = nn.contrib_conv2d_NCHWc(%x, %w, strides=[{s}, {s}], padding=[{p}, {p}, {p}, {p}], groups={g}, channels={co}, kernel_size=[{k}, {k}], data_layout="NCHW{b}c", kernel_layout="OIHW{b}i{b}o", out_layout="NCHW{b}c");
  nn.relu(%0)
}}"""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, ci, n, n)).astype("float32")
    w = rng.standard_normal((co, ci // g, k, k)).astype("float32")
    result = compile(text, "grouped.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    xb, wb = _blocked(x, "NCHW", f"NCHW{b}c"), _blocked(w, "OIHW", f"OIHW{b}i{b}o")
    got = result.executable.run(xb, wb)
    interpreted = np.asarray(Interpreter(result.checked.module).call("main", [xb, wb]))
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], {"strides": (s, s), "padding": (p,) * 4, "groups": g}), 0)
    np.testing.assert_allclose(got, _blocked(want, "NCHW", f"NCHW{b}c"), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(interpreted, _blocked(want, "NCHW", f"NCHW{b}c"), rtol=1e-4, atol=1e-4)


def test_grouped_conv2d_built_blocked_equals_numpy():
    """RegNet's block: 1x1, grouped 3x3 of 16 channels a group (stride 2), 1x1, each with
    relu, the weights bound: the grouped convolution is an NCHWc kernel, and no layout
    transform sits between it and the 1x1 convolutions."""
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 32, 12, 12), float32], %w1: Tensor[(64, 32, 1, 1), float32],
          %w2: Tensor[(64, 16, 3, 3), float32], %w3: Tensor[(64, 64, 1, 1), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[0, 0, 0, 0], channels=64, kernel_size=[1, 1]));
  %1 = nn.relu(nn.conv2d(%0, %w2, strides=[2, 2], padding=[1, 1, 1, 1], groups=4, channels=64, kernel_size=[3, 3]));
  nn.relu(nn.conv2d(%1, %w3, padding=[0, 0, 0, 0], channels=64, kernel_size=[1, 1]))
}"""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((1, 32, 12, 12)).astype("float32")
    params = {"w1": rng.standard_normal((64, 32, 1, 1)).astype("float32") / 6,
              "w2": rng.standard_normal((64, 16, 3, 3)).astype("float32") / 12,
              "w3": rng.standard_normal((64, 64, 1, 1)).astype("float32") / 8}
    result = compile(text, "regnet_block.relay", params=params, opt_level=3)
    assert result.ok, [d.message for d in result.diagnostics]
    got = result.executable.run(x)
    conv = get_op("nn.conv2d").evaluate
    y = np.maximum(conv([x, params["w1"]], {"padding": (0,) * 4}), 0)
    y = np.maximum(conv([y, params["w2"]], {"strides": (2, 2), "padding": (1,) * 4, "groups": 4}), 0)
    want = np.maximum(conv([y, params["w3"]], {"padding": (0,) * 4}), 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    names = list(result.fused_names.values())
    from relaylens.compiler.transform.x86_conv2d_layout import host_simd_lanes
    if host_simd_lanes() == 16:
        grouped = [n for n in names if "contrib_conv2d_NCHWc" in n]
        assert len(grouped) == 3, names  # the grouped one blocked too
        assert sum("layout_transform" in n for n in names) <= 2, names  # the input's and the output's


@pytest.mark.parametrize("p,k", [(8, 2), (4, 4), (2, 2)])
def test_merged_weight_computes_the_same_convolution(p, k):
    """k groups of p channels as one of k * p with the block-diagonal weight (numpy reference)."""
    from relaylens.compiler.transform.x86_grouped_conv2d import merged_weight

    groups, n = 4 * k, 5
    rng = np.random.default_rng(13)
    x = rng.standard_normal((1, groups * p, n, n)).astype("float32")
    w = rng.standard_normal((groups * p, p, 3, 3)).astype("float32")
    conv = get_op("nn.conv2d").evaluate
    want = conv([x, w], {"padding": (1,) * 4, "groups": groups})
    got = conv([x, merged_weight(w, k)], {"padding": (1,) * 4, "groups": groups // k})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("groups,stride", [(8, 1), (16, 2), (16, 1)], ids=["8a_group", "4a_group_s2", "4a_group"])
def test_narrow_groups_built_merged_equals_numpy(groups, stride):
    """ResNeXt's 8 and 4 channels a group (64 channels), the weights bound: on a 16-lane host
    every convolution is an NCHWc kernel (the grouped one merged, block-diagonal)."""
    c, n = 64, 10
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 32, {n}, {n}), float32], %w1: Tensor[({c}, 32, 1, 1), float32],
          %w2: Tensor[({c}, {c // groups}, 3, 3), float32], %w3: Tensor[(32, {c}, 1, 1), float32]) {{
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[0, 0, 0, 0], channels={c}, kernel_size=[1, 1]));
  %1 = nn.relu(nn.conv2d(%0, %w2, strides=[{stride}, {stride}], padding=[1, 1, 1, 1], groups={groups}, channels={c}, kernel_size=[3, 3]));
  nn.relu(nn.conv2d(%1, %w3, padding=[0, 0, 0, 0], channels=32, kernel_size=[1, 1]))
}}"""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((1, 32, n, n)).astype("float32")
    params = {"w1": rng.standard_normal((c, 32, 1, 1)).astype("float32") / 6,
              "w2": rng.standard_normal((c, c // groups, 3, 3)).astype("float32") / 3,
              "w3": rng.standard_normal((32, c, 1, 1)).astype("float32") / 8}
    result = compile(text, "resnext_block.relay", params=params, opt_level=3)
    assert result.ok, [d.message for d in result.diagnostics]
    conv = get_op("nn.conv2d").evaluate
    y = np.maximum(conv([x, params["w1"]], {"padding": (0,) * 4}), 0)
    y = np.maximum(conv([y, params["w2"]], {"strides": (stride, stride), "padding": (1,) * 4, "groups": groups}), 0)
    want = np.maximum(conv([y, params["w3"]], {"padding": (0,) * 4}), 0)
    np.testing.assert_allclose(result.executable.run(x), want, rtol=1e-4, atol=1e-4)
    from relaylens.compiler.transform.x86_conv2d_layout import host_simd_lanes
    if host_simd_lanes() == 16:
        names = list(result.fused_names.values())
        assert sum("contrib_conv2d_NCHWc" in name for name in names) == 3, names
        assert not any("fused_nn_conv2d" in name for name in names), names
