"""qnn.add, qnn.concatenate, qnn.conv2d_transpose, qnn.batch_matmul and
relay.op.annotation.simulated_quantize:
their relations, their numpy references against the arithmetic they stand for, and the
build (qnn.Legalize writes them as plain ops) giving what the interpreter gives."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ops import OpTypeError, get_op
from relaylens.compiler.ir.types import TensorType, TupleType
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform.span_check import spanless

HEADER = '#[version = "0.0.5"]\n'


def t(shape, dtype="int8") -> TensorType:
    return TensorType(tuple(shape), dtype)


F32, I32 = t((), "float32"), t((), "int32")


def rng_ints(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


# ---- references against the real-valued arithmetic --------------------------------------------


def test_qnn_add_is_the_sum_of_the_dequantized_operands_requantized():
    rng = np.random.default_rng(1)
    a, b = rng_ints(rng, (4, 5), "uint8"), rng_ints(rng, (1, 5), "uint8")
    sa, za, sb, zb, sc, zc = 0.0156863, 127, 0.0117647, 85, 0.0235294, 128
    args = [a, b, np.float32(sa), np.int32(za), np.float32(sb), np.int32(zb), np.float32(sc), np.int32(zc)]
    got = get_op("qnn.add").evaluate([np.asarray(x) for x in args])
    real = sa * (a.astype(np.float64) - za) + sb * (b.astype(np.float64) - zb)
    want = np.clip(np.round(real / sc) + zc, 0, 255)
    assert got.dtype == np.uint8 and got.shape == (4, 5)
    assert np.max(np.abs(got.astype(np.int64) - want)) <= 1  # each operand rounds once


def test_qnn_add_with_the_output_parameters_only_upcasts():
    a = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    s, z = np.float32(0.5), np.int32(3)
    got = get_op("qnn.add").evaluate([a, a, s, z, s, z, s, z])
    np.testing.assert_array_equal(got, np.clip(2 * a.astype(np.int32) - 3, -128, 127).astype(np.int8))


def test_qnn_concatenate_requantizes_only_the_inputs_whose_parameters_differ():
    a = np.array([[10, -20]], dtype=np.int8)
    b = np.array([[1, 2]], dtype=np.int8)
    scales = (np.float32(0.5), np.float32(0.25))
    zps = (np.int32(0), np.int32(1))
    got = get_op("qnn.concatenate").evaluate([(a, b), scales, zps, np.float32(0.25), np.int32(1)], {"axis": 0})
    np.testing.assert_array_equal(got, [[21, -39], [1, 2]])  # 10 * 2 + 1, -20 * 2 + 1; b as it is


def test_qnn_conv2d_transpose_is_the_transposed_convolution_of_the_shifted_operands():
    rng = np.random.default_rng(2)
    x, w = rng_ints(rng, (1, 3, 4, 4), "uint8"), rng_ints(rng, (3, 2, 3, 3), "int8")
    attrs = {"strides": (2, 2), "padding": (1, 1, 1, 1), "output_padding": (1, 1)}
    got = get_op("qnn.conv2d_transpose").evaluate([x, w, np.int32(100), np.int32(-3), np.float32(1), np.float32(1)],
                                                   attrs)
    want = get_op("nn.conv2d_transpose").evaluate([x.astype(np.int32) - 100, w.astype(np.int32) + 3],
                                                  {**attrs, "out_dtype": "int32"})
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_qnn_batch_matmul_is_the_product_of_the_shifted_operands_with_y_transposed():
    rng = np.random.default_rng(3)
    x, y = rng_ints(rng, (2, 3, 5), "uint8"), rng_ints(rng, (1, 4, 5), "int8")
    got = get_op("qnn.batch_matmul").evaluate([x, y, np.int32(128), np.int32(-3), np.float32(1), np.float32(1)])
    want = np.matmul(x.astype(np.int64) - 128, np.swapaxes(y.astype(np.int64) + 3, 1, 2))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_simulated_quantize_rounds_halves_away_from_zero_and_clips():
    x = np.array([[-3.0, -0.75, -0.25, 0.25, 0.75, 3.0]], dtype=np.float32)
    op = get_op("relay.op.annotation.simulated_quantize")
    got = op.evaluate([x, np.float32(0.5), np.float32(-4.0), np.float32(4.0)], {"kind": 1})
    np.testing.assert_array_equal(got, [[-2.0, -1.0, -0.5, 0.5, 1.0, 2.0]])  # -6 clipped to -4, 1.5 -> 2
    assert op.evaluate([x, np.float32(0.5), np.float32(-4.0), np.float32(4.0)], {"kind": 0}) is not x
    with pytest.raises(OpTypeError, match=r"only sign=True is computed"):
        op.evaluate([x, np.float32(0.5), np.float32(-4.0), np.float32(4.0)], {"kind": 1, "sign": False})


# ---- relations ---------------------------------------------------------------------------------


def test_relations_give_tvms_result_types():
    assert get_op("qnn.add").infer([t((2, 3, 4)), t((3, 1)), F32, I32, F32, I32, F32, I32]) == t((2, 3, 4))
    per_channel = [t((2, 3, 4)), t((2, 3, 4)), t((3,), "float32"), t((3,), "int32"), F32, I32, F32, I32]
    assert get_op("qnn.add").infer(per_channel, {"lhs_axis": 1}) == t((2, 3, 4))
    concat = [TupleType((t((1, 2)), t((3, 2)))), TupleType((F32, F32)), TupleType((I32, I32)), F32, I32]
    assert get_op("qnn.concatenate").infer(concat) == t((4, 2))
    deconv = [t((1, 4, 5, 5), "uint8"), t((3, 3, 4, 2)), I32, I32, F32, t((2,), "float32")]
    assert get_op("qnn.conv2d_transpose").infer(deconv, {"kernel_layout": "HWIO", "strides": (2, 2)}) == \
        t((1, 2, 11, 11), "int32")
    assert get_op("qnn.batch_matmul").infer([t((2, 3, 5), "uint8"), t((1, 4, 5)), I32, I32, F32, F32]) == \
        t((2, 3, 4), "int32")
    sq = get_op("relay.op.annotation.simulated_quantize")
    assert sq.infer([t((2, 3), "float32"), F32, F32, F32], {"kind": 2}) == t((2, 3), "float32")


@pytest.mark.parametrize("op, args, attrs, message", [
    ("qnn.add", [t((2, 3)), t((2, 3)), t((2,), "float32"), I32, F32, I32, F32, I32], {},
     r"lhs_scale must be a scalar or a vector of 3 values"),
    ("qnn.add", [t((2, 3)), t((2, 3)), F32, I32, F32, I32, t((3,), "float32"), I32], {},
     r"output_scale must be a float32 scalar"),
    ("qnn.concatenate", [TupleType((t((1, 2)), t((1, 2)))), TupleType((F32,)), TupleType((I32, I32)), F32, I32], {},
     r"input_scales has 1 values for 2 inputs"),
    ("qnn.concatenate", [TupleType((t((1, 2)),)), F32, TupleType((I32,)), F32, I32], {},
     r"requires a tuple of scales"),
    ("qnn.conv2d_transpose", [t((1, 4, 5, 5), "float32"), t((4, 2, 3, 3)), I32, I32, F32, F32], {},
     r"data must be int8, uint8, int16 or uint16"),
    ("qnn.conv2d_transpose", [t((1, 4, 5, 5)), t((4, 2, 3, 3)), I32, I32, F32, F32], {"out_dtype": "int8"},
     r"out_dtype must be int16, int32 or int64"),
    ("qnn.batch_matmul", [t((2, 3, 5)), t((2, 4, 5)), I32, t((4,), "int32"), F32, F32], {},
     r"y_zero_point must be a int32 scalar"),
    ("qnn.batch_matmul", [t((2, 3, 5), "int16"), t((2, 4, 5)), I32, I32, F32, F32], {},
     r"x must be int8 or uint8"),
    ("qnn.batch_matmul", [t((2, 3, 5)), t((2, 5, 4)), I32, I32, F32, F32], {"transpose_b": False},
     r"takes only transpose_a=False, transpose_b=True"),
    ("relay.op.annotation.simulated_quantize", [t((), "float32"), F32, F32, F32], {"kind": 1},
     r"the input shape cannot be empty"),
    ("relay.op.annotation.simulated_quantize", [t((2,), "float32"), t((2,), "float32"), F32, F32], {"kind": 1},
     r"dom_scale must be a float32 scalar"),
])
def test_relations_refuse_with_a_reason(op, args, attrs, message):
    with pytest.raises(OpTypeError, match=message):
        get_op(op).infer(args, attrs)


def test_a_type_error_is_reported_at_the_call():
    text = HEADER + ("def @main(%x: Tensor[(2, 2), int8]) {\n"
                     "  qnn.concatenate((%x, %x), (1f,), (0, 0), 1f, 0)\n}\n")
    errors = [d for d in check_text(text, "m.relay").diagnostics if d.is_error]
    assert len(errors) == 1 and "input_scales has 1 values for 2 inputs" in errors[0].message
    assert errors[0].span.line == 3


def test_simulated_quantize_needs_its_kind():
    text = HEADER + ("def @main(%x: Tensor[(2, 2), float32]) {\n"
                     "  relay.op.annotation.simulated_quantize(%x, 1f, -1f, 1f)\n}\n")
    errors = [d.message for d in check_text(text, "m.relay").diagnostics if d.is_error]
    assert any("attribute kind is required" in m for m in errors)


# ---- the build: qnn.Legalize leaves plain ops, and the compiled code is the interpreter ---------

MODEL = HEADER + """def @main(%a: Tensor[(2, 3, 4), int8], %b: Tensor[(1, 3, 4), int8], %w: Tensor[(4, 2, 3, 3), int8],
          %d: Tensor[(1, 4, 5, 5), uint8], %f: Tensor[(1, 4, 5, 5), float32], %s: float32,
          %c: Tensor[(2, 3, 4), int8]) {
  %0 = qnn.add(%a, %b, 0.5f, 3, 0.25f, -2, 0.7f, 1);
  %1 = qnn.add(%a, %c, meta[relay.Constant][0], meta[relay.Constant][1], 0.25f, 0, 0.5f, 0, lhs_axis=1);
  %2 = qnn.concatenate((%a, %0, %b), (0.5f, 0.7f, 0.7f), (3, 1, 1), 0.7f, 1, axis=0);
  %3 = qnn.conv2d_transpose(%d, %w, 100, 2, 1f, 0.5f, padding=[1, 1, 1, 1], strides=[2, 2], output_padding=[1, 1],
                            channels=2, kernel_size=[3, 3], out_dtype="int32");
  %4 = qnn.conv2d_transpose(%d, %w, 7, meta[relay.Constant][2], 1f, 0.5f, kernel_layout="IOHW");
  %5 = relay.op.annotation.simulated_quantize(%f, %s, -12f, 12f, kind=1);
  %6 = qnn.add(%a, %a, 0.5f, 3, 0.5f, 3, 0.5f, 3);
  (%1, %2, %3, %4, %5, %6)
}
"""


def _module_text() -> str:
    """MODEL with its three constants (a per-channel scale and zero point, per-channel kernel
    zero points) written as metadata by the printer."""
    text = MODEL.replace("meta[relay.Constant][0]", "%ls").replace("meta[relay.Constant][1]", "%lz").replace(
        "meta[relay.Constant][2]", "%kz")
    text = text.replace("%c: Tensor[(2, 3, 4), int8])", "%c: Tensor[(2, 3, 4), int8], %ls: Tensor[(3), float32], "
                                                       "%lz: Tensor[(3), int32], %kz: Tensor[(2), int32])")
    return text


def test_the_build_computes_what_the_interpreter_computes():
    params = {"ls": np.array([0.5, 0.02, 1.5], np.float32), "lz": np.array([1, -2, 3], np.int32),
              "kz": np.array([-1, 4], np.int32)}
    built = compile(_module_text(), "m.relay", params=params, strict=True)
    assert built.ok, [d.render() for d in built.diagnostics]
    legalized = next(s for s in built.snapshots if s.pass_name == "QnnCanonicalize")  # qnn.Legalize's last step
    text = print_module(legalized.module)
    assert "qnn." not in text.replace("qnn.requantize", "")  # the per-channel lhs stays a requantize
    assert "nn.conv2d_transpose(" in text and "simulated_quantize" in text
    assert spanless(legalized.module) == []  # every expression the rewrite made has a span
    rng = np.random.default_rng(0)
    main = built.checked.module["main"]
    args = []
    for p in main.params:
        if p.name in params:
            continue
        shape, dtype = tuple(int(d) for d in p.ty.shape), p.ty.dtype
        if dtype == "float32":
            args.append(np.asarray(rng.uniform(0.05, 1), np.float32) if not shape
                        else (rng.standard_normal(shape) * 3).astype(np.float32))
        else:
            args.append(rng_ints(rng, shape, dtype))
    bound = dict(zip([p.name for p in main.params if p.name not in params], args))
    want = interpret(built.checked.module, *[bound.get(p.name, params.get(p.name)) for p in main.params])
    got = built.executable.run(*args)
    assert len(got) == len(want) == 6
    for w, g in zip(want, got):
        assert (np.asarray(g).dtype, np.asarray(g).shape) == (np.asarray(w).dtype, np.asarray(w).shape)
        np.testing.assert_array_equal(g, w)


BATCH_MATMUL = HEADER + """def @main(%x: Tensor[(2, 3, 5), uint8], %y: Tensor[(1, 4, 5), int8], %z: int32) {
  %0 = qnn.batch_matmul(%x, %y, 0, 0, 1f, 1f);
  %1 = qnn.batch_matmul(%x, %y, 0, -3, 1f, 1f);
  %2 = qnn.batch_matmul(%x, %y, 128, 0, 1f, 1f);
  %3 = qnn.batch_matmul(%x, %y, 128, -3, 1f, 1f);
  %4 = qnn.batch_matmul(%x, %y, %z, 5, 1f, 1f);
  (%0, %1, %2, %3, %4)
}
"""


def test_qnn_batch_matmul_is_canonicalized_in_tvms_terms_and_computes_what_the_interpreter_computes():
    built = compile(BATCH_MATMUL, "m.relay", strict=True)
    assert built.ok, [d.render() for d in built.diagnostics]
    legalized = next(s for s in built.snapshots if s.pass_name == "QnnCanonicalize")
    text = print_module(legalized.module)
    assert "qnn." not in text and spanless(legalized.module) == []
    assert text.count('nn.batch_matmul(%x, %y, out_dtype="int32", transpose_a=False, transpose_b=True)') == 5
    assert "%0 = nn.batch_matmul" in text and "%1 = nn.batch_matmul" in text  # both zero points 0: T1 alone
    assert text.count("subtract(-1920, ") == 1  # T4 = 128 * -3 * 5, a constant when both are
    rng = np.random.default_rng(4)
    args = [rng_ints(rng, (2, 3, 5), "uint8"), rng_ints(rng, (1, 4, 5), "int8"), np.int32(-7)]
    want = interpret(built.checked.module, *args)
    for w, g in zip(want, built.executable.run(*args), strict=True):
        assert np.asarray(g).dtype == np.int32
        np.testing.assert_array_equal(g, w)


def test_hover_describes_the_new_ops():
    from relaylens.server.features.hover import describe_op

    text = HEADER + ("def @main(%x: Tensor[(2, 2), float32], %s: float32) {\n"
                     "  relay.op.annotation.simulated_quantize(%x, %s, -1f, 1f, kind=1)\n}\n")
    call = check_text(text, "m.relay").module["main"].body
    shown = describe_op(call)
    assert "relay.op.annotation.simulated_quantize(data, dom_scale, clip_min, clip_max, kind=required" in shown
    assert "round(clip(data / dom_scale, clip_min, clip_max)) * dom_scale" in shown
    assert "| `kind` | `1` | required | QAnnotateKind" in shown


# ---- TVM's own golden values (tests/python/relay/test_op_qnn_add.py, v0.16) --------------------

SAME = (0.00784314, 127, 0.00784314, 127, 0.00784314, 127)
DIFFERENT = (0.0156863, 127, 0.0117647, 85, 0.0235294, 128)
TVM_QNN_ADD = [  # (scales and zero points, x, y, TVM's output), uint8 (1, 4)
    (SAME, (140, 153, 165, 178), (204, 178, 165, 140), (217, 204, 203, 191)),
    (SAME, (25, 153, 178, 216), (204, 178, 191, 25), (102, 204, 242, 114)),
    (SAME, (25, 153, 216, 165), (204, 178, 25, 191), (102, 204, 114, 229)),
    (DIFFERENT, (76, 140, 153, 172), (136, 119, 128, 17), (120, 154, 167, 124)),
    (DIFFERENT, (133, 140, 146, 153), (136, 119, 111, 94), (158, 154, 154, 150)),
    (DIFFERENT, (76, 140, 172, 146), (136, 119, 17, 128), (120, 154, 124, 163)),
    ((0.125, 0, 0.125, 0, 0.125, 0), (255, 1, 1, 0), (255, 255, 128, 0), (255, 255, 129, 0)),
    ((0.125, 0, 0.125, 0, 0.25, 0), (255, 1, 1, 0), (255, 255, 127, 0), (255, 129, 65, 0)),
    ((0.5, 0, 0.25, 0, 0.125, 0), (255, 0, 1, 0), (0, 128, 64, 0), (255, 255, 132, 0)),
]


@pytest.mark.parametrize("params, x, y, want", TVM_QNN_ADD)
def test_qnn_add_gives_tvms_golden_outputs_interpreted_and_compiled(params, x, y, want):
    sa, za, sb, zb, sc, zc = params
    text = HEADER + ("def @main(%x: Tensor[(1, 4), uint8], %y: Tensor[(1, 4), uint8]) {\n"
                     f"  qnn.add(%x, %y, {sa}f, {za}, {sb}f, {zb}, {sc}f, {zc})\n}}\n")
    xs, ys = np.array([x], np.uint8), np.array([y], np.uint8)
    built = compile(text, "add.relay", strict=True)
    np.testing.assert_array_equal(interpret(built.checked.module, xs, ys), [want])
    np.testing.assert_array_equal(built.executable.run(xs, ys), [want])


# ---- TVM's test_op_qnn_concatenate.py (v0.16): int32 data, one tiny scale -----------------------

SCALE = float(np.float32((62 + 64) / (np.power(2, 32) - 1.0)))


@pytest.mark.parametrize("x_zp, y_zp, out_zp, shift_x, shift_y", [
    (0, 0, 0, 0, 0),    # test_same_io_qnn_params
    (3, 4, 1, -2, -3),  # test_different_io_qnn_params
    (0, 1, 1, 1, 0),    # test_few_same_io_qnn_params
])
def test_qnn_concatenate_gives_tvms_golden_outputs(x_zp, y_zp, out_zp, shift_x, shift_y):
    x = np.arange(-32, 32, 1).reshape(1, 64).astype(np.int32)
    y = np.arange(-64, 64, 2).reshape(1, 64).astype(np.int32)
    text = HEADER + ("def @main(%x: Tensor[(1, 64), int32], %y: Tensor[(1, 64), int32]) {\n"
                     f"  qnn.concatenate((%x, %y), ({SCALE!r}f, {SCALE!r}f), ({x_zp}, {y_zp}), {SCALE!r}f, {out_zp})\n}}\n")
    built = compile(text, "concat.relay", strict=True)
    want = np.concatenate((x + shift_x, y + shift_y), axis=0)
    np.testing.assert_array_equal(interpret(built.checked.module, x, y), want)
    np.testing.assert_array_equal(built.executable.run(x, y), want)


def test_float_operands_are_refused_at_the_call_with_the_reason():
    text = HEADER + ("def @main(%x: Tensor[(2, 2), float32], %y: Tensor[(1, 2), float32]) {\n"
                     "  qnn.add(%x, %y, 0.0156863f, 127, 0.0117647f, 85, 0.0235294f, 128)\n}\n")
    built = compile(text, "m.relay")
    errors = [d for d in built.diagnostics if d.is_error]
    assert len(errors) == 1 and errors[0].span.line == 3
    assert "no lowering for operator qnn.add (TVM never computes it: qnn.Legalize rewrites it first" in errors[0].message
    with pytest.raises(Exception, match="the quantized tensors must be integers"):
        interpret(built.checked.module, np.zeros((2, 2), np.float32), np.zeros((1, 2), np.float32))
