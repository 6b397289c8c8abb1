"""Compute rules live on their OpDef: `register_compute` (lower/te/topi/registry.py)."""

from __future__ import annotations

import pytest

from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.lower.te.topi import lowered_ops, register_compute
from relaylens.compiler.ops import get_op


def test_the_rule_is_reached_from_the_op():
    rule = get_op("nn.relu").compute
    assert callable(rule) and rule.__module__.endswith("lower.te.topi.activations")
    assert "nn.relu" in lowered_ops()
    assert all(get_op(name).compute is not None for name in lowered_ops())


def test_a_rule_for_an_op_the_library_does_not_define_is_refused():
    with pytest.raises(ValueError, match="no.such_op, which the op library does not define"):
        register_compute("no.such_op")(lambda x, attrs, out_type: x)


def test_a_second_rule_for_an_op_is_refused_and_the_first_kept():
    first = get_op("nn.relu").compute

    def second(x: te.Tensor, attrs, out_type) -> te.Tensor:
        return x

    with pytest.raises(ValueError, match="two compute rules for nn.relu"):
        register_compute("nn.relu")(second)
    assert get_op("nn.relu").compute is first
