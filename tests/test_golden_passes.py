"""Every golden pass case under tests/passes/ (format: tests/passes/README.md), run by
tests/golden.py; a case with `// XFAIL: reason` is expected to fail (strictly).  Then the
runner itself: each of its checks fails when it should, naming the case file and line."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from golden import CASES, CaseError, case_files, check_case, check_values, load_case, read_module
from relaylens.compiler.typing import infer_types


def _param(path):
    try:
        reason = load_case(path).xfail
    except CaseError:
        reason = None  # the test fails and says what is wrong with the file
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(path, id=str(path.relative_to(CASES).with_suffix("")), marks=marks)


@pytest.mark.parametrize("path", [_param(p) for p in case_files()])
def test_case(path):
    check_case(path)


# --- the runner ------------------------------------------------------------------------------

ADD = """def @main(%x: Tensor[(2), float32] /* span=x:0:0 */) {
  %0 = add(%x, 0f) /* span=add:0:0 */;
  negative(%0) /* span=neg:0:0 */
}
"""


def write(tmp_path, text: str):
    path = tmp_path / "case.relay"
    path.write_text(text)
    return path


def test_the_expected_module_is_compared_and_a_mismatch_shows_the_line_and_the_diff(tmp_path):
    path = write(tmp_path, "// RUN: SimplifyExpr\n" + ADD + "// EXPECTED:\n"
                 "def @main(%x: Tensor[(2), float32]) {\n  exp(%x)\n}\n")
    with pytest.raises(CaseError) as failed:
        check_case(path)
    message = str(failed.value)
    assert message.startswith(f"{path}:6: the output differs from the expected module")
    assert "-  exp(%x)" in message and "+  negative(%x)" in message


def test_the_layer_origins_written_in_the_expected_module_are_compared(tmp_path):
    right = ("def @main(%x: Tensor[(2), float32] /* span=x:0:0 */) {\n"
             "  negative(%x) /* span=neg:0:0 */\n}\n")
    check_case(write(tmp_path, "// RUN: SimplifyExpr\n" + ADD + "// EXPECTED:\n" + right))
    with pytest.raises(CaseError, match="differs"):
        check_case(write(tmp_path, "// RUN: SimplifyExpr\n" + ADD + "// EXPECTED:\n"
                         + right.replace("span=neg", "span=add")))


def test_unchanged_means_the_pass_returns_its_input(tmp_path):
    check_case(write(tmp_path, "// RUN: FoldConstant\n" + ADD + "// EXPECTED: unchanged\n"))
    with pytest.raises(CaseError, match=r"case.relay:6: expected the input back unchanged"):
        check_case(write(tmp_path, "// RUN: SimplifyExpr\n" + ADD + "// EXPECTED: unchanged\n"))


def test_check_lines_match_the_output_printed_with_types_and_spans(tmp_path):
    check_case(write(tmp_path, "// RUN: SimplifyExpr\n" + ADD
                     + "// CHECK: negative(%x) /* ty=Tensor[(2), float32] span=neg:0:0 */\n// CHECK-NOT: add(\n"))
    with pytest.raises(CaseError) as failed:
        check_case(write(tmp_path, "// RUN: SimplifyExpr --opt-level 3\n" + ADD + "// CHECK: add(%x, 0f)\n"))
    message = str(failed.value)
    assert message.startswith(f"{tmp_path / 'case.relay'}:1: CHECK lines do not match")
    assert "case.relay:6: error" in message and "negative(%x)" in message  # filecheck's line, the output


def test_the_run_line_takes_passes_in_order_options_and_config(tmp_path):
    case = load_case(write(tmp_path, "// RUN: SimplifyExpr | DeadCodeElimination inline_once=true "
                                     "--opt-level 2 --config ir.enable_si_builder=false\n" + ADD + "// CHECK: x\n"))
    assert case.passes == [("SimplifyExpr", {}), ("DeadCodeElimination", {"inline_once": True})]
    assert (case.opt_level, case.config) == (2, {"ir.enable_si_builder": False})


@pytest.mark.parametrize("text, error", [
    (ADD + "// CHECK: x\n", r"case.relay:1: no '// RUN:' line"),
    ("// RUN: FoldConstant\n" + ADD, r"case.relay:6: no '// EXPECTED:' block and no CHECK line"),
    ("// RUN: FoldConstant\n// CHECK: x\n" + ADD + "// EXPECTED: unchanged\n", "not both"),
    ("// RUN: FoldConstant x=[1\n" + ADD + "// CHECK: x\n", r"case.relay:1: RUN option value '\[1' is not JSON"),
    ("// RUN: FoldConstant\n" + ADD.replace("negative", "negative(") + "// CHECK: x\n", "the input does not parse"),
    ("// RUN: FoldConstant --opt-level\n" + ADD + "// CHECK: x\n", r"case.relay:1: cannot read the RUN line"),
    ("// RUN: FoldConstan\n" + ADD + "// CHECK: x\n", r"case.relay:1: unknown pass 'FoldConstan'"),
    ("// RUN: FoldConstant\n// bind: y=normal\n" + ADD + "// CHECK: x\n", r"case.relay:1: // bind: @main has no parameter %y"),
    ("// RUN: FoldConstant\n// bind: x=odd\n" + ADD + "// CHECK: x\n", r"case.relay:1: // bind: unknown bind kind 'odd'"),
])
def test_a_malformed_case_is_an_error_naming_its_line(tmp_path, text, error):
    with pytest.raises(CaseError, match=error):
        check_case(write(tmp_path, text))


def test_values_that_change_fail(tmp_path):
    case = load_case(write(tmp_path, "// RUN: FoldConstant\n" + ADD + "// CHECK: x\n"))
    before = read_module(case, case.input, "input", 1)
    after = read_module(case, case.input.replace("negative(%0)", "exp(%0)"), "input", 1)
    infer_types(before), infer_types(after)
    check_values(case, before, before)
    with pytest.raises(AssertionError, match="case.relay:1: output 0 changed value"):
        check_values(case, before, after)


def test_an_output_that_cannot_run_fails(tmp_path, monkeypatch):
    import golden
    from relaylens.compiler.interpreter.interpreter import InterpreterError

    case = load_case(write(tmp_path, "// RUN: FoldConstant\n" + ADD + "// CHECK: x\n"))
    before = read_module(case, case.input, "input", 1)
    after = read_module(case, case.input, "input", 1)
    infer_types(before), infer_types(after)
    run = golden.interpret

    def interpret(mod, *args):
        if mod is after:
            raise InterpreterError("no reference for this op", None)
        return run(mod, *args)

    monkeypatch.setattr(golden, "interpret", interpret)
    with pytest.raises(CaseError, match="case.relay:1: the input runs but the pass output does not"):
        check_values(case, before, after)


def test_bound_parameters_are_drawn_alike_for_input_and_expected(tmp_path):
    case = load_case(write(tmp_path, "// RUN: FoldConstant\n// bind: x=positive\n" + ADD + "// CHECK: x\n"))
    one, two = (read_module(case, case.input, "input", 1) for _ in range(2))
    a, b = (np.asarray(m["main"].body.args[0].args[0].data) for m in (one, two))
    assert a.shape == (2,) and (a >= 0.5).all() and (a == b).all()


def test_xfail_reason_is_read(tmp_path):
    assert load_case(write(tmp_path, "// RUN: FoldConstant\n// XFAIL: bug 7\n" + ADD + "// CHECK: x\n")).xfail == "bug 7"


def test_the_examples_of_the_readme_pass(tmp_path):
    blocks = re.findall(r"\n\n((?:    .*\n)+)", (CASES / "README.md").read_text())
    examples = [textwrap.dedent(b) for b in blocks if b.lstrip().startswith("// RUN:") and "def @main" in b]
    assert len(examples) == 2
    for text in examples:
        check_case(write(tmp_path, text))
