"""Incremental didChange applied by splicing: the text pygls makes of an edit, in O(1) lines.

pygls applies a one-character edit to a document by splitting its whole text into lines
and writing every line to a buffer again: 3-9 ms of the event loop for a 20,000-line
document, on every keystroke, before the server's own handler runs.  `SplicedDocument`
keeps the offsets where lines start (computed once, then carried across each edit: the
lines before it keep theirs, those after it move by the change in length) and cuts the
new text out of the old one at the edit's two offsets.

The result is exactly pygls's (`TextDocument._apply_incremental_change`): the range is
converted by pygls's own position codec, on the same lines, and lines are what
`str.splitlines` cuts.  A text holding a line break other than `\\n` (`\\r`, a form feed,
`\\u2028`, ...) or an edit range pygls reads oddly (an end before its start) goes to
pygls's own code.  tests/test_text_sync.py checks random edits against pygls.

`use_spliced_documents(workspace)` makes the documents a pygls workspace opens from now
on spliced ones (the server calls it at initialize, once pygls made the workspace).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import accumulate

from lsprotocol import types
from pygls.workspace import Workspace
from pygls.workspace.text_document import TextDocument

_OTHER_BREAKS = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")  # what splitlines also cuts at
_BREAK = re.compile("\n")


class _Lines(Sequence):
    """The lines of a text (ends kept, as `splitlines(True)`), read from line starts."""

    def __init__(self, text: str, starts: list[int]) -> None:
        self.text, self.starts = text, starts
        self.count = len(starts) - (starts[-1] == len(text))  # no line after a final break

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i):  # only what the position codec asks: an index, maybe -1
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError(i)
        starts = self.starts
        return self.text[starts[i] : starts[i + 1] if i + 1 < len(starts) else len(self.text)]


class SplicedDocument(TextDocument):
    """A pygls document whose incremental changes are spliced (see the module docstring)."""

    _starts: list[int] | None = None  # where each line starts; None: not known (or not plain)

    def _apply_full_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        self._starts = None
        super()._apply_full_change(change)

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        source, text = self.source, change.text
        starts = self._starts if self._starts is not None else _line_starts(source)
        if starts is None or _OTHER_BREAKS.search(text):
            self._starts = None
            super()._apply_incremental_change(change)
            return
        lines = _Lines(source, starts)
        span = self._position_codec.range_from_client_units(lines, change.range)
        first, last = span.start.line, span.end.line
        if first == len(lines):  # at the very end (pygls appends)
            self._source = source + text
            self._starts = starts + _breaks(text, len(source))
            return
        if last < first:
            self._starts = None
            super()._apply_incremental_change(change)
            return
        begin = starts[first]
        rest = starts[last + 1] if last + 1 < len(starts) else len(source)
        middle = lines[first][: span.start.character] + text + lines[last][span.end.character :]
        self._source = source[:begin] + middle + source[rest:]
        delta = begin + len(middle) - rest
        after = starts[last + 2 :]  # (the line after the edit starts where `middle` ends, if at all)
        self._starts = starts[: first + 1] + _breaks(middle, begin) + ([s + delta for s in after] if delta else after)


def _breaks(text: str, base: int) -> list[int]:
    """The offsets after each `\n` of `text`, which starts at `base`."""
    return [base + m.end() for m in _BREAK.finditer(text)]


def _line_starts(text: str) -> list[int] | None:
    """Where each line of `text` starts (and len(text) after a final `\\n`); None when a
    line break other than `\\n` is in it."""
    if _OTHER_BREAKS.search(text):
        return None
    return [0, *accumulate(len(line) + 1 for line in text.split("\n")[:-1])]


class SplicedWorkspace(Workspace):
    """A pygls workspace whose text documents are `SplicedDocument`s."""

    def _create_text_document(self, doc_uri: str, source: str | None = None, version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return SplicedDocument(doc_uri, source=source, version=version, language_id=language_id,
                               sync_kind=self._sync_kind, position_codec=self._position_codec)


def use_spliced_documents(workspace: Workspace) -> None:
    """Make the documents `workspace` opens from now on `SplicedDocument`s (the class
    only adds that: same state, same behaviour otherwise)."""
    if type(workspace) is Workspace:
        workspace.__class__ = SplicedWorkspace
