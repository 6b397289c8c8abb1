"""Every compute rule compiled: each case of lower_cases_elemwise / lower_cases_nn becomes a
primitive Relay function `fn (%p0, %p1, Primitive=1) { op(%p0, %p1, attrs) }`, lowered the
way a build lowers it (compose, default schedule, loop nest, LLVM, O3, machine code) and
run on the case's inputs against the op's numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
from lower_cases import assert_close
from lower_cases_elemwise import CASES as ELEMWISE
from lower_cases_nn import CASES as NN

from relaylens.compiler.ir.expr import Call, Function, Tuple, Var, op
from relaylens.compiler.ir.types import TupleType
from relaylens.compiler.lower.pipeline import lower_function
from relaylens.compiler.lower.runtime.executable import _KernelCall
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.ops import get_op
from relaylens.compiler.ops.registry import as_ir_attrs

CASES = ELEMWISE + NN
PRIMITIVE = as_ir_attrs({"Primitive": 1})


@pytest.fixture(scope="module")
def jit():
    return JIT()


def primitive_function(case) -> Function:
    """The case as the primitive function FuseOps would make of a lone call."""
    params, args = [], []
    for k, ty in enumerate(case.arg_types()):
        if isinstance(ty, TupleType):  # a tuple argument: one parameter per field, tupled
            fields = [Var(f"p{k}_{j}", f, ty=f) for j, f in enumerate(ty.fields)]
            params += fields
            args.append(Tuple(tuple(fields), ty=ty))
        else:
            var = Var(f"p{k}", ty, ty=ty)
            params.append(var)
            args.append(var)
    call = Call(op(case.op), tuple(args), as_ir_attrs(case.attrs), ty=case.out_type())
    return Function(tuple(params), call, attrs=PRIMITIVE)


def flat_inputs(case) -> list[np.ndarray]:
    flat = []
    for value in case.inputs():
        flat.extend(value if isinstance(value, tuple) else (value,))
    return flat


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_compiled_op_matches_numpy(case, jit):
    func = primitive_function(case)
    lowered = lower_function(func, "tvmgen_default_fused_case", "<case>", jit)
    got = _KernelCall(lowered)(*flat_inputs(case))
    assert_close(case, list(got) if isinstance(got, tuple) else [got], case.reference(case.inputs()))


def test_every_compute_rule_is_compiled_by_some_case():
    from relaylens.compiler.lower.te.topi import lowered_ops

    assert set(lowered_ops()) - {c.op for c in CASES} == set()
    assert all(get_op(name) is not None for name in lowered_ops())
