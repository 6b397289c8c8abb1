"""ToBasicBlockNormalForm: the cases of TVM's test_pass_to_basic_block_normal_form.py as
Relay text (free variables made parameters), values with the interpreter, the basic
block check on every result, spans of the new bindings, and dataflow graphs (the whole
corpus) coming back as the same objects."""

from __future__ import annotations

import numpy as np

from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir import LayerSpan
from relaylens.compiler.ir.expr import Let
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.ir.structural import assert_structural_equal
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.to_basic_block_normal_form import basic_block_violations
from relaylens.compiler.transform.span_check import spanless

from conftest import CORPUS, _parse_ok

HEADER = '#[version = "0.0.5"]\n'


def parse(text: str, name: str = "bb.relay"):
    return _parse_ok(HEADER + text, name)


def normalise(mod):
    with PassContext(opt_level=3):
        return get_pass("ToBasicBlockNormalForm")(mod)


def check(before: str, expected: str | None = None):
    """`before` normalised equals `expected` (None: unchanged, the same module); the
    result is in basic block normal form, keeps spans and leaves its input alone."""
    mod = parse(before, "before.relay")
    printed = print_module(mod, spans=True)
    out = normalise(mod)
    assert print_module(mod, spans=True) == printed, "the input module changed"
    if expected is None:
        assert out is mod
    else:
        assert_structural_equal(out, parse(expected, "expected.relay"))
    for func in out.functions.values():
        if "Compiler" not in func.attrs:  # external functions are left as they are
            assert basic_block_violations(func) == set()
    assert spanless(out) == []
    return mod, out


def layer(span) -> str:
    """The frontend-layer origin a `/* span=NAME:0:0 */` comment gave."""
    return ",".join(str(o) for o in span.origins() if isinstance(o, LayerSpan))


def new_lets(out) -> list[Let]:
    return [n for f in out.functions.values() for n in post_order(f) if isinstance(n, Let)]


def test_top_level_nested_if():
    before = """def @main(%x: bool, %y: float32, %z: float32) {
  %0 = add(%z, %z) /* span=z2:0:0 */;
  %1 = add(%y, %y) /* span=y2:0:0 */;
  if (%x) {
    if (True) { add(%0, %1) } else { add(3f, %1) }
  } else {
    if (False) { %0 } else { 1f }
  }
}"""
    # add(%z, %z) is shared by both outer branches: bound in the function body; add(%y, %y)
    # by the two inner branches of the true branch: bound there
    expected = """def @main(%x: bool, %y: float32, %z: float32) {
  let %x1 = add(%z, %z);
  if (%x) {
    let %x2 = add(%y, %y);
    if (True) { add(%x1, %x2) } else { add(3f, %x2) }
  } else {
    if (False) { %x1 } else { 1f }
  }
}"""
    mod, out = check(before, expected)
    lets = new_lets(out)
    assert sorted(layer(let.span) for let in lets) == ["y2:0:0", "z2:0:0"]
    assert all(let.var.span is let.span for let in lets)
    for x in (True, False):
        args = (np.array(x), np.float32(1.5), np.float32(2.0))
        assert float(interpret(out, *args)) == float(interpret(mod, *args))


def test_if():
    mod, out = check("""def @main(%x: float32) {
  %0 = add(%x, 1f) /* span=v1:0:0 */;
  if (equal(%x, 2f)) { multiply(%0, 2f) } else { multiply(%0, 1f) }
}""", """def @main(%x: float32) {
  let %x1 = add(%x, 1f);
  if (equal(%x, 2f)) { multiply(%x1, 2f) } else { multiply(%x1, 1f) }
}""")
    assert [layer(let.span) for let in new_lets(out)] == ["v1:0:0"]
    for x in (2.0, 3.0):
        assert float(interpret(out, np.float32(x))) == float(interpret(mod, np.float32(x)))


def test_a_long_dataflow_chain_needs_no_recursion():
    lines = ["def @main(%x: float32, %c: bool) {", "  %0 = add(%x, 1f);"]
    lines += [f"  %{i} = add(%{i - 1}, 1f);" for i in range(1, 5000)]
    mod = parse("\n".join(lines + ["  if (%c) { %4999 } else { negative(%4999) }\n}"]))
    out = normalise(mod)  # the chain's end is shared by both branches: bound before the if
    assert isinstance(out["main"].body, Let) and basic_block_violations(out["main"]) == set()
    assert float(interpret(out, np.float32(1), np.array(False))) == -5001.0
    pure = parse("\n".join(lines + ["  %4999\n}"]))
    assert normalise(pure) is pure  # without a scope: the same module, no graph built


def test_primitive_and_external_functions_are_left_alone():
    check("""def @ext(%a: bool, %b: int32, Compiler="ccompiler") {
  %0 = add(%b, 1);
  if (%a) { %0 } else { multiply(%0, 2) }
}
def @main(%a: bool, %b: int32) { @ext(%a, %b) }""")
    assert basic_block_violations(parse("""def @main(%a: bool, %b: int32) {
  %0 = add(%b, 1);
  if (%a) { %0 } else { multiply(%0, 2) }
}""")["main"])  # the same body, not external, would be rewritten


def test_corpus_files_come_out_in_normal_form_and_unchanged_when_they_were(corpus_dir):
    rewritten = []
    for path in sorted(CORPUS.glob("*.relay")):
        checked = check_text(path.read_text(), str(path))
        if any(d.is_error for d in checked.diagnostics):
            continue
        mod = checked.module
        out = normalise(mod)
        functions = [f for f in mod.functions.values() if "Compiler" not in f.attrs]
        if not any(basic_block_violations(f) for f in functions):
            assert out is mod, path.name
            continue
        rewritten.append(path.name)
        for func in out.functions.values():
            if "Compiler" not in func.attrs:
                assert basic_block_violations(func) == set(), path.name
        assert spanless(out) == [], path.name
    assert len(rewritten) < 10, rewritten  # nearly every corpus file is a dataflow graph
