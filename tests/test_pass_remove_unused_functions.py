"""RemoveUnusedFunctions beyond its golden cases: an undefined lowered callee, and its
registration.  The cases of TVM's test_pass_remove_unused_functions.py (with a small prelude
of our own written in Relay text), globals reached as arguments or through an `if`, and
modules without the entry are case files in tests/passes/remove_unused_functions/."""

from __future__ import annotations

from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.remove_unused_functions import RemoveUnusedFunctions
from relaylens.compiler.transform.span_check import spanless

from conftest import _parse_ok

HEADER = '#[version = "0.0.5"]\n'


def remove(mod):
    with PassContext(opt_level=3):
        return RemoveUnusedFunctions()(mod)


def names(mod) -> set[str]:
    return {gv.name for gv in mod.functions}


def test_an_undefined_lowered_callee_is_kept_by_name_and_the_rest_goes():
    text = """def @unused(%x: Tensor[(2), float32]) { %x }
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  call_lowered(@tvmgen_default_fused_add, (%x, %x))
}"""
    out = remove(_parse_ok(HEADER + text, "lowered.relay"))
    assert names(out) == {"main"}
    assert "unused" not in out and "unused" not in out.global_vars


def test_registered_under_tvms_name_at_opt_level_1():
    p = get_pass("RemoveUnusedFunctions")
    assert isinstance(p, RemoveUnusedFunctions) and p.entry_functions == ("main",)
    mod = _parse_ok(HEADER + "def @f(%x: int32) { %x }\ndef @main(%x: int32) { %x }", "unused.relay")
    with PassContext(opt_level=0):
        assert p(mod) is mod
    with PassContext(opt_level=1):
        out = p(mod)
    assert names(out) == {"main"} and spanless(out) == []
