"""Helpers that run thousands of times a build leave nothing in reference cycles: what
they leave, the collector finds only in a full collection, which a ResNet-50 build's
leftovers made cost 0.1-1 s in a later build of the same process (docs/performance.md,
"The kernel cache on disk").  Each test counts what a call leaves unreachable."""

from __future__ import annotations

import gc

from relaylens.compiler.ir.structural_equal import structural_equal
from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.parser import parse


def _left_in_cycles(call) -> int:
    """The objects `call()` leaves that only the cycle collector can free."""
    gc.collect()
    gc.disable()
    try:
        call()
        return gc.collect()
    finally:
        gc.enable()


def test_structural_equal_leaves_no_cycle():
    text = "def @main(%x: Tensor[(1, 4), float32]) { nn.relu(add(%x, 1f)) }"
    a, b = parse(text, "a.relay").module, parse(text, "b.relay").module
    assert structural_equal(a, b)
    assert _left_in_cycles(lambda: structural_equal(a, b)) == 0


def test_transform_leaves_no_cycle():
    x = te.placeholder((8,), "float32", "x")
    i = te.Var("i")
    body = x[i] * 2 + x[i]
    assert _left_in_cycles(lambda: te.transform(body, lambda n: None)) == 0
    assert _left_in_cycles(lambda: te.substitute(body, {i: te.const(3, te.INDEX)})) == 0
    assert _left_in_cycles(lambda: te.with_loc(body, "here")) == 0
