"""FlattenAtrousConv: the cases of TVM's test_pass_flatten_atrous_conv.py as Relay text.

RelayLens has no nn.space_to_batch_nd / nn.batch_to_space_nd ops, so the inputs do not
typecheck and the interpreter cannot run them: the values of the original pattern are
computed here with numpy versions of the two ops (TF's definitions) around the
project's own conv2d compute, and compared with the interpreter on the rewritten
module, which has only convolutions.  The cases with no numpy reference (patterns that
must not match) are golden files in tests/passes/flatten_atrous_conv/."""

from __future__ import annotations

import numpy as np

from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir import LayerSpan
from relaylens.compiler.ir.structural_equal import assert_structural_equal
from relaylens.compiler.ops import get_op
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.span_check import spanless

from conftest import _parse_ok

HEADER = '#[version = "0.0.5"]\n'
PARAMS = "%data: Tensor[(1, 5, 5, 4), float32] /* span=data:0:0 */, %w: Tensor[(3, 3, 4, 1), float32] /* span=w:0:0 */"
CONV = 'groups=4, channels=4, kernel_size=[3, 3], data_layout="NHWC", kernel_layout="HWOI"'


def s2b(block: int, pad: tuple[int, int], arg: str = "%data", span: str = "s2b") -> str:
    return (f"nn.space_to_batch_nd({arg}, block_shape=[{block}, {block}], "
            f"paddings=[[{pad[0]}, {pad[1]}], [{pad[0]}, {pad[1]}]]) /* span={span}:0:0 */")


def conv(arg: str, span: str = "conv", extra: str = "padding=[0, 0, 0, 0], ") -> str:
    return f"nn.conv2d({arg}, %w, {extra}{CONV}) /* span={span}:0:0 */"


def b2s(block: int, crop: tuple[int, int], arg: str, span: str = "b2s") -> str:
    return (f"nn.batch_to_space_nd({arg}, block_shape=[{block}, {block}], "
            f"crops=[[{crop[0]}, {crop[1]}], [{crop[0]}, {crop[1]}]]) /* span={span}:0:0 */")


def parse(text: str, name: str = "fac.relay", params: str = PARAMS):
    return _parse_ok(f"{HEADER}def @main({params}) {{\n{text}\n}}", name)


def flatten(mod):
    with PassContext(opt_level=3):
        return get_pass("FlattenAtrousConv")(mod)


# --- numpy references of the TF ops (NHWC, two spatial axes) ---------------------------


def np_space_to_batch(x, block, pads):
    n, h, w, c = x.shape
    x = np.pad(x, ((0, 0), pads, pads, (0, 0)))
    hp, wp = x.shape[1] // block, x.shape[2] // block
    x = x.reshape(n, hp, block, wp, block, c).transpose(2, 4, 0, 1, 3, 5)
    return x.reshape(block * block * n, hp, wp, c)


def np_batch_to_space(x, block, crops):
    bn, h, w, c = x.shape
    n = bn // (block * block)
    x = x.reshape(block, block, n, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(n, h * block, w * block, c)
    return x[:, crops[0]:x.shape[1] - crops[1], crops[0]:x.shape[2] - crops[1], :]


def np_conv(x, w):
    return get_op("nn.conv2d").evaluate([x, w], {"groups": 4, "channels": 4, "kernel_size": (3, 3),
                                                "data_layout": "NHWC", "kernel_layout": "HWOI"})


def inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.integers(-128, 127, (1, 5, 5, 4)).astype("float32"),
            rng.integers(-128, 127, (3, 3, 4, 1)).astype("float32"))


def check(before: str, expected: str | None, reference=None, spans: dict[str, str] | None = None):
    mod = parse(before, "before.relay")
    printed = print_module(mod, spans=True)
    out = flatten(mod)
    assert print_module(mod, spans=True) == printed, "the input module changed"
    if expected is None:
        assert out is mod
        return out
    assert_structural_equal(out, parse(expected, "expected.relay"))
    assert spanless(out) == []
    if reference is not None:
        x, w = inputs()
        np.testing.assert_array_equal(interpret(out, x, w), reference(x, w))
    return out


def layers(expr) -> list[str]:
    return [str(o) for o in expr.span.origins() if isinstance(o, LayerSpan)]


def test_fac_block_shape_2():
    out = check(f"  %0 = {s2b(2, (2, 3))};\n  %1 = {conv('%0')};\n  {b2s(2, (0, 1), '%1')}",
                f"  nn.conv2d(%data, %w, padding=[2, 2, 2, 2], dilation=[2, 2], {CONV})",
                lambda x, w: np_batch_to_space(np_conv(np_space_to_batch(x, 2, (2, 3)), w), 2, (0, 1)))
    assert layers(out["main"].body) == ["b2s:0:0", "conv:0:0", "s2b:0:0"]


def test_fac_block_shape_4():
    check(f"  %0 = {s2b(4, (4, 7))};\n  %1 = {conv('%0')};\n  {b2s(4, (0, 3), '%1')}",
          f"  nn.conv2d(%data, %w, padding=[4, 4, 4, 4], dilation=[4, 4], {CONV})",
          lambda x, w: np_batch_to_space(np_conv(np_space_to_batch(x, 4, (4, 7)), w), 4, (0, 3)))


