"""Lowering cases for the element-wise, broadcast, activation and transform ops: every op
of those families with several shapes, broadcasting, dtypes and attribute variants."""

from __future__ import annotations

import numpy as np

from lower_cases import Arr, Case

NAN, INF = float("nan"), float("inf")


def _indices(shape: tuple[int, ...], lo: int, hi: int, dtype: str = "int32", seed: int = 1) -> Arr:
    """Indices drawn from [lo, hi)."""
    return Arr(shape, dtype, value=np.random.default_rng(seed).integers(lo, hi, size=shape))


def _scalar(value, dtype: str = "float32") -> Arr:
    return Arr((), dtype, value=value)


# --------------------------------------------------------------------------- element-wise

_POSITIVE = ("log", "log2", "log10", "sqrt", "rsqrt")
_FLOAT_MATH = ("sigmoid", "tanh", "exp", "log", "log2", "log10", "sqrt", "rsqrt", "erf", "sin", "cos",
               "tan", "atan", "fast_exp", "fast_tanh", "fast_erf")
_ANY_MATH = ("negative", "abs", "sign", "round", "floor", "ceil", "trunc", "copy")


def _elemwise() -> list[Case]:
    cases = []
    for op in _FLOAT_MATH:
        fill = "positive" if op in _POSITIVE else "unit" if op == "tan" else "normal"
        cases.append(Case(op, [Arr((2, 3, 4), "float32", fill)]))
        cases.append(Case(op, [Arr((), "float32", fill)], name="scalar"))
    cases += [Case("exp", [Arr((3, 5), "float64")], name="f64"),
              Case("log", [Arr((7,), "float64", "positive")], name="f64"),
              Case("tanh", [Arr((4, 4), "float16")], name="f16", rtol=1e-3, atol=1e-3),
              Case("erf", [Arr((4, 4), "float16")], name="f16", rtol=1e-3, atol=1e-3)]
    for op in _ANY_MATH:
        cases.append(Case(op, [Arr((2, 3, 4), "float32")]))
        cases.append(Case(op, [Arr((5, 2), "int32")], name="i32"))
    cases += [Case("abs", [Arr((6,), "uint8")], name="u8"),
              Case("sign", [Arr((6,), "uint16")], name="u16"),
              Case("negative", [Arr((6,), "int64")], name="i64"),
              Case("sign", [Arr((5,), "float32", value=[-2.0, 0.0, 3.0, NAN, -INF])], name="special"),
              Case("round", [Arr((6,), "float32", value=[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])], name="halves"),
              Case("floor", [Arr((3, 2), "float64")], name="f64"),
              Case("copy", [Arr((2, 2), "bool")], name="bool")]
    special = Arr((6,), "float32", value=[1.0, NAN, INF, -INF, 0.0, -3.5])
    for op in ("isnan", "isinf", "isfinite"):
        cases += [Case(op, [special]), Case(op, [Arr((2, 3), "float64")], name="f64"),
                  Case(op, [Arr((4,), "int32")], name="i32")]
    cases += [
        Case("logical_not", [Arr((3, 4), "bool")]),
        Case("bitwise_not", [Arr((3, 4), "int32")]),
        Case("bitwise_not", [Arr((4,), "uint8", value=[0, 1, 0x80, 0xFF])], name="u8"),
        Case("bitwise_not", [Arr((3,), "int64", value=[0, -1, 1 << 40])], name="i64"),
        Case("bitwise_not", [Arr((3, 4), "bool")], name="bool"),
        Case("clip", [Arr((3, 4))], {"a_min": -0.5, "a_max": 0.5}),
        Case("clip", [Arr((3, 4), "int32")], {"a_min": -2.5, "a_max": 3.7}, name="i32-float-bounds"),
        Case("clip", [Arr((10,), "int8")], {"a_min": -1e30, "a_max": 1e30}, name="i8-wide-bounds"),
        Case("clip", [Arr((2, 5), "float64")], {"a_min": 0, "a_max": INF}, name="f64-open"),
        Case("cast", [Arr((3, 4))], {"dtype": "int32"}, name="f32-i32"),
        Case("cast", [Arr((3, 4), "int32")], {"dtype": "float32"}, name="i32-f32"),
        Case("cast", [Arr((3, 4))], {"dtype": "float64"}, name="f32-f64"),
        Case("cast", [Arr((3, 4), "int32", "int")], {"dtype": "bool"}, name="i32-bool"),
        Case("cast", [Arr((3, 4), "bool")], {"dtype": "float32"}, name="bool-f32"),
        Case("cast", [Arr((4,), "int64", value=[300, -200, 127, -128])], {"dtype": "int8"}, name="i64-i8"),
        Case("zeros_like", [Arr((2, 3))]),
        Case("zeros_like", [Arr((4,), "int32")], name="i32"),
        Case("ones_like", [Arr((2, 3))]),
        Case("ones_like", [Arr((), "int64")], name="i64-scalar"),
        Case("full_like", [Arr((2, 3)), _scalar(1.5)]),
        Case("full_like", [Arr((2, 3), "int32"), _scalar(2.7)], name="f32-fill-into-i32"),
        Case("full_like", [Arr((4,), "float64"), _scalar(-3, "int32")], name="i32-fill-into-f64"),
    ]
    wide = Arr((9,), "int32", value=[-100000, -4097, -3, -1, 0, 1, 5, 4096, 1000001])
    for shift in (-1, 2, 32):
        cases.append(Case("fixed_point_multiply", [wide], {"multiplier": 1395864371, "shift": shift},
                          name=f"shift{shift}"))
    cases.append(Case("fixed_point_multiply", [Arr((3, 3), "int8")], {"multiplier": 1 << 30, "shift": 1},
                      name="i8"))
    return cases


