"""The Lark parser for grammar/relay.lark, built once per process, and `parse_text`, the
one way the parser reads text with it (its tables run by lalr_driver.py, a third of
Lark's time; Lark itself where that finds a syntax error, to raise it).

Positions come from the tokens, not from Lark's position propagation, which costs about
40% of the parse time: every tree keeps all its tokens (punctuation included), so a
tree's span runs from its first token to its last.  `kids(tree)` gives the children that
carry meaning (punctuation and keywords left out), which is what the lowering reads.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Tree
from lark.lexer import PatternStr

from .lalr_driver import LalrDriver, NotTaken

KEPT = {"HOLE"}  # string terminals that mean something


@lru_cache(maxsize=1)
def grammar() -> Lark:
    text = resources.files("relaylens.grammar").joinpath("relay.lark").read_text()
    parser = Lark(
        text,
        parser="lalr",
        lexer="contextual",
        start=["item", "expr_file", "type", "stmt"],
        keep_all_tokens=True,
        maybe_placeholders=False,
    )
    _PUNCTUATION.update(t.name for t in parser.terminals if isinstance(t.pattern, PatternStr) and t.name not in KEPT)
    return parser


_PUNCTUATION: set[str] = set()


@lru_cache(maxsize=1)
def driver() -> LalrDriver:
    return LalrDriver(grammar())


def parse_text(text: str, start: str) -> Tree:
    """The tree of `text` from rule `start`; Lark's `UnexpectedInput` on a syntax error."""
    try:
        return driver().parse(text, start)
    except NotTaken:
        return grammar().parse(text, start=start)


@lru_cache(maxsize=1)
def keywords() -> frozenset[str]:
    """The words the grammar spells out (`def`, `let`, `Tensor`, `True`, ...), and `match`,
    which is a pattern terminal because `match?` is one token."""
    words = {t.pattern.value for t in grammar().terminals if isinstance(t.pattern, PatternStr)}
    return frozenset(w for w in words if re.fullmatch(r"[A-Za-z_]\w*", w)) | {"match"}


def kids(tree: Tree) -> list:
    """The children of a tree without its punctuation and keyword tokens."""
    punct = _PUNCTUATION
    return [c for c in tree.children if not (isinstance(c, Token) and c.type in punct)]


def first_token(node: Tree | Token) -> Token:
    while isinstance(node, Tree):
        node = node.children[0]
    return node


def last_token(node: Tree | Token) -> Token:
    while isinstance(node, Tree):
        node = node.children[-1]
    return node


@lru_cache(maxsize=4096)
def parse_type_text(text: str) -> Tree:
    """The tree of a type written in a `ty=` comment.  A printed model repeats the same few
    types thousands of times; trees are read-only, so one per text serves them all."""
    return parse_text(text, "type")
