"""A syntax error inside a statement of a long body is recovered with the statement alone
(compiler/parser/recovery.py `mend_statement`, `recover_alone`), not by Lark reading the
whole definition: the same diagnostics, the same error offsets, the same tree and the
same mended text as the whole definition given to Lark, on many broken statements of a
generated chain and of corpus models (strings, attributes, tuples, projections)."""

from __future__ import annotations

import random

import pytest

from conftest import CORPUS, needs_corpus
from relaylens.compiler.ir.span import Source
from relaylens.compiler.parser import parse
from relaylens.compiler.parser import recovery
from relaylens.compiler.parser.scan import scan

EDITS = [
    lambda s, i: s[:i] + s[i + 1:],  # a character deleted
    lambda s, i: s[:i] + " " + s[i + 1:],  # blanked
    lambda s, i: s[:i] + "," + s[i:],
    lambda s, i: s[:i] + "=" + s[i:],
    lambda s, i: s[:i] + "(" + s[i:],
    lambda s, i: s[:i] + ")" + s[i:],
    lambda s, i: s[:i] + s[i:].replace(")", " ", 1),
    lambda s, i: s[:i] + s[i:].replace(";", " ", 1),
    lambda s, i: s[:i] + "%" + s[i:],
    lambda s, i: s[:i] + " ! " + s[i:],
]


def chain(n: int) -> str:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(16), float32]) -> Tensor[(16), float32] {",
             "  %0 = add(%x, %x);"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1});" for k in range(1, n)]
    lines += [f"  %{n - 1}", "}"]
    return "\n".join(lines) + "\n"


def broken(text: str, seed: int, count: int) -> list[str]:
    """`count` copies of `text`, each with one or two edits inside binding lines."""
    rng = random.Random(seed)
    lines = text.split("\n")
    bindings = [i for i, line in enumerate(lines) if line.lstrip().startswith("%") and " = " in line]
    out = []
    for _ in range(count):
        edited = list(lines)
        for _ in range(rng.choice((1, 1, 2))):
            k = rng.choice(bindings)
            line = edited[k]
            at = rng.randrange(line.index("=") + 1, len(line))
            edited[k] = rng.choice(EDITS)(line, at)
        out.append("\n".join(edited))
    return out


def both_ways(text: str) -> None:
    """Recover each definition of `text` both ways and compare everything."""
    source = Source("t.relay", text)
    scanned = scan(source)
    for item in scanned.items:
        if item.keyword != "def":
            continue
        code = scanned.code[item.start:item.end]
        found = []
        for alone in (True, False):
            diagnostics: list = []
            errors: list[int] = []
            tree, mended = recovery._recover(code, "item", True, item.start, source, diagnostics, errors, alone=alone)
            found.append((tree, mended, [(d.message, d.location(), d.source) for d in diagnostics], errors))
        assert found[0] == found[1]


@pytest.mark.parametrize("seed", range(4))
def test_a_chain_broken_anywhere_is_recovered_as_lark_recovers_it_whole(seed: int) -> None:
    for text in broken(chain(300), seed, 25):
        both_ways(text)


@needs_corpus
@pytest.mark.parametrize("name", ["005.relay", "002.relay", "131.relay"])
def test_corpus_models_broken_anywhere_are_recovered_as_lark_recovers_them_whole(name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name} is not in the corpus")
    for text in broken(path.read_text(), 7, 30):
        both_ways(text)


def test_a_long_broken_definition_is_not_given_to_lark_whole(monkeypatch) -> None:
    text = chain(300).replace("  %150 = add(%149, %149);", "  %150 = add(%149, %149 ;")
    whole = parse(text, "t.relay")
    calls = []
    lark = recovery.grammar()
    for method in ("parse", "parse_interactive"):  # (grammar.lark_parse: Lark's parse, interactive)
        def counting(self, text, start=None, *args, real=getattr(type(lark), method), **kwargs):
            calls.append(len(text))
            return real(self, text, start, *args, **kwargs)

        monkeypatch.setattr(type(lark), method, counting)
    again = parse(text, "t.relay")
    assert [d.message for d in again.diagnostics] == [d.message for d in whole.diagnostics] != []
    assert calls and max(calls) < 200  # Lark read the statement, in its stand-in body, only
