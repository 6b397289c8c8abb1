"""The first look at a file, before the grammar: comments, header, metadata, definitions.

Block comments nest (`/* a /* b */ c */` is one comment), which no regular expression can
follow, so this scanner blanks every comment out (each character but newlines becomes a
space: offsets, lines and columns stay where they were) and keeps the comments aside; the
type and span annotations among them are read back later (parser/annotations.py).  It also:

* takes the `#[version = "0.0.5"]` header off (a missing one is a warning: `print(mod)`
  writes none), and reports any other `#` (not a comment character in Relay);
* cuts the text at `#[metadata]`: what follows is JSON, not Relay;
* finds where each top-level definition (`def`, `type`, `extern type`) starts, so that each
  is parsed on its own: one broken definition leaves the others whole, and an editor can
  re-parse only the definition that changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..diagnostics import Diagnostic, Severity
from ..ir.span import Source, Span
from ..pauses import pause_point

VERSION = "0.0.5"
HOLE = "\u2047"  # written by error recovery where it dropped a statement (parse.py)

# What the scanner stops at while walking code: a comment's or a string's start, a `#`, and
# the keywords `def`, `type`, `extern` as whole words (no [%@.\w/] before, no [\w/] after).
# Each keyword's look behind comes after it (the character before it, seen from its end):
# so every branch starts with a literal and `re` skips ahead to the next of their first
# characters, where a look behind up front made it try every branch at every offset
# (47 ms for 20,000 lines, now 6).
_EVENT = re.compile(r'/\*|//|"|#|def(?<![%@.\w/]def)(?![\w/])|type(?<![%@.\w/]type)(?![\w/])'
                    r'|extern(?<![%@.\w/]extern)(?![\w/])')
_COMMENT_EDGE = re.compile(r"/\*|\*/")
_STRING = re.compile(r'"(?:\\.|[^"\\])*"', re.S)
_BRACKET_ATTR = re.compile(r"#\[([^\]\n]*)\]")
_NOT_NEWLINE = re.compile(r"[^\n]")
_LEGACY_HEADER = re.compile(r"v0\.0\.[0-4]\b")


@dataclass(slots=True)
class Comment:
    start: int  # offset of `/*` or `//`
    end: int  # offset just after `*/` or before the newline
    body: str  # the text inside the delimiters
    block: bool


@dataclass(slots=True)
class Item:
    keyword: str  # "def", "type" or "extern"
    start: int
    end: int


@dataclass(slots=True)
class Scan:
    code: str  # the text up to the metadata section, comments and header blanked
    comments: list[Comment] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    metadata: tuple[int, str] | None = None  # (offset of the JSON, its text)
    has_header: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def first_code_offset(self, start: int = 0) -> int:
        """Offset of the first non-blank character of the code at or after `start`."""
        m = re.compile(r"\S").search(self.code, start)
        return m.start() if m else len(self.code)


def _next_event(text: str, pos: int, end: int) -> re.Match | None:
    """`_EVENT.search(text, pos, end)`, a window of WINDOW characters at a time with a
    pause point between (compiler/pauses.py: one search over 500 KB takes 20 ms and
    more).  A match that ends before its window does is what the whole search finds
    (its lookahead saw a real character); one that reaches the window's end may be cut
    short (`def` of `define`), so the next window starts a few characters before it."""
    while True:
        limit = min(end, pos + WINDOW)
        m = _EVENT.search(text, pos, limit)
        if limit == end or (m is not None and m.end() < limit):
            return m
        pos = min(m.start(), limit - 8) if m is not None else limit - 8  # events are at most 6 long
        pause_point()


WINDOW = 1 << 15
PAUSE_EVENTS = 512  # comments, strings and keywords between two pause points


def scan(source: Source) -> Scan:
    text = source.text
    blanks: list[tuple[int, int]] = []
    result = Scan(code="")
    diags = result.diagnostics
    end = len(text)
    pos = 0
    header_allowed = True
    countdown = PAUSE_EVENTS
    while True:
        countdown -= 1
        if not countdown:  # (a printed model has a comment a line: 200,000 in 100,000 lines, 1 s)
            countdown = PAUSE_EVENTS
            pause_point()
        m = _next_event(text, pos, end)
        if m is None:
            break
        tok, at = m.group(), m.start()
        if header_allowed and text[pos:at].strip():
            header_allowed = False  # code came before this point
        if tok == "/*":
            close = _block_comment_end(text, at + 2)
            if close < 0:
                diags.append(_error(source, at, at + 2, "this block comment is never closed (expected '*/')"))
                close = end
                body = text[at + 2 : end]
            else:
                body = text[at + 2 : close - 2]
            result.comments.append(Comment(at, close, body, True))
            blanks.append((at, close))
            pos = close
        elif tok == "//":
            nl = text.find("\n", at)
            nl = end if nl < 0 else nl
            result.comments.append(Comment(at, nl, text[at + 2 : nl], False))
            blanks.append((at, nl))
            pos = nl
        elif tok == '"':
            s = _STRING.match(text, at)
            if s is None:
                nl = text.find("\n", at)
                nl = end if nl < 0 else nl
                diags.append(_error(source, at, nl, "this string is never closed (expected '\"')"))
                pos = nl
            else:
                pos = s.end()
            header_allowed = False
        elif tok == "#":
            attr = _BRACKET_ATTR.match(text, at)
            raw = attr.group(1).strip() if attr else None
            if raw == "metadata":
                result.metadata = (attr.end(), text[attr.end() :])
                end = at
                break
            if raw is not None and raw.startswith("version"):
                _check_version(source, attr, raw, header_allowed and not result.has_header, diags)
                result.has_header = True
                blanks.append((at, attr.end()))
                pos = attr.end()
            else:
                nl = text.find("\n", at)
                nl = end if nl < 0 else nl
                stop = attr.end() if attr else nl
                what = f"unsupported attribute #[{raw}]" if attr else "'#' does not start a comment in Relay (use // or /* */)"
                diags.append(_error(source, at, stop, what))
                blanks.append((at, stop))
                pos = stop
            header_allowed = False
        else:  # a definition keyword
            header_allowed = False
            last = result.items[-1] if result.items else None
            if tok == "type" and last is not None and last.keyword == "extern" and not text[last.start + 6 : at].strip():
                pos = m.end()
                continue
            if last is not None:
                last.end = at
            result.items.append(Item(tok, at, end))
            pos = m.end()
    if result.items:
        result.items[-1].end = end
    code = _blank(text[:end], blanks)
    hole = code.find(HOLE)
    while hole >= 0:  # the parser's own stand-in for dropped text may not come from the user
        diags.append(_error(source, hole, hole + 1, f"unexpected character {HOLE!r}"))
        code = code[:hole] + " " + code[hole + 1 :]
        hole = code.find(HOLE, hole + 1)
    first = re.search(r"\S", code)
    legacy = _LEGACY_HEADER.match(code, first.start()) if first else None
    if legacy is not None:  # Relay's first text format: no `;`, other header
        diags.append(_error(source, legacy.start(), legacy.end(), f"this is Relay's legacy text format ({legacy.group()}); RelayLens reads version {VERSION}"))
        result.has_header = True
        code = _blank(code, [(legacy.start(), legacy.end())])
    result.code = code
    if not result.has_header:
        where = result.first_code_offset()
        diags.append(
            Diagnostic(
                f'no version header; reading as Relay {VERSION} (TVM wants #[version = "{VERSION}"] first)',
                Span(source, where, where),
                Severity.WARNING,
                source="syntax",
            )
        )
    return result


def _block_comment_end(text: str, pos: int) -> int:
    """Offset just after the `*/` that closes a comment opened before `pos`, or -1."""
    depth = 1
    for m in _COMMENT_EDGE.finditer(text, pos):
        depth += 1 if m.group() == "/*" else -1
        if depth == 0:
            return m.end()
    return -1


def _check_version(source: Source, attr: re.Match, raw: str, first: bool, diags: list[Diagnostic]) -> None:
    value = raw.partition("=")[2].strip()
    if not first:
        diags.append(_error(source, attr.start(), attr.end(), "the version header must come first, and only once"))
    elif value != f'"{VERSION}"':
        diags.append(
            Diagnostic(
                f'unsupported version {value or "(none)"}; RelayLens reads "{VERSION}"',
                Span(source, attr.start(), attr.end()),
                Severity.WARNING,
                source="syntax",
            )
        )


def _blank(text: str, ranges: list[tuple[int, int]]) -> str:
    if not ranges:
        return text
    parts: list[str] = []
    pos = 0
    for i, (start, stop) in enumerate(ranges):
        if not i % PAUSE_EVENTS:
            pause_point()
        parts.append(text[pos:start])
        parts.append(_NOT_NEWLINE.sub(" ", text[start:stop]))
        pos = stop
    parts.append(text[pos:])
    return "".join(parts)


def _error(source: Source, start: int, end: int, message: str) -> Diagnostic:
    return Diagnostic(message, Span(source, start, end), Severity.ERROR, source="syntax")


_KEYWORD = re.compile(r"(?<![%@.\w/])(?:def|type|extern)(?![\w/])")


def rescan(old: Scan, text: str, start: int, old_stop: int, new_stop: int) -> Scan | None:
    """The scan of `text`, where `old`'s text had [start, old_stop) and `text` has
    [start, new_stop): made from `old` when the edit cannot change what the scanner sees
    (no comment, string, `#` or definition keyword in or around it; or inside the body of
    a block comment, with no `/` or `*` in what it takes out or puts in: a type written in
    a `/* ty=... */` comment), else None (then scan the whole text)."""
    if old.diagnostics or start < len(old.code) < old_stop:
        return None
    if old.metadata is not None and old_stop > len(old.code):
        return None  # an edit of the metadata section
    changed = text[start:new_stop]
    comments = old.comments
    i = _first_ending_after(comments, start)
    inside = i < len(comments) and comments[i].start < max(old_stop, start + 1)
    if inside:
        comment = comments[i]
        body = comment.start + 2  # where its body starts
        beside = text[max(start - 1, body) : start] + text[new_stop : new_stop + 1]  # what the edit joins
        if not (comment.block and body <= start and old_stop <= comment.end - 2) \
                or any(c in changed or c in beside or c in comment.body[start - body : old_stop - body] for c in "/*"):
            return None  # a comment's delimiters (made, unmade, or joined: `*x/` less x), or a line comment
        changed = _NOT_NEWLINE.sub(" ", changed)  # the code sees a comment as blanks
    elif any(c in changed for c in '/*"#') or _KEYWORD.search(text, max(start - 8, 0),
                                                               min(new_stop + 8, len(text))):
        return None
    delta = new_stop - old_stop
    if delta:  # (an edit of the same length moves nothing: the comments after it are kept)
        moved = [c if c.end <= start else Comment(c.start + delta, c.end + delta, c.body, c.block)
                 for c in comments[i:]]
    else:
        moved = comments[i:]
    if inside:  # the comment edited: its body from the new text
        moved[0] = Comment(comment.start, comment.end + delta, text[body : comment.end + delta - 2], True)
    items = [Item(it.keyword, it.start + delta if it.start >= old_stop else it.start,
                  it.end + delta if it.end >= old_stop else it.end) for it in old.items]
    metadata = old.metadata
    if metadata is not None:
        metadata = (metadata[0] + delta, metadata[1])
    code = old.code[:start] + changed + old.code[old_stop:]
    return Scan(code, comments[:i] + moved, items, metadata, old.has_header, [])


def _first_ending_after(comments: list[Comment], offset: int) -> int:
    """The index of the first comment that ends after `offset` (comments are in order)."""
    lo, hi = 0, len(comments)
    while lo < hi:
        mid = (lo + hi) // 2
        if comments[mid].end <= offset:
            lo = mid + 1
        else:
            hi = mid
    return lo
