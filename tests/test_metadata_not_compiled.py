"""Text printed without its metadata whose constants' types their uses do not fix (GPT-2's
print(mod): corpus 002) checks clean, but no kernel can be compiled: the build says so once,
as a warning at the first such constant (compiler/driver.py `_lower`), instead of an error
per kernel those constants flow into (GPT-2: 400 errors); and the editor's build does not
say again at every layer what the check said at the first (server/slow/reporting.py
`_new_diagnostics`: GPT-2, 199 more warnings and notes where the check gave 10)."""

from __future__ import annotations

from pathlib import Path

from relaylens.compiler.check import check_text
from relaylens.compiler.cli import main
from relaylens.compiler.diagnostics import Severity
from relaylens.compiler.driver import compile
from relaylens.server.slow.reporting import build_report

TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32]) {
  %0 = add(%x, meta[relay.Constant][0]);
  %1 = split(%0, indices_or_sections=2, axis=1);
  %2 = %1.0;
  %3 = multiply(%2, meta[relay.Constant][1]);
  %4 = split(%3, indices_or_sections=2, axis=1);
  %5 = %4.0;
  %6 = multiply(%5, meta[relay.Constant][2]);
  nn.relu(%6)
}
"""
FIRST = TEXT.index("meta[relay.Constant][0]")


def test_the_build_says_once_why_it_compiles_nothing():
    assert not any(d.is_error for d in check_text(TEXT, "m.relay").diagnostics)
    result = compile(TEXT, "m.relay", stop_after="llvm")
    assert result.lowered is None
    assert [d for d in result.diagnostics if d.is_error] == []
    [said] = [d for d in result.diagnostics if d.source == "lower"]
    assert said.severity == Severity.WARNING and said.span.start == FIRST
    assert said.message.startswith("not compiled: 3 constants have neither a value nor a known type")


def test_the_command_line_prints_one_line_for_it(tmp_path: Path, capsys):
    model = tmp_path / "m.relay"
    model.write_text(TEXT)
    status = main(["build", str(model), "--emit", "llvm"])
    err = capsys.readouterr().err
    assert status == 1  # nothing to emit
    assert ": error:" not in err and err.count("warning: not compiled: 3 constants") == 1, err


def test_a_typed_constant_of_unknown_value_still_compiles():
    typed = TEXT.replace("meta[relay.Constant][0]", "meta[relay.Constant][0] /* ty=Tensor[(1, 4), float32] */") \
                .replace("meta[relay.Constant][1]", "meta[relay.Constant][1] /* ty=Tensor[(1, 2), float32] */") \
                .replace("meta[relay.Constant][2]", "meta[relay.Constant][2] /* ty=Tensor[(1, 1), float32] */")
    result = compile(typed, "m.relay", stop_after="llvm")
    assert result.ok and result.lowered is not None and result.lowered.ok, [d.message for d in result.diagnostics]


def test_the_editor_s_build_adds_only_that_warning():
    report = build_report("file:///m.relay", 1, TEXT)
    assert [(d.severity, d.stage, d.range) for d in report.diagnostics] == [
        (int(Severity.WARNING), "lower", (FIRST, FIRST + len("meta[relay.Constant][0]")))]
