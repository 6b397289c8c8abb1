"""The cursor context: what surrounds an offset in raw text, for completion and signature help.

`cursor_context(text, offset)` works on the editor's text, which need not parse: it reads
the word being typed, whether the cursor is in a comment or a string, whether a type, a
shape or a dtype is expected, and the call it sits in (callee, argument index, `name=`
attributes written).  `blank(text)` turns comments and strings to spaces for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

WINDOW = 8000  # how far back the cursor context looks
_EDGE = re.compile(r'/\*|\*/|//|"|\n')
_STRING_END = re.compile(r'(?:\\.|[^"\\\n])*"')
_WORD = re.compile(r"[%@]?[A-Za-z0-9_./]*\Z")
_CALLEE = re.compile(r"(?:(def|fn)\s*)?([%@]?[A-Za-z_][A-Za-z0-9_./]*|%[0-9]+)\s*\Z")
_KEYWORD_ARG = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?![=>])")
_NOT_CALLS = frozenset({"if", "ref", "ref_read", "ref_write", "match", "match?", "fn", "def"})


# Why not the parser's scanner (compiler/parser/scan.py), which blanks comments too: it
# reads a whole file (header, `#`, the metadata cut, definition starts, with diagnostics),
# does not say whether the text ends inside a comment or a string, and lets a string run
# over lines, while here a `"` that does not close on its line is not a string (the user is
# still typing it).  So the text before a cursor is blanked here, by these rules.
def blank(text: str) -> tuple[str, str | None]:
    """`text` with comments and strings turned to spaces (newlines kept), and what its end
    lies inside: "comment", "string" or None.  Block comments nest, as in the scanner."""
    out = []
    pos = 0
    depth = 0  # block comment nesting
    line_comment = False
    for m in _EDGE.finditer(text):
        tok, at = m.group(), m.start()
        if depth:
            if tok == "/*":
                depth += 1
            elif tok == "*/":
                depth -= 1
                if not depth:
                    out.append(re.sub(r"[^\n]", " ", text[pos : m.end()]))
                    pos = m.end()
            continue
        if line_comment:
            if tok == "\n":
                line_comment = False
                out.append(" " * (at - pos))
                pos = at
            continue
        if tok == "/*":
            out.append(text[pos:at])
            pos, depth = at, 1
        elif tok == "//":
            out.append(text[pos:at])
            pos, line_comment = at, True
        elif tok == '"':
            end = _STRING_END.match(text, at + 1)
            if end is None:  # an open string up to the end of the line or text
                nl = text.find("\n", at)
                if nl < 0:
                    out.append(text[pos:at] + " " * (len(text) - at))
                    return "".join(out), "string"
                continue
            out.append(text[pos:at] + " " * (end.end() - at))
            pos = end.end()
    if depth or line_comment:
        out.append(re.sub(r"[^\n]", " ", text[pos:]))
        return "".join(out), "comment"
    out.append(text[pos:])
    return "".join(out), None


@dataclass(slots=True)
class Bracket:
    at: int  # offset of the bracket in the text
    char: str
    commas: int  # commas at this level between the bracket and the inner position
    segment: int  # where the current element at this level starts


@dataclass(slots=True)
class CallSite:
    callee: str  # as written: `nn.conv2d`, `@f`, `Cons`
    callee_start: int
    open: int  # offset of its `(`
    arg_index: int  # commas at the call's level before the cursor
    keyword: str | None  # `name=` already written in the current argument
    written: set[str] = field(default_factory=set)  # attribute names written in the call
    in_value: bool = False  # the cursor is inside a bracketed attribute value


@dataclass(slots=True)
class Cursor:
    offset: int
    prefix: str  # the word being typed, its sigil included
    in_comment: bool = False
    in_string: bool = False
    type_position: bool = False  # a type is expected (after `:`, `->`, in a type's brackets)
    dtype_position: bool = False  # the dtype of `Tensor[shape, dtype]`
    shape_position: bool = False  # the shape of `Tensor[...]`
    call: CallSite | None = None


def _brackets(code: str, stop_at_block: bool = True) -> list[Bracket]:
    """The unclosed brackets before the end of `code`, innermost first (up to a `{` or a
    `;` at the outermost level reached)."""
    found: list[Bracket] = []
    nest = 0
    commas, segment = 0, None
    for i in range(len(code) - 1, -1, -1):
        c = code[i]
        if c in ")]}":
            nest += 1
        elif c in "([{":
            if nest:
                nest -= 1
                continue
            found.append(Bracket(i, c, commas, segment if segment is not None else i + 1))
            commas, segment = 0, None
            if c == "{" and stop_at_block or len(found) > 12:
                break
        elif nest == 0:
            if c == ",":
                if segment is None:
                    segment = i + 1
                commas += 1
            elif c == ";":
                break
    return found


def _before(code: str, at: int) -> str:
    return code[:at].rstrip()


def cursor_context(text: str, offset: int) -> Cursor:
    """What surrounds `offset` in `text` (which need not parse)."""
    lo = max(0, offset - WINDOW)
    if lo:
        nl = text.find("\n", lo)
        lo = nl + 1 if 0 <= nl < offset else lo
    code, inside = blank(text[lo:offset])
    word = _WORD.search(code)
    prefix = word.group() if word and inside is None else ""
    cursor = Cursor(offset, prefix, in_comment=inside == "comment", in_string=inside == "string")
    if cursor.in_comment:
        return cursor
    head = code[: len(code) - len(prefix)]
    stripped = head.rstrip()
    if (stripped.endswith(":") and not stripped.endswith("::")) or stripped.endswith("->"):
        cursor.type_position = True
    levels = _brackets(head)
    in_value = False
    for level in levels:
        before = _before(head, level.at)
        if level.char == "{":
            break
        if level.char == "[":
            if before.endswith("Tensor"):
                innermost = level is levels[0]
                cursor.dtype_position = innermost and level.commas > 0
                cursor.shape_position = not cursor.dtype_position
                break
            if before.endswith("="):
                in_value = True
                continue
            if re.search(r"[A-Za-z0-9_]\Z", before) and not re.search(r"(?:def\s+@\S+|fn)\Z", before):
                if level is levels[0]:
                    cursor.type_position = True  # `List[...]`
            break
        # `(`
        if (before.endswith(":") and not before.endswith("::")) or before.endswith("->"):
            cursor.type_position = True
            break
        callee = _CALLEE.search(before)
        if callee is None:
            continue  # a tuple or parenthesised expression: look further out
        if callee.group(1) or callee.group(2) in _NOT_CALLS:
            break  # parameters of `def`/`fn`, or `if (...)`
        kw = _KEYWORD_ARG.match(head, level.segment)
        cursor.call = CallSite(
            callee=callee.group(2), callee_start=lo + callee.start(2), open=lo + level.at,
            arg_index=level.commas, keyword=kw.group(1) if kw else None, in_value=in_value)
        cursor.call.written = _written(head[level.at + 1 :] + _call_rest(text, offset))
        break
    return cursor


def _call_rest(text: str, offset: int, limit: int = 4000) -> str:
    """The text after the cursor up to where the call around it closes (comments blanked)."""
    code, _ = blank(text[offset : offset + limit])
    nest = 0
    for i, c in enumerate(code):
        if c in "([{":
            nest += 1
        elif c in ")]}":
            if nest == 0:
                return code[:i]
            nest -= 1
        elif c == ";" and nest == 0:
            return code[:i]
    return code


def _written(call_text: str) -> set[str]:
    """The `name=` attributes at the outer level of a call's argument text."""
    names = set()
    nest, start = 0, 0
    for i, c in enumerate(call_text):
        if c in "([{":
            nest += 1
        elif c in ")]}":
            nest -= 1
        elif c == "," and nest <= 0:
            kw = _KEYWORD_ARG.match(call_text, start, i)
            if kw is not None:
                names.add(kw.group(1))
            start = i + 1
    kw = _KEYWORD_ARG.match(call_text, start)
    if kw is not None:
        names.add(kw.group(1))
    return names