# --------------------------------------------------------------------------- broadcast

_ARITH = ("add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power",
          "maximum", "minimum")
_COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
_LOGIC = ("logical_and", "logical_or", "logical_xor")
_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")


def _sign_pairs(dtype: str, a, b) -> list[Arr]:
    """lhs and rhs with the four combinations of signs of a and b."""
    return [Arr((4,), dtype, value=[a, -a, a, -a]), Arr((4,), dtype, value=[b, b, -b, -b])]


def _broadcast() -> list[Case]:
    cases = []
    divides = ("divide", "floor_divide", "mod", "floor_mod")
    for op in _ARITH:
        lhs = Arr((2, 3, 4), "float32", "positive" if op == "power" else "normal")
        rhs = "positive" if op in divides else "normal"
        cases.append(Case(op, [lhs, Arr((3, 4), "float32", rhs)]))
        cases.append(Case(op, [Arr((2, 1, 4), "float32", "positive" if op == "power" else "normal"),
                               Arr((3, 1), "float32", rhs)], name="both-broadcast"))
        rhs_int = _indices((3, 4), 0, 4) if op == "power" else Arr((3, 4), "int32", "nonzero")
        cases.append(Case(op, [Arr((2, 3, 4), "int32"), rhs_int], name="i32"))
    cases += [
        Case("add", [Arr((2, 3)), Arr(())], name="scalar-rhs"),
        Case("multiply", [Arr(()), Arr(())], name="scalars"),
        Case("divide", [Arr((3, 4), "float64"), Arr((4,), "float64", "positive")], name="f64"),
        Case("divide", _sign_pairs("int32", 7, 2), name="truncates"),
        Case("floor_divide", _sign_pairs("int32", 7, 2), name="floors"),
        Case("mod", _sign_pairs("int64", 7, 3), name="sign-of-lhs"),
        Case("floor_mod", _sign_pairs("int64", 7, 3), name="sign-of-rhs"),
        Case("mod", _sign_pairs("float32", 7.5, 2), name="float-signs"),
        Case("floor_mod", _sign_pairs("float32", 7.5, 2), name="float-signs"),
        Case("subtract", [Arr((5,), "uint8"), Arr((5,), "uint8")], name="u8-wraps"),
        Case("power", [Arr((5,), "int64", value=[2, -3, 0, 1, 10]), _scalar(3, "int64")], name="i64-scalar"),
    ]
    for op in ("add", "multiply", "maximum", "minimum"):
        cases.append(Case(op, [Arr((2, 4), "bool"), Arr((4,), "bool")], name="bool"))
    for op in _COMPARE:
        cases.append(Case(op, [Arr((2, 3, 4), "float32", "int"), Arr((4,), "float32", "int")]))
        cases.append(Case(op, [Arr((3, 1), "int32"), Arr((1, 5), "int32")], name="i32"))
    for op in _LOGIC:
        cases.append(Case(op, [Arr((2, 3), "bool"), Arr((3,), "bool")]))
        cases.append(Case(op, [Arr((), "bool"), Arr((4,), "bool")], name="scalar"))
    for op in _BITWISE:
        cases.append(Case(op, [Arr((2, 3, 4), "int32"), Arr((4,), "int32")]))
        cases.append(Case(op, [Arr((4,), "uint8", value=[0xF0, 0x0F, 0xFF, 0x5A]), Arr((1,), "uint8", value=[0x3C])],
                          name="u8-bits"))
        cases.append(Case(op, [Arr((3,), "int64", value=[-1, 1 << 40, -(1 << 62)]), Arr((), "int64", value=-6)],
                          name="i64-signs"))
        cases.append(Case(op, [Arr((2, 3), "bool"), Arr((3,), "bool")], name="bool"))
    cases += [
        Case("where", [Arr((2, 1, 4), "bool"), Arr((3, 4)), Arr((2, 3, 1))]),
        Case("where", [Arr((3, 4), "bool"), Arr(()), Arr(())], name="scalars"),
        Case("where", [Arr((), "bool"), Arr((2, 2), "int32"), Arr((2,), "int32")], name="scalar-cond"),
        Case("nn.bias_add", [Arr((2, 3, 4, 5)), Arr((3,))]),
        Case("nn.bias_add", [Arr((2, 3, 4, 5)), Arr((5,))], {"axis": -1}, name="axis-1"),
        Case("nn.bias_add", [Arr((2, 3, 4)), Arr((4,))], {"axis": 2}, name="axis2"),
        Case("nn.bias_add", [Arr((6, 2), "int32"), Arr((6,), "int32")], {"axis": 0}, name="i32"),
    ]
    return cases


