"""The compute rules of the neural-network ops (convolutions, matrix products, pooling,
padding, resizing, reductions, normalisation, copies and qnn), evaluated by te_eval
against the ops' numpy semantics on the cases of lower_cases_nn."""

from __future__ import annotations

import pytest
from lower_cases import assert_close
from lower_cases_nn import CASES

from relaylens.compiler.ir.types import TupleType
from relaylens.compiler.lower.te import evaluate as te_eval
from relaylens.compiler.lower.te import expr as te
import relaylens.compiler.lower.te.topi  # noqa: F401  (registers the compute rules on the ops)
from relaylens.compiler.ops import all_ops, get_op

FAMILIES = ("nn_conv", "pooling", "reduce", "nn_norm", "plumbing", "qnn", "algorithm", "winograd", "scan",
            "scatter", "grid_sample")

# Ops of these families without a compute rule, and why.
NO_RULE = {
    "call_lowered": "a call of another lowered function, not a computation",
    "memory.alloc_storage": "allocates memory; the runtime's business",
    "memory.alloc_tensor": "allocates memory; the runtime's business",
    "memory.kill": "frees memory; the runtime's business",
    "vm.invoke_tvm_op": "a VM call of a primitive function",
    "vm.shape_func": "a VM call of a shape function",
    "vm.shape_of": "reads a runtime shape (VM)",
    "vm.reshape_tensor": "a VM view with a runtime shape argument",
    "dyn.broadcast_to": "a dynamic shape (every extent `?`)",
    "annotation.compiler_begin": "a region marker of AnnotateTarget; PartitionGraph removes it",
    "annotation.compiler_end": "a region marker of AnnotateTarget; PartitionGraph removes it",
}


def _family_ops() -> list[str]:
    return [o.name for o in all_ops()
            if o.numpy_compute is not None and o.numpy_compute.__module__.rsplit(".", 1)[-1] in FAMILIES]


def lower_case(case):
    """The rule's outputs and (placeholder, value) pairs for the case's inputs."""
    placeholders, pairs = [], []
    for k, (ty, value) in enumerate(zip(case.arg_types(), case.inputs())):
        if isinstance(ty, TupleType):
            group = tuple(te.placeholder(f.shape, f.dtype, f"p{k}_{j}") for j, f in enumerate(ty.fields))
            pairs += zip(group, value)
        else:
            group = te.placeholder(ty.shape, ty.dtype, f"p{k}")
            pairs.append((group, value))
        placeholders.append(group)
    rule = get_op(case.op).compute
    result = rule(*placeholders, get_op(case.op).normalize_attrs(case.attrs), case.out_type())
    return (list(result) if isinstance(result, tuple) else [result]), pairs


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_compute_rule_matches_numpy(case):
    outputs, pairs = lower_case(case)
    got = te_eval.evaluate(outputs, pairs)
    assert_close(case, got, case.reference(case.inputs()))


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def test_every_op_of_the_families_has_a_rule_or_a_reason():
    ops = _family_ops()
    missing = [op for op in ops if get_op(op).compute is None and op not in NO_RULE]
    assert not missing, f"no compute rule and no reason: {missing}"
    stale = [op for op in NO_RULE if op not in ops or get_op(op).compute is not None]
    assert not stale, f"listed without a rule but lowered (or not an op of these families): {stale}"


def test_every_rule_of_the_families_has_cases():
    covered = {c.op for c in CASES}
    untested = [op for op in _family_ops() if get_op(op).compute is not None and op not in covered]
    assert not untested, f"rules without cases: {untested}"


def _stages(t: te.Tensor) -> list[te.Tensor]:
    return [s for s in te.post_order([t]) if not s.is_placeholder]


@pytest.mark.parametrize("op, ids", [("nn.conv2d", "3x3-pad1"), ("nn.conv2d_transpose", "groups-dilation-asym-pad"),
                                     ("nn.max_pool2d", "3x3-s2-pad1")])
def test_padding_is_a_stage_of_its_own_and_the_reduction_is_tagged(op, ids):
    case = next(c for c in CASES if c.op == op and c.name == ids)
    (out,), _ = lower_case(case)
    stages = _stages(out)
    assert stages[0].name == "T_pad"
    assert out.op.tag == op and isinstance(out.op.body, te.Reduce)


def test_a_strided_transposed_convolution_sums_by_phases_without_the_zeros():
    case = next(c for c in CASES if c.op == "nn.conv2d_transpose" and c.name == "stride2-output-padding")
    (out,), _ = lower_case(case)
    names = {s.name: s for s in _stages(out)}
    assert set(names) == {"T_pad_phases", "T_kernel_phases", "T_conv2d_transpose_phases", "T_conv2d_transpose"}
    product = names["T_conv2d_transpose_phases"]
    assert product.op.tag == "nn.conv2d_transpose" and isinstance(product.op.body, te.Reduce)
    # (n, phase y, phase x, q y, o, q x); 3x3 taps of stride 2: 2 x 2 per phase, not 3 x 3
    assert product.shape == (1, 2, 2, 5, 3, 5)
    assert [a.extent for a in product.op.body.axes] == [4, 2, 2]
    assert not isinstance(out.op.body, te.Reduce)  # the output interleaves the phases


def test_unpadded_convolution_reads_its_input_directly():
    case = next(c for c in CASES if c.op == "nn.conv2d" and c.name == "no-pad")
    (out,), _ = lower_case(case)
    assert [s.name for s in _stages(out)] == ["T_conv2d"]


def test_float16_convolution_sums_in_float32_then_casts():
    case = next(c for c in CASES if c.op == "nn.conv2d" and c.name == "float16")
    (out,), _ = lower_case(case)
    reduction = _stages(out)[-2]
    assert (out.name, out.dtype) == ("T_cast", "float16")
    assert reduction.dtype == "float32" and reduction.op.tag == "nn.conv2d"


def test_split_spatial_axis_is_a_lowering_error():
    from lower_cases import Arr, Case

    case = Case("nn.conv2d", [Arr((1, 2, 4, 3, 2)), Arr((2, 2, 3, 3))], {"data_layout": "NCHW2w",
                                                                          "out_layout": "NCHW"})
    with pytest.raises(te.LoweringError, match="nn.conv2d: data_layout NCHW2w splits the spatial axis W"):
        lower_case(case)
