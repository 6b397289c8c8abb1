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
from .errors import BINDING, HOLE, describe
from .grammar import driver, first_token, grammar, kids, lark_parse, parse_text
from .lalr_driver import NotTaken

MAX_RECOVERIES = 50
_BINDER = re.compile(r"\s*(%\d+|let\s+%[^\s=:]+(?:\s*:[^=]*)?)\s*=")


def recover(text: str, rule: str, statements: bool, base: int, source: Source,
            diagnostics: list[Diagnostic], errors: list[int] | None = None) -> Tree | None:
    """The tree of `text` (which starts at `base` in `source`) parsed from `rule`, mended
    where it does not parse; None when it cannot be mended.  Each error adds a diagnostic
    and, if `errors` is given, its offset in `text`.  `statements`: a statement holding
    an error may be dropped (replaced by a hole).

    Lark itself is what says what the error is (the driver only finds where it is:
    lalr_driver.py), and Lark is four times slower than the driver.  So in a long text,
    an error inside a statement of a body is first recovered with the statement alone,
    as the incremental re-read recovers it (`mend_statement`: the same diagnostics, the
    same mended text); only when that cannot be done is the whole text given to Lark."""
    return _recover(text, rule, statements, base, source, diagnostics, errors)[0]


def _recover(text: str, rule: str, statements: bool, base: int, source: Source,
             diagnostics: list[Diagnostic], errors: list[int] | None = None,
             alone: bool = True) -> tuple[Tree | None, str]:
    """`recover`, and the text as last mended.  `alone`: errors inside statements may be
    recovered with the statement alone (a long text)."""
    parser = grammar()
    seen: set[int] = set()
    tries = 0
    while tries < MAX_RECOVERIES:
        at = None
        if alone and statements and len(text) >= ALONE_CHARS:
            try:
                return driver().parse(text, rule), text
            except NotTaken as err:
                at = err.args[0] if err.args else None
            except RecursionError:
                pass  # Lark's parse below says so
            mended = mend_statement(text, at, base, source, MAX_RECOVERIES - tries, seen) \
                if isinstance(at, int) else None
            if mended is not None:
                text, found, places = mended
                diagnostics += found
                seen.update(places)
                if errors is not None:
                    errors += places
                tries += len(places)
                continue
        tries += 1
        try:
            return (parse_text(text, rule) if at is None else lark_parse(text, rule)), text
        except UnexpectedInput as err:
            pos = _error_pos(err, text)
            if pos in seen:  # no progress: this definition cannot be mended
                return None, text
            seen.add(pos)
            if errors is not None:
                errors.append(pos)
            diagnostic, mended_text = describe(err, text, pos, base, source, parser)
            if not text.startswith(HOLE, pos):  # a hole mended in is no place the user erred: it
                diagnostics.append(diagnostic)  # stands where the earlier error's statement was
            if mended_text is None:
                mended_text = drop_statement(text, pos) if statements else None
            if mended_text is None or mended_text == text:
                return None, text
            text = mended_text
        except RecursionError:
            diagnostics.append(Diagnostic("this definition is nested too deeply to read",
                                          Span(source, base, base + 1)))
            return None, text
    return None, text


ALONE_CHARS = 4_000  # a text this long has an error inside a statement recovered with the statement alone

# What a statement is recovered in alone: a definition whose body holds it, then a value
# (the parse of the whole text sees it in its real body, in the same state).
STAND_IN = "def @f() {"


def stand_in_suffix(code: str, end: int) -> str:
    """What follows the statement's `;` (at `end`) in the text it is recovered in alone: as
    in `code`, a line end, another binding or another value (the words of a syntax error
    on the `;` depend on it: errors.py)."""
    line_end = code.find("\n", end + 1)
    if not code[end + 1 : line_end if line_end >= 0 else len(code)].strip():
        return "\n%0 }"
    return " %0 = %0; %0 }" if BINDING.match(code, end + 1) else " %0 }"


def recover_alone(code: str, start: int, end: int, base: int, source: Source
                  ) -> tuple[Tree, int, list[Diagnostic], list[int], str] | None:
    """Recover the statement of a body at code[start:end] (its `;` at `end`, the body's
    previous statement ending just before it) with it alone in a stand-in body: its tree
    and the offset in `code` its token positions count from, its syntax diagnostics
    (offsets from `base`, where `code` starts), the offsets in `code` of its errors, and
    its mended text (as long as code[start:end+1]); None unless that is what recovering
    the whole text gives: every error in the statement or on its `;`, and the mended
    body holding the statement alone."""
    before = max(code.rfind(";", 0, start), code.rfind("{", 0, start))  # where the body's
    if before < 0 or code[before + 1:start].strip():  # previous statement ends
        return None
    shift = before + 1 - len(STAND_IN)
    text = STAND_IN + code[before + 1 : end + 1] + stand_in_suffix(code, end)
    found: list[Diagnostic] = []
    places: list[int] = []
    tree, mended = _recover(text, "item", True, base + shift, source, found, places, alone=False)
    if tree is None or not all(start <= shift + e <= end for e in places):
        return None
    block = kids(tree)[-1]
    if not isinstance(block, Tree) or block.data != "block":
        return None
    parts = kids(block)
    tail = len(text) - len("%0 }")
    if len(parts) != 2 or not isinstance(parts[0], Tree) or first_token(parts[1]).start_pos != tail:
        return None
    return parts[0], shift, found, [shift + e for e in places], mended[start - shift : end + 1 - shift]


def mend_statement(text: str, at: int, base: int, source: Source, budget: int, seen: set[int]
                   ) -> tuple[str, list[Diagnostic], list[int]] | None:
    """`text` with the `%N = ...;` statement around the error at `at` recovered alone
    (`recover_alone`), its diagnostics and its errors' offsets; None when it is not such
    a statement of a body of statements, or its recovery is not what recovering the
    whole text gives (more errors than `budget`, one at an offset in `seen`)."""
    begin = max(text.rfind(";", 0, at), text.rfind("{", 0, at)) + 1
    binder = _GRAPH_BINDER.match(text, begin)
    if not begin or binder is None or binder.end() > at + 1:
        return None
    statement = _STATEMENT.match(text, binder.end())  # up to its `;`, strings skipped
    if statement is None or statement.end() <= at:
        return None
    end = statement.end() - 1
    read = recover_alone(text, binder.start(1), end, base, source)
    if read is None:
        return None
    _, _, found, places, mended = read
    if not places or len(places) > budget or seen.intersection(places):
        return None
    return text[:binder.start(1)] + mended + text[end + 1:], found, places


_GRAPH_BINDER = re.compile(r"\s*(%\d+)\s*=")
_STATEMENT = re.compile(r"""(?:[^;{}"']|"(?:\\.|[^"\\])*"|'[^'\n]*')*;""")  # no braces: no nested block


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
