"""The compute rules of the element-wise, broadcast, activation and transform ops,
evaluated by te_eval against each op's numpy reference (cases in lower_cases_elemwise.py)."""

from __future__ import annotations

import numpy as np
import pytest
from lower_cases import assert_close
from lower_cases_elemwise import CASES

from relaylens.compiler.ir.types import TensorType, TupleType
from relaylens.compiler.lower.te import evaluate as te_eval
from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.lower.te.topi import lowered_ops
from relaylens.compiler.ops import get_op

FAMILIES = {
    "elemwise": "abs atan cast ceil clip copy cos erf exp fast_erf fast_exp fast_tanh floor full_like "
                "isfinite isinf isnan log log10 log2 logical_not bitwise_not negative ones_like round rsqrt sigmoid "
                "sign sin sqrt tan tanh trunc zeros_like fixed_point_multiply",
    "broadcast": "add subtract multiply divide floor_divide mod floor_mod power maximum minimum equal "
                 "not_equal less less_equal greater greater_equal logical_and logical_or logical_xor "
                 "bitwise_and bitwise_or bitwise_xor where nn.bias_add",
    "activations": "nn.relu nn.leaky_relu nn.prelu nn.softmax nn.log_softmax nn.fast_softmax",
    "transform": "broadcast_to broadcast_to_like collapse_sum_like collapse_sum_to concatenate "
                 "expand_dims layout_transform nn.batch_flatten reshape reshape_like split squeeze "
                 "stack transpose",
    "transform_index": "arange full gather gather_nd ndarray_size one_hot ones repeat reverse shape_of "
                       "sliding_window strided_slice take tile zeros slice_like",
}
OPS = sorted(op for names in FAMILIES.values() for op in names.split())


def _placeholders(case) -> list:
    """One placeholder per argument (a tuple of them for a tuple argument)."""
    def one(ty, name):
        return te.placeholder(ty.shape, ty.dtype, name)

    return [tuple(one(f, f"p{k}_{j}") for j, f in enumerate(ty.fields)) if isinstance(ty, TupleType)
            else one(ty, f"p{k}") for k, ty in enumerate(case.arg_types())]


def _flat(items) -> list:
    return [x for item in items for x in (item if isinstance(item, tuple) else (item,))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule_matches_reference(case):
    tensors = _placeholders(case)
    attrs = get_op(case.op).normalize_attrs(case.attrs)
    out = get_op(case.op).compute(*tensors, attrs, case.out_type())
    outs = list(out) if isinstance(out, tuple) else [out]
    for t in te.post_order(outs):
        assert t.is_placeholder or t.name.startswith("T_"), f"{case.id}: tensor named {t.name}"
    values = case.inputs()
    got = te_eval.evaluate(outs, list(zip(_flat(tensors), _flat(values))))
    assert_close(case, got, case.reference(values))


@pytest.mark.parametrize("op", OPS)
def test_every_op_has_a_rule_and_a_case(op):
    assert get_op(op) is not None, f"{op} is not in the op library"
    assert get_op(op).compute is not None, f"no compute rule for {op}"
    assert any(c.op == op for c in CASES), f"no lowering case for {op}"


def test_every_rule_of_these_families_is_listed():
    modules = {f"relaylens.compiler.lower.te.topi.{family}" for family in FAMILIES}
    ours = [op for op in lowered_ops() if get_op(op).compute.__module__ in modules]
    assert sorted(ours) == OPS


def test_run_time_lengths_are_lowering_errors():
    scalar = TensorType((), "int32")
    out_type = get_op("arange").infer([scalar] * 3, {"dtype": "int32"})
    args = [te.placeholder((), "int32", name) for name in ("start", "stop", "step")]
    with pytest.raises(te.LoweringError, match="arange: the length is known only at run time"):
        get_op("arange").compute(*args, get_op("arange").normalize_attrs({"dtype": "int32"}), out_type)
    data, shape = TensorType((2, 3), "float32"), TensorType((1,), "int64")
    out_type = get_op("collapse_sum_to").infer([data, shape], {})
    args = [te.placeholder((2, 3), "float32", "x"), te.placeholder((1,), "int64", "s")]
    with pytest.raises(te.LoweringError, match="collapse_sum_to: the target shape"):
        get_op("collapse_sum_to").compute(*args, get_op("collapse_sum_to").normalize_attrs({}), out_type)


@pytest.mark.parametrize("op", ["nn.softmax", "nn.fast_softmax", "nn.log_softmax"])
def test_softmax_maximum_looks_for_no_nan(op):
    """The softmaxes subtract a maximum that looks for no NaN (te.max_nnan: a row with a
    NaN has NaN in its sum whatever is subtracted, so its outputs are NaN either way),
    and a row with NaN still gives NaN throughout."""
    x = te.placeholder((3, 32), "float32", "p0")
    out = get_op(op).compute(x, get_op(op).normalize_attrs({}), TensorType((3, 32), "float32"))
    combiners = [t.op.body.combiner for t in te.post_order([out]) if t.op is not None
                 and isinstance(t.op.body, te.Reduce)]
    assert combiners[0] == "max_nnan" and "max" not in combiners
    values = np.random.default_rng(6).standard_normal((3, 32)).astype(np.float32)
    values[1, 9] = np.nan
    got = te_eval.evaluate(out, {x: values})[0]
    assert np.isnan(got[1]).all() and not np.isnan(got[[0, 2]]).any()


@pytest.mark.parametrize("op, exp_name", [("nn.softmax", "softmax_exp"), ("nn.fast_softmax", "fast_exp")])
def test_softmax_multiplies_by_the_reciprocal_of_the_sum(op, exp_name):
    """Both softmaxes multiply by one reciprocal of the row's sum (one division a row, as
    onnxruntime's MLAS; topi/activations.py); nn.softmax's exponential of x - max is
    softmax_exp (2^64 e^x, the scale cancelling: te/mathfuncs.py), nn.fast_softmax's fast_exp."""
    x = te.placeholder((4, 32), "float32", "p0")
    out = get_op(op).compute(x, get_op(op).normalize_attrs({}), TensorType((4, 32), "float32"))
    body = out.op.body.value if isinstance(out.op.body, te.Cast) else out.op.body
    assert isinstance(body, te.Binary)
    assert body.op == "mul" and isinstance(body.b, te.Binary) and body.b.op == "div"
    assert {n.name for n in te.nodes(body.a.tensor.op.body) if isinstance(n, te.Call)} == {exp_name}
