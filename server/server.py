"""The RelayLens language server: builds the pygls `LanguageServer` and registers features.

    python -m relaylens.server            stdio
    relaylens serve [--tcp --port N]      stdio, or TCP on 127.0.0.1 only

Features live in `features/` (one module per LSP method family); analyses are cached in
`analysis.py`; offsets become LSP positions only in `convert.py`.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version

from pygls.lsp.server import LanguageServer

from .analysis import Analyses
from .features import (completion, declaration, diagnostics, folding, formatting, hover,
                       navigation, rename, semantic_tokens, signature_help, symbols)

NAME = "relaylens"


def _version() -> str:
    try:
        return version("relaylens")
    except PackageNotFoundError:
        return "unknown"


class RelayLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(NAME, _version())
        self.analyses = Analyses()
        self.diagnostics = diagnostics.DiagnosticStore(self)


def build() -> RelayLensServer:
    server = RelayLensServer()
    for feature in (diagnostics, navigation, declaration, symbols, hover, rename, completion,
                    signature_help, semantic_tokens, folding, formatting):
        feature.register(server)
    return server


def serve(tcp: bool = False, port: int = 2087) -> None:
    """Run until the client says exit.  Logs go to stderr (stdout is the protocol)."""
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
    server = build()
    if tcp:
        server.start_tcp("127.0.0.1", port)
    else:
        server.start_io()
