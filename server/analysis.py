"""Parse results, cached per (uri, version): what every handler reads.

The fast path (parse, name resolution) runs when a document opens and, debounced, after
it changes; requests never recompute.  While the user types, the last analysis answers:
its ranges are converted on its own text, so they stay consistent with one another even
when the editor's text has moved on.  Only a document that was never analysed (a request
before didOpen finished, say) is analysed on demand.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compiler.ir.span import Source
from ..compiler.parser import ParseResult, SymbolIndex, parse


@dataclass(frozen=True, slots=True)
class Analysis:
    uri: str
    version: int | None
    result: ParseResult

    @property
    def source(self) -> Source:
        return self.result.source

    @property
    def index(self) -> SymbolIndex:
        return self.result.index


def analyse(uri: str, version: int | None, text: str) -> Analysis:
    return Analysis(uri, version, parse(text, uri))


class Analyses:
    """The latest analysis of each open document."""

    def __init__(self) -> None:
        self._latest: dict[str, Analysis] = {}

    def update(self, uri: str, version: int | None, text: str) -> Analysis:
        """Analyse this version unless it already is; keep it as the latest."""
        known = self._latest.get(uri)
        if known is not None and known.version == version and known.source.text == text:
            return known
        analysis = analyse(uri, version, text)
        self._latest[uri] = analysis
        return analysis

    def latest(self, uri: str) -> Analysis | None:
        return self._latest.get(uri)

    def for_request(self, uri: str, version: int | None, text: str) -> Analysis:
        """The analysis a request reads: the latest one, or a new one if there is none."""
        known = self._latest.get(uri)
        return known if known is not None else self.update(uri, version, text)

    def forget(self, uri: str) -> None:
        self._latest.pop(uri, None)
