"""Source information: where an expression came from.

A `Source` is a text we hold (a document).  Three kinds of span point into the world:

* `Span`: a range of a `Source`, as character offsets.  Line and column are derived.
* `LayerSpan`: an origin we hold no text for: a frontend layer (`conv1/Conv`, line and
  column 0, as TVM's span filler writes them) or a location printed by another tool
  (`from_string:3:5`).
* `SequentialSpan`: several origins at once, for many-to-one rewrites (RFC 0092) and for
  a parsed node that also carries a `span=` comment.  Flattened, ordered, no duplicates.

Every span answers `origins()`: the flat tuple of single spans, and `key()`: what two spans
must share to be the same origin, whatever their kind (a document range and a printed
reference to it compare equal).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from .anchors import ORIGIN, Anchors
from .pickling import fast_pickling


@dataclass(frozen=True, slots=True, eq=False)
class Source:
    """A document: its name (path or URI) and its text."""

    name: str
    text: str = field(repr=False)
    line_starts: tuple[int, ...] = field(init=False, repr=False)
    # Set on the sources of an incremental analysis (compiler/ir/anchors.py): spans made
    # on this source then keep their place when an edit elsewhere moves the text.
    anchors: Anchors | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0]
        find, text = self.text.find, self.text
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        object.__setattr__(self, "line_starts", tuple(starts))

    def __reduce__(self):  # a copy is a plain source: anchors belong to one editor session
        return Source, (self.name, self.text)

    def edited(self, text: str, start: int, old_stop: int, new_stop: int) -> Source:
        """This document after an edit: `text` has [start, new_stop) where this one had
        [start, old_stop).  The line table is this one's, spliced (no rescan of the text)."""
        edited = object.__new__(Source)
        object.__setattr__(edited, "name", self.name)
        object.__setattr__(edited, "text", text)
        object.__setattr__(edited, "anchors", None)
        starts = self.line_starts
        first = bisect_right(starts, start)  # lines starting at or before the edit stay
        last = bisect_right(starts, old_stop)  # lines starting after it move
        delta = new_stop - old_stop
        inside = []
        i = text.find("\n", start, new_stop)
        while i >= 0:
            inside.append(i + 1)
            i = text.find("\n", i + 1, new_stop)
        moved = [s + delta for s in starts[last:]] if delta else list(starts[last:])
        object.__setattr__(edited, "line_starts", (*starts[:first], *inside, *moved))
        return edited

    def location(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset; columns count code points."""
        line = bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def offset(self, line: int, col: int) -> int:
        """Character offset of a 1-based (line, column), clamped to the text."""
        line = min(max(line, 1), len(self.line_starts))
        return min(self.line_starts[line - 1] + max(col, 1) - 1, len(self.text))

    def line_text(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start : end if end >= 0 else len(self.text)].rstrip("\r")


class SpanBase:
    __slots__ = ()

    def origins(self) -> tuple[Span | LayerSpan, ...]:
        return (self,)  # type: ignore[return-value]


class Span(SpanBase):
    """A range [start, end) of character offsets in a source we hold.

    On a plain source the offsets are stored as given.  On a source with anchors (an
    analysis the language server updates in place), each end is stored relative to the
    region of the text it falls in: an edit in one statement moves the regions after it,
    and every span there moves along (`anchors.py`).  `start`, `end` and `source` read the
    same either way.
    """

    __slots__ = ("_src", "_a", "_s", "_b", "_e")

    def __init__(self, source: Source, start: int, end: int) -> None:
        anchors = source.anchors
        if anchors is None:
            self._src, self._a, self._b = source, ORIGIN, ORIGIN
            self._s, self._e = start, end
            return
        a = anchors.piece_at(start)
        b = a if end <= start or end <= a.limit else anchors.piece_at(end - 1)
        self._src, self._a, self._b = anchors, a, b
        self._s, self._e = start - a.base, end - b.base

    @property
    def start(self) -> int:
        return self._a.base + self._s

    @property
    def end(self) -> int:
        return self._b.base + self._e

    @property
    def source(self) -> Source:
        src = self._src
        return src if type(src) is Source else src.current

    def starts_in(self, piece: object) -> bool:
        """Whether the span's start is anchored to `piece` (an incremental re-read tells
        its own nodes from the ones it refers to this way)."""
        return self._a is piece

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Span:
            return NotImplemented
        return (self.source, self.start, self.end) == (other.source, other.start, other.end)  # type: ignore[attr-defined]

    def __hash__(self) -> int:  # equal spans have equal offsets (`source` would cost a call)
        return hash((self._a.base + self._s, self._b.base + self._e))

    def __repr__(self) -> str:
        return f"Span(source={self.source!r}, start={self.start}, end={self.end})"

    def __reduce__(self):
        return Span, (self.source, self.start, self.end)

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def line(self) -> int:
        return self.source.location(self.start)[0]

    @property
    def col(self) -> int:
        return self.source.location(self.start)[1]

    @property
    def end_location(self) -> tuple[int, int]:
        return self.source.location(self.end)

    @property
    def text(self) -> str:
        return self.source.text[self.start : self.end]

    def key(self) -> tuple[str, int, int]:
        line, col = self.source.location(self.start)
        return (self.source.name, line, col)

    def contains(self, offset: int) -> bool:
        return self.start <= offset < self.end or offset == self.start == self.end

    def __str__(self) -> str:
        line, col = self.source.location(self.start)
        return f"{self.source.name}:{line}:{col}"

    @staticmethod
    def cover(*spans: "AnySpan | None") -> "AnySpan | None":
        """The smallest span holding every given span.

        Document ranges of one source merge into one range; origins of other kinds are
        kept beside it in a SequentialSpan.
        """
        return cover(*spans)


@dataclass(frozen=True, slots=True)
class LayerSpan(SpanBase):
    """An origin without text: a frontend layer name, or a location printed elsewhere."""

    name: str
    line: int = 0
    col: int = 0

    def key(self) -> tuple[str, int, int]:
        return (self.name, self.line, self.col)

    def __str__(self) -> str:
        return f"{self.name}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class SequentialSpan(SpanBase):
    """Several origins of one expression, in order, each once.  Build with `sequential()`."""

    spans: tuple[Span | LayerSpan, ...]

    def origins(self) -> tuple[Span | LayerSpan, ...]:
        return self.spans

    def key(self) -> tuple[tuple[str, int, int], ...]:
        return tuple(s.key() for s in self.spans)

    def __str__(self) -> str:
        return "[" + ", ".join(str(s) for s in self.spans) + "]"


AnySpan = Span | LayerSpan | SequentialSpan


MAX_ORIGINS = 256  # a span names at most this many origins (see `sequential`)


def sequential(*spans: AnySpan | None) -> AnySpan | None:
    """Join spans into one: flattened, in order, without duplicates; None when empty.

    At most MAX_ORIGINS origins are kept, the first ones.  A rewrite that folds a long
    chain into one node (`x * 2 * 2 * ... * 2` becomes `x * 2^k`) joins the span it made
    one step before with one more: without a bound, k steps cost k^2 and the node would
    name thousands of lines no one reads."""
    flat: list[Span | LayerSpan] = []
    seen: set = set()
    for span in spans:
        if span is None:
            continue
        for one in span.origins():
            if one not in seen:
                seen.add(one)
                flat.append(one)
                if len(flat) == MAX_ORIGINS:
                    return SequentialSpan(tuple(flat))
    if not flat:
        return None
    if len(flat) == 1:
        return flat[0]
    return SequentialSpan(tuple(flat))


def cover(*spans: AnySpan | None) -> AnySpan | None:
    """Merge the document ranges of each source into one range; keep other origins."""
    ranges: dict[int, Span] = {}
    others: list[Span | LayerSpan] = []
    order: list[object] = []
    for span in spans:
        if span is None:
            continue
        for one in span.origins():
            if isinstance(one, Span):
                key = id(one.source)
                if key in ranges:
                    old = ranges[key]
                    ranges[key] = Span(one.source, min(old.start, one.start), max(old.end, one.end))
                else:
                    ranges[key] = one
                    order.append(key)
            else:
                others.append(one)
                order.append(one)
    parts = [ranges[o] if isinstance(o, int) else o for o in order]
    return sequential(*parts)


def range_order(span: Span) -> int:
    """A sort key of document ranges: by start, the longest first (the enclosing range
    before the ranges inside it that start with it), for texts under 4 GiB.  One int,
    which sorts several times faster than the pair (start, -end)."""
    return (span.start << 32) - span.end


def document_span(span: AnySpan | None, source: Source | None = None) -> Span | None:
    """The first document range among a span's origins (of `source`, if given)."""
    if span is None:
        return None
    for one in span.origins():
        if isinstance(one, Span) and (source is None or one.source is source):
            return one
    return None


