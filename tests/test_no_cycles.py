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


def test_an_analysis_replaced_by_the_next_leaves_no_more_than_a_handful_of_cycles():
    """The language server freezes a long document's analysis rather than let the
    collector walk it (server/collector.py): an analysis that the next one replaces,
    read again whole or re-read a statement at a time, must be freed by reference
    counting, or what it leaves in cycles is never freed."""
    from relaylens.server.analysis import Analyses

    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(16), float32]) {", "  %0 = add(%x, %x);"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1}) /* ty=Tensor[(16), float32] */;" for k in range(1, 3000)]
    lines += ["  %2999", "}", ""]
    analyses = Analyses()
    analyses.update("file:///a.relay", 1, "\n".join(lines)).prepare()
    whole = list(lines)
    whole[1500] = whole[1500].replace("= ", "= (")  # runs on: read again whole
    left = _left_in_cycles(lambda: analyses.update("file:///a.relay", 2, "\n".join(whole)).prepare())
    assert left <= 50, left
    alone = list(whole)
    alone[1500] = lines[1500].replace(")", " ", 1)  # a statement broken alone: re-read incrementally
    assert _left_in_cycles(lambda: analyses.update("file:///a.relay", 3, "\n".join(alone)).prepare()) <= 50