# --------------------------------------------------------------------------- activations


def _activations() -> list[Case]:
    cases = [
        Case("nn.relu", [Arr((2, 3, 4))]),
        Case("nn.relu", [Arr((5,), "int32")], name="i32"),
        Case("nn.relu", [Arr((), "float64")], name="f64-scalar"),
        Case("nn.leaky_relu", [Arr((2, 3, 4))], {"alpha": 0.1}),
        Case("nn.leaky_relu", [Arr((3, 3), "int32")], {"alpha": 2.5}, name="i32-truncates-alpha"),
        Case("nn.prelu", [Arr((2, 3, 4)), Arr((3,))]),
        Case("nn.prelu", [Arr((2, 3, 4)), Arr((4,))], {"axis": 2}, name="axis2"),
        Case("nn.prelu", [Arr((5, 2)), Arr((5,))], {"axis": 0}, name="axis0"),
    ]
    big = Arr((2, 4), "float32", value=[[1000, 1001, 1002, 999], [-1000, -1001, -999, -998]])
    for op in ("nn.softmax", "nn.fast_softmax", "nn.log_softmax"):
        cases += [
            Case(op, [Arr((2, 3, 4))]),
            Case(op, [Arr((2, 3, 4))], {"axis": 1}, name="axis1"),
            Case(op, [Arr((2, 3, 4))], {"axis": -3}, name="axis-3"),
            Case(op, [Arr((6,), "float64")], name="f64-1d"),
            Case(op, [Arr((3, 5), "float16")], name="f16", rtol=1e-3, atol=1e-3),
            Case(op, [big], name="large", atol=1e-4),
            Case(op, [Arr((2, 3, 64))], name="rows-in-lanes"),  # schedule/row_reduce.py
            Case(op, [Arr((2, 8, 64))], name="rows-together"),  # row_reduce.rows_together
            Case(op, [Arr((6, 32))], name="rows-together-2d"),
        ]
    # rows of 64 two at a time, with what the shift by the row's maximum must survive: -inf
    # (a row of it: NaN, as the reference), NaN, +inf (NaN), values past e^x's range
    special = np.random.default_rng(4).standard_normal((8, 64)).astype(np.float32)
    special[0, 1:] = -np.inf
    special[1, 5] = np.nan
    special[2] *= 1000
    special[3, 7] = np.inf
    special[4] = -np.inf
    special[5, ::2] = -np.inf
    special[6] = special[6] * 30 - 3000
    special[7, 9] = 80.0
    cases.append(Case("nn.softmax", [Arr((8, 64), value=special)], name="rows-together-special"))
    return cases


# --------------------------------------------------------------------------- transforms


