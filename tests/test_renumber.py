"""Pass diffs without the renumbering: compiler/printer/renumber.py."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.driver import compile
from relaylens.compiler.ir.structural_equal import first_mismatch
from relaylens.compiler.printer import print_module
from relaylens.compiler.printer.renumber import align_temporaries

pytest.importorskip("onnx")
from relaylens.compiler.frontend.onnx import import_onnx, load_model  # noqa: E402

CNN = Path(__file__).resolve().parents[1] / "examples" / "small_cnn.onnx"


def changed_lines(a: str, b: str) -> int:
    return sum(1 for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and line[:3] not in ("+++", "---"))


@pytest.fixture(scope="module")
def snapshots():
    text = print_module(import_onnx(load_model(CNN)).module)
    return compile(text, "small_cnn.relay", stop_after="passes").snapshots


def test_a_rewrite_in_place_keeps_the_numbers_below_it() -> None:
    before = "  %0 = nn.conv2d(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  %2 = nn.relu(%1);\n  nn.relu(%2)"
    after = ("  %0 = nn.conv2d(%x, %w);\n  %1 = expand_dims(%b);\n  %2 = add(%0, %1);\n"
             "  %3 = nn.relu(%2);\n  nn.relu(%3)")
    aligned = align_temporaries(before, after)
    assert aligned.text == ("  %0 = nn.conv2d(%x, %w);\n  %3 = expand_dims(%b);\n  %1 = add(%0, %3);\n"
                            "  %2 = nn.relu(%1);\n  nn.relu(%2)")
    # offsets map both ways across the renamed tokens
    for new_word, old_word in (("expand_dims", "expand_dims"), ("add(", "add("),
                               ("nn.relu(%1)", "nn.relu(%2)"), ("nn.relu(%2)", "nn.relu(%3)")):
        new, old = aligned.text.index(new_word), after.index(old_word)
        assert aligned.original_offset(new) == old and aligned.aligned_offset(old) == new


def test_nothing_to_align_is_the_text_itself() -> None:
    text = "  %0 = add(%x, %x);\n  %1 = multiply(%0, %0);\n  %1"
    assert align_temporaries(text, text).text == text


@pytest.mark.parametrize("pass_name", ["SimplifyExpr", "CanonicalizeOps", "BackwardFoldScaleAxis"])
def test_the_diff_of_a_pass_shows_its_change_not_the_renumbering(snapshots, pass_name) -> None:
    index = next(i for i, s in enumerate(snapshots) if s.pass_name == pass_name)
    before, after = (print_module(snapshots[i].module, types=True) for i in (index - 1, index))
    aligned = align_temporaries(before, after).text
    plain, fewer = changed_lines(before, after), changed_lines(before, aligned)
    assert fewer < plain / 2, (plain, fewer)
    # the same module: only the numbers differ
    assert first_mismatch(check_text(after).module, check_text(aligned).module) is None
    if pass_name == "CanonicalizeOps":  # two bias_adds, each now expand_dims + add
        assert fewer == 6, "\n".join(difflib.unified_diff(before.splitlines(), aligned.splitlines(), n=0))
