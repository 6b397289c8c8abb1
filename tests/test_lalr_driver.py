"""The fast LALR driver (compiler/parser/lalr_driver.py) against Lark itself.

Differential: every definition of every corpus file and every `.relay` file of the
repository (tests, examples), every statement of their bodies, and random edits of them
(characters deleted, inserted, swapped: most do not parse), are parsed by both.  Where
Lark gives a tree, the driver gives the same tree (rule names, token types, values and
offsets, child for child); where Lark raises, the driver raises `NotTaken` (and
`parse_text` then raises Lark's error).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from conftest import CORPUS
from relaylens.compiler.ir.span import Source
from relaylens.compiler.parser.grammar import driver, grammar, parse_text
from relaylens.compiler.parser.lalr_driver import NotTaken
from relaylens.compiler.parser.scan import scan

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(CORPUS.glob("*.relay")) + sorted(p for d in ("tests", "examples") for p in (ROOT / d).rglob("*.relay"))


def same(a, b, path="") -> None:
    """Assert that two Lark results are the same tree, offsets included."""
    if isinstance(a, Tree):
        assert isinstance(b, Tree) and a.data == b.data, path
        assert len(a.children) == len(b.children), f"{path}/{a.data}"
        for i, (x, y) in enumerate(zip(a.children, b.children)):
            same(x, y, f"{path}/{a.data}[{i}]")
    else:
        assert isinstance(a, Token) and isinstance(b, Token), path
        assert (a.type, a.value, a.start_pos, a.end_pos) == (b.type, b.value, b.start_pos, b.end_pos), path


def both(text: str, start: str) -> bool:
    """Parse `text` with both; they agree.  True when it parses."""
    try:
        expected = grammar().parse(text, start=start)
    except UnexpectedInput:
        with pytest.raises(NotTaken):
            driver().parse(text, start)
        with pytest.raises(UnexpectedInput):
            parse_text(text, start)
        return False
    same(driver().parse(text, start), expected, start)
    return True


def pieces(path: Path) -> list[tuple[str, str]]:
    """(text, start rule) of each definition of a file (or the file as one expression)."""
    scanned = scan(Source(str(path), path.read_text()))
    if not scanned.items:
        return [(scanned.code, "expr_file")] if scanned.code.strip() else []
    return [(scanned.code[i.start:i.end], "item") for i in scanned.items]


def test_the_files_are_there():
    assert len(FILES) > 100 and any(p.parent == CORPUS for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_definition_parses_to_larks_tree(path):
    for text, start in pieces(path):
        both(text, start)


def test_statements_and_types():
    parsed = 0
    for path in sorted(CORPUS.glob("*.relay"))[:20]:
        for text, start in pieces(path):
            for line in text.splitlines():
                stmt = line.strip().rstrip(";")
                if stmt.startswith("%") and "=" in stmt:
                    parsed += both(stmt, "stmt")
    assert parsed > 1000
    for ty in ("Tensor[(1, 3, 224, 224), float32]", "(Tensor[(?), int64], fn (int32) -> bool)",
               "List[meta[x][0]]", "Tensor[(1, 2,), float32"):
        both(ty, "type")


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_agree(seed):
    rng = random.Random(seed)
    texts = [t for p in FILES[:: max(len(FILES) // 40, 1)] for t in pieces(p) if len(t[0]) < 20_000]
    alphabet = "(){}[];,=:%@.0123456789 \n\"'-+*/?_abcdefmnrt\u2047"
    broken = parsed = 0
    for _ in range(150):
        text, start = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            how = rng.randrange(3)
            if how == 0:
                text = text[:at] + text[at + 1:]
            elif how == 1:
                text = text[:at] + rng.choice(alphabet) + text[at:]
            else:
                text = text[:at] + rng.choice(alphabet) + text[at + 1:]
        if both(text, start):
            parsed += 1
        else:
            broken += 1
    assert broken > 20 and parsed > 5  # both kinds were compared


def test_a_long_blank_run_before_a_bad_character_fails_at_once():
    """The blanks before a token are matched in an atomic group: a text the lexer cannot
    read after a long run of blanks fails in linear time (a nested quantifier there once
    backtracked exponentially)."""
    text = "def @main() {\n  %0 = add(%x," + " \n" * 5_000 + "$ }"
    started = time.perf_counter()
    with pytest.raises(NotTaken):
        driver().parse(text, "item")
    # a guard against a hang, not a speed test: linear is milliseconds on any machine, and
    # the exponential backtracking it guards against would not end in a lifetime
    assert time.perf_counter() - started < 30
