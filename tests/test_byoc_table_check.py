"""A pattern table checked as a table (compiler/transform/patterns/table_check.py): its
wildcards' unknown types are no warnings, its real errors stay; and the `// relaylens:`
directives (directive.py) that say which table a model is built with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from relaylens.compiler.check import check_text
from relaylens.compiler.diagnostics import Severity
from relaylens.compiler.transform.patterns import load_pattern_table
from relaylens.compiler.transform.patterns.directive import build_directive, is_table_directive
from relaylens.compiler.transform.patterns.table_check import table_check

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "examples" / "byoc" / "mynpu_patterns.relay"
RELAYLENS = str(Path(sys.executable).with_name("relaylens"))


def checked(text: str):
    result = check_text(text, "t.relay")
    return result, table_check(result.module, result.diagnostics, text)


def test_the_example_table_checks_clean_as_a_table_but_not_as_a_model() -> None:
    text = TABLE.read_text(encoding="utf-8")
    result, as_table = checked(text)
    assert sum("cannot infer" in d.message for d in result.diagnostics) > 20  # what a model check says
    assert as_table == []
    cli = subprocess.run([RELAYLENS, "check", str(TABLE)], capture_output=True, text=True)
    assert (cli.returncode, cli.stderr) == (0, "")


def test_real_errors_of_a_table_stay_with_its_own_checks() -> None:
    text = ('def @p(%x, Constants=["w"]) {\n  nn.relu(%x)\n}\n'
            'def @q(%x, %y, Composite="a.b") { nn.foo(%x, %y) }\n'
            'def @r(%x: Tensor[(2, 3), float32], %y: Tensor[(4, 3), float32]) { add(%x, %y) }\n'
            'def @s(%x) { nn.conv2d(%x, %x, no_such_attribute=1) }\n')
    _, found = checked(text)
    messages = sorted((d.span.line if d.span else 0, d.message) for d in found if d.is_error)
    assert [line for line, _ in messages] == [1, 4, 5, 6]
    assert "Constants names 'w'" in messages[0][1] and "nn.foo" in messages[1][1]
    assert "broadcast" in messages[2][1] and "no_such_attribute" in messages[3][1]
    assert not any(d.severity == Severity.WARNING and "cannot infer" in d.message for d in found)


def test_a_syntax_error_in_a_table_is_one_error_at_its_place(tmp_path) -> None:
    """The def holding it becomes a hole in recovery: its body is no call, which the table's
    own check also said ('a pattern's result must be a call'), at the def's `{`."""
    text = TABLE.read_text(encoding="utf-8").replace("  nn.relu(%1)\n", "  nn.relu(%1 +)\n", 1)
    _, found = checked(text)
    assert [(d.span.line, d.span.col, d.message) for d in found if d.is_error] == [
        (11, 15, "expected an expression after '+', found ')'")], found
    table = load_pattern_table(text, "t.relay")
    assert [d.message for d in table.diagnostics if d.is_error] == ["expected an expression after '+', found ')'"]
    assert "conv2d_bias_relu" not in [e.name for e in table.entries] and len(table.entries) == 7
    bad, model = tmp_path / "bad.relay", ROOT / "examples" / "byoc" / "mynpu_model.relay"
    bad.write_text(text, encoding="utf-8")
    cli = subprocess.run([RELAYLENS, "build", str(model), "--patterns", str(bad), "--target", "mynpu", "--passes",
                          "MergeComposite,AnnotateTarget,MergeCompilerRegions,PartitionGraph"],
                         capture_output=True, text=True)
    assert cli.returncode == 1 and cli.stderr.count("error:") == 1, cli.stderr
    assert f"{bad}:11:15: error: expected an expression after '+'" in cli.stderr, cli.stderr


def test_a_model_is_not_a_table_and_the_directive_makes_one() -> None:
    model = 'def @main(%x) { nn.relu(%x) }\n'
    assert checked(model)[1] is None
    helper = 'def @f(%x) { nn.relu(%x) }\n'  # no @main, no pattern attribute: still not a table
    assert checked(helper)[1] is None
    marked = "// relaylens: pattern-table\n" + helper
    assert is_table_directive(marked) and checked(marked)[1] == []


def test_the_build_directive_reads_the_command_line_options() -> None:
    text = '#[version = "0.0.5"]\n// relaylens: --patterns "my tables/npu.relay" --target mynpu,dsp --target-ops=exp\n'
    found = build_directive(text)
    assert (found.patterns, found.targets, found.ops, found.problems) == ("my tables/npu.relay", ["mynpu", "dsp"],
                                                                           ["exp"], [])
    assert text[found.start:found.end].lstrip().startswith("// relaylens:")
    assert build_directive("def @main() { 1f }\n") is None
    bad = build_directive("// relaylens: --patterns t.relay --taget mynpu\n")
    assert [p[2] for p in bad.problems] == [
        "relaylens directive: unknown option --taget (known: --patterns, --target, --target-ops)"]
    assert "--target is missing" in build_directive("// relaylens: --patterns t.relay\n").problems[0][2]


def test_the_example_model_names_the_example_table() -> None:
    model = ROOT / "examples" / "byoc" / "mynpu_model.relay"
    found = build_directive(model.read_text(encoding="utf-8"))
    assert (found.problems, found.targets) == ([], ["mynpu"])
    assert (model.parent / found.patterns).resolve() == TABLE.resolve()
