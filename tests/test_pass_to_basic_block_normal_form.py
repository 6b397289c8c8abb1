"""ToBasicBlockNormalForm beyond its golden cases: the basic block check on the result of
every golden case, a long chain, external functions, and dataflow graphs (the whole
corpus) coming back as the same objects.  The cases of TVM's
test_pass_to_basic_block_normal_form.py as Relay text (free variables made parameters),
with the spans of the new bindings, are case files in tests/passes/to_basic_block_normal_form/."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir.expr import Let
from relaylens.compiler.ir.structural_equal import assert_structural_equal
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.to_basic_block_normal_form import basic_block_violations
from relaylens.compiler.transform.span_check import spanless

import golden
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


GOLDEN = sorted((golden.CASES / "to_basic_block_normal_form").glob("*.relay"))


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_cases_come_out_in_basic_block_normal_form(path):
    case = golden.load_case(path)
    out = golden.run_passes(case, golden.read_module(case, case.input, "input", 1))
    for func in out.functions.values():
        if "Compiler" not in func.attrs:  # external functions are left as they are
            assert basic_block_violations(func) == set()


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
