"""Syntax errors in words a person reads, and the two slips we mend rather than drop.

Lark says which terminals the parser could have taken; this module names them as a
person would ("';'", "an expression", "a type"), says what came instead and after what,
and for two common slips returns a mended copy of the text (same length, so every offset
still holds): a missing `;` between two statements, and a `;` after a block's value.  Two
other slips get a fix the editor offers (a quick fix) instead: the `)` a call misses, and
the `let` a named binding misses (`%y = ...`: only graph numbers bind without it).
"""

from __future__ import annotations

import re
from dataclasses import replace

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..diagnostics import Diagnostic, Fix
from ..ir.span import Source, Span
from .scan import HOLE

AFTER_DEFINITION = "after-definition"  # the code of text after a definition's closing brace
BLOCK_END = "block-end"  # the code of a `;` before a closing brace or parenthesis (the token after it decides)
NAMED_BINDING = "named-binding"  # the code of `%y = ...` (no `let`); its span is the `%y`

_NAMED = {
    "LOCAL": "a variable (%x)",
    "GRAPH": "a graph number (%0)",
    "GLOBAL": "a global (@f)",
    "IDENT": "a name",
    "DOTTED": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "META_REF": "meta[...][i]",
    "MATCH": "'match'",
    "OPAQUE_BRACE": "{...}",
    "SQUOTED": "a quoted name",
    "EQOP": "'=='",
    "RELOP": "'<'",
    "ADDOP": "'+'",
    "MULOP": "'*'",
    "$END": "the end of the definition",
}
_EXPRESSION_STARTS = {"LOCAL", "GRAPH", "GLOBAL", "NUMBER", "META_REF", "FN", "IF", "LPAR", "REF", "TRUE"}
_CONTINUATIONS = {"EQOP", "RELOP", "ADDOP", "MULOP", "DOT", "HOLE"}
BINDING = re.compile(r"\s*(?:let\s|%\d+\s*=)")  # a statement that binds a name starts here
_PREVIOUS = re.compile(r"(%[\w.:/\-]+|@[\w/]+|[\w./]+|\S)\s*$")
_NAMED_BINDING = re.compile(r"(?:^|[;{])\s*(%[A-Za-z_][\w/.]*)\s*$")  # `%y` at a statement's start


def describe(
    err: UnexpectedInput, text: str, pos: int, base: int, source: Source, parser: Lark
) -> tuple[Diagnostic, str | None]:
    """The diagnostic for a syntax error at `pos` of `text` (which starts at `base` in the
    source), and a mended text when the slip is one we know."""
    if isinstance(err, UnexpectedCharacters):
        char = text[pos] if pos < len(text) else ""
        message = f"unexpected character {char!r}" if char != "\u2047" else "syntax error"
        mended = text[:pos] + " " + text[pos + 1 :] if char else None
        return _diag(message, source, base + pos, base + pos + 1), mended

    expected = set(getattr(err, "expected", ()) or ())
    interactive = getattr(err, "interactive_parser", None)
    if interactive is not None and isinstance(err, UnexpectedToken):
        try:  # what the parser could really shift here (LALR's set over-approximates)
            expected = set(interactive.accepts()) or expected
        except Exception:  # noqa: BLE001 - fall back to Lark's own set
            pass
    token = getattr(err, "token", None)
    found = _found(token)
    after = _previous(text, pos)

    # A `;` missing between two statements on separate lines: write it over the blank
    # before the next one.  Spans are offsets, so even a newline may be overwritten.
    if "SEMICOLON" in expected and token is not None and token.type != "$END":
        prev_end = len(text[:pos].rstrip())
        if 0 < prev_end < pos and "\n" in text[prev_end:pos]:
            mended = text[: pos - 1] + ";" + text[pos:]
            return _diag(f"expected ';' after {after}", source, base + prev_end, base + prev_end), mended

    # Something after a definition's closing brace, such as `def @f() { 1 };`.
    if token is not None and token.type != "$END" and expected <= {"$END"}:
        mended = text[:pos] + " " * (len(text) - pos)
        diag = _diag(f"unexpected {_found(token)} after the end of this definition", source, base + pos, base + pos + len(str(token)))
        return replace(diag, code=AFTER_DEFINITION), mended

    # A `;` right before the closing brace: a block ends with its value, not a `;`.
    if token is not None and token.type in ("RBRACE", "RPAR"):
        before = text[:pos].rstrip()
        if before.endswith(";"):
            semi = len(before) - 1
            start = max(text.rfind(";", 0, semi), text.rfind("{", 0, semi)) + 1
            if BINDING.match(text, start) and pos - semi > 1:
                # `let %x = v; }`: the binding needs a body; a hole stands for it
                mended = text[: semi + 1] + HOLE + text[semi + 2 :]
                message = "a block ends with a value, but nothing follows this binding"
            else:
                mended = text[:semi] + " " + text[semi + 1 :]
                message = "a block ends with its value, not ';': remove this ';' (or add the value after it)"
            return replace(_diag(message, source, base + semi, base + semi + 1), code=BLOCK_END), mended

    # A `;` that ends a statement while a call is still open: the `)` belongs right after
    # the last token of the statement (a `/* ty=... */` comment may stand between).
    if token is not None and token.type == "SEMICOLON" and {"COMMA", "RPAR"} <= expected:
        opened = _unclosed_paren(text, pos)
        line_end = text.find("\n", pos)
        rest_of_line = text[pos + 1:line_end if line_end >= 0 else len(text)]
        if opened is not None and (BINDING.match(text, pos + 1) or not rest_of_line.strip()):
            at = len(text[:pos].rstrip())
            diag = _diag("expected ')' to close this call", source, base + at, base + at)
            notes = ((Span(source, base + opened, base + opened + 1), "the '(' opened here"),)
            fix = Fix("Insert ')'", Span(source, base + at, base + at), ")")
            return replace(diag, notes=notes, fixes=(fix,)), None

    # `%y = v;`: a name bound without `let` (TVM's text binds only graph numbers so).
    if token is not None and token.type == "EQUAL":
        named = _NAMED_BINDING.search(text, max(0, pos - 200), pos)
        if named is not None:
            name = named.group(1)
            at = base + named.start(1)
            diag = _diag(f"'{name} = ...' binds a name without 'let': write 'let {name} = ...' "
                         "(only a graph number binds without it, as in '%0 = ...')", source, at, at + len(name))
            return replace(diag, code=NAMED_BINDING, fixes=(Fix("Insert 'let '", Span(source, at, at), "let "),)), None

    wanted = _phrase(expected, parser)
    where = f" after {after}" if after else ""
    message = f"expected {wanted}{where}, found {found}" if wanted else f"unexpected {found}{where}"
    if token is not None and token.type == "SEMICOLON" and {"COMMA", "RPAR"} <= expected:
        message += " (is a ')' missing? a sequence as an argument needs its own parentheses: f((a; b)))"
    end = pos + max(1, len(str(token))) if token is not None and token.type != "$END" else pos
    return _diag(message, source, base + pos, base + min(end, len(text))), None


