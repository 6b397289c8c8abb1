"""The one place where character offsets become LSP positions, and back.

RelayLens spans count code points; LSP counts lines from 0 and columns in UTF-16 code
units (the protocol's default encoding).  Every conversion here works on the `Source`
the analysis was made from, so a range always matches the text it was computed on.
A character outside the Basic Multilingual Plane (an emoji, say) is one code point but
two UTF-16 units.
"""

from __future__ import annotations

from bisect import bisect_right

from lsprotocol import types as lsp

from ..compiler.diagnostics import Diagnostic
from ..compiler.ir.span import AnySpan, Source, Span, document_span


def _utf16_len(text: str) -> int:
    """UTF-16 code units in `text`."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


utf16_len = _utf16_len  # for labels measured in UTF-16 (signature help offsets)


def _line_end(source: Source, line: int) -> int:
    """Offset of the end of 0-based `line`, before its `\\n` (and a `\\r` before that)."""
    starts = source.line_starts
    end = starts[line + 1] - 1 if line + 1 < len(starts) else len(source.text)
    if end > starts[line] and source.text[end - 1] == "\r":
        end -= 1
    return end


def position(source: Source, offset: int) -> lsp.Position:
    """The LSP position of a character offset (clamped to the text)."""
    offset = min(max(offset, 0), len(source.text))
    line1, col1 = source.location(offset)
    start = source.line_starts[line1 - 1]
    return lsp.Position(line=line1 - 1, character=_utf16_len(source.text[start:offset]))


def offset(source: Source, pos: lsp.Position) -> int:
    """The character offset of an LSP position.

    A line past the end means the end of the text; a column past the end of its line means
    the end of that line; a column inside a surrogate pair means the character it splits.
    """
    starts = source.line_starts
    if pos.line < 0:
        return 0
    if pos.line >= len(starts):
        return len(source.text)
    i, end = starts[pos.line], _line_end(source, pos.line)
    units = max(pos.character, 0)
    while i < end:
        width = 2 if ord(source.text[i]) > 0xFFFF else 1
        if units < width:
            break
        units -= width
        i += 1
    return i


def range_of(span: Span) -> lsp.Range:
    return lsp.Range(start=position(span.source, span.start), end=position(span.source, span.end))


def empty_range(source: Source, at: int = 0) -> lsp.Range:
    pos = position(source, at)
    return lsp.Range(start=pos, end=pos)


def offset_range(source: Source, start: int, end: int) -> lsp.Range:
    return lsp.Range(start=position(source, start), end=position(source, end))


def whole_range(source: Source) -> lsp.Range:
    """The range of the whole text (what a whole-document edit replaces)."""
    return offset_range(source, 0, len(source.text))


def line(source: Source, offset: int) -> int:
    """The 0-based line of a character offset."""
    return position(source, offset).line


def back(pos: lsp.Position, text: str) -> lsp.Position:
    """The position `text` (which ends at `pos`, on its line) starts at."""
    return lsp.Position(line=pos.line, character=max(pos.character - _utf16_len(text), 0))


def semantic_tokens(source: Source, tokens) -> list[int]:
    """`(start, end, type, modifiers)` offset tokens, sorted and not overlapping, as the
    protocol's relative integer encoding.  A token that crosses a line break is cut into one
    token per line (clients need not support multi-line tokens); empty pieces are dropped."""
    data: list[int] = []
    text, starts = source.text, source.line_starts
    prev_line = prev_char = 0
    for start, end, kind, mods in tokens:
        line0 = bisect_right(starts, start) - 1
        while start < end:
            line_end = _line_end(source, line0)
            stop = min(end, line_end)
            if stop > start:
                head = text[starts[line0]:start]
                char = len(head) if head.isascii() else _utf16_len(head)
                piece = text[start:stop]
                length = len(piece) if piece.isascii() else _utf16_len(piece)
                data += (line0 - prev_line, char - prev_char if line0 == prev_line else char,
                         length, kind, mods)
                prev_line, prev_char = line0, char
            if end <= line_end:
                break
            line0 += 1
            if line0 >= len(starts):
                break
            start = max(start, starts[line0])
    return data


def location(uri: str, span: Span) -> lsp.Location:
    return lsp.Location(uri=uri, range=range_of(span))


def _in_document(span: AnySpan | None, source: Source) -> Span | None:
    """The span's first range in this document (same object or same name)."""
    doc = document_span(span, source)
    if doc is None:
        doc = document_span(span)
        if doc is not None and doc.source.name != source.name:
            return None
    return doc


def diagnostic(diag: Diagnostic, source: Source, uri: str) -> lsp.Diagnostic:
    """A compiler diagnostic as LSP shows it.

    The range is its first document range (the start of the file when it has none);
    notes with a range in this document become related information, other notes are
    appended to the message so that nothing is lost.  Its fixes travel in `data`
    (`{"fixes": [{title, range, newText}]}`), where code_actions.py finds them again.
    """
    doc = _in_document(diag.span, source)
    rng = range_of(doc) if doc is not None else empty_range(source)
    message = diag.message
    if doc is None and diag.span is not None:
        message += f" (at {diag.span})"
    related: list[lsp.DiagnosticRelatedInformation] = []
    for note_span, text in diag.notes:
        note_doc = _in_document(note_span, source)
        if note_doc is not None:
            related.append(lsp.DiagnosticRelatedInformation(location(uri, note_doc), text))
        else:
            where = f" ({note_span})" if note_span is not None else ""
            message += f"\nnote: {text}{where}"
    fixes = [{"title": fix.title, "range": range_of(fix_doc), "newText": fix.text}
             for fix in diag.fixes if (fix_doc := _in_document(fix.span, source)) is not None]
    return lsp.Diagnostic(
        range=rng,
        message=message,
        severity=lsp.DiagnosticSeverity(int(diag.severity)),
        source="relaylens" if diag.source == "relaylens" else f"relaylens {diag.source}",
        code=diag.code,
        related_information=related or None,
        data={"fixes": fixes} if fixes else None,
    )
