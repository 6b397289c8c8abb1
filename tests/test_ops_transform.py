"""Shape and layout transforms (compiler/ops/transform.py, transform_index.py): attribute
schemas, patterns, type relations (with `?` dims and error messages) and numpy semantics.

Expected values are worked out by hand in the test or by a NumPy formula written here.
"""

from __future__ import annotations

import glob

import numpy as np
import pytest

from relaylens.compiler.ir.expr import Call, Op, Tuple, Var
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.ir.types import ANY, TensorType, TupleType
from relaylens.compiler.ops import AttrError, OpTypeError, get_op
from relaylens.compiler.parser import parse

Q = ANY


def T(*shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def infer(name, args, **attrs):
    return get_op(name).infer(args, attrs)


def run(name, args, **attrs):
    return get_op(name).evaluate(args, attrs)


def error(name, args, **attrs) -> str:
    """The message of the error the relation raises."""
    with pytest.raises((OpTypeError, AttrError)) as info:
        infer(name, args, **attrs)
    return info.value.message


def shape(ty):
    return ty.shape


# --------------------------------------------------------------------------- schemas and patterns

SCHEMAS = {
    "reshape": ["newshape", "allowzero"],
    "reshape_like": ["lhs_begin", "lhs_end", "rhs_begin", "rhs_end"],
    "nn.batch_flatten": [],
    "transpose": ["axes"],
    "expand_dims": ["axis", "num_newaxis"],
    "squeeze": ["axis"],
    "concatenate": ["axis"],
    "stack": ["axis"],
    "split": ["indices_or_sections", "axis"],
    "strided_slice": ["begin", "end", "strides", "slice_mode", "axes"],
    "take": ["batch_dims", "axis", "mode"],
    "gather": ["axis"],
    "gather_nd": ["batch_dims", "index_rank"],
    "layout_transform": ["src_layout", "dst_layout"],
    "broadcast_to": ["shape", "dtype"],
    "broadcast_to_like": [],
    "collapse_sum_like": [],
    "collapse_sum_to": ["shape", "dtype"],
    "tile": ["reps"],
    "repeat": ["repeats", "axis"],
    "reverse": ["axis"],
    "sliding_window": ["axis", "window_shape", "strides"],
    "full": ["shape", "dtype"],
    "zeros": ["shape", "dtype"],
    "ones": ["shape", "dtype"],
    "one_hot": ["depth", "axis", "dtype"],
    "arange": ["start", "stop", "step", "dtype"],
    "shape_of": ["dtype"],
    "ndarray_size": ["dtype"],
}

PATTERNS = {
    "reshape": "Injective", "reshape_like": "Injective", "nn.batch_flatten": "Injective",
    "transpose": "Injective", "expand_dims": "Broadcast", "squeeze": "Injective",
    "concatenate": "Injective", "stack": "Injective", "split": "Injective",
    "strided_slice": "Injective", "take": "Injective", "gather": "Injective",
    "gather_nd": "Injective", "layout_transform": "Injective", "broadcast_to": "Broadcast",
    "broadcast_to_like": "Broadcast", "collapse_sum_like": "CommReduce",
    "collapse_sum_to": "CommReduce", "tile": "Broadcast", "repeat": "Broadcast",
    "reverse": "Injective", "sliding_window": "Opaque", "full": "ElemWise", "zeros": "ElemWise",
    "ones": "ElemWise", "one_hot": "OutEWiseFusable", "arange": "Opaque", "shape_of": "Opaque",
    "ndarray_size": "Injective",
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_order_pattern_doc(name):
    op = get_op(name)
    assert op is not None, name
    assert [a.name for a in op.attrs] == SCHEMAS[name]
    assert op.pattern.label == PATTERNS[name]
    assert op.doc and op.type_relation and op.numpy_compute


def test_defaults_and_signatures():
    assert get_op("reshape").signature() == "reshape(data, newshape=required, allowzero=False)"
    assert get_op("take").signature() == 'take(data, indices, batch_dims=0, axis=None, mode="clip")'
    assert get_op("strided_slice").signature() == (
        'strided_slice(data, begin=None, end=None, strides=None, slice_mode="end", axes=None)')
    assert get_op("expand_dims").signature() == "expand_dims(data, axis=required, num_newaxis=1)"
    assert get_op("one_hot").signature() == (
        'one_hot(indices, on_value, off_value, depth=1, axis=-1, dtype="")')
    assert get_op("concatenate").tuple_input and get_op("stack").tuple_input
    assert not get_op("split").tuple_input


def test_unknown_attribute_is_named():
    with pytest.raises(AttrError, match="reshape has no attribute 'new_shape'.*newshape"):
        infer("reshape", [T(2, 3)], new_shape=[6])


# --------------------------------------------------------------------------- reshape

@pytest.mark.parametrize("newshape, expected", [
    ([4, 0, 2], (4, 3, 2)),        # 0 copies input dim 1
    ([2, 0, 0], (2, 3, 4)),
    ([6, 1, -1], (6, 1, 4)),       # -1 inferred: 24 / 6
    ([3, -1, 8], (3, 1, 8)),
    ([-1], (24,)),
    ([-2], (2, 3, 4)),             # -2 copies the rest
    ([2, -2], (2, 3, 4)),
    ([-2, 1, 1], (2, 3, 4, 1, 1)),
    ([-3, 4], (6, 4)),             # -3 merges two
    ([0, -3], (2, 12)),
    ([-4, 1, 2, -2], (1, 2, 3, 4)),  # -4 splits 2 into 1 x 2
    ([2, -4, -1, 3, -2], (2, 1, 3, 4)),  # -4 splits 3 into -1 (=1) x 3
    ([-4, 2, -1, 12], (2, 1, 12)),
])
def test_reshape_codes(newshape, expected):
    assert shape(infer("reshape", [T(2, 3, 4)], newshape=newshape)) == expected


def test_reshape_codes_rank4():
    assert shape(infer("reshape", [T(2, 3, 4, 5)], newshape=[-3, -3])) == (6, 20)
    assert shape(infer("reshape", [T(2, 3, 4, 5)], newshape=[-3, -2])) == (6, 4, 5)
    assert shape(infer("reshape", [T(2, 3, 4, 5)], newshape=[0, 0, -1])) == (2, 3, 20)


def test_reshape_corpus_shapes():
    assert infer("reshape", [T(50, 32, 768)], newshape=[-1, 768]) == T(1600, 768)
    assert infer("reshape", [T(1600, 2304)], newshape=[50, 32, 2304]) == T(50, 32, 2304)
    assert infer("reshape", [T(50, 12, 32, 64)], newshape=[-1, 32, 64]) == T(600, 32, 64)
    assert infer("reshape", [T(1, 50, 32, dtype="int64")], newshape=[-1, 32]) == T(50, 32, dtype="int64")


def test_reshape_allowzero():
    assert shape(infer("reshape", [T(0, 3)], newshape=[0, 3], allowzero=True)) == (0, 3)
    assert shape(infer("reshape", [T(2, 3)], newshape=[0, 3])) == (2, 3)  # copy, not zero
    assert shape(infer("reshape", [T(0, 3)], newshape=[3, 0], allowzero=True)) == (3, 0)
    assert "cannot reshape data Tensor[(2, 3), float32] (6 elements)" in error(
        "reshape", [T(2, 3)], newshape=[0, 3], allowzero=True)


def test_reshape_unknown_dims_flow():
    assert shape(infer("reshape", [T(Q, 768)], newshape=[-1, 768])) == (Q, 768)
    assert shape(infer("reshape", [T(Q, 32, 64)], newshape=[0, -1])) == (Q, 2048)  # ? is copied
    assert shape(infer("reshape", [T(2, Q)], newshape=[-1])) == (Q,)
    assert shape(infer("reshape", [T(Q, 3)], newshape=[-3])) == (Q,)
    assert shape(infer("reshape", [T(Q, 6)], newshape=[0, -4, 2, -1])) == (Q, 2, 3)
    assert shape(infer("reshape", [T(4, Q)], newshape=[-4, 2, -1, -2])) == (2, 2, Q)
    assert shape(infer("reshape", [T(Q, 6)], newshape=[5, 7])) == (5, 7)  # cannot be checked


def test_reshape_errors():
    msg = error("reshape", [T(2, 3)], newshape=[4, 2])
    assert msg == ("reshape: cannot reshape data Tensor[(2, 3), float32] (6 elements) to newshape "
                   "[4, 2] (8 elements)")
    msg = error("reshape", [T(2, 3)], newshape=[0, 4])
    assert "(6 elements)" in msg and "(8 elements, as (2, 4))" in msg
    msg = error("reshape", [T(2, 3)], newshape=[-1, 4])
    assert "(6 elements)" in msg and "hold 4 elements, which does not divide 6" in msg
    assert "more than one -1" in error("reshape", [T(2, 3)], newshape=[-1, -1])
    assert "value -5 at position 1" in error("reshape", [T(2, 3)], newshape=[6, -5])
    assert "0 at position 2 of newshape [2, 3, 0] refers to input dimension 2, but data " \
           "Tensor[(2, 3), float32] has rank 2" in error("reshape", [T(2, 3)], newshape=[2, 3, 0])
    assert "-3 at position 1" in error("reshape", [T(2, 3)], newshape=[2, -3])
    assert "must be followed by the two dimensions" in error("reshape", [T(6)], newshape=[-4, 2])
    assert "at most one of the two" in error("reshape", [T(6)], newshape=[-4, -1, -1])
    assert "cannot split input dimension 0 of size 6" in error("reshape", [T(6)], newshape=[-4, 4, -1])
    assert "of size 6 (data Tensor[(6), float32]) into 2 x 2" in error("reshape", [T(6)], newshape=[-4, 2, 2])
    with pytest.raises(AttrError) as info:
        infer("reshape", [T(2, 3)], newshape=[-1, -1])
    assert info.value.name == "newshape"
    assert "reshape: data must be a tensor" in error("reshape", [TupleType((T(1),))], newshape=[1])
    assert "attribute newshape is required" in error("reshape", [T(2)])


def test_reshape_numerics():
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    out = run("reshape", [x], newshape=[-4, 1, 2, -2])
    assert out.shape == (1, 2, 3, 4) and out.dtype == np.float32
    assert out[0, 1, 2, 3] == 23 and out[0, 0, 1, 0] == 4  # row-major order kept
    assert np.array_equal(run("reshape", [x], newshape=[0, -1]), np.arange(24).reshape(2, 12))
    with pytest.raises(OpTypeError, match="6 elements"):
        run("reshape", [np.zeros((2, 3))], newshape=[4, 2])


# --------------------------------------------------------------------------- reshape_like, batch_flatten

def test_reshape_like():
    assert infer("reshape_like", [T(2, 3, 4), T(6, 4, dtype="int8")]) == T(6, 4)
    # data axes [1, 3) become shape_like axes [1, 2)
    assert shape(infer("reshape_like", [T(2, 3, 4), T(5, 12, 7)], lhs_begin=1, rhs_begin=1,
                       rhs_end=2)) == (2, 12)
    assert shape(infer("reshape_like", [T(2, 3, 4), T(6, 9)], lhs_end=-1, rhs_end=1)) == (6, 4)
    assert shape(infer("reshape_like", [T(Q, 4), T(2, Q)])) == (2, Q)
    msg = error("reshape_like", [T(2, 3), T(7)])
    assert "(6 elements)" in msg and "(7 elements)" in msg and "shape_like Tensor[(7), float32]" in msg
    assert "lhs_begin=3, lhs_end=None is not a range of axes of data" in error(
        "reshape_like", [T(2, 3), T(6)], lhs_begin=3)
    out = run("reshape_like", [np.arange(6), np.zeros((3, 2))])
    assert out.tolist() == [[0, 1], [2, 3], [4, 5]]


def test_batch_flatten():
    assert infer("nn.batch_flatten", [T(2, 3, 4)]) == T(2, 12)
    assert infer("nn.batch_flatten", [T(Q, 3, 4)]) == T(Q, 12)
    assert infer("nn.batch_flatten", [T(2, Q, 4)]) == T(2, Q)
    assert infer("nn.batch_flatten", [T(5)]) == T(5, 1)
    assert "at least one dimension, found float32" in error("nn.batch_flatten", [T()])
    out = run("nn.batch_flatten", [np.arange(8).reshape(2, 2, 2)])
    assert out.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]


# --------------------------------------------------------------------------- transpose, expand_dims, squeeze

def test_transpose():
    assert shape(infer("transpose", [T(2, 3, 4)])) == (4, 3, 2)
    assert shape(infer("transpose", [T(2, 3, 4)], axes=None)) == (4, 3, 2)
    assert shape(infer("transpose", [T(50, 32, 12, 64)], axes=[0, 2, 1, 3])) == (50, 12, 32, 64)
    assert shape(infer("transpose", [T(2, Q, 4)], axes=[-1, 0, 1])) == (4, 2, Q)
    assert error("transpose", [T(2, 3)], axes=[0]) == (
        "transpose: axes [0] has 1 entries but data Tensor[(2, 3), float32] has rank 2")
    assert "names an axis twice" in error("transpose", [T(2, 3)], axes=[1, -1])
    assert "transpose: axis 2 is out of range for a tensor of rank 2" in error(
        "transpose", [T(2, 3)], axes=[0, 2])
    x = np.array([[1, 2, 3], [4, 5, 6]])
    assert run("transpose", [x]).tolist() == [[1, 4], [2, 5], [3, 6]]
    y = np.arange(24).reshape(2, 3, 4)
    out = run("transpose", [y], axes=[1, 2, 0])
    assert out.shape == (3, 4, 2) and out[2, 1, 1] == y[1, 2, 1]


def test_expand_dims():
    assert shape(infer("expand_dims", [T(2, 3)], axis=0)) == (1, 2, 3)
    assert shape(infer("expand_dims", [T(2, 3)], axis=2)) == (2, 3, 1)
    assert shape(infer("expand_dims", [T(2, 3)], axis=-1)) == (2, 3, 1)
    assert shape(infer("expand_dims", [T(2, 3)], axis=-3)) == (1, 2, 3)
    assert shape(infer("expand_dims", [T(2, Q)], axis=1, num_newaxis=2)) == (2, 1, 1, Q)
    assert shape(infer("expand_dims", [T(2, 3)], axis=1, num_newaxis=0)) == (2, 3)
    assert shape(infer("expand_dims", [T()], axis=0)) == (1,)
    assert "axis 3 is out of range for data Tensor[(2, 3), float32] (expected -3 to 2)" in error(
        "expand_dims", [T(2, 3)], axis=3)
    assert "attribute num_newaxis is -1" in error("expand_dims", [T(2)], axis=0, num_newaxis=-1)
    assert run("expand_dims", [np.array([1, 2])], axis=-1).tolist() == [[1], [2]]


def test_squeeze():
    assert shape(infer("squeeze", [T(1, 600, 600, 3)], axis=[0])) == (600, 600, 3)
    assert shape(infer("squeeze", [T(1, 3, 1, 2)])) == (3, 2)
    assert shape(infer("squeeze", [T(1, 3, 1, 2)], axis=[-2])) == (1, 3, 2)
    assert shape(infer("squeeze", [T(Q, 3, 1)], axis=[0])) == (3, 1)  # a ? may be 1
    assert shape(infer("squeeze", [T(1, 1)])) == ()
    assert error("squeeze", [T(1, 3)], axis=[1]) == (
        "squeeze: axis 1 of data Tensor[(1, 3), float32] has length 3, not 1")
    assert "unknown until run time" in error("squeeze", [T(Q, 1)])
    assert "out of range" in error("squeeze", [T(1, 3)], axis=[2])
    assert run("squeeze", [np.array([[[5], [6]]])]).tolist() == [5, 6]
    assert run("squeeze", [np.zeros((1, 2, 1))], axis=[2]).shape == (1, 2)


# --------------------------------------------------------------------------- concatenate, stack, split

def test_concatenate():
    tup = TupleType((T(2, 3), T(4, 3)))
    assert infer("concatenate", [tup]) == T(6, 3)
    assert infer("concatenate", [TupleType((T(2, 3), T(2, 5)))], axis=-1) == T(2, 8)
    assert infer("concatenate", [TupleType((T(10, 10),) * 2)]) == T(20, 10)
    # ? rules as TVM: a partly known other axis stays known only when the joined axis is ?
    assert infer("concatenate", [TupleType((T(Q, 3), T(Q, Q)))]) == T(Q, 3)
    assert infer("concatenate", [TupleType((T(1, 3), T(1, Q)))]) == T(2, Q)
    assert infer("concatenate", [TupleType((T(1, Q), T(1, Q)))]) == T(2, Q)
    assert infer("concatenate", [TupleType((T(1, 3),))]) == T(1, 3)


def test_concatenate_errors():
    assert "field 1 has rank 1 but field 0 has rank 2" in error(
        "concatenate", [TupleType((T(2, 3), T(3)))])
    assert "field 1 has dtype int32 but field 0 has float32" in error(
        "concatenate", [TupleType((T(2, 3), T(2, 3, dtype="int32")))])
    msg = error("concatenate", [TupleType((T(2, 3), T(2, 4)))], axis=0)
    assert "field 1 has 4 on axis 1 but another field has 3; only axis 0 may differ" in msg
    assert "concatenate: data must be a tuple of tensors, found Tensor[(2), float32]" in error(
        "concatenate", [T(2)])
    assert "the tuple of tensors is empty" in error("concatenate", [TupleType(())])
    assert "concatenate: axis 2 is out of range" in error(
        "concatenate", [TupleType((T(2, 3), T(2, 3)))], axis=2)


def test_concatenate_numerics():
    a, b = np.array([[1, 2]]), np.array([[3, 4], [5, 6]])
    assert run("concatenate", [(a, b)]).tolist() == [[1, 2], [3, 4], [5, 6]]
    assert run("concatenate", [(b, b)], axis=1).tolist() == [[3, 4, 3, 4], [5, 6, 5, 6]]


def test_stack():
    assert infer("stack", [TupleType((T(2, 3),) * 3)]) == T(3, 2, 3)
    assert infer("stack", [TupleType((T(2, 3),) * 3)], axis=-1) == T(2, 3, 3)
    assert infer("stack", [TupleType((T(2, 3),) * 3)], axis=1) == T(2, 3, 3)
    assert infer("stack", [TupleType((T(Q, 3), T(2, 3)))]) == T(2, Q, 3)
    assert "field 1 has shape Tensor[(3, 2), float32] but field 0 has Tensor[(2, 3), float32]" in error(
        "stack", [TupleType((T(2, 3), T(3, 2)))])
    assert "stack: axis 3 is out of range for a tensor of rank 3" in error(
        "stack", [TupleType((T(2, 3),) * 2)], axis=3)
    out = run("stack", [(np.array([1, 2]), np.array([3, 4]))], axis=1)
    assert out.tolist() == [[1, 3], [2, 4]]


def test_split_shapes():
    out = infer("split", [T(50, 32, 2304)], indices_or_sections=[768, 1536], axis=2)
    assert out == TupleType((T(50, 32, 768),) * 3)
    assert infer("split", [T(6, 4)], indices_or_sections=3) == TupleType((T(2, 4),) * 3)
    assert infer("split", [T(6, 4)], indices_or_sections=[1, 4]) == TupleType(
        (T(1, 4), T(3, 4), T(2, 4)))
    assert infer("split", [T(2, 6)], indices_or_sections=2, axis=-1) == TupleType((T(2, 3),) * 2)
    assert infer("split", [T(Q, 4)], indices_or_sections=2) == TupleType((T(Q, 4),) * 2)
    assert infer("split", [T(Q, 4)], indices_or_sections=[1]) == TupleType((T(1, 4), T(Q, 4)))


def test_split_errors():
    assert error("split", [T(5, 4)], indices_or_sections=2) == (
        "split: axis 0 of data Tensor[(5, 4), float32] has length 5, which cannot be divided "
        "into 2 equal sections")
    assert "must be ascending and positive" in error("split", [T(6)], indices_or_sections=[3, 2])
    assert "must be ascending and positive" in error("split", [T(6)], indices_or_sections=[0, 2])
    assert "index 6 of indices_or_sections [2, 6] is not inside axis 0" in error(
        "split", [T(6)], indices_or_sections=[2, 6])
    assert "attribute indices_or_sections is 0" in error("split", [T(6)], indices_or_sections=0)
    assert "split: axis 1 is out of range" in error("split", [T(6)], indices_or_sections=2, axis=1)


def test_split_numerics():
    x = np.arange(6)
    parts = run("split", [x], indices_or_sections=[1, 4])
    assert isinstance(parts, tuple) and [p.tolist() for p in parts] == [[0], [1, 2, 3], [4, 5]]
    parts = run("split", [x.reshape(2, 3)], indices_or_sections=3, axis=1)
    assert [p.tolist() for p in parts] == [[[0], [3]], [[1], [4]], [[2], [5]]]


# --------------------------------------------------------------------------- strided_slice

SLICE = dict(strides=[1], axes=None)


def test_strided_slice_corpus_calls():
    assert infer("strided_slice", [T(1, 50, 50, 3)], begin=[0, 40, 0, 0], end=[1, 50, 50, 3],
                 **SLICE) == T(1, 10, 50, 3)
    assert infer("strided_slice", [T(1, 384, 128)], begin=[0, 1, 0], end=[1, 384, 128],
                 strides=[1, 1, 1], axes=None) == T(1, 383, 128)
    assert infer("strided_slice", [T(1, 384, 128)], begin=[0, 0, 0], end=[1, -1, 128],
                 strides=[1, 1, 1], axes=None) == T(1, 383, 128)


@pytest.mark.parametrize("attrs, expected", [
    (dict(begin=[1], end=[8], strides=[3]), (3,)),          # 1, 4, 7
    (dict(begin=[-3], end=[100], strides=[1]), (3,)),       # end clamped
    (dict(begin=[-100], end=[2], strides=[1]), (2,)),       # begin clamped
    (dict(begin=[9], end=[0], strides=[-2]), (5,)),         # 9, 7, 5, 3, 1
    (dict(begin=[9], end=[-11], strides=[-1]), (10,)),      # down to index 0
    (dict(begin=[2], end=[2], strides=[1]), (0,)),
    (dict(begin=[2], end=[3], strides=[1], slice_mode="size"), (3,)),
    (dict(begin=[2], end=[-1], strides=[5], slice_mode="size"), (8,)),  # to the end, stride ignored
])
def test_strided_slice_bounds(attrs, expected):
    assert shape(infer("strided_slice", [T(10)], **attrs)) == expected


def test_strided_slice_axes_and_unknown_dims():
    assert shape(infer("strided_slice", [T(4, 6, 8)], begin=[1], end=[5], strides=[2],
                       axes=[2])) == (4, 6, 2)
    assert shape(infer("strided_slice", [T(4, 6, 8)], begin=[0, 1], end=[2, 3], strides=[1, 1],
                       axes=[-1, 0])) == (2, 6, 2)
    assert shape(infer("strided_slice", [T(4, 6, 8)], begin=[1], end=[3], strides=[1])) == (2, 6, 8)
    assert shape(infer("strided_slice", [T(Q, 6)], begin=[0, 1], end=[2, 5], strides=[1])) == (Q, 4)


def test_strided_slice_errors():
    assert "begin 5 and end 2 (as 5 and 2) run against the step 1" in error(
        "strided_slice", [T(10)], begin=[5], end=[2], strides=[1])
    assert "has a step of 0" in error("strided_slice", [T(10)], begin=[0], end=[2], strides=[0])
    assert "attribute begin is None" in error("strided_slice", [T(10)], end=[2], strides=[1])
    assert 'slice_mode is "middle"' in error("strided_slice", [T(10)], begin=[0], end=[1],
                                              strides=[1], slice_mode="middle")
    assert "must have one length, found 1, 2, 1 and 1" in error(
        "strided_slice", [T(4, 4)], begin=[0, 0], end=[1], strides=[1], axes=[0])
    assert "attribute begin [0, 0, 0] has 3 values but data Tensor[(4, 4), float32] has rank 2" in error(
        "strided_slice", [T(4, 4)], begin=[0, 0, 0], end=[1], strides=[1])


def test_strided_slice_numerics():
    x = np.arange(10)
    assert run("strided_slice", [x], begin=[1], end=[8], strides=[3]).tolist() == [1, 4, 7]
    assert run("strided_slice", [x], begin=[9], end=[0], strides=[-2]).tolist() == [9, 7, 5, 3, 1]
    assert run("strided_slice", [x], begin=[9], end=[-11], strides=[-1]).tolist() == x[::-1].tolist()
    assert run("strided_slice", [x], begin=[-3], end=[-1], strides=[1], slice_mode="size").tolist() == [7, 8, 9]
    y = np.arange(24).reshape(2, 3, 4)
    out = run("strided_slice", [y], begin=[0, 1], end=[1, 100], strides=[1, 1])
    assert np.array_equal(out, y[0:1, 1:3, :])
    out = run("strided_slice", [y], begin=[3], end=[0], strides=[-2], axes=[2])
    assert np.array_equal(out, y[:, :, 3:0:-2])


# --------------------------------------------------------------------------- take, gather, gather_nd

def test_take_shapes():
    i32 = dict(dtype="int32")
    assert infer("take", [T(3, 4), T(2, 5, **i32)]) == T(2, 5)  # axis None: flattened
    assert infer("take", [T(3, 4), T(2, 5, **i32)], axis=0) == T(2, 5, 4)
    assert infer("take", [T(3, 4), T(2, 5, **i32)], axis=-1) == T(3, 2, 5)
    assert infer("take", [T(3, 4), T(**i32)], axis=1) == T(3)  # scalar index drops the axis
    assert infer("take", [T(50257, 768), T(50, 32, dtype="int64")], axis=0) == T(50, 32, 768)
    assert infer("take", [T(2, 3, 4), T(2, 5, **i32)], axis=1, batch_dims=1) == T(2, 5, 4)
    assert infer("take", [T(2, 3, 4), T(2, 5, **i32)], axis=2, batch_dims=-1) == T(2, 3, 5)
    assert infer("take", [T(Q, 4), T(Q, **i32)], axis=1) == T(Q, Q)


def test_take_errors():
    assert error("take", [T(3), T(2)]) == "take: indices must be an integer tensor, found Tensor[(2), float32]"
    assert 'attribute mode is "nearest"' in error("take", [T(3), T(2, dtype="int32")], mode="nearest")
    assert "take: axis 2 is out of range" in error("take", [T(3, 4), T(2, dtype="int32")], axis=2)
    assert "batch_dims 2 must be within" in error(
        "take", [T(2, 3), T(2, 4, dtype="int32")], axis=1, batch_dims=2)
    assert "batch axis 0 has length 2 in data" in error(
        "take", [T(2, 3), T(5, 4, dtype="int32")], axis=1, batch_dims=1)


def test_take_modes():
    data = np.array([10, 20, 30], dtype="float32")
    idx = np.array([-1, 3, 1], dtype="int32")
    assert run("take", [data, idx], axis=0).tolist() == [10, 30, 20]           # clip
    assert run("take", [data, idx], axis=0, mode="wrap").tolist() == [30, 10, 20]
    assert run("take", [data, np.array([2, 0])], axis=0, mode="fast").tolist() == [30, 10]
    with pytest.raises(IndexError):
        run("take", [data, np.array([3])], axis=0, mode="fast")
    m = np.array([[1, 2], [3, 4]])
    assert run("take", [m, np.array([3, 0, 7])]).tolist() == [4, 1, 4]          # flattened, clipped
    assert run("take", [m, np.array(1)], axis=1).tolist() == [2, 4]
    assert run("take", [m, np.array([[1, 1], [0, 1]])], axis=1, batch_dims=1).tolist() == [[2, 2], [3, 4]]


def test_gather():
    i64 = dict(dtype="int64")
    assert infer("gather", [T(3, 4), T(3, 2, **i64)], axis=1) == T(3, 2)
    assert infer("gather", [T(3, 4), T(5, 4, **i64)], axis=0) == T(5, 4)
    assert infer("gather", [T(Q, 4), T(3, 2, **i64)], axis=-1) == T(3, 2)
    assert "must have the rank of data" in error("gather", [T(3, 4), T(3, **i64)], axis=0)
    assert "differ on axis 0; only axis 1 may differ" in error("gather", [T(3, 4), T(2, 2, **i64)], axis=1)
    assert "attribute axis is None" in error("gather", [T(3), T(3, **i64)])
    data = np.array([[1, 2], [3, 4]])
    out = run("gather", [data, np.array([[0, 0], [1, 0]])], axis=1)
    assert out.tolist() == [[1, 1], [4, 3]]  # out[i][j] = data[i][idx[i][j]]
    out = run("gather", [data, np.array([[1, 0]])], axis=0)
    assert out.tolist() == [[3, 2]]  # out[i][j] = data[idx[i][j]][j]


def test_gather_nd():
    i32 = dict(dtype="int32")
    assert infer("gather_nd", [T(3, 4, 5), T(2, 6, **i32)]) == T(6, 5)
    assert infer("gather_nd", [T(3, 4, 5), T(3, **i32)]) == T()
    assert infer("gather_nd", [T(2, 3, 4), T(1, 2, **i32)], batch_dims=1) == T(2, 4)
    assert infer("gather_nd", [T(3, 4), T(Q, 7, **i32)], index_rank=1) == T(7, 4)
    assert "known only at run time; give its length with index_rank" in error(
        "gather_nd", [T(3, 4), T(Q, 7, **i32)])
    assert "do not fit data" in error("gather_nd", [T(3, 4), T(3, 7, **i32)])
    data = np.array([[0, 1], [2, 3]])
    assert run("gather_nd", [data, np.array([[1, 0], [0, 1]])]).tolist() == [2, 1]
    assert run("gather_nd", [data, np.array([[1]])]).tolist() == [[2, 3]]
    cube = np.arange(24).reshape(2, 3, 4)
    out = run("gather_nd", [cube, np.array([[2, 0]])], batch_dims=1)
    assert out.tolist() == [cube[0, 2].tolist(), cube[1, 0].tolist()]


# --------------------------------------------------------------------------- layout_transform

def test_layout_transform_shapes():
    lt = "layout_transform"
    assert infer(lt, [T(1, 32, 40, 40)], src_layout="NCHW", dst_layout="NHWC") == T(1, 40, 40, 32)
    assert infer(lt, [T(1, 40, 40, 32)], src_layout="NHWC", dst_layout="NCHW") == T(1, 32, 40, 40)
    assert infer(lt, [T(1, 32, 40, 40)], src_layout="NCHW", dst_layout="NCHW4c") == T(1, 8, 40, 40, 4)
    assert infer(lt, [T(1, 8, 40, 40, 4)], src_layout="NCHW4c", dst_layout="NCHW") == T(1, 32, 40, 40)
    assert infer(lt, [T(1, 8, 40, 40, 4)], src_layout="NCHW4c", dst_layout="NCHW8c") == T(1, 4, 40, 40, 8)
    assert infer(lt, [T(1, 3, 5, 5)], src_layout="NCHW", dst_layout="NCHW4c") == T(1, 1, 5, 5, 4)  # padded
    assert infer(lt, [T(8, 4, 3, 3)], src_layout="OIHW", dst_layout="OIHW2i4o") == T(2, 2, 3, 3, 2, 4)
    assert infer(lt, [T(3, 3, 4, 8)], src_layout="HWIO", dst_layout="OIHW") == T(8, 4, 3, 3)
    assert infer(lt, [T(Q, Q, 7, 7)], src_layout="NCHW", dst_layout="NHWC8c") == T(Q, 7, 7, Q, 8)


def test_layout_transform_errors():
    lt = "layout_transform"
    assert 'attribute dst_layout is "NC4HW"' in error(lt, [T(1, 2, 3, 4)], src_layout="NCHW", dst_layout="NC4HW")
    assert "not a layout" in error(lt, [T(1, 2, 3, 4)], src_layout="NCHW", dst_layout="NCHW4d")
    assert "not a layout" in error(lt, [T(1, 2, 3, 4)], src_layout="NCHW", dst_layout="NCHWc")
    assert "not a layout" in error(lt, [T(1, 2, 3, 4)], src_layout="nchw", dst_layout="NCHW")
    assert "cannot convert from NCHW to NCDHW: the layouts must have the same upper-case axes" in error(
        lt, [T(1, 2, 3, 4)], src_layout="NCHW", dst_layout="NCDHW")
    assert "data Tensor[(1, 2, 3), float32] has rank 3 but src_layout NCHW has 4 axes" in error(
        lt, [T(1, 2, 3)], src_layout="NCHW", dst_layout="NHWC")
    assert "has length 8 but src_layout NCHW4c blocks it by 4" in error(
        lt, [T(1, 2, 3, 3, 8)], src_layout="NCHW4c", dst_layout="NCHW")


def test_layout_transform_numerics():
    lt = "layout_transform"
    x = np.arange(2 * 8 * 3 * 5, dtype="float32").reshape(2, 8, 3, 5)
    nhwc = run(lt, [x], src_layout="NCHW", dst_layout="NHWC")
    assert nhwc.shape == (2, 3, 5, 8) and nhwc[1, 2, 4, 6] == x[1, 6, 2, 4]
    blocked = run(lt, [x], src_layout="NCHW", dst_layout="NCHW4c")
    # element (n, c, h, w) lands at (n, c // 4, h, w, c % 4)
    assert blocked.shape == (2, 2, 3, 5, 4) and blocked[1, 1, 2, 3, 2] == x[1, 6, 2, 3]
    assert np.array_equal(run(lt, [blocked], src_layout="NCHW4c", dst_layout="NCHW"), x)
    b8 = run(lt, [blocked], src_layout="NCHW4c", dst_layout="NHWC8c")
    assert b8.shape == (2, 3, 5, 1, 8) and b8[0, 1, 2, 0, 5] == x[0, 5, 1, 2]
    odd = np.arange(1, 4, dtype="float32").reshape(1, 3, 1, 1)
    padded = run(lt, [odd], src_layout="NCHW", dst_layout="NCHW2c")
    assert padded.reshape(-1).tolist() == [1, 2, 3, 0]  # the channel block is padded with 0
    w = np.arange(8 * 4, dtype="float32").reshape(8, 4, 1, 1)
    wb = run(lt, [w], src_layout="OIHW", dst_layout="OIHW2i4o")
    assert wb.shape == (2, 2, 1, 1, 2, 4) and wb[1, 0, 0, 0, 1, 3] == w[7, 1, 0, 0]


# --------------------------------------------------------------------------- broadcasting, collapsing

def test_broadcast_to():
    assert infer("broadcast_to", [T(3, 1)], shape=[2, 3, 4]) == T(2, 3, 4)
    assert infer("broadcast_to", [T(Q, 1)], shape=[2, 3, 4]) == T(2, 3, 4)
    assert error("broadcast_to", [T(3)], shape=[4]) == (
        "broadcast_to: data Tensor[(3), float32] cannot be broadcast to shape (4)")
    assert "cannot be broadcast to shape (1)" in error("broadcast_to", [T(3)], shape=[1])
    assert "attribute shape is None" in error("broadcast_to", [T(3)])
    out = run("broadcast_to", [np.array([[1], [2]])], shape=[2, 3])
    assert out.tolist() == [[1, 1, 1], [2, 2, 2]] and out.flags.writeable


def test_broadcast_to_like():
    assert infer("broadcast_to_like", [T(3, 1), T(2, 3, 4)]) == T(2, 3, 4)
    assert "different dtypes" in error("broadcast_to_like", [T(3), T(3, dtype="int32")])
    assert "cannot be broadcast to broadcast_type Tensor[(2, 4), float32]" in error(
        "broadcast_to_like", [T(3), T(2, 4)])
    assert run("broadcast_to_like", [np.array([5]), np.zeros((2, 2))]).tolist() == [[5, 5], [5, 5]]


def test_collapse_sum_like():
    assert infer("collapse_sum_like", [T(2, 3, 4), T(3, 1)]) == T(3, 1)
    assert infer("collapse_sum_like", [T(1, 32, 768), T(768)]) == T(768)
    assert infer("collapse_sum_like", [T(Q, 4), T(4)]) == T(4)
    assert "cannot be summed down to collapse_type Tensor[(5), float32]" in error(
        "collapse_sum_like", [T(2, 3), T(5)])
    assert "cannot be summed down" in error("collapse_sum_like", [T(3), T(2, 3)])
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    out = run("collapse_sum_like", [x, np.zeros((3, 1), dtype="float32")])
    # element [j, 0] sums x[i, j, k] over i and k
    assert out.shape == (3, 1) and out[1, 0] == sum(x[i, 1, k] for i in range(2) for k in range(4))
    assert out.dtype == np.float32


def test_collapse_sum_to():
    s = T(2, dtype="int64")
    assert infer("collapse_sum_to", [T(2, 3, 4), s], shape=[3, 1]) == T(3, 1)
    assert infer("collapse_sum_to", [T(2, 3, 4), s]) == T(Q, Q)
    assert "1-D integer tensor of known length" in error("collapse_sum_to", [T(2, 3), T(2)])
    assert "attribute shape [3] has 1 values but the shape argument" in error(
        "collapse_sum_to", [T(2, 3), s], shape=[3])
    out = run("collapse_sum_to", [np.ones((2, 3)), np.array([3])], shape=[3])
    assert out.tolist() == [2, 2, 2]


# --------------------------------------------------------------------------- tile, repeat, reverse, sliding_window

def test_tile():
    assert infer("tile", [T(2, 3)], reps=[2]) == T(2, 6)
    assert infer("tile", [T(2, 3)], reps=[2, 1, 1]) == T(2, 2, 3)
    assert infer("tile", [T(2, Q)], reps=[3, 2]) == T(6, Q)
    assert "reps [2, 0] must hold positive counts" in error("tile", [T(2, 3)], reps=[2, 0])
    assert run("tile", [np.array([1, 2])], reps=[2]).tolist() == [1, 2, 1, 2]
    assert run("tile", [np.array([1, 2])], reps=[2, 1]).tolist() == [[1, 2], [1, 2]]


def test_repeat():
    assert infer("repeat", [T(2, 3)], repeats=2, axis=1) == T(2, 6)
    assert infer("repeat", [T(2, Q)], repeats=2, axis=-1) == T(2, Q)
    assert "attribute repeats is 0" in error("repeat", [T(2)], repeats=0, axis=0)
    assert "attribute axis is None" in error("repeat", [T(2)], repeats=2)
    assert "repeat: axis 1 is out of range" in error("repeat", [T(2)], repeats=2, axis=1)
    assert run("repeat", [np.array([[1, 2]])], repeats=2, axis=1).tolist() == [[1, 1, 2, 2]]


def test_reverse():
    assert infer("reverse", [T(2, Q)], axis=1) == T(2, Q)
    assert "reverse: axis -3 is out of range" in error("reverse", [T(2, 3)], axis=-3)
    assert "attribute axis is None" in error("reverse", [T(2, 3)])
    assert run("reverse", [np.array([[1, 2], [3, 4]])], axis=-1).tolist() == [[2, 1], [4, 3]]


def test_sliding_window():
    assert infer("sliding_window", [T(2, 6)], axis=1, window_shape=[3], strides=[2]) == T(2, 2, 3)
    assert infer("sliding_window", [T(4, 5)], axis=0, window_shape=[2, 2], strides=[1, 2]) == T(3, 2, 2, 2)
    assert infer("sliding_window", [T(Q, 6)], axis=0, window_shape=[1, 3], strides=[1, 3]) == T(Q, 2, 1, 3)
    assert "window_shape [3] has 1 values but data" in error(
        "sliding_window", [T(4, 5)], axis=0, window_shape=[3], strides=[1])
    assert "window length 7 is longer than axis 1" in error(
        "sliding_window", [T(2, 6)], axis=1, window_shape=[7], strides=[1])
    out = run("sliding_window", [np.arange(6).reshape(1, 6)], axis=1, window_shape=[3], strides=[2])
    assert out.tolist() == [[[0, 1, 2], [2, 3, 4]]]


# --------------------------------------------------------------------------- full, zeros, ones, one_hot, arange

def test_full_zeros_ones():
    assert infer("full", [T(dtype="int8")], shape=[2, 3]) == T(2, 3, dtype="int8")
    assert infer("full", [T()], shape=[2], dtype="int32") == T(2, dtype="int32")
    assert "full: fill_value must be a scalar, found Tensor[(1), float32]" in error("full", [T(1)], shape=[2])
    assert "attribute shape is None" in error("full", [T()])
    assert "shape [2, -1] has a negative dimension" in error("full", [T()], shape=[2, -1])
    out = run("full", [np.array(7, dtype="int8")], shape=[2, 2])
    assert out.tolist() == [[7, 7], [7, 7]] and out.dtype == np.int8
    assert infer("zeros", [], shape=[3], dtype="int64") == T(3, dtype="int64")
    assert infer("ones", [], shape=[]) == T()
    assert "unknown dtype 'float33'" in error("ones", [], shape=[1], dtype="float33")
    z = run("zeros", [], shape=[2], dtype="int32")
    assert z.tolist() == [0, 0] and z.dtype == np.int32
    o = run("ones", [], shape=[1, 2])
    assert o.tolist() == [[1, 1]] and o.dtype == np.float32


def test_one_hot():
    i32, f = dict(dtype="int32"), T()
    assert infer("one_hot", [T(3, **i32), f, f], depth=4) == T(3, 4)
    assert infer("one_hot", [T(3, **i32), f, f], depth=4, axis=0) == T(4, 3)
    assert infer("one_hot", [T(2, Q, **i32), f, f], depth=5, axis=1, dtype="int8") == T(2, 5, Q, dtype="int8")
    assert infer("one_hot", [T(2, 3, **i32), f, f], depth=5, axis=-2) == T(2, 5, 3)
    assert "attribute depth is 0" in error("one_hot", [T(3, **i32), f, f], depth=0)
    assert "one_hot: indices must be an integer tensor" in error("one_hot", [T(3), f, f], depth=2)
    assert "one_hot: off_value must be a scalar" in error("one_hot", [T(3, **i32), f, T(1)], depth=2)
    assert "axis 2 is out of range" in error("one_hot", [T(3, **i32), f, f], depth=2, axis=2)
    idx = np.array([1, 0, 3], dtype="int32")
    on, off = np.array(5.0, dtype="float32"), np.array(0.0, dtype="float32")
    out = run("one_hot", [idx, on, off], depth=3)
    assert out.tolist() == [[0, 5, 0], [5, 0, 0], [0, 0, 0]] and out.dtype == np.float32
    out = run("one_hot", [idx, on, off], depth=2, axis=0, dtype="int32")
    assert out.tolist() == [[0, 5, 0], [5, 0, 0]] and out.dtype == np.int32


def test_arange():
    f = T()
    assert infer("arange", [f, f, f], dtype="float32") == T(Q)
    assert infer("arange", [f, f, f], start=1.0, stop=5.0, step=1.5, dtype="float32") == T(3)
    assert infer("arange", [T(dtype="int32")] * 3, start=0, stop=10, step=3, dtype="int32") == T(4, dtype="int32")
    assert "arange: stop has dtype int32 but attribute dtype is float32" in error(
        "arange", [f, T(dtype="int32"), f], dtype="float32")
    assert "give no elements" in error("arange", [f, f, f], start=5.0, stop=1.0, step=1.0, dtype="float32")
    assert "attribute dtype is required" in error("arange", [f, f, f])
    out = run("arange", [np.float32(1), np.float32(5), np.float32(1.5)], dtype="float32")
    assert out.tolist() == [1.0, 2.5, 4.0] and out.dtype == np.float32
    assert run("arange", [np.int32(0), np.int32(10), np.int32(3)], dtype="int32").tolist() == [0, 3, 6, 9]
    assert run("arange", [np.int32(5), np.int32(0), np.int32(-2)], dtype="int32").tolist() == [5, 3, 1]


def test_shape_of_and_ndarray_size():
    assert infer("shape_of", [T(2, Q, 3)]) == T(3, dtype="int32")
    assert infer("shape_of", [T(4)], dtype="int64") == T(1, dtype="int64")
    assert infer("shape_of", [T()]) == T(dtype="int32")
    assert run("shape_of", [np.zeros((2, 5))], dtype="int64").tolist() == [2, 5]
    assert infer("ndarray_size", [T(2, Q)]) == T(dtype="int32")
    out = run("ndarray_size", [np.zeros((2, 5))], dtype="int64")
    assert out.shape == () and int(out) == 10 and out.dtype == np.int64
    assert "shape_of: data must be a tensor" in error("shape_of", [TupleType(())])


# --------------------------------------------------------------------------- the corpus

MINE = set(SCHEMAS)


def _annotated(expr):
    """The type the text gives an argument directly (annotation, `ty=` comment, tuple)."""
    if isinstance(expr, Var) and isinstance(expr.type_annotation, (TensorType, TupleType)):
        return expr.type_annotation
    if isinstance(expr.ty, (TensorType, TupleType)):
        return expr.ty
    if isinstance(expr, Tuple):
        fields = [_annotated(f) for f in expr.fields]
        return TupleType(tuple(fields)) if all(fields) else None
    return None


def test_corpus_calls_typecheck(corpus_dir):
    """Every transform call of the corpus whose arguments' types the text states types, and
    agrees with a `ty=` comment on the call."""
    checked = agreed = 0
    for path in sorted(glob.glob(str(corpus_dir / "*.relay"))):
        module = parse(open(path).read(), path).module
        for func in module.functions.values():
            for node in post_order(func):
                if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in MINE):
                    continue
                args = [_annotated(a) for a in node.args]
                if not all(args):
                    continue
                out = get_op(node.op.name).infer(args, node.attrs)
                checked += 1
                if isinstance(node.ty, TensorType):
                    assert out == node.ty, (path, node.op.name)
                    agreed += 1
    assert checked >= 10 and agreed >= 10


