"""Syntax error recovery: parse a definition, and where it does not parse, report the
error, mend the text (a copy of the same length, so every offset still holds) and parse
again.

Inside a function body the statement holding an error is replaced by a hole (`%3 = ⁇;`
keeps `%3` bound; errors.py mends two common slips instead).  The whole-file parse
(parse.py) recovers each definition this way, and the incremental re-read of one
statement (incremental.py) recovers that statement alone the same way, with the same
diagnostics, which is why the loop lives here, in one place.
"""

from __future__ import annotations

import re

from lark import Tree
from lark.exceptions import UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..diagnostics import Diagnostic
from ..ir.span import Source, Span
from .errors import HOLE, describe
from .grammar import grammar, parse_text

MAX_RECOVERIES = 50
_BINDER = re.compile(r"\s*(%\d+|let\s+%[^\s=:]+(?:\s*:[^=]*)?)\s*=")


def recover(text: str, rule: str, statements: bool, base: int, source: Source,
            diagnostics: list[Diagnostic], errors: list[int] | None = None) -> Tree | None:
    """The tree of `text` (which starts at `base` in `source`) parsed from `rule`, mended
    where it does not parse; None when it cannot be mended.  Each error adds a diagnostic
    and, if `errors` is given, its offset in `text`.  `statements`: a statement holding
    an error may be dropped (replaced by a hole)."""
    parser = grammar()
    seen: set[int] = set()
    for _ in range(MAX_RECOVERIES):
        try:
            return parse_text(text, rule)
        except UnexpectedInput as err:
            pos = _error_pos(err, text)
            if pos in seen:  # no progress: this definition cannot be mended
                return None
            seen.add(pos)
            if errors is not None:
                errors.append(pos)
            diagnostic, mended = describe(err, text, pos, base, source, parser)
            diagnostics.append(diagnostic)
            if mended is None:
                mended = drop_statement(text, pos) if statements else None
            if mended is None or mended == text:
                return None
            text = mended
        except RecursionError:
            diagnostics.append(Diagnostic("this definition is nested too deeply to read",
                                          Span(source, base, base + 1)))
            return None
    return None


def _error_pos(err: UnexpectedInput, text: str) -> int:
    if isinstance(err, UnexpectedEOF):
        return len(text)
    if isinstance(err, UnexpectedToken) and err.token.type == "$END":
        return len(text)
    pos = getattr(err, "pos_in_stream", None)
    return len(text) if pos is None else pos


def drop_statement(text: str, pos: int) -> str | None:
    """`text` with the statement around `pos` replaced by a hole, or None if `pos` is not
    inside a block.

    The statement starts after the last `;` or `{` before the error and ends at the next
    `;` outside braces, or where its block closes (then it was the block's value).
    Parentheses are not counted: an unbalanced one is the usual error."""
    begin = max(text.rfind(";", 0, pos), text.rfind("{", 0, pos))
    if begin < 0:
        return None
    begin += 1
    depth = 0
    stop, is_tail = len(text), True
    for i in range(pos, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                stop = i
                break
        elif c == ";" and depth == 0:
            stop, is_tail = i, False
            break
    binder = _BINDER.match(text, begin, stop)
    if binder is not None:
        keep = binder.end()
        filler = HOLE if keep < stop else ""
        return text[:keep] + _blank(filler, stop - keep) + text[stop:]
    if is_tail:
        if stop - begin < 1:
            return None
        return text[:begin] + _blank(HOLE, stop - begin) + text[stop:]
    return text[:begin] + _blank("", stop + 1 - begin) + text[stop + 1 :]


def _blank(head: str, width: int) -> str:
    return head + " " * (width - len(head))
