"""What InferType keeps from one run to the next (transform/passes/infer_type.py and
ops/relation_memo.py): a module typed last and unchanged is not typed again; a call typed
again takes its relation's result from the memo; the types and diagnostics are those of a
full inference in every case."""

from __future__ import annotations

import dataclasses

from relaylens.compiler.check import check_text
from relaylens.compiler.ops import get_op
from relaylens.compiler.ops import relation_memo
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.typing import infer as infer_module

TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 8, 8), float32], %w: Tensor[(4, 8, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.relu(%0);
  add(%1, 1f)
}
"""

BAD = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4, 5), float32]) {
  add(%x, %y)
}
"""


def _counting(monkeypatch) -> list:
    runs: list = []
    original = infer_module.TypeChecker.run

    def run(self):
        runs.append(self.module)
        return original(self)

    monkeypatch.setattr(infer_module.TypeChecker, "run", run)
    return runs


def test_an_unchanged_module_is_not_typed_again(monkeypatch):
    mod = check_text(TEXT, "t.relay").module
    runs = _counting(monkeypatch)
    with PassContext(opt_level=3):
        first = get_pass("InferType")(mod)
        again = get_pass("InferType")(first)
    assert again is mod and runs == [mod]  # typed once
    assert print_module(again) == print_module(mod)


def test_typing_another_module_in_between_types_it_again(monkeypatch):
    mod = check_text(TEXT, "t.relay").module
    other = check_text(TEXT, "u.relay").module
    runs = _counting(monkeypatch)
    with PassContext(opt_level=3):
        get_pass("InferType")(mod)
        get_pass("InferType")(other)
        get_pass("InferType")(mod)  # other's inference may have written shared nodes
    assert runs == [mod, other, mod]


def test_a_changed_module_is_typed_again(monkeypatch):
    mod = check_text(TEXT, "t.relay").module
    runs = _counting(monkeypatch)
    with PassContext(opt_level=3):
        typed = get_pass("InferType")(mod)
        gv = typed.global_vars["main"]
        changed = typed.with_functions({gv: dataclasses.replace(typed[gv])})  # a rebuilt function
        get_pass("InferType")(changed)
        same_functions = changed.with_functions({})  # another module object, the same functions
        get_pass("InferType")(same_functions)
    assert runs == [mod, changed]


def test_a_skipped_run_keeps_the_diagnostics():
    mod = check_text(BAD, "bad.relay").module
    with PassContext(opt_level=3):
        first = get_pass("InferType")
        first(mod)
        second = get_pass("InferType")
        second(mod)
    assert first.diagnostics and [d.message for d in second.diagnostics] == [d.message for d in first.diagnostics]


def test_a_call_typed_again_skips_its_relation(monkeypatch):
    relation_memo.clear()
    conv = get_op("nn.conv2d")
    calls: list = []
    original = conv.type_relation

    def counted(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(conv, "type_relation", counted)
    mod = check_text(TEXT, "t.relay").module  # the check types the conv once
    assert len(calls) == 1
    infer_module.infer_types(mod)  # the same call, the same argument types
    assert len(calls) == 1
    other = check_text(TEXT, "u.relay").module  # another call (its own attributes object)
    assert len(calls) == 2
    assert other["main"].ty == mod["main"].ty


def test_a_failing_relation_reports_every_time():
    for _ in range(2):
        diagnostics = check_text(BAD, "bad.relay").diagnostics
        assert any("add" in d.message and d.is_error for d in diagnostics)