def test_fac_quantize():
    params = "%data: Tensor[(1, 5, 5, 4), int8], %w: Tensor[(3, 3, 4, 1), int8]"
    q = "0, 0, 2f, 1f"
    before = (f"  %0 = {s2b(2, (2, 3))};\n  %1 = qnn.conv2d(%0, %w, {q}, padding=[0, 0, 0, 0], {CONV});\n"
              f"  {b2s(2, (0, 1), '%1')}")
    mod = parse(before, params=params)
    out = flatten(mod)
    expected = parse(f"  qnn.conv2d(%data, %w, {q}, padding=[2, 2, 2, 2], dilation=[2, 2], {CONV})", params=params)
    assert_structural_equal(out, expected)
    rng = np.random.default_rng(1)
    x, w = rng.integers(-128, 127, (1, 5, 5, 4)).astype("int8"), rng.integers(-128, 127, (3, 3, 4, 1)).astype("int8")
    attrs = {"groups": 4, "channels": 4, "kernel_size": (3, 3), "data_layout": "NHWC", "kernel_layout": "HWOI"}
    zero, scale_in, scale_k = np.array(0, "int32"), np.array(2, "float32"), np.array(1, "float32")
    inner = get_op("qnn.conv2d").evaluate([np_space_to_batch(x, 2, (2, 3)), w, zero, zero, scale_in, scale_k], attrs)
    np.testing.assert_array_equal(interpret(out, x, w), np_batch_to_space(inner, 2, (0, 1)))


def test_fac_surrounding():
    check(f"  %0 = add(%data, 1f);\n  %1 = {s2b(2, (2, 3), '%0')};\n  %2 = {conv('%1')};\n"
          f"  %3 = {b2s(2, (0, 1), '%2')};\n  add(%3, -1f)",
          f"  %0 = add(%data, 1f);\n  %1 = nn.conv2d(%0, %w, padding=[2, 2, 2, 2], dilation=[2, 2], {CONV});\n"
          "  add(%1, -1f)",
          lambda x, w: np_batch_to_space(np_conv(np_space_to_batch(x + 1, 2, (2, 3)), w), 2, (0, 1)) - 1)


def test_fac_several():
    def reference(x, w):
        y = np_batch_to_space(np_conv(np_space_to_batch(x, 2, (2, 3)), w), 2, (0, 1))
        return np_batch_to_space(np_conv(np_space_to_batch(y, 4, (4, 7)), w), 4, (0, 3))

    out = check(f"  %0 = {s2b(2, (2, 3))};\n  %1 = {conv('%0')};\n  %2 = {b2s(2, (0, 1), '%1')};\n"
                f"  %3 = {s2b(4, (4, 7), '%2', 's2b4')};\n  %4 = {conv('%3', 'conv4')};\n  {b2s(4, (0, 3), '%4', 'b2s4')}",
                f"  %0 = nn.conv2d(%data, %w, padding=[2, 2, 2, 2], dilation=[2, 2], {CONV});\n"
                f"  nn.conv2d(%0, %w, padding=[4, 4, 4, 4], dilation=[4, 4], {CONV})", reference)
    outer = out["main"].body
    assert layers(outer) == ["b2s4:0:0", "conv4:0:0", "s2b4:0:0"]
    assert layers(outer.args[0]) == ["b2s:0:0", "conv:0:0", "s2b:0:0"]


def test_nchw_or_a_missing_kernel_size_stays():
    check(f"  %0 = {s2b(2, (2, 3))};\n  %1 = nn.conv2d(%0, %w, groups=4, channels=4, data_layout=\"NHWC\", "
          f"kernel_layout=\"HWOI\");\n  {b2s(2, (0, 1), '%1')}", None)
    params = "%data: Tensor[(1, 4, 5, 5), float32], %w: Tensor[(4, 1, 3, 3), float32]"
    mod = parse(f"  %0 = {s2b(2, (2, 3))};\n  %1 = nn.conv2d(%0, %w, groups=4, channels=4, kernel_size=[3, 3]);\n"
                f"  {b2s(2, (0, 1), '%1')}", params=params)
    assert flatten(mod) is mod


def test_fac_relay_build():
    # the relay.build pipeline removes the ops RelayLens cannot type, and the result runs
    from relaylens.compiler.build import RELAY_BUILD_PIPELINE, build_module

    names = list(RELAY_BUILD_PIPELINE)
    assert names.index("CanonicalizeOps") < names.index("FlattenAtrousConv") < names.index("FuseOps")
    mod = parse(f"  %0 = {s2b(2, (2, 3))};\n  %1 = {conv('%0')};\n  {b2s(2, (0, 1), '%1')}")
    result = build_module(mod, strict=True)
    text = print_module(result.module)
    assert "space_to_batch_nd" not in text and "batch_to_space_nd" not in text and "nn.conv2d" in text
    x, w = inputs(2)
    want = np_batch_to_space(np_conv(np_space_to_batch(x, 2, (2, 3)), w), 2, (0, 1))
    np.testing.assert_array_equal(interpret(result.module, x, w), want)
