"""The Lark parser for grammar/relay.lark, built once per process, and `parse_text`, the
one way the parser reads text with it (its tables run by lalr_driver.py, a third of
Lark's time; Lark itself where that finds a syntax error, to raise it).

Positions come from the tokens, not from Lark's position propagation, which costs about
40% of the parse time: every tree keeps all its tokens (punctuation included), so a
tree's span runs from its first token to its last.  `kids(tree)` gives the children that
carry meaning (punctuation and keywords left out), which is what the lowering reads.

Lark's analysis of the grammar (its LALR tables) costs a quarter of a second in every
new process, a tenth of a cold ResNet-50 build.  It depends only on relay.lark, the
options below, and the versions of Lark and Python, so the parser is saved once
(`Lark.save`) under a name hashed from all of them, in `$RELAYLENS_GRAMMAR_CACHE_DIR`,
else `$XDG_CACHE_HOME/relaylens/grammar`, else `~/.cache/relaylens/grammar`, and later
processes load it (`Lark.load`, 20 ms).  The file is written whole under a temporary name
and renamed, so a process never reads half of one; a file that does not load, or a
directory that cannot be written, only means the tables are built as before.
`RELAYLENS_GRAMMAR_CACHE_DIR=-` turns the cache off.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

import lark
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput
from lark.lexer import PatternStr

from ..pauses import pause_point
from .lalr_driver import PAUSE_TOKENS, LalrDriver, NotTaken

KEPT = {"HOLE"}  # string terminals that mean something


OPTIONS = dict(parser="lalr", lexer="contextual", start=["item", "expr_file", "type", "stmt"],
               keep_all_tokens=True, maybe_placeholders=False)
CACHE_ENV = "RELAYLENS_GRAMMAR_CACHE_DIR"


@lru_cache(maxsize=1)
def grammar() -> Lark:
    text = resources.files("relaylens.grammar").joinpath("relay.lark").read_text()
    path = cache_path(text)
    parser = _load(path) if path is not None else None
    if parser is None:
        parser = Lark(text, **OPTIONS)
        if path is not None:
            _save(parser, path)
    _PUNCTUATION.update(t.name for t in parser.terminals if isinstance(t.pattern, PatternStr) and t.name not in KEPT)
    return parser


_PUNCTUATION: set[str] = set()


def cache_path(text: str) -> Path | None:
    """Where the parser built from `text` is kept (None: the cache is off)."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit == "-":
        return None
    if explicit:
        folder = Path(explicit).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        folder = (Path(base).expanduser() if base else Path.home() / ".cache") / "relaylens" / "grammar"
    key = repr((text, sorted(OPTIONS.items()), lark.__version__, sys.version_info[:3]))
    return folder / f"relay-{hashlib.sha256(key.encode()).hexdigest()[:24]}.lark"


def _load(path: Path) -> Lark | None:
    try:
        with open(path, "rb") as f:
            return Lark.load(f)
    except Exception:  # noqa: BLE001 -- absent, unreadable or from another Lark: build it
        return None


def _save(parser: Lark, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                parser.save(f)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except Exception:  # noqa: BLE001 -- a read-only home: every process builds the tables
        pass


@lru_cache(maxsize=1)
def driver() -> LalrDriver:
    return LalrDriver(grammar())


def parse_text(text: str, start: str) -> Tree:
    """The tree of `text` from rule `start`; Lark's `UnexpectedInput` on a syntax error."""
    try:
        return driver().parse(text, start)
    except NotTaken:
        return lark_parse(text, start)


def lark_parse(text: str, start: str) -> Tree:
    """`grammar().parse(text, start=start)`, the same tree or the same `UnexpectedInput`,
    with a pause point every PAUSE_TOKENS tokens (compiler/pauses.py), as the driver has:
    a syntax error the driver cannot mend alone gives Lark the whole definition, 5 s of
    a printed model's 100,000-line @main that the language server's event loop waited
    for (a hover after the edit) without them.  Lark's own `parse_from_state`, a token at
    a time."""
    interactive = grammar().parse_interactive(text, start=start)
    state = interactive.parser_state
    token = None
    countdown = PAUSE_TOKENS
    try:
        for token in state.lexer.lex(state):
            countdown -= 1
            if countdown <= 0:
                countdown = PAUSE_TOKENS
                pause_point()
            state.feed_token(token)
        end = Token.new_borrow_pos("$END", "", token) if token else Token("$END", "", 0, 1, 1)
        return state.feed_token(end, True)
    except UnexpectedInput as err:
        err.interactive_parser = interactive  # as Lark's parse sets it
        raise


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