def test_gpt2_block_chain():
    """The transform calls of corpus file 002 (GPT-2), with the shapes flowing between them."""
    x = infer("reshape", [T(1, 50, 32, dtype="int64")], newshape=[-1, 32])
    emb = infer("take", [T(50257, 768), x], axis=0)
    assert emb == T(50, 32, 768)
    flat = infer("reshape", [emb], newshape=[-1, 768])
    qkv = infer("reshape", [T(1600, 2304)], newshape=[50, 32, 2304])
    q, k, v = infer("split", [qkv], indices_or_sections=[768, 1536], axis=2).fields
    heads = infer("transpose", [infer("reshape", [q], newshape=[50, 32, 12, 64])], axes=[0, 2, 1, 3])
    assert flat == T(1600, 768) and heads == T(50, 12, 32, 64)
    present = infer("concatenate", [TupleType((infer("expand_dims", [heads], axis=0),) * 2)])
    assert present == T(2, 50, 12, 32, 64)
    scores = infer("reshape", [T(600, 32, 32)], newshape=[50, 12, 32, 32])
    assert infer("reshape", [scores], newshape=[-1, 32, 32]) == T(600, 32, 32)
    kt = infer("transpose", [infer("reshape", [k], newshape=[50, 32, 12, 64])], axes=[0, 2, 3, 1])
    assert infer("reshape", [kt], newshape=[-1, 64, 32]) == T(600, 64, 32)