def _transform() -> list[Case]:
    return [
        Case("broadcast_to", [Arr((3, 1))], {"shape": [2, 3, 4]}),
        Case("broadcast_to", [Arr(())], {"shape": [2, 2]}, name="scalar"),
        Case("broadcast_to", [Arr((4,), "int32")], {"shape": [3, 4]}, name="i32"),
        Case("broadcast_to_like", [Arr((1, 4)), Arr((3, 4))]),
        Case("broadcast_to_like", [Arr((2, 1, 1), "bool"), Arr((2, 3, 5), "bool")], name="bool"),
        Case("collapse_sum_like", [Arr((2, 3, 4)), Arr((3, 1))]),
        Case("collapse_sum_like", [Arr((2, 3, 4)), Arr((2, 3, 4))], name="same"),
        Case("collapse_sum_like", [Arr((2, 3)), Arr(())], name="to-scalar"),
        Case("collapse_sum_like", [Arr((4, 1, 3), "int32"), Arr((1, 3), "int32")], name="i32"),
        Case("collapse_sum_to", [Arr((2, 3, 4)), Arr((2,), "int64", value=[3, 1])], {"shape": [3, 1]}),
        Case("collapse_sum_to", [Arr((2, 3, 4)), Arr((2,), "int64", value=[1, 4])], {"shape": [1, 4]},
             name="keep-last"),
        Case("concatenate", [(Arr((2, 3)), Arr((2, 1)), Arr((2, 4)))], {"axis": 1}),
        Case("concatenate", [(Arr((2, 3)), Arr((2, 2)))], {"axis": -1}, name="axis-1"),
        Case("concatenate", [(Arr((1, 2, 2), "int32"), Arr((3, 2, 2), "int32"), Arr((2, 2, 2), "int32"))],
             name="i32-axis0"),
        Case("concatenate", [(Arr((3, 2)),)], name="one-field"),
        Case("expand_dims", [Arr((2, 3))], {"axis": 1, "num_newaxis": 2}),
        Case("expand_dims", [Arr((2, 3))], {"axis": -1}, name="axis-1"),
        Case("expand_dims", [Arr(())], {"axis": 0}, name="scalar"),
        Case("expand_dims", [Arr((4,), "int32")], {"axis": 0, "num_newaxis": 0}, name="none"),
        Case("layout_transform", [Arr((1, 3, 4, 5))], {"src_layout": "NCHW", "dst_layout": "NHWC"}),
        Case("layout_transform", [Arr((2, 4, 5, 3))], {"src_layout": "NHWC", "dst_layout": "NCHW"},
             name="nhwc-nchw"),
        Case("layout_transform", [Arr((1, 8, 3, 3))], {"src_layout": "NCHW", "dst_layout": "NCHW4c"},
             name="nchw-nchw4c"),
        Case("layout_transform", [Arr((1, 32, 2, 2))], {"src_layout": "NCHW", "dst_layout": "NCHW16c"},
             name="nchw-nchw16c"),
        Case("layout_transform", [Arr((2, 6, 2, 3))], {"src_layout": "NCHW", "dst_layout": "NCHW4c"},
             name="padded"),
        Case("layout_transform", [Arr((1, 16, 3, 32))], {"src_layout": "NCHW", "dst_layout": "NCHW8c"},
             name="pack-long-row"),  # a row of 32 in vectors of 8, its 8 channels inside
        Case("layout_transform", [Arr((1, 2, 3, 3, 4))], {"src_layout": "NCHW4c", "dst_layout": "NCHW"},
             name="nchw4c-nchw"),
        Case("layout_transform", [Arr((2, 3, 5, 7, 8))], {"src_layout": "NCHW8c", "dst_layout": "NCHW"},
             name="nchw8c-nchw-odd"),  # unblocked: the 8 channels of a block inside each row
        Case("layout_transform", [Arr((1, 2, 4, 16, 16), "int32")], {"src_layout": "NCHW16c", "dst_layout": "NCHW"},
             name="nchw16c-nchw"),
        Case("layout_transform", [Arr((1, 2, 3, 3, 4), "int32")],
             {"src_layout": "NCHW4c", "dst_layout": "NCHW2c"}, name="reblock"),
        Case("layout_transform", [Arr((1, 3, 2, 5, 16))], {"src_layout": "NCHW16c", "dst_layout": "NCHW12c"},
             name="reblock-across-blocks"),  # MobileNet v2's 144 channels, 16c to 12c
        Case("layout_transform", [Arr((1, 2, 2, 3, 8))], {"src_layout": "NCHW8c", "dst_layout": "NCHW6c"},
             name="reblock-padded"),  # 16 channels in 6c blocks: 18, the last 2 lanes 0
        Case("layout_transform", [Arr((1, 2, 3, 3, 4))], {"src_layout": "NCHW4c", "dst_layout": "NHWC"},
             name="nchw4c-nhwc"),
        Case("nn.batch_flatten", [Arr((2, 3, 4))]),
        Case("nn.batch_flatten", [Arr((5,), "int32")], name="1d"),
        Case("reshape", [Arr((2, 3, 4))], {"newshape": [6, -1]}),
        Case("reshape", [Arr((2, 3, 4))], {"newshape": [0, -1]}, name="copy-dim"),
        Case("reshape", [Arr((2, 3, 4))], {"newshape": [-3, -2]}, name="merge"),
        Case("reshape", [Arr((6, 4), "int64")], {"newshape": [-4, 2, -1, 4]}, name="split-i64"),
        Case("reshape", [Arr((1,))], {"newshape": []}, name="to-scalar"),
        Case("reshape", [Arr(())], {"newshape": [1, 1]}, name="from-scalar"),
        Case("reshape_like", [Arr((2, 3, 4)), Arr((6, 4))]),
        Case("reshape_like", [Arr((2, 3, 4)), Arr((5, 12))], {"lhs_begin": 1, "rhs_begin": 1}, name="ranges"),
        Case("split", [Arr((2, 6, 4))], {"indices_or_sections": 3, "axis": 1}),
        Case("split", [Arr((2, 7))], {"indices_or_sections": [1, 4], "axis": -1}, name="indices"),
        Case("split", [Arr((4, 2), "int32")], {"indices_or_sections": 1}, name="one"),
        Case("squeeze", [Arr((1, 3, 1, 4))]),
        Case("squeeze", [Arr((1, 3, 1, 4))], {"axis": [2]}, name="axis"),
        Case("squeeze", [Arr((2, 1), "int32")], {"axis": [-1]}, name="axis-1"),
        Case("squeeze", [Arr((1, 1))], name="to-scalar"),
        Case("stack", [(Arr((2, 3)), Arr((2, 3)), Arr((2, 3)))]),
        Case("stack", [(Arr((2, 3)), Arr((2, 3)))], {"axis": -1}, name="axis-1"),
        Case("stack", [(Arr((2, 3), "int32"), Arr((2, 3), "int32"))], {"axis": 1}, name="i32-axis1"),
        Case("stack", [(Arr(()), Arr(()), Arr(()))], name="scalars"),
        Case("transpose", [Arr((2, 3, 4))]),
        Case("transpose", [Arr((2, 3, 4))], {"axes": [1, 0, 2]}, name="swap"),
        Case("transpose", [Arr((2, 3, 4, 5), "int32")], {"axes": [0, 2, 3, 1]}, name="nchw-nhwc"),
        Case("transpose", [Arr((2, 3, 4))], {"axes": [-1, 0, 1]}, name="negative"),
        Case("transpose", [Arr((32, 3, 20))], {"axes": [1, 2, 0]}, name="blocked"),  # schedule/transpose.py
    ]


