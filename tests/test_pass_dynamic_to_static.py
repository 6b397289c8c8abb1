"""DynamicToStatic and the dyn.* ops beyond the golden cases (TVM's test cases are golden
files in tests/passes/dynamic_to_static/): the dynamic ops' relations and references, text
as TVM prints it, and that the user-run passes stay out of relay.build's pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.build import RELAY_BUILD_PIPELINE
from relaylens.compiler.check import check_text
from relaylens.compiler.ir.types import ANY, TensorType
from relaylens.compiler.ops import OpTypeError, get_op
from relaylens.compiler.ops.dynamic import DYNAMIC_FORMS
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass


def T(shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


@pytest.mark.parametrize("name,args,attrs,want", [
    ("dyn.reshape", [T((2, 3, 4)), T((2,), "int64")], {}, T((ANY, ANY))),
    ("dyn.squeeze", [T((1, 3, 1)), T((2,), "int32")], {}, T((ANY,))),
    ("dyn.tile", [T((2, 3)), T((3,), "int64")], {}, T((ANY, ANY, ANY))),
    ("dyn.zeros", [T((3,), "int64")], {"dtype": "int8"}, T((ANY, ANY, ANY), "int8")),
    ("dyn.full", [T((), "int32"), T((2,), "int64")], {}, T((ANY, ANY), "int32")),
    ("dyn.one_hot", [T((4,), "int32"), T((), "float32"), T((), "float32"), T((), "int32")], {}, T((ANY, ANY))),
    ("dyn.nn.pad", [T((2, 2)), T((2, 2), "int64"), T(())], {}, T((ANY, ANY))),
])
def test_relations_give_the_rank_and_dtype(name, args, attrs, want):
    assert get_op(name).infer(args, attrs) == want


def test_a_shape_argument_must_have_a_static_length():
    with pytest.raises(OpTypeError, match="1-D tensor of static length"):
        get_op("dyn.reshape").infer([T((2, 3)), T((ANY,), "int64")])


@pytest.mark.parametrize("name,args,attrs,want", [
    ("dyn.reshape", [np.arange(6.0).reshape(2, 3), np.array([3, 2])], {}, np.arange(6.0).reshape(3, 2)),
    ("dyn.tile", [np.arange(2), np.array([2, 2])], {}, np.tile(np.arange(2), (2, 2))),
    ("dyn.strided_slice", [np.arange(10), np.array([1]), np.array([3]), np.array([1])], {"slice_mode": "size"},
     np.arange(1, 4)),
    ("dyn.nn.upsampling", [np.ones((1, 1, 2, 2), "float32"), np.array(2.0), np.array(3.0)], {},
     np.ones((1, 1, 4, 6), "float32")),
])
def test_references_run_the_static_op_on_the_argument_values(name, args, attrs, want):
    np.testing.assert_array_equal(get_op(name).evaluate(args, attrs), want)


def test_every_form_names_a_static_op_with_the_moved_attributes():
    for form in DYNAMIC_FORMS.values():
        static = {a.name for a in get_op(form.static).attrs}
        assert {name for name, _ in form.moved.values()} <= static, form.name
        assert get_op(form.name).inputs == form.inputs


def test_text_as_tvm_prints_it():
    # TVM prints the dynamic op with its attribute structure, the moved field empty
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(8, 3), float32]) {
  %0 = shape_of(%y, dtype="int64");
  dyn.reshape(%x, %0, newshape=[])
}
"""
    checked = check_text(text, "printed.relay")
    assert not [d for d in checked.diagnostics if d.is_error], [d.message for d in checked.diagnostics]
    with PassContext(opt_level=3):
        out = get_pass("DynamicToStatic")(checked.module)
    assert "reshape(%x, newshape=[8, 3])" in print_module(out)


def test_user_run_passes_are_not_in_the_build_pipeline():
    for name in ("DynamicToStatic", "DefuseOps"):
        assert name not in RELAY_BUILD_PIPELINE
        get_pass(name)  # but registered by TVM's name
