"""codegen/emitted.py's regions: what a region leaves behind, also when its code raises."""

from __future__ import annotations

import llvmlite.ir as ir
import pytest

from relaylens.compiler.lower.codegen.emitted import Emitted
from relaylens.compiler.lower.te import expr as te

I64 = ir.IntType(64)


def _value(n: int) -> ir.Value:
    return ir.Constant(I64, n)


def test_an_unrolled_iteration_keeps_what_does_not_use_its_variable():
    em = Emitted()
    i, j = te.Var("i"), te.Var("j")
    with em.region(rebinds=i):
        uses_i, uses_j = i * 2, j * 2
        em.put(id(uses_i), uses_i, _value(1), False)
        em.put(id(uses_j), uses_j, _value(2), False)
    assert em.get(id(uses_i)) is None and em.get(id(uses_j)) is not None


def test_a_region_that_need_not_run_forgets_and_restores_even_when_its_code_raises():
    em = Emitted()
    i = te.Var("i")
    before = i + 1
    em.put(id(before), before, _value(1), True)
    with pytest.raises(RuntimeError):
        with em.region(stores=True):
            assert em.get(id(before)) is None  # a region that stores starts without loaded values
            inside = i + 2
            em.put(id(inside), inside, _value(2), False)
            raise RuntimeError("lowering failed")
    assert em.get(id(inside)) is None
    assert em.pure == {} and em.loaded == {}  # after a region that stores: no loaded value
    with em.region():
        em.put(id(inside), inside, _value(2), False)
    assert em.get(id(inside)) is None