def _transform_index() -> list[Case]:
    return [
        Case("arange", [_scalar(0.0), _scalar(5.0), _scalar(0.5)],
             {"start": 0.0, "stop": 5.0, "step": 0.5, "dtype": "float32"}),
        Case("arange", [_scalar(2, "int32"), _scalar(11, "int32"), _scalar(3, "int32")],
             {"start": 2, "stop": 11, "step": 3, "dtype": "int32"}, name="i32"),
        Case("arange", [_scalar(5, "int64"), _scalar(-1, "int64"), _scalar(-2, "int64")],
             {"start": 5, "stop": -1, "step": -2, "dtype": "int64"}, name="down"),
        Case("full", [_scalar(1.5)], {"shape": [2, 3]}),
        Case("full", [_scalar(2.7)], {"shape": [4], "dtype": "int32"}, name="to-i32"),
        Case("full", [_scalar(True, "bool")], {"shape": []}, name="scalar-bool"),
        Case("zeros", [], {"shape": [2, 3]}),
        Case("zeros", [], {"shape": [4], "dtype": "int64"}, name="i64"),
        Case("ones", [], {"shape": [3, 1, 2]}),
        Case("ones", [], {"shape": [], "dtype": "int8"}, name="scalar-i8"),
        Case("gather", [Arr((3, 4)), _indices((3, 2), 0, 4)], {"axis": 1}),
        Case("gather", [Arr((3, 4)), _indices((5, 4), 0, 3, "int64")], {"axis": 0}, name="axis0-i64"),
        Case("gather", [Arr((2, 3, 4), "int32"), _indices((2, 3, 2), 0, 4)], {"axis": -1}, name="axis-1"),
        Case("gather_nd", [Arr((3, 4, 5)), _indices((2, 6), 0, 3)]),
        Case("gather_nd", [Arr((3, 4)), _indices((1, 2, 2), 0, 3)], name="rows"),
        Case("gather_nd", [Arr((2, 3, 4)), _indices((1, 2, 5), 0, 3)], {"batch_dims": 1}, name="batch"),
        Case("ndarray_size", [Arr((2, 3, 4))]),
        Case("ndarray_size", [Arr(())], {"dtype": "int64"}, name="scalar-i64"),
        Case("one_hot", [_indices((2, 3), -1, 5), _scalar(1.0), _scalar(0.0)], {"depth": 4}),
        Case("one_hot", [_indices((3,), 0, 4, "int64"), _scalar(5.0), _scalar(-1.0)],
             {"depth": 4, "axis": 0, "dtype": "int32"}, name="axis0-i32"),
        Case("one_hot", [_indices((2, 2), 0, 3), _scalar(7, "int32"), _scalar(1, "int32")],
             {"depth": 3, "axis": 1}, name="middle"),
        Case("repeat", [Arr((2, 3))], {"repeats": 2, "axis": 1}),
        Case("repeat", [Arr((2, 3), "int32")], {"repeats": 3, "axis": -2}, name="axis-2"),
        Case("reverse", [Arr((3, 4))], {"axis": 0}),
        Case("reverse", [Arr((2, 5), "int32")], {"axis": -1}, name="axis-1"),
        Case("shape_of", [Arr((2, 3, 4))]),
        Case("shape_of", [Arr((5,), "int32")], {"dtype": "int64"}, name="i64"),
        Case("shape_of", [Arr(())], name="scalar"),
        Case("sliding_window", [Arr((2, 6, 5))], {"axis": 1, "window_shape": [3, 2], "strides": [2, 1]}),
        Case("sliding_window", [Arr((7,), "int32")], {"axis": 0, "window_shape": [3], "strides": [2]},
             name="1d"),
        Case("strided_slice", [Arr((4, 5, 6))], {"begin": [1, 0], "end": [3, 4], "strides": [1, 2]}),
        Case("strided_slice", [Arr((5, 6))], {"begin": [-1], "end": [0], "strides": [-2], "axes": [1]},
             name="backwards"),
        Case("strided_slice", [Arr((5, 6), "int32")], {"begin": [1, 2], "end": [2, -1], "strides": [1, 1],
                                                        "slice_mode": "size"}, name="size"),
        Case("strided_slice", [Arr((4, 4))], {"begin": [-10, 1], "end": [100, 3], "strides": [1]},
             name="clamped"),
        Case("take", [Arr((3, 4)), Arr((5,), "int32")], name="flat-clip"),
        Case("take", [Arr((3, 4)), Arr((2, 3), "int32")], {"axis": 1, "mode": "wrap"}, name="wrap"),
        Case("take", [Arr((3, 4)), _indices((2, 3), -4, 4)], {"axis": 1, "mode": "fast"}, name="fast"),
        Case("take", [Arr((3, 4)), Arr((6,), "int64", value=[-9, -1, 0, 2, 3, 30])], {"axis": -1},
             name="clip"),
        Case("take", [Arr((2, 3, 4), "int32"), _indices((2, 5), 0, 3)], {"axis": 1, "batch_dims": 1},
             name="batch"),
        Case("take", [Arr((4, 2)), _scalar(2, "int32")], {"axis": 0}, name="scalar-index"),
        Case("take", [Arr((12,)), Arr((4,), "int32")], {"mode": "wrap"}, name="flat-wrap"),
        Case("tile", [Arr((2, 3))], {"reps": [2, 1]}),
        Case("tile", [Arr((2, 3), "int32")], {"reps": [2, 2, 2]}, name="more-reps"),
        Case("tile", [Arr((2, 1, 3))], {"reps": [3]}, name="fewer-reps"),
    ]


def _slice_like() -> list[Case]:
    return [
        Case("slice_like", [Arr((4, 5, 6)), Arr((2, 3), "int8")]),
        Case("slice_like", [Arr((3, 5, 6), "int32"), Arr((1, 2, 4))], {"axes": [1, -1]}, name="axes"),
        Case("slice_like", [Arr((2, 5)), Arr((2, 5))], {"axes": [0]}, name="whole"),
    ]


CASES: list[Case] = (_elemwise() + _broadcast() + _activations() + _transform() + _transform_index()
                     + _slice_like())
