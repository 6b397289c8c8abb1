"""What the parser learns about names, for the editor: each definition and its uses.

Relay variables are objects, so the IR knows which binder a use refers to but not where
the use was written.  The parser records both here: every `%x`, `%N`, `@f`, type name and
constructor, at its definition and at each reference.  Go to definition, references,
highlight and rename are lookups in this index.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from ..ir.span import Span


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
    _sorted: list[tuple[int, int, Symbol, Span]] | None = None

    def define(self, kind: str, name: str, span: Span | None, node: object) -> Symbol:
        symbol = Symbol(kind, name, span, node)
        self.symbols.append(symbol)
        self._sorted = None
        return symbol

    def refer(self, symbol: Symbol, span: Span) -> None:
        symbol.references.append(span)
        self._sorted = None

    def at(self, offset: int) -> tuple[Symbol, Span] | None:
        """The symbol whose definition or reference covers `offset` (innermost)."""
        if self._sorted is None:
            entries = []
            for s in self.symbols:
                if s.definition is not None:
                    entries.append((s.definition.start, s.definition.end, s, s.definition))
                for r in s.references:
                    entries.append((r.start, r.end, s, r))
            entries.sort(key=lambda e: (e[0], -e[1]))
            self._sorted = entries
        entries = self._sorted
        i = bisect_right(entries, offset, key=lambda e: e[0])
        best = None
        for start, end, symbol, span in reversed(entries[max(0, i - 64) : i]):
            if start <= offset <= end and (best is None or end - start < best[1].end - best[1].start):
                best = (symbol, span)
        return best

    def by_kind(self, kind: str) -> list[Symbol]:
        return [s for s in self.symbols if s.kind == kind]
