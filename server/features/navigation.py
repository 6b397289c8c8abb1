"""textDocument/definition, textDocument/references, textDocument/documentHighlight.

Lookups in the parser's `SymbolIndex`: the symbol under the cursor, then its binder, its
uses, or both.  Works for `%` locals and graph bindings, `@` globals, type names, type
variables and constructors.  Definition inside a virtual document (`relaylens:` URIs)
leads back to the source (virtual_documents.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from ...compiler.parser import Symbol
from ..slow.uris import is_virtual
from . import analysis_for, guarded, virtual_documents
from .byoc import pattern_references

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..server import RelayLensServer


def symbol_at(server: "RelayLensServer", uri: str,
              pos: lsp.Position) -> tuple["Analysis", Symbol] | None:
    analysis = analysis_for(server, uri, typing=True)  # (no need to wait for types)
    if analysis is None:
        return None
    found = analysis.index.at(convert.offset(analysis.source, pos))
    return (analysis, found[0]) if found is not None else None


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
        return [convert.location(uri, found[1].definition)]

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    @guarded()
    def references(params: lsp.ReferenceParams) -> list[lsp.Location] | None:
        uri = params.text_document.uri
        found = symbol_at(server, uri, params.position)
        if found is None:
            return None
        symbol = found[1]
        spans = list(symbol.references)
        if params.context.include_declaration and symbol.definition is not None:
            spans.insert(0, symbol.definition)
        return [convert.location(uri, span) for span in spans] + pattern_references(server, uri, symbol)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    @guarded()
    def highlight(params: lsp.DocumentHighlightParams) -> list[lsp.DocumentHighlight] | None:
        found = symbol_at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        symbol = found[1]
        marks = []
        if symbol.definition is not None:
            marks.append(lsp.DocumentHighlight(convert.range_of(symbol.definition),
                                               lsp.DocumentHighlightKind.Write))
        marks += [lsp.DocumentHighlight(convert.range_of(r), lsp.DocumentHighlightKind.Read)
                  for r in symbol.references]
        return marks
