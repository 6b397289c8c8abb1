"""textDocument/definition, textDocument/references, textDocument/documentHighlight.

Lookups in the parser's `SymbolIndex`: the symbol under the cursor, then its binder, its
uses, or both.  Works for `%` locals and graph bindings, `@` globals, type names, type
variables and constructors.  Definition inside a virtual document (`relaylens:` URIs)
leads back to the source (virtual_documents.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from ...compiler.parser import Symbol
from ..reading import Reading
from ..slow.uris import is_virtual
from . import analysis_for, guarded, virtual_documents
from .byoc import pattern_references

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..server import RelayLensServer


def symbol_at(server: "RelayLensServer", uri: str,
              pos: lsp.Position) -> tuple["Analysis", Symbol, Reading] | None:
    """The symbol at a position of the document as it is now, in its latest analysis
    (server/reading.py: it may be of the text before an edit; the Reading carries the
    symbol's ranges back to the current text); None inside the edit."""
    analysis = analysis_for(server, uri, typing=True)  # (no need to wait for types)
    if analysis is None:
        return None
    reading = Reading(analysis, server.documents.get(uri).text)
    offset = reading.offset(pos)
    found = analysis.index.at(offset) if offset is not None else None
    return (analysis, found[0], reading) if found is not None else None


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @guarded()
    def definition(params: lsp.DefinitionParams) -> list[lsp.Location] | None:
        uri = params.text_document.uri
        if is_virtual(uri):
            return virtual_documents.definition(server, params)
        found = symbol_at(server, uri, params.position)
        if found is None or found[1].definition is None:
            return None
        where = found[2].location(uri, found[1].definition)
        return [where] if where is not None else None

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    @guarded()
    def references(params: lsp.ReferenceParams) -> list[lsp.Location] | None:
        uri = params.text_document.uri
        found = symbol_at(server, uri, params.position)
        if found is None:
            return None
        symbol, reading = found[1], found[2]
        spans = list(symbol.references)
        if params.context.include_declaration and symbol.definition is not None:
            spans.insert(0, symbol.definition)
        return [w for span in spans if (w := reading.location(uri, span)) is not None] \
            + pattern_references(server, uri, symbol)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    @guarded()
    def highlight(params: lsp.DocumentHighlightParams) -> list[lsp.DocumentHighlight] | None:
        found = symbol_at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        symbol, reading = found[1], found[2]
        marks = []
        if symbol.definition is not None and (where := reading.range_of(symbol.definition)) is not None:
            marks.append(lsp.DocumentHighlight(where, lsp.DocumentHighlightKind.Write))
        marks += [lsp.DocumentHighlight(w, lsp.DocumentHighlightKind.Read)
                  for r in symbol.references if (w := reading.range_of(r)) is not None]
        return marks
