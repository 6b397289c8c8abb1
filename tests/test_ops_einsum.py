"""einsum (ops/einsum.py, ops/einsum_geometry.py): shapes and errors as TVM's relation
gives them (also at their place in a file), the numpy reference, the text format, and
ONNX's Einsum against onnxruntime, interpreted and compiled.  Compiled = reference on
every form of equation is in lower_cases_nn (test_lower_compiled)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from test_onnx_import import Graph, calls, check_against_ort, layers  # noqa: E402
from test_typing import check, typed  # noqa: E402

from relaylens.compiler.ir.types import ANY, TensorType, TupleType  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402
from relaylens.compiler.ops import OpPattern, OpTypeError, get_op  # noqa: E402
from relaylens.compiler.ops.einsum_geometry import einsum_plan  # noqa: E402
from relaylens.compiler.parser import parse  # noqa: E402
from relaylens.compiler.printer import print_module  # noqa: E402


def T(*shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def infer(equation, *types):
    return get_op("einsum").infer([TupleType(types)], {"equation": equation})


def fails(equation, types, message):
    with pytest.raises(OpTypeError) as info:
        infer(equation, *types)
    assert info.value.message == message


@pytest.mark.parametrize("equation, shapes, result", [
    ("bqhd,bkhd->bhqk", [(1, 16, 4, 8), (1, 12, 4, 8)], (1, 4, 16, 12)),
    ("ij,jk", [(2, 3), (3, 4)], (2, 4)),  # implicit: the labels seen once, sorted
    ("ab,bC", [(2, 3), (3, 4)], (4, 2)),  # character order: upper case first
    ("ii", [(3, 3)], ()),
    ("ii->i", [(3, 3)], (3,)),
    ("...ij,jk", [(5, 2, 3), (3, 4)], (5, 2, 4)),  # implicit: the ellipsis first
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)], (2, 5, 3, 2)),
    ("ij,jk->ik", [(2, 1), (3, 4)], (2, 4)),  # an extent of 1 broadcasts
    (" i j , j k -> i k ", [(2, 3), (3, 4)], (2, 4)),
])
def test_shapes_as_numpy_computes_them(equation, shapes, result):
    assert infer(equation, *(T(*s) for s in shapes)) == T(*result)
    arrays = [np.ones(s, np.float32) for s in shapes]
    assert np.einsum(equation.replace(" ", ""), *arrays).shape == result
    assert get_op("einsum").evaluate([tuple(arrays)], {"equation": equation}).shape == result


def test_unknown_extents_flow_and_a_known_one_wins():
    assert infer("ij,jk->ik", T(ANY, 3), T(3, ANY)) == T(ANY, ANY)
    assert infer("ij,jk->ik", T(2, ANY), T(3, 4)) == T(2, 4)
    assert infer("ij,jk->jk", T(2, ANY), T(3, 4)) == T(3, 4)
    assert infer("ij,jk->jk", T(2, 1), T(ANY, 4)) == T(ANY, 4)


def test_dtype_is_the_operands_and_the_pattern_tvms():
    assert infer("ij,jk", T(2, 3, dtype="int32"), T(3, 4, dtype="int32")) == T(2, 4, dtype="int32")
    assert get_op("einsum").pattern is OpPattern.INJECTIVE and get_op("einsum").tuple_input


@pytest.mark.parametrize("equation, shapes, message", [
    ("ij,jk->ik", [(2, 3), (4, 5)],
     "einsum: label 'j' has extent 3 in one operand and 4 in operand 1 (axis 0); extents must match or be 1"),
    ("ij,jk->ik", [(2, 3, 1), (3, 5)], "einsum: operand 0 has rank 3 but its subscript 'ij' names 2 axes"),
    ("i,j->ij", [(2, 3), (3,)], "einsum: operand 0 has rank 2 but its subscript 'i' names 1 axis"),
    ("ij->ik", [(2, 3)], "einsum: equation 'ij->ik': the result's label 'k' names no axis of an operand"),
    ("ij->ii", [(2, 2)], "einsum: equation 'ij->ii': the result names 'i' twice"),
    ("ij,jk", [(2, 3)], "einsum: equation 'ij,jk' has 2 operand(s) but 1 tensor(s) are given"),
    ("i2", [(2, 3)], "einsum: equation 'i2': '2' is not a label (labels are the letters a-z and A-Z; "
                     "'...' stands for the other axes)"),
    ("i->j->k", [(2,)], "einsum: equation 'i->j->k': '->' may appear once, before the result's subscript"),
    ("i-j", [(2,)], "einsum: equation 'i-j': '->' may appear once, before the result's subscript"),
    ("......i", [(2, 3)], "einsum: equation '......i': '...' appears twice in '......i'"),
    ("...i,...i", [(2, 3), (4, 3)], "einsum: the axes under '...' do not broadcast: (2), (4)"),
])
def test_errors_say_which_operand_and_label(equation, shapes, message):
    fails(equation, [T(*s) for s in shapes], message)


def test_operands_of_two_dtypes_are_refused():
    fails("ij,jk", [T(2, 3), T(3, 4, dtype="float16")],
          "einsum: operand 1 has dtype float16 but operand 0 has float32 (Tensor[(3, 4), float16] and "
          "Tensor[(2, 3), float32]); every operand has one dtype")


def test_the_plan_reads_each_operand_axis():
    plan = einsum_plan("...ij,jk->...ik", [(5, 2, 3), (3, 4)])
    assert plan.operand_axes == ((0, "i", "j"), ("j", "k")) and plan.reduced == ("j",)
    assert einsum_plan("...j,j->", [(2, 3), (3,)]).reduced == (".", "j")  # the ellipsis summed first


def test_an_error_is_reported_at_its_call_in_a_file():
    _, found = check("def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(4, 5), float32]) {\n"
                     "  einsum((%a, %b), equation=\"ij,jk->ik\")\n"
                     "}\n")
    assert [(line, col, severity) for line, col, severity, _ in found] == [(2, 3, "error")]
    assert "label 'j' has extent 3 in one operand and 4 in operand 1" in found[0][3]


def test_printed_and_read_back():
    text = ('#[version = "0.0.5"]\n'
            'def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(3, 4), float32]) {\n'
            '  %0 = (%a, %b);\n'
            '  einsum(%0, equation="ij,jk->ik")\n'
            '}\n')
    printed = print_module(typed(text.split("\n", 1)[1]))
    assert 'einsum(%0, equation="ij,jk->ik")' in printed
    assert print_module(parse(printed, "again.relay").module) == printed


@pytest.mark.parametrize("equation, shapes", [
    ("bqhd,bkhd->bhqk", [(1, 6, 2, 64), (1, 5, 2, 64)]),  # lane sums, then relu
    ("bhqk,bkhd->bqhd", [(1, 2, 6, 5), (1, 5, 2, 32)]),  # batch_matmul.py's tile, relu its epilogue
    ("bqhd,bkhd->bhqk", [(1, 17, 2, 24), (1, 32, 2, 24)]),  # the keys copied with k last, then the same
    ("ii->i", [(4, 4)]),
    ("...ij,jk", [(2, 3, 4), (4, 5)]),
    ("i,i", [(7,), (7,)]),
])
def test_onnx_einsum_matches_onnxruntime(equation, shapes):
    g = Graph(3)
    names = [f"x{k}" for k in range(len(shapes))]
    out = g.node("Einsum", names, name="/attn/Einsum", equation=equation)
    model = g.model(dict(zip(names, [list(s) for s in shapes])), g.node("Relu", [out], name="/relu"), opset=12)
    rng = np.random.default_rng(7)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes)}
    imported = check_against_ort(model, feeds, JIT(), rtol=1e-5, atol=1e-5)
    (einsum,) = [c for c in calls(imported.module) if c.op.name == "einsum"]
    assert einsum.attrs["equation"] == equation and layers(einsum) == ["/attn/Einsum"]


@pytest.mark.parametrize("equation, shapes, flops", [
    ("ij,jk->ik", [(2, 3), (3, 4)], 2 * 2 * 4 * 3),  # as a matmul: 2 × output × K
    ("i,j->ij", [(3,), (4,)], 12),  # a multiply per element, nothing summed
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], 2 * 5 * 12 * 3),  # two multiplies and an add a term
    ("ii", [(4, 4)], 4),
])
def test_flops_count_the_products_summed(equation, shapes, flops):
    from relaylens.compiler.profile.cost import call_flops

    args = ", ".join(f"%x{k}: Tensor[{s if len(s) > 1 else f'({s[0]})'}, float32]" for k, s in enumerate(shapes))
    fields = ", ".join(f"%x{k}" for k in range(len(shapes))) + ("," if len(shapes) == 1 else "")
    module = typed(f'def @main({args}) {{\n  einsum(({fields}), equation="{equation}")\n}}\n')
    assert call_flops(module["main"].body) == flops