def printed_origins(span: AnySpan | None) -> tuple[Span | LayerSpan, ...]:
    """The origins a printer writes in `span=`: those that are not document ranges,
    or, when there are only document ranges, those (as TVM prints `from_string:3:5`)."""
    if span is None:
        return ()
    origins = span.origins()
    named = tuple(o for o in origins if not isinstance(o, Span))
    return named or origins


def origin_key(span: AnySpan | None) -> tuple:
    """What structural equality with spans compares: the keys of the printed origins.

    A node parsed from `add(...) /* span=conv1:0:0 */` has the document range and the
    layer; printing writes the layer only, so the layer is what must survive a round trip.
    A document range `a.relay:3:5` and a printed reference `a.relay:3:5` are one origin.
    """
    return tuple(o.key() for o in printed_origins(span))


fast_pickling(globals())  # ir/pickling.py: a kept build unpickles thousands of these


def node_layers(names) -> list[str]:
    """Layer names, each once, in order, without `NODE.TENSOR` when `NODE` is among them.

    A frontend names a graph input or initializer after its first consumer, `NODE.TENSOR`
    (TVM's convention), and a constant folded from it (a batch norm's mean bound as a
    weight) keeps that name; beside NODE it is NODE's data, not a layer of its own.  Listed
    as one, `explain` said four of a MobileNetV3 block's layers were compiled into its
    depthwise kernel (`.../BatchNormalization.bn.mean`, `.bn.var`...) and the profiler gave
    them shares of its time.  Alone (an input's layout_transform) the name stays."""
    unique = list(dict.fromkeys(names))
    kept = set(unique)
    return [name for name in unique
            if not any(name[k] == "." and name[:k] in kept for k in range(1, len(name)))]
