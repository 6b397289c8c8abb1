"""Where names are visible, from the IR's spans: what completion and rename ask.

`Scopes(result)` computes on first use and keeps:

* `regions`: for each `%` local symbol (by id), the text where it is visible (its function
  for a parameter, its `let` to the end of its block, its clause for a pattern variable,
  the rest of the file for a `free_var`);
* `params`: the ids of the Vars that are function parameters;

and answers `locals_at`, `graph_at`, `type_vars_at` and `item_at` for an offset.
"""

from __future__ import annotations

import re
from functools import cached_property

from ..compiler.ir.expr import Function, Let, Match, pattern_vars
from ..compiler.ir.functor import post_order
from ..compiler.ir.span import document_span
from ..compiler.parser import ParseResult, Symbol

# A bracket, or a whole string (whose brackets do not count), in the scanner's text.
BRACKETS = re.compile(r'[{}()\[\]]|"(?:\\.|[^"\\])*"')


class Scopes:
    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.source = result.source
        self.index = result.index

    @cached_property
    def _binders(self) -> tuple[dict[int, tuple[int, int]], set[int]]:
        """Where each bound Var is visible (by id), and the ids of the parameters."""
        source = self.source
        regions: dict[int, tuple[int, int]] = {}
        params: set[int] = set()
        lets: list = []

        def put(var, span) -> None:
            doc = document_span(span, source)
            if doc is not None:
                regions[id(var)] = (doc.start, doc.end)

        for func in self.result.module.functions.values():
            for node in post_order(func):
                if isinstance(node, Function):
                    for p in node.params:
                        params.add(id(p))
                        put(p, node.span)
                elif isinstance(node, Let):
                    doc = document_span(node.span, source)
                    if doc is not None:
                        lets.append((node.var, doc))
                elif isinstance(node, Match):
                    for clause in node.clauses:
                        for var in pattern_vars(clause.lhs):
                            put(var, clause.span)
        # a let reaches the end of its block, also when error recovery cut the block short
        ends = self._block_ends([doc.start for _, doc in lets])
        for var, doc in lets:
            regions[id(var)] = (doc.start, max(doc.end, ends[doc.start]))
        return regions, params

    def _block_ends(self, offsets: list[int]) -> dict[int, int]:
        """For each offset, where the innermost `{...}` or `(...)` around it closes (the end
        of its definition, or of the text, when that block is not closed).  One sweep."""
        closing: dict[int, int] = {}
        enclosing: dict[int, int | None] = {}
        stack: list[int] = []
        queries = sorted(set(offsets))
        q = 0
        for m in BRACKETS.finditer(self.result.scan.code):
            while q < len(queries) and queries[q] < m.start():
                enclosing[queries[q]] = stack[-1] if stack else None
                q += 1
            ch = m.group()
            if ch in "({":
                stack.append(m.start())
            elif ch in ")}" and stack:
                closing[stack.pop()] = m.start()
        for rest in queries[q:]:
            enclosing[rest] = stack[-1] if stack else None
        out = {}
        for offset, opened in enclosing.items():
            end = closing.get(opened) if opened is not None else None
            if end is None:
                item = self.item_at(offset)
                end = item[1] if item else len(self.source.text)
            out[offset] = end
        return out

    @property
    def params(self) -> set[int]:
        return self._binders[1]

    @cached_property
    def regions(self) -> dict[int, tuple[int, int]]:
        """For each `%` local symbol (by id), the [start, end] where its name is visible."""
        binders = self._binders[0]
        end = len(self.source.text)
        out: dict[int, tuple[int, int]] = {}
        for symbol in self.index.symbols:
            if symbol.kind == "local" and symbol.definition is not None:
                region = binders.get(id(symbol.node))
                if region is None:  # a free_var: everything after it
                    region = (symbol.definition.start, end)
                out[id(symbol)] = region
        return out

    def region(self, symbol: Symbol) -> tuple[int, int] | None:
        return self.regions.get(id(symbol))

    def locals_at(self, offset: int) -> list[Symbol]:
        """The `%` locals visible at `offset`: bound before it, the innermost of each name."""
        best: dict[str, Symbol] = {}
        for symbol in self.index.symbols:
            if symbol.kind != "local" or symbol.definition is None:
                continue
            region = self.regions.get(id(symbol))
            if region is None or not (region[0] <= offset <= region[1]):
                continue
            if symbol.definition.end >= offset:  # bound later, or the binder being written
                continue
            known = best.get(symbol.name)
            if known is None or known.definition.start < symbol.definition.start:
                best[symbol.name] = symbol
        return list(best.values())

    def item_at(self, offset: int) -> tuple[int, int] | None:
        """The [start, end) of the top-level definition holding `offset`."""
        for item in self.result.scan.items:
            if item.start <= offset <= item.end:
                return item.start, item.end
        return None

    def graph_at(self, offset: int) -> list[Symbol]:
        """The `%N` bindings made before `offset` in its definition (latest first)."""
        item = self.item_at(offset)
        lo = item[0] if item else 0
        best: dict[str, Symbol] = {}
        for symbol in self.index.symbols:
            if symbol.kind == "graph" and symbol.definition is not None and \
                    lo <= symbol.definition.start and symbol.definition.end < offset:
                best[symbol.name] = symbol
        return sorted(best.values(), key=lambda s: -s.definition.start)

    def type_vars_at(self, offset: int) -> list[Symbol]:
        item = self.item_at(offset)
        if item is None:
            return []
        return [s for s in self.index.symbols if s.kind == "type_var" and s.definition is not None
                and item[0] <= s.definition.start < item[1]]
