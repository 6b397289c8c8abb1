"""Incremental re-checking (compiler/parser/incremental.py, compiler/check.py `recheck`)
gives what checking the whole text gives: the same diagnostics at the same places, the
same module (types and spans printed), the same names and expressions at every offset.

Edits are chains of random small edits inside statements of corpus files and of a
generated chain, each checked against a fresh full check; the spans of the statements
the edits did not touch must have moved with the text.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from relaylens.compiler.check import CheckResult, check_text, recheck
from relaylens.compiler.ir.anchors import Piece
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.ir.span import document_span
from relaylens.compiler.parser.incremental import changed_range
from relaylens.compiler.printer import print_module, print_type
from relaylens.server.analysis import Analyses
from relaylens.server.exprs import ExprIndex

from conftest import CORPUS, corpus_file
FILES = ["002.relay", "005.relay", "009.relay", "020.relay", "021.relay", "023.relay", "026.relay", "065.relay",
         "096.relay", "131.relay", "132.relay", "146.relay"]
NAME = "file:///doc.relay"


def chain(n: int) -> str:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {",
             "  %0 = add(%x, %x);"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1});" for k in range(1, n)]
    return "\n".join([*lines, f"  %{n - 1}", "}"]) + "\n"


def summary(checked: CheckResult) -> dict:
    """Everything a client can see of a check, in plain values."""
    parsed = checked.parsed
    text = parsed.source.text

    def where(span) -> tuple | None:
        return None if span is None else (span.start, span.end)

    step = max(3, len(text) // 1500)  # offsets sampled (a prime-ish stride would do as well)
    symbols = []
    for offset in range(0, len(text), step):
        hit = parsed.index.at(offset)
        symbols.append(None if hit is None else (hit[0].kind, hit[0].name, where(hit[0].definition), where(hit[1])))
    uses = sorted((s.kind, s.name, where(s.definition) or (-1, -1), sorted(where(r) for r in s.references))
                  for s in parsed.index.symbols)
    exprs = ExprIndex(parsed)
    expressions = []
    for offset in range(0, len(text), step):
        hit = exprs.at(offset)
        expressions.append(None if hit is None else (hit[0], hit[1], hit[2].ty and print_type(hit[2].ty)))
    return {
        "diagnostics": [(d.message, d.severity, d.source, where(d.span) if hasattr(d.span, "start") else str(d.span))
                        for d in checked.diagnostics],
        "module": print_module(parsed.module, spans=True, types=True),
        "symbols": symbols,
        "uses": uses,
        "expressions": expressions,
        "lines": parsed.source.line_starts,
        "scan": (parsed.scan.code, [(c.start, c.end, c.body) for c in parsed.scan.comments],
                 [(i.keyword, i.start, i.end) for i in parsed.scan.items], parsed.scan.metadata),
        "commented": sorted(where(document_span(n.span)) for n in reachable(parsed.module) if n in checked.commented),
    }


def reachable(module) -> list:
    done: set = set()
    for func in module.functions.values():
        for node in post_order(func, done=done):
            done.add(node)
    return list(done)


def statements(checked: CheckResult) -> list[Piece]:
    return [p for p in checked.parsed.incremental.anchors.pieces if p.info is not None]


def edit(rng: random.Random, text: str, piece: Piece) -> str:
    """A small edit inside the statement of `piece`: spaces after a comma (the type stays,
    the text after moves), another elementwise operator, or a digit changed or dropped
    (a shape, an attribute, another operand: the type may change)."""
    start, end = piece.base, piece.limit
    body = text[start:end].split("/*")[0]  # the code, not its ty= comment
    choices = []
    comma = body.find(", ")
    if comma >= 0:
        choices += [text[: start + comma + 1] + " " * rng.randint(1, 4) + text[start + comma + 1 :]] * 3
    for a, b in (("add(", "subtract("), ("subtract(", "multiply("), ("multiply(", "add(")):
        at = body.find(a)
        if at >= 0:
            choices += [text[: start + at] + b + text[start + at + len(a) :]] * 2
    digits = [i for i, c in enumerate(body) if c.isdigit() and i > body.find("=")]
    if digits:
        i = start + rng.choice(digits)
        choices.append(text[:i] + rng.choice("0123456789") + text[i + 1 :])
        choices.append(text[:i] + text[i + 1 :])
    return rng.choice(choices) if choices else text


def breaking_edit(rng: random.Random, text: str, piece: Piece) -> str:
    """A small edit that leaves the statement of `piece` unparsable, as keystrokes do:
    the code cut short after some character (`%5 = add(%4,`), a `)` or `,` dropped, or
    a stray `,`, `)` or word typed."""
    start, end = piece.base, piece.limit
    body = text[start:end].split("/*")[0].rstrip()
    eq = body.find("=")
    if eq < 0 or len(body) <= eq + 2:
        return text
    choices = [text[: start + rng.randrange(eq + 2, len(body))] + text[start + len(body):]]
    for mark in ")", ",", "(":
        at = body.rfind(mark)
        if at > eq:
            choices.append(text[: start + at] + text[start + at + 1 :])
    at = start + rng.randrange(eq + 2, len(body) + 1)
    choices += [text[:at] + rng.choice([",", ")", " x", "(", " %"]) + text[at:]]
    return rng.choice(choices)


def rechecked(checked: CheckResult, new: str) -> tuple[CheckResult, bool]:
    """The check of `new`, an edit of `checked`'s text: re-read alone when it can be (then
    it must be what a full check gives), else whole; with whether it was re-read alone."""
    checked.parsed.index.entries()  # as the server has it: the index built
    done = recheck(checked, new)
    if done is None:
        return check_text(new, NAME, incremental=True), False
    assert summary(done[0]) == summary(check_text(new, NAME))
    return done[0], True


@pytest.mark.parametrize("name", FILES)
def test_random_edits_agree_with_a_full_check(name: str) -> None:
    """Edits that keep the text valid, edits that break a statement, and mending it (the
    text before the break back), in random order."""
    text = corpus_file(name).read_text()
    rng = random.Random(name)
    checked = check_text(text, NAME, incremental=True)
    incremental = broken = 0
    good = None  # the text before the last breaking edit
    for _ in range(24):
        pieces = statements(checked)
        if not pieces:
            break
        if good is not None and rng.random() < 0.5:
            new, good = good, None
        elif rng.random() < 0.4:
            new = breaking_edit(rng, text, rng.choice(pieces))
            good = good or text
        else:
            new = edit(rng, text, rng.choice(pieces))
        checked, alone = rechecked(checked, new)
        incremental += alone
        broken += alone and any(d.source == "syntax" for d in checked.diagnostics)
        text = new
    assert incremental >= 3, "the edits should mostly be re-checked incrementally"
    assert broken >= 1, "edits that break a statement should be re-read alone"


def test_a_chain_of_edits_moves_the_spans_after_them() -> None:
    text = chain(300)
    checked = check_text(text, NAME, incremental=True)
    rng = random.Random(7)
    for _ in range(25):
        k = rng.randrange(2, 299)
        line = next(l for l in text.splitlines() if l.startswith(f"  %{k} = "))
        operand = rng.randrange(0, k)
        new_line = f"  %{k} = add(%{operand}, %{k - 1});"
        new = text.replace(line + "\n", new_line + "\n", 1)
        done = recheck(checked, new)
        assert done is not None, new_line
        checked, change = done
        assert change.delta == len(new_line) - len(line)
        text = new
    assert summary(checked) == summary(check_text(text, NAME))


def test_what_cannot_be_re_read_alone_falls_back() -> None:
    text = chain(20)
    checked = check_text(text, NAME, incremental=True)
    line = "  %10 = add(%9, %9);"
    cases = {
        "two statements": "  %10 = add(%9, %9); %99 = add(%9, %9)",
        "another name": "  %11 = add(%9, %9);",
        "a comment": "  %10 = add(%9, %9) /* x */;",
        "an undefined global": "  %10 = @nowhere(%9);",
        "the hole character, which the scanner reports": "  %10 = add(%9, \u2047%9);",
    }
    for why, new_line in cases.items():
        assert recheck(checked, text.replace(line, new_line)) is None, why
    no_value = text.replace("  %19\n}", "}")  # the body ends with a statement: an error on its `;`
    checked_no_value = check_text(no_value, NAME, incremental=True)
    assert recheck(checked_no_value, no_value.replace("  %19 = add(%18, %18);", "  %19 = add(%18,  %18);")) is None
    header = text.replace("%x: Tensor[(4), float32]) ->", "%x: Tensor[(4), float32] ) ->")
    assert recheck(checked, header) is None, "an edit outside the statements"
    assert summary(checked) == summary(check_text(text, NAME)), "a refused edit changes nothing"


def retyped(checked: CheckResult, text: str) -> CheckResult:
    """Re-check `text`: the statement re-read, then it and what uses it typed again (or
    the whole module); as a whole check."""
    done = recheck(checked, text)
    assert done is not None and (done[1].retyped or done[1].cone)
    assert summary(done[0]) == summary(check_text(text, NAME))
    return done[0]


def test_a_changed_type_types_the_module_again() -> None:
    text = chain(20)
    checked = check_text(text, NAME, incremental=True)
    checked = retyped(checked, text.replace("  %10 = add(%9, %9);", "  %10 = sum(%9, %9);"))
    assert [d.source for d in checked.diagnostics] == ["types"]  # @main no longer returns Tensor[(4)]
    checked = retyped(checked, text)
    assert not checked.diagnostics
    checked = retyped(checked, text.replace("  %10 = add(%9, %9);", "  %10 = add(%12, %9);"))
    assert [d.message for d in checked.diagnostics] == ["%12 is used before it is defined"]


def test_errors_elsewhere_move_with_the_text() -> None:
    broken = chain(20) + (
        "def @g(%y: Tensor[(3), float32], %z: Tensor[(4), float32]) {\n  %0 = add(%y, %z);\n  %0\n}\n"
        "def @h(%y: Tensor[(3), float32]) {\n  %0 = negative(%y);\n  %1 = add(%0 %0);\n  %1\n}\n")
    checked = check_text(broken, NAME, incremental=True)
    assert sorted(d.source for d in checked.diagnostics) == ["syntax", "types"]
    edited = broken.replace("  %5 = add(%4, %4);", "  %5 = add(%3,    %4);")
    done = recheck(checked, edited)
    assert done is not None
    assert summary(done[0]) == summary(check_text(edited, NAME))


def test_an_error_in_the_statement_types_the_module_again() -> None:
    """An error's ERROR type flows back into what the statement uses, as a whole check
    would have it: such edits re-type the module, and mending one too."""
    text = chain(20).replace("def @main(%x: Tensor[(4), float32])",
                             "def @main(%x: Tensor[(4), float32], %y: Tensor[(3), float32])")
    checked = check_text(text, NAME, incremental=True)
    checked = retyped(checked, text.replace("  %10 = add(%9, %9);", "  %10 = add(%9, %y);"))
    assert [d.source for d in checked.diagnostics] == ["types"]
    checked = retyped(checked, text)
    assert not checked.diagnostics
    checked = retyped(checked, text.replace("  %10 = add(%9, %9);", "  %10 = add(%9, %z);"))
    assert [d.source for d in checked.diagnostics] == ["names"]


def test_a_use_that_fixed_a_parameter_type_types_the_module_again() -> None:
    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {\n"
            "  %0 = fn (%a) { negative(%a) };\n"
            "  %1 = %0(%x);\n"
            "  %2 = add(%1, %y);\n"
            "  %2\n"
            "}\n")
    checked = check_text(text, NAME, incremental=True)
    retyped(checked, text.replace("%1 = %0(%x);", "%1 = add(%x, %x);"))  # %0 loses the use that typed %a


def test_an_edit_with_new_lines_keeps_the_line_table_right() -> None:
    text = chain(30)
    checked = check_text(text, NAME, incremental=True)
    edited = text.replace("  %12 = add(%11, %11);", "  %12 = add(%11,\n\n     %11);")
    done = recheck(checked, edited)
    assert done is not None
    assert summary(done[0]) == summary(check_text(edited, NAME))
    back = recheck(done[0], text)
    assert back is not None
    assert summary(back[0]) == summary(check_text(text, NAME))


def test_changed_range() -> None:
    assert changed_range("abcdef", "abXdef") == (2, 3, 3)
    assert changed_range("abcdef", "abcdef!") == (6, 6, 7)
    assert changed_range("aaaa", "aaa") == (3, 4, 3)
    assert changed_range("", "x") == (0, 0, 1)


def test_the_server_analyses_a_statement_edit_incrementally() -> None:
    analyses = Analyses()
    text = chain(50)
    first = analyses.update(NAME, 1, text)
    first.prepare()
    edited = text.replace("  %25 = add(%24, %24);", "  %25 = add(%3, %24);")
    second = analyses.update(NAME, 2, edited)
    assert second.result.module is first.result.module  # taken over, not re-read
    assert second._exprs and second._exprs[0] is first._exprs[0]
    offset = edited.index("%3, %24")
    symbol, span = second.index.at(offset + 1)
    assert symbol.name == "3" and edited[span.start : span.end] == "%3"
    assert analyses.good(NAME) is second
    whole = Analyses().update(NAME, 2, edited)
    assert [(e[0].start, e[0].end, str(e[1].ty)) for e in second.exprs.entries] == \
        [(e[0].start, e[0].end, str(e[1].ty)) for e in whole.exprs.entries]


def test_prepare_builds_the_table_the_next_edit_looks_names_up_in() -> None:
    """`Analysis.prepare` (run once the diagnostics are published) builds the `%N` table
    of the incremental re-read, so the first edit after an open does not pay for it."""
    first = Analyses().update(NAME, 1, chain(30))
    assert first.result.incremental._graph is None
    first.prepare()
    table = first.result.incremental._graph
    assert table is not None and sorted(table, key=int) == [str(k) for k in range(30)]


def test_a_changed_type_types_only_what_uses_it() -> None:
    """The statements after it that use it, through one another, are typed again, the
    rest keeps its types; one whose uses are all unused is not typed (a whole check
    types only what the definitions use), and the definition's annotated result is
    checked again."""
    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {\n"
            "  %0 = add(%x, %x);\n"
            "  %1 = negative(%0) /* ty=Tensor[(4), float32] */;\n"
            "  %2 = negative(%1) /* ty=Tensor[(4), float32] */;\n"
            "  %3 = add(%0, %x);\n"
            "  %4 = add(%x, %x);\n"
            "  add(%3, %4)\n"
            "}\n")
    checked = check_text(text, NAME, incremental=True)
    edited = text.replace("%0 = add(%x, %x);", "%0 = sum(%x, %x);")
    done = recheck(checked, edited)
    assert done is not None and not done[1].retyped
    assert done[1].cone == 2  # %0 and %3; %1 and %2 are unused
    assert summary(done[0]) == summary(check_text(edited, NAME))
    assert [d.source for d in done[0].diagnostics] == ["types"]
    back = recheck(done[0], text)
    assert back is not None and back[1].cone == 2
    assert summary(back[0]) == summary(check_text(text, NAME))


def test_typing_inside_a_broken_statement_types_nothing_again() -> None:
    text = chain(30)
    checked = check_text(text, NAME, incremental=True)
    steps = ["  %12 = add(%11,;", "  %12 = add(%11, ;", "  %12 = add(%11, %;", "  %12 = add(%11, %1;",
             "  %12 = add(%11, %11);"]
    for step in steps:
        edited = text.replace("  %12 = add(%11, %11);", step)
        done = recheck(checked, edited)
        assert done is not None, step
        checked, change = done
        assert summary(checked) == summary(check_text(edited, NAME)), step
        if step not in (steps[0], steps[-1]):
            assert not change.retyped and not change.cone, step  # a hole before and after
    assert not checked.diagnostics


def test_a_new_version_of_the_same_text_keeps_the_analysis() -> None:
    analyses = Analyses()
    text = chain(50)
    first = analyses.update(NAME, 1, text)
    second = analyses.update(NAME, 2, text)
    assert second.version == 2 and second.result is first.result
    assert second.diagnostics == first.diagnostics


def test_an_unused_statement_of_the_cone_is_typed_when_used_again() -> None:
    """%2 and %1 fall out of use (%3 takes %0 instead), %0's type changes (they are not
    typed again: a whole check types only what is used, and leaves them the types their
    comments wrote), then %3 uses %2 again: it is typed from the new %0."""
    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {\n"
            "  %0 = add(%x, %x);\n"
            "  %1 = negative(%0);\n"
            "  %2 = negative(%1);\n"
            "  %3 = add(%2, %x);\n"
            "  %3\n"
            "}\n")
    checked = check_text(text, NAME, incremental=True)
    edits = [("%3 = add(%2, %x);", "%3 = add(%0, %x);"), ("%0 = add(%x, %x);", "%0 = sum(%x);"),
             ("%3 = add(%0, %x);", "%3 = add(%2, %x);")]
    for old, new in edits:
        text = text.replace(old, new)
        done = recheck(checked, text)
        assert done is not None, new
        checked = done[0]
        assert summary(checked) == summary(check_text(text, NAME)), new
        if new == "%0 = sum(%x);":
            assert done[1].cone == 2  # %0 and %3 typed again, %1 and %2 unused


def test_a_name_never_defined_and_no_longer_used_leaves_the_index() -> None:
    text = chain(20).replace("  %10 = add(%9, %9);", "  %10 = @nowhere(%9);")
    checked = check_text(text, NAME, incremental=True)
    assert any(s.kind == "global" and s.name == "nowhere" for s in checked.parsed.index.symbols)
    for new_line in ("  %10 = add(%9,;", "  %10 = add(%9, %9);"):  # broken, then mended
        text = re.sub(r"  %10 = .*;", new_line, text, count=1)
        done = recheck(checked, text)
        assert done is not None, new_line
        checked = done[0]
        assert summary(checked) == summary(check_text(text, NAME)), new_line


def test_a_statement_unused_from_the_start_keeps_its_comment_types_for_a_later_use() -> None:
    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {\n"
            "  %0 = negative(%x) /* ty=Tensor[(4), float32] */;\n"
            "  %1 = negative(%0) /* ty=Tensor[(4), float32] */;\n"
            "  %2 = add(%0, %x) /* ty=Tensor[(4), float32] */;\n"
            "  %2\n"
            "}\n")
    checked = check_text(text, NAME, incremental=True)  # %1 is not typed: nothing uses it
    text = text.replace("%2 = add(%0, %x)", "%2 = add(%1, %x)")
    done = recheck(checked, text)
    assert done is not None
    assert summary(done[0]) == summary(check_text(text, NAME))


def test_the_cone_keeps_the_diagnostics_of_the_definitions_after_it() -> None:
    """The text after a body's last statement is one region up to the end of the file;
    what the cone types again there ends with the definition."""
    text = ('#[version = "0.0.5"]\n'
            "def @f(%a: Tensor[(4), float32]) -> Tensor[(4), float32] {\n"
            "  %0 = negative(%a);\n"
            "  %0\n"
            "}\n"
            "def @main(%x: Tensor[(3), float32]) -> Tensor[(4), float32] {\n"
            "  @f(%x)\n"
            "}\n")
    checked = check_text(text, NAME, incremental=True)
    assert [d.source for d in checked.diagnostics] == ["types"]
    edited = text.replace("%0 = negative(%a);", "%0 = sum(%a);")
    done = recheck(checked, edited)
    assert done is not None and done[1].cone == 1
    assert summary(done[0]) == summary(check_text(edited, NAME))


def test_a_number_defined_inside_a_statement_and_used_after_it() -> None:
    """Graph numbers are one table for the file: a `%1` of a `fn` body inside `%0`'s
    statement may be used after it; an edit of that statement keeps the use."""
    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(4), float32]) {\n"
            "  %0 = fn (%y: Tensor[(4), float32]) { %1 = negative(%y); %1 };\n"
            "  %2 = %0(%x);\n"
            "  (%2, %1)\n"
            "}\n")
    checked = check_text(text, NAME, incremental=True)
    assert any(s.name == "1" and len(s.references) == 2 for s in checked.parsed.index.symbols)
    edited = text.replace("negative(%y)", "negative(%y )")
    done = recheck(checked, edited)
    result = done[0] if done is not None else check_text(edited, NAME, incremental=True)
    assert summary(result) == summary(check_text(edited, NAME))


def test_a_number_defined_anew_inside_a_statement_changes_what_an_earlier_use_is_told() -> None:
    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(4), float32]) {\n"
            "  %0 = add(%x, %5);\n"
            "  %1 = fn (%y: Tensor[(4), float32]) { %2 = negative(%y); %2 };\n"
            "  (%0, %1)\n"
            "}\n")
    checked = check_text(text, NAME, incremental=True)
    assert [d.message for d in checked.diagnostics] == ["%5 is not defined"]
    edited = text.replace("%2 = negative(%y); %2", "%5 = negative(%y); %5")
    done = recheck(checked, edited)
    result = done[0] if done is not None else check_text(edited, NAME, incremental=True)
    assert summary(result) == summary(check_text(edited, NAME))


def comment_edit(rng: random.Random, text: str, piece: Piece) -> str:
    """An edit inside the body of the statement's `/* ty=... */` comment (a character
    replaced, dropped or typed, a line broken), as a keystroke in a written type makes."""
    at = text.find("/* ty=", piece.base, piece.limit)
    if at < 0:
        return text
    i = rng.randrange(at + 3, text.find("*/", at))
    return rng.choice([text[:i] + rng.choice(" 0)x") + text[i + 1:], text[:i] + text[i + 1:],
                       text[:i] + rng.choice(["1", "(", "\n  "]) + text[i:]])


@pytest.mark.parametrize("name", ["096.relay", "131.relay", "132.relay"])
def test_edits_inside_a_type_comment_are_read_alone_and_agree_with_a_full_check(name: str) -> None:
    """A keystroke in a `/* ty=... */` comment (which the parser reads) re-reads its
    statement alone, whether the type still reads or not."""
    text = corpus_file(name).read_text()
    rng = random.Random(name)
    checked = check_text(text, NAME, incremental=True)
    incremental = 0
    for _ in range(24):
        pieces = [p for p in statements(checked) if "/* ty=" in text[p.base:p.limit]]
        new = comment_edit(rng, text, rng.choice(pieces))
        checked, alone = rechecked(checked, new)
        incremental += alone
        text = new
    assert incremental >= 16, "edits inside a comment should mostly be re-read alone"


def test_a_statement_without_its_semicolon_is_not_read_alone() -> None:
    """Its region runs to the next statement; read alone it parses, and the whole check's
    error on the missing `;` would be lost (the recheck fuzzer's finding)."""
    text = chain(20).replace("  %10 = add(%9, %9);", "  %10 = add(%9, %9) /* c */")
    checked = check_text(text, NAME, incremental=True)
    assert [d.message for d in checked.diagnostics] == ["expected ';' after ')'"]
    for old, new in (("%10 = add(%9, %9)", "%10 = add(%9,  %9)"), ("/* c */", "/* d */")):
        edited = text.replace(old, new, 1)
        done = recheck(checked, edited)
        assert done is None or summary(done[0]) == summary(check_text(edited, NAME)), new
        assert check_text(edited, NAME).diagnostics


def test_an_error_the_text_after_a_statement_put_on_its_semicolon_is_not_lost() -> None:
    """A broken statement further down makes the recovery report "a block ends with a
    value" on this statement's `;`; read alone, the statement would lose it (the recheck
    fuzzer's finding)."""
    text = ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(4), float32]) {\n  %0 = add(%x, %x);\n'
            '  vm.shape_of(nn.conv2d%0, axis=-1="int64")\n  %1 = add(%0, %x);\n}\n')
    checked = check_text(text, NAME, incremental=True)
    assert "a block ends with a value, but nothing follows this binding" in [d.message for d in checked.diagnostics]
    for new in ("add(%x,  %x)", "add(%x, %x[)"):
        edited = text.replace("add(%x, %x)", new, 1)
        done = recheck(checked, edited)
        assert done is None or summary(done[0]) == summary(check_text(edited, NAME)), new


