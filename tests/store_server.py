"""A stand-in for the language server as DiagnosticStore (server/features/diagnostics.py)
reads it: one open document (`doc`, replaced by a test to make an edit), the analyses, and
every publication as (version, its messages sorted)."""

from __future__ import annotations

from types import SimpleNamespace

from relaylens.server.analysis import Analyses


def messages(diagnostics) -> list[str]:
    return sorted(d.message for d in diagnostics)


class StoreServer:
    def __init__(self, text: str) -> None:
        self.doc = SimpleNamespace(version=1, text=text)
        self.documents = SimpleNamespace(opened=lambda uri: self.doc)
        self.analyses = Analyses()
        self.published: list[tuple[int, list[str]]] = []

    def text_document_publish_diagnostics(self, params) -> None:
        self.published.append((params.version, messages(params.diagnostics)))
