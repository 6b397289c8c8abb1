"""transform/specialize_inputs.py: @main's `?` dimensions take the given extents; the module
is typed again; what does not fit is one error at the input, and nothing changes."""

from __future__ import annotations

from relaylens.compiler.check import check_text
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.printer import print_type
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.transform.specialize_inputs import specialize_inputs

TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(?, 3, ?, ?), float32], %w: Tensor[(8, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  let %y = nn.relu(%0);
  (%y, fn (%z) { add(%z, %y) })
}
"""


def test_the_given_extents_become_the_types_and_spans_stay():
    module = check_text(TEXT, "m.relay").module
    out, errors = specialize_inputs(module, {"x": (2, 3, 16, 16), "w": (8, 3, 3, 3)})
    assert errors == []
    main = out["main"]
    assert main.params[0].type_annotation == TensorType((2, 3, 16, 16), "float32")
    assert main.params[0].span is module["main"].params[0].span and main.params[1] is module["main"].params[1]
    assert print_type(main.body.value.ty) == "Tensor[(2, 8, 16, 16), float32]"  # the let's relu
    assert spanless(out) == []
    assert not module["main"].params[0].type_annotation.is_static  # the input module is not changed


def test_extents_that_do_not_fit_are_one_error_at_the_input():
    module = check_text(TEXT, "m.relay").module
    out, errors = specialize_inputs(module, {"x": (2, 3, 1, 0)}, origin="--input")
    assert out is module
    [error] = errors
    assert error.location() == ("m.relay", 2, 11), error.render()
    assert error.message.startswith("the shapes --input gives (%x: Tensor[(2, 3, 1, 0), float32]) do not fit "
                                    "@main together: nn.conv2d: "), error.message
    assert (error.notes[0][0].line, error.notes[0][0].col) == (3, 8)
