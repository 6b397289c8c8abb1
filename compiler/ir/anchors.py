"""Anchors: span offsets that move with the text, for incremental analysis.

The language server re-analyses a document after every edit, and a printed model is
one @main of thousands of statements.  Re-reading only the statement an edit touched
(compiler/parser/incremental.py) keeps every other node, and their spans must then move
with the text after the edit.  Rewriting each span would cost as much as re-reading.

So the text is cut into regions (each statement of a function body, and the text
between statements), one `Piece` each, and a span made on a source with `Anchors`
stores each end relative to the piece it falls in (`Span` in span.py).  An edit inside
one statement gives that statement a new piece and moves the pieces after it by the
change in length: O(statements) integer updates, whatever the number of spans.

Pieces that were replaced keep their base: the spans still anchored to them belong to
nodes of the old statement, which nothing reads any more.
"""

from __future__ import annotations

from bisect import bisect_right

from ..pauses import pause_point

PAUSE_PIECES = 4096  # regions made between two pause points


class Piece:
    """One region of the text: it starts at `base` and ends at `limit`.  `info` is what
    the parser recorded about the statement in it (None for the text between)."""

    __slots__ = ("base", "limit", "info")

    def __init__(self, base: int, limit: int, info: object = None) -> None:
        self.base, self.limit, self.info = base, limit, info

    def __repr__(self) -> str:
        return f"Piece({self.base}, {self.limit})"


ORIGIN = Piece(0, 1 << 62)  # the one region of a plain source


class Anchors:
    """The regions of one document in order, and the document's current `Source`.

    `current` is what every anchored span reports as its source: the incremental
    analysis sets it to the newest text once its spans are in place.
    """

    __slots__ = ("pieces", "current", "forced", "_starts")

    def __init__(self, bounds: list[int], length: int, current: object) -> None:
        """Regions from sorted `bounds` (the first 0) to `length`."""
        ends = [*bounds[1:], max(length, bounds[-1]) + 1]
        self.pieces = []
        for i in range(0, len(bounds), PAUSE_PIECES):  # 40,000 of a 20,000-line body: 10 ms
            pause_point()
            self.pieces += [Piece(b, e) for b, e in zip(bounds[i:i + PAUSE_PIECES], ends[i:i + PAUSE_PIECES])]
        self.pieces[-1].limit = 1 << 62  # the last region takes everything after
        self.current = current
        self.forced: Piece | None = None  # while one statement is re-read: all its spans
        self._starts: list[int] | None = bounds

    def piece_at(self, offset: int) -> Piece:
        if self.forced is not None:
            return self.forced
        starts = self._starts
        if starts is None:
            starts = self._starts = [p.base for p in self.pieces]
        return self.pieces[max(bisect_right(starts, offset) - 1, 0)]

    def index_of(self, offset: int) -> int:
        """The index of the region holding `offset`."""
        starts = self._starts
        if starts is None:
            starts = self._starts = [p.base for p in self.pieces]
        return max(bisect_right(starts, offset) - 1, 0)

    def replace(self, index: int, piece: Piece, delta: int) -> None:
        """Put `piece` in place of region `index` (its statement was re-read, `piece`
        starts where it did) and move every region after it by `delta` characters.  An
        edit that keeps the length (`delta` 0) touches no other region: O(1)."""
        pieces = self.pieces
        pieces[index] = piece
        starts = self._starts
        if not delta:
            if starts is not None:
                starts[index] = piece.base
            return
        last = len(pieces) - 1
        for later in pieces[index + 1 : last]:
            later.base += delta
            later.limit += delta
        if index < last:
            final = pieces[last]
            final.base += delta
            if final.limit < 1 << 62:
                final.limit += delta
        if starts is not None:
            starts[index] = piece.base
            starts[index + 1 :] = [s + delta for s in starts[index + 1 :]]
