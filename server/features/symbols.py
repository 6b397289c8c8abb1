"""textDocument/documentSymbol: each definition and type, with its constructors.

The outline of a module: `@` functions (Function) and `type` definitions (Enum), in source
order; a type's children are its constructors (EnumMember).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from ...compiler.ir.span import Span, document_span
from . import analysis_for, guarded

if TYPE_CHECKING:
    from ..server import RelayLensServer

KINDS = {"global": lsp.SymbolKind.Function, "type": lsp.SymbolKind.Enum,
         "constructor": lsp.SymbolKind.EnumMember}


def _whole(node_span, name: Span, source) -> Span:
    """The node's range if it holds the name (as the protocol requires), else the name."""
    whole = document_span(node_span, source)
    if whole is None or not (whole.start <= name.start and name.end <= whole.end):
        return name
    return whole


def outline(analysis) -> list[lsp.DocumentSymbol]:
    module, source = analysis.result.module, analysis.source
    ctor_symbols = {id(s.node): s for s in analysis.index.by_kind("constructor")}
    found = []
    for symbol in analysis.index.symbols:
        if symbol.kind not in ("global", "type") or symbol.definition is None:
            continue
        name = symbol.definition
        children: list[lsp.DocumentSymbol] = []
        if symbol.kind == "global":
            func = module.functions.get(symbol.node)
            whole = _whole(func.span if func is not None else None, name, source)
        else:
            whole = _whole(getattr(symbol.node, "span", None), name, source)
            for ctor in getattr(symbol.node, "constructors", ()):
                cs = ctor_symbols.get(id(ctor))
                if cs is not None and cs.definition is not None:
                    rng = convert.range_of(cs.definition)
                    children.append(lsp.DocumentSymbol(name=cs.name, kind=KINDS["constructor"],
                                                       range=rng, selection_range=rng))
        found.append((whole.start, lsp.DocumentSymbol(
            name=symbol.sigil + symbol.name, kind=KINDS[symbol.kind],
            range=convert.range_of(whole), selection_range=convert.range_of(name),
            children=children or None)))
    found.sort(key=lambda item: item[0])
    return [s for _, s in found]


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded()
    def document_symbol(params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol] | None:
        analysis = analysis_for(server, params.text_document.uri)
        return outline(analysis) if analysis is not None else None