def test_an_edit_of_a_comments_delimiters_parses_the_file_whole() -> None:
    text = chain(20).replace("  %10 = add(%9, %9);", "  %10 = add(%9, %9) /* ty=Tensor[(4), float32] */;")
    checked = check_text(text, NAME, incremental=True)
    for old, new in (("float32] */", "float32] */ */"), ("float32] */", "float*32] */"),
                     ("(4), float32] */", "(4/), float32] */"), ("/* ty", "/ ty")):
        assert recheck(checked, text.replace(old, new, 1)) is None, new
    done = recheck(checked, text.replace("[(4), float32] */", "[(5), float32] */"))
    assert done is not None and any("5" in d.message for d in done[0].diagnostics)


def test_an_edit_that_joins_a_star_and_a_slash_in_a_comment_parses_the_file_whole() -> None:
    """Taking the x out of `*x/` in a comment's body closes the comment there."""
    text = chain(20).replace("  %10 = add(%9, %9);", "  %10 = add(%9, %9) /* a *x/ b */;")
    checked = check_text(text, NAME, incremental=True)
    for edited in (text.replace("*x/", "*/", 1), text.replace("*x/", "* x/", 1)):
        assert recheck(checked, edited) is None, edited
    assert check_text(text.replace("*x/", "*/", 1), NAME).diagnostics  # ` b */` is then code
