"""The document as it is now, read in its latest analysis, which may be of an older text.

Hover, definition, declaration, references and highlights read the latest analysis at once
(docs/architecture.md: they do not wait for an edit's analysis), so right after an edit that
analysis may be of the text before it: the edit's analysis has not started (the 10-150 ms
of debouncing) or is still reading the file (a comment line added to a long file: a whole
read, seconds at 20,000 lines).  A position of the editor's text is then carried over to
the older text through the part the edit left alone (the common prefix and suffix), and
every range answered is carried back; a position or range inside the edited part has no
counterpart and gets no answer, rather than the expression that was there before (a hover
on the conv2d of a line moved down by a new line above it said `nn.batch_norm`, the old
occupant of that line).

    reading = Reading(analysis, doc.text)
    offset = reading.offset(position)          # in analysis.source.text; None: inside the edit
    reading.range_of(span) / reading.location(uri, span) / reading.offset_range(start, end)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from . import convert
from ..compiler.ir.span import Source, Span
from .text_edits import common_prefix, common_suffix

if TYPE_CHECKING:
    from .analysis import Analysis


class Reading:
    def __init__(self, analysis: "Analysis", text: str) -> None:
        self.analysis = analysis
        old = analysis.source.text
        self.fresh = old == text
        self.now = analysis.source if self.fresh else Source(analysis.source.name, text)
        if self.fresh:
            return
        self._prefix = prefix = common_prefix(old, text)
        suffix = common_suffix(old, text, prefix)
        self._old_tail, self._new_tail = len(old) - suffix, len(text) - suffix  # where the suffix starts

    def offset(self, pos: lsp.Position) -> int | None:
        """The offset in the analysis's text of a position in the current text."""
        at = convert.offset(self.now, pos)
        if self.fresh or at <= self._prefix:
            return at
        if at >= self._new_tail:
            return at - self._new_tail + self._old_tail
        return None

    def _now(self, offset: int) -> int:
        """An offset of the analysis's text outside the edited part, in the current text."""
        return offset if offset <= self._prefix else offset - self._old_tail + self._new_tail

    def offset_range(self, start: int, end: int) -> lsp.Range | None:
        """An analysis-text range as a range of the current text (None: the edit cut it)."""
        if self.fresh:
            return convert.offset_range(self.now, start, end)
        if start < self._old_tail and end > self._prefix:
            return None  # it reaches into the edited part
        return convert.offset_range(self.now, self._now(start), self._now(end))

    def range_of(self, span: Span) -> lsp.Range | None:
        if self.fresh or span.source is not self.analysis.source:
            return convert.range_of(span)
        return self.offset_range(span.start, span.end)

    def location(self, uri: str, span: Span) -> lsp.Location | None:
        where = self.range_of(span)
        return None if where is None else lsp.Location(uri=uri, range=where)
