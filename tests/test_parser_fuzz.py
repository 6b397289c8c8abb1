"""The parser never raises, keeps its diagnostics inside the text, and recovers.

(a) random text, over a Relay-ish alphabet and over all of Unicode;
(b) random edits of the corpus files;
(c) GPT-2 (corpus 002.relay) with one statement broken still yields @main with few errors;
(d) 50,000-statement bodies parse within the default recursion limit.

Every parse result must satisfy `check_result`: a module comes back, every diagnostic
points into the text (0 ≤ start ≤ end ≤ len, 1 ≤ line ≤ number of lines), no stage failed
inside ("internal error"), and a module holding an error placeholder (ErrorExpr) comes
with at least one error diagnostic: the IR never hides a mistake the user wasn't told of.

Hypothesis runs derandomized (the same examples on every run, so CI is stable) and the
corpus tests skip shrinking, which re-parses big files for little gain.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings, strategies as st

from relaylens.compiler.ir import Call, ErrorExpr, IRModule, Let, Span, post_order
from relaylens.compiler.parser import parse

QUICK = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
CORPUS_RUN = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Pieces of Relay text, whole tokens and single characters, to build plausible nonsense.
RELAY_TOKENS = [
    "%0", "%1", "%12", "%x", "%input.1", "%onnx::Conv_7", "@main", "@f", "(", ")", "{", "}", "[", "]",
    ";", ",", "=", ":", ".", ".0", "->", "=>", "==", "<=", "+", "-", "*", "/", "?", "_",
    "fn", "let", "def", "type", "extern", "if", "else", "match", "match?", "free_var", "ref",
    "ref_read", "ref_write", "True", "False", "None", "Tensor", "float32", "int64", "add",
    "nn.conv2d", "Cons", "Nil", "1", "-1", "--2", "1f", "1.5", "2147483648i32", "inff", "-inff",
    "meta[relay.Constant][0]", "meta[tir.SizeVar][1]", "/*", "*/", "//", '"', '"s"', "'q'",
    "#[version = \"0.0.5\"]", "#[metadata]", "#", "axis=1", "Primitive=1", "/* ty=float32 */",
    "/* span=conv1:0:0 */", " ", " ", " ", "\n", "\n", "\t", "\r\n", "\r", "\u2047", "é",
]
relay_ish = st.lists(st.sampled_from(RELAY_TOKENS), max_size=60).map("".join)
relay_chars = st.text(alphabet=st.sampled_from(sorted(set("".join(RELAY_TOKENS)))), max_size=120)
any_unicode = st.text(max_size=200)


def check_result(text: str, result) -> None:
    assert isinstance(result.module, IRModule)
    n_lines = text.count("\n") + 1
    for d in result.diagnostics:
        span = d.span
        assert isinstance(span, Span), f"diagnostic without a document span: {d.message}"
        assert span.source.text == text
        assert 0 <= span.start <= span.end <= len(text), f"span {span.start}..{span.end} outside 0..{len(text)}: {d.message}"
        _, line, col = d.location()
        assert 1 <= line <= n_lines and col >= 1, f"location {(line, col)} outside the text: {d.message}"
        assert d.source != "internal", f"a stage failed inside: {d.message}"
    if not any(d.is_error for d in result.diagnostics):
        for gv, func in result.module.functions.items():
            holes = [n for n in post_order(func) if isinstance(n, ErrorExpr)]
            where = (holes[0].span.line, holes[0].span.col) if holes and isinstance(holes[0].span, Span) else None
            assert not holes, f"@{gv.name} holds an ErrorExpr at {where} ({holes[0].message}) but no error was reported"


def parse_checked(text: str, name: str = "fuzz.relay"):
    try:
        result = parse(text, name)
    except RecursionError:  # a RecursionError is a crash like any other
        raise AssertionError("parse raised RecursionError")
    check_result(text, result)
    return result


# ------------------------------------------------------------------ (a) random text
@QUICK
@given(relay_ish)
def test_random_relay_tokens(text):
    parse_checked(text)


@QUICK
@given(relay_chars)
def test_random_relay_characters(text):
    parse_checked(text)


@QUICK
@given(any_unicode)
def test_random_unicode(text):
    parse_checked(text)


@QUICK
@given(st.sampled_from(["", "#[version = \"0.0.5\"]\n", "#[version = \"0.0.5\"]\ndef @main() {\n  "]), relay_ish)
def test_random_tokens_after_a_header(prefix, text):
    parse_checked(prefix + text)


# Known bugs, as plain examples (the fuzz tests above find them too).
def test_hole_character_in_source_is_an_error():
    """U+2047 is what recovery writes in place of a dropped statement; typed by a user it
    must be an error, not a silent ErrorExpr."""
    text = "free_var %x;\nadd(%x, \u2047)"
    result = parse(text)
    errors = [(d.location()[1:], d.message) for d in result.diagnostics if d.is_error]
    assert errors and errors[0][0] == (2, 9), errors
    check_result(text, result)


@pytest.mark.parametrize("text", ["#[metadata]", "()\n#[metadata]\n", "()\n#[metadata] {"])
def test_bad_metadata_section_span_stays_in_text(text):
    result = parse(text)
    assert any("bad #[metadata] section" in d.message for d in result.diagnostics)
    check_result(text, result)


# ------------------------------------------------------------------ (b) corpus edits
EDIT_TOKENS = ["%0", "(", ")", "{", "}", ";", ",", "=", "fn", "let", "meta[relay.Constant][0]", "/*", "*/", '"',
               "def", "@main", "%x", ".0", "1f", "\n", " "]


def small_corpus(corpus_dir: Path) -> list[Path]:
    files = sorted(p for p in corpus_dir.glob("*.relay") if p.stat().st_size <= 30_000)
    if not files:
        pytest.skip("no corpus files")
    return files


@st.composite
def edited(draw, files: list[Path]):
    path = draw(st.sampled_from(files))
    text = path.read_text()
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(text)))
        stop = draw(st.integers(start, min(len(text), start + 40)))
        insert = "".join(draw(st.lists(st.sampled_from(EDIT_TOKENS), max_size=4)))
        text = text[:start] + insert + text[stop:]  # delete (insert ""), insert (start == stop) or replace
    note(f"{path.name} edited")
    return path.name, text


@CORPUS_RUN
@given(data=st.data())
def test_corpus_edits_never_raise(corpus_dir, data):
    name, text = data.draw(edited(small_corpus(corpus_dir)))
    parse_checked(text, name)


def test_corpus_files_satisfy_the_invariants(corpus_dir):
    for path in sorted(corpus_dir.glob("*.relay")):
        parse_checked(path.read_text(), path.name)


# ------------------------------------------------------------------ (c) recovery in GPT-2
STATEMENT = re.compile(r"^\s*%\d+ = .*;\s*$")


@pytest.fixture(scope="module")
def gpt2(corpus_dir):
    path = corpus_dir / "002.relay"
    if not path.exists():
        pytest.skip("002.relay (GPT-2) not in the corpus")
    text = path.read_text()
    result = parse(text, "002.relay")
    baseline = {(d.location()[1:], d.message) for d in result.diagnostics if d.is_error}
    return text, result, baseline


def new_errors(result, baseline) -> list[tuple[tuple[int, int], str]]:
    """Errors not present in the unmodified file (GPT-2 has none: its 172 meta refs with
    no metadata section are one warning)."""
    found = [(d.location()[1:], d.message) for d in result.diagnostics if d.is_error]
    return [e for e in found if e not in baseline]


def test_gpt2_unmodified(gpt2):
    text, result, _ = gpt2
    check_result(text, result)
    kept_main = "main" in result.module
    assert kept_main
    assert [d for d in result.diagnostics if d.is_error] == []
    meta = [d.message for d in result.diagnostics if d.source == "metadata"]
    assert len(meta) == 1 and meta[0].startswith(f"{text.count('meta[relay.Constant]')} constants refer")


def break_line(text: str, line_index: int, edit) -> str:
    lines = text.split("\n")
    lines[line_index] = edit(lines[line_index])
    return "\n".join(lines)


def delete_at(pattern: str, which: int = -1):
    def edit(line: str) -> str:
        spots = [m.start() for m in re.finditer(pattern, line)]
        at = spots[which]
        return line[:at] + line[at + 1 :]

    return edit


def insert_before(pattern: str, piece: str):
    def edit(line: str) -> str:
        at = [m.start() for m in re.finditer(pattern, line)][-1]
        return line[:at] + piece + line[at:]

    return edit


# Line 19 of 002.relay is `%3 = where(%1, %2, %0);`.
BREAKAGES = {
    "missing ')'": delete_at(r"\)"),
    "missing '('": delete_at(r"\("),
    "extra ')'": insert_before(r"\)", ")"),
    "missing ';'": delete_at(";"),
    "missing ','": delete_at(",", 0),
    "missing '='": delete_at("="),
}


@pytest.mark.parametrize("kind", list(BREAKAGES))
def test_gpt2_one_broken_statement(gpt2, kind):
    text, _, baseline = gpt2
    index = 18
    assert text.split("\n")[index].strip() == "%3 = where(%1, %2, %0);"
    broken = break_line(text, index, BREAKAGES[kind])
    result = parse_checked(broken, "002.relay")
    errors = new_errors(result, baseline)
    kept_main = "main" in result.module  # not asserted on `result`: its repr is huge
    assert kept_main, f"@main lost; errors: {errors}"
    assert 1 <= len(errors) <= 3, errors
    # the first new error is reported on the broken line, not at the end of @main
    assert errors[0][0][0] == index + 1, errors


@CORPUS_RUN
@given(data=st.data())
def test_gpt2_any_statement_missing_a_paren(gpt2, data):
    text, _, baseline = gpt2
    lines = text.split("\n")
    candidates = [i for i, line in enumerate(lines) if STATEMENT.match(line) and ")" in line]
    index = data.draw(st.sampled_from(candidates), label="line index")
    which = data.draw(st.integers(0, lines[index].count(")") - 1), label="which ')'")
    note(f"line {index + 1}: {lines[index].strip()}")
    result = parse_checked(break_line(text, index, delete_at(r"\)", which)), "002.relay")
    errors = new_errors(result, baseline)
    kept_main = "main" in result.module  # not asserted on `result`: its repr is huge
    assert kept_main, f"@main lost; errors: {errors}"
    assert 1 <= len(errors) <= 3, errors


# ------------------------------------------------------------------ (d) long programs
N = 50_000


def chain_module(n: int) -> str:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(1, 8), float32]) {", "  %0 = add(%x, %x);"]
    for i in range(1, n):
        lines.append(f"  %{i} = nn.relu(%{i - 1});" if i % 2 else f"  %{i} = add(%{i - 1}, %x);")
    lines += [f"  %{n - 1}", "}", ""]
    return "\n".join(lines)


def let_chain(n: int) -> str:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(1, 8), float32]) {", "  let %v0 = add(%x, %x);"]
    lines += [f"  let %v{i} = nn.relu(%v{i - 1});" for i in range(1, n)]
    lines += [f"  %v{n - 1}", "}", ""]
    return "\n".join(lines)


@pytest.fixture
def default_recursion_limit():
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # CPython's default: the parser must not need more
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def test_fifty_thousand_graph_bindings(default_recursion_limit):
    text = chain_module(N)
    assert text.count("\n") > N
    result = parse_checked(text, "chain.relay")
    assert [d.message for d in result.diagnostics if d.is_error] == []
    node, depth = result.module["main"].body, 0
    while isinstance(node.args[0], Call):  # walk the chain without recursing
        node, depth = node.args[0], depth + 1
    assert depth == N - 1
    assert sys.getrecursionlimit() == 1000


def test_fifty_thousand_lets(default_recursion_limit):
    result = parse_checked(let_chain(N), "lets.relay")
    assert [d.message for d in result.diagnostics if d.is_error] == []
    node, count = result.module["main"].body, 0
    while isinstance(node, Let):
        node, count = node.body, count + 1
    assert count == N
    assert sys.getrecursionlimit() == 1000


def test_thousand_deep_nesting_is_reported_not_raised(default_recursion_limit):
    """Deep parentheses may be refused, but as a diagnostic, never as a crash."""
    text = "(" * 3000 + "1" + ")" * 3000
    result = parse(text)
    assert isinstance(result.module, IRModule)
    n_lines = text.count("\n") + 1
    for d in result.diagnostics:
        assert 1 <= d.location()[1] <= n_lines
