"""textDocument/declaration: Relay has no separate declarations, so the targets are those
of go to definition (the binder of a `%` local, the `def` of an `@` global, the `type`
definition of a type or constructor)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from . import guarded
from .navigation import symbol_at

if TYPE_CHECKING:
    from ..server import RelayLensServer


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_DECLARATION)
    @guarded()
    def declaration(params: lsp.DeclarationParams) -> list[lsp.Location] | None:
        uri = params.text_document.uri
        found = symbol_at(server, uri, params.position)
        if found is None or found[1].definition is None:
            return None
        where = found[2].location(uri, found[1].definition)
        return [where] if where is not None else None
