"""What the parser learns about names, for the editor: each definition and its uses.

Relay variables are objects, so the IR knows which binder a use refers to but not where
the use was written.  The parser records both here: every `%x`, `%N`, `@f`, type name and
constructor, at its definition and at each reference.  Go to definition, references,
highlight and rename are lookups in this index.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from ..ir.span import Span, range_order
from ..pauses import pause_point, sorted_in_pieces

PAUSE_SYMBOLS = 512  # symbols (or entries) between two pause points


@dataclass(eq=False, slots=True)
class Symbol:
    kind: str  # "local", "graph", "global", "type", "constructor", "type_var"
    name: str  # as written, without its sigil
    definition: Span | None  # None for a name used but never defined
    node: object  # the Var, GlobalVar, TypeData, Constructor, TypeVar or bound Expr
    references: list[Span] = field(default_factory=list)

    @property
    def sigil(self) -> str:
        return {"local": "%", "graph": "%", "global": "@"}.get(self.kind, "")


@dataclass(slots=True)
class SymbolIndex:
    symbols: list[Symbol] = field(default_factory=list)
    # every definition and reference as (span, symbol), by start (longest first): built
    # by the first lookup, then kept up to date by an incremental re-read (`splice`)
    _sorted: list[tuple[Span, Symbol]] | None = None

    def define(self, kind: str, name: str, span: Span | None, node: object) -> Symbol:
        symbol = Symbol(kind, name, span, node)
        self.symbols.append(symbol)
        self._sorted = None
        return symbol

    def refer(self, symbol: Symbol, span: Span) -> None:
        symbol.references.append(span)
        self._sorted = None

    def entries(self) -> list[tuple[Span, Symbol]]:
        """Every definition and reference by start (longest first), sorted on first use
        with pause points between (compiler/pauses.py: 60,000 of them take 0.1 s)."""
        if self._sorted is None:
            entries = []
            for i, s in enumerate(self.symbols):
                if not i % PAUSE_SYMBOLS:
                    pause_point()
                if s.definition is not None:
                    entries.append((s.definition, s))
                entries += [(r, s) for r in s.references]
            self._sorted = sorted_in_pieces(entries, _range_order)
        return self._sorted

    def at(self, offset: int) -> tuple[Symbol, Span] | None:
        """The symbol whose definition or reference covers `offset` (innermost)."""
        entries = self.entries()
        i = bisect_right(entries, offset, key=_start)
        best = None
        for span, symbol in reversed(entries[max(0, i - 64) : i]):
            if span.start <= offset <= span.end and (best is None or span.end - span.start < best[1].end - best[1].start):
                best = (symbol, span)
        return best

    def between(self, start: int, end: int) -> tuple[int, int]:
        """The slice of `entries()` whose spans start in [start, end)."""
        entries = self.entries()
        return bisect_left(entries, start, key=_start), bisect_left(entries, end, key=_start)

    def by_kind(self, kind: str) -> list[Symbol]:
        return [s for s in self.symbols if s.kind == kind]


def _start(entry: tuple[Span, Symbol]) -> int:
    return entry[0].start


def _order(entry: tuple[Span, Symbol]) -> tuple[int, int]:
    return entry[0].start, -entry[0].end


def _range_order(entry: tuple[Span, Symbol]) -> int:
    return range_order(entry[0])