def _phrase(expected: set[str], parser: Lark) -> str:
    names = set(expected)
    if {"COMMA", "RPAR"} <= names:  # statements inside parentheses are legal but rare
        names.discard("SEMICOLON")
    if names & {"COMMA", "RPAR", "RBRACE", "SEMICOLON"}:  # after a whole expression, '(' would call it
        names.discard("LPAR")
    if len(names - _CONTINUATIONS) > 0:
        names -= _CONTINUATIONS
    words: list[str] = []
    if len(names & _EXPRESSION_STARTS) >= 3:
        names -= _EXPRESSION_STARTS | {"IDENT", "DOTTED", "FALSE", "REF_READ", "REF_WRITE", "LET", "FREE_VAR", "LBRACE"}
        names -= {"MATCH", "HOLE"}
        words.append("an expression")
    if {"TENSOR", "IDENT"} <= names:
        names -= {"TENSOR", "IDENT", "LPAR", "FN", "UNDERSCORE", "META_REF", "REF"}
        words.append("a type")
    for name in sorted(names, key=_rank):
        words.append(_terminal_words(name, parser))
    words = list(dict.fromkeys(words))
    if len(words) > 5:
        words = words[:5] + ["..."]
    if not words:
        return ""
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _rank(name: str) -> tuple[int, str]:
    order = ["SEMICOLON", "COMMA", "RPAR", "RBRACE", "RSQB", "EQUAL", "COLON"]
    return (order.index(name) if name in order else len(order), name)


def _terminal_words(name: str, parser: Lark) -> str:
    if name in _NAMED:
        return _NAMED[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return name.lower()


def _found(token) -> str:
    if token is None or token.type == "$END":
        return "the end of the definition"
    value = str(token).split("\n")[0].strip()
    if value == "\u2047":
        return "an earlier error"
    if len(value) > 30:
        value = value[:27] + "..."
    return f"'{value}'"


def _previous(text: str, pos: int) -> str:
    m = _PREVIOUS.search(text[max(0, pos - 80) : pos])
    if m is None:
        return ""
    value = m.group(1)
    return "this value" if value == "\u2047" else f"'{value}'"


def _unclosed_paren(text: str, pos: int) -> int | None:
    """The offset of the innermost '(' still open at `pos`, looking back no further than
    the start of the statement (a ';', '{' or '}' outside parentheses)."""
    depth = 0
    for i in range(pos - 1, -1, -1):
        ch = text[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            if depth == 0:
                return i
            depth -= 1
        elif ch in ";{}" and depth == 0:
            return None
    return None


def _diag(message: str, source: Source, start: int, end: int) -> Diagnostic:
    return Diagnostic(message, Span(source, start, max(start, end)), source="syntax")
