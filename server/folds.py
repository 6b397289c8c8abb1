"""Folding ranges of one parsed text, from the scanner's output.

`folds(result)` gives `(start, end, kind)` offsets: the brackets' own offsets for a
bracketed block over several lines (kind None), a multi-line block comment or a run of
`//` lines (the whole comment, kind "comment"), and the `#[metadata]` section ("region").
"""

from __future__ import annotations

from bisect import bisect_right

from ..compiler.parser import ParseResult
from .scopes import BRACKETS


def folds(result: ParseResult) -> list[tuple[int, int, str | None]]:
    """`(start, end, kind)` offsets: the brackets' own offsets for a block, the whole
    comment, the metadata section; kind is None, "comment" or "region"."""
    code = result.scan.code
    lines = result.source.line_starts
    out: list[tuple[int, int, str | None]] = []
    stack: list[tuple[str, int]] = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for m in BRACKETS.finditer(code):
        ch = m.group()
        if ch in "([{":
            stack.append((ch, m.start()))
        elif ch in pairs:
            while stack and stack[-1][0] != pairs[ch]:
                stack.pop()  # an unclosed bracket inside: drop it
            if stack:
                _, start = stack.pop()
                if bisect_right(lines, start) < bisect_right(lines, m.start()):
                    out.append((start, m.start(), None))
    text = result.source.text
    run: list = []
    for comment in result.scan.comments:
        if comment.block:
            out.append((comment.start, comment.end, "comment"))
            continue
        if run and "\n" not in text[run[-1].end + 1 : comment.start] and \
                not text[run[-1].end : comment.start].strip():
            run.append(comment)
            continue
        if len(run) > 1:
            out.append((run[0].start, run[-1].end, "comment"))
        run = [comment]
    if len(run) > 1:
        out.append((run[0].start, run[-1].end, "comment"))
    if result.scan.metadata is not None:
        start = text.rfind("#[", 0, result.scan.metadata[0])
        out.append((max(start, 0), len(text.rstrip()), "region"))
    return out
