"""The RelayLens language server: builds the pygls `LanguageServer` and registers features.

    python -m relaylens.server            stdio (read on the event loop: stdio.py)
    relaylens serve [--tcp --port N]      stdio, or one client over TCP on 127.0.0.1 (tcp.py)

Both read the base protocol through framing.py (framing errors are answered); documents
are read only through documents.py (what was opened, and workspace files under a limit).

Features live in `features/` (one module per LSP method family); analyses are cached in
`analysis.py`; offsets become LSP positions only in `convert.py`.  The slow path (passes,
lowering, LLVM) runs in a worker process managed by `slow/builds.py`; docs/lsp.md is the
protocol reference, custom requests included.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NamedTuple

from cattrs import transform_error
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from .analysis import Analyses
from .collector import IdleCollector
from .documents import Documents, SizeLimit
from .generated_sources import forget_generated_sources
from .features import (build_status, byoc, code_actions, code_lens, completion, declaration, diagnostics, folding,
                       formatting, graph, hover, inlay_hints, line_map, navigation, numerics, profile, rename,
                       semantic_tokens, settings, signature_help, snapshots, symbols, virtual_documents)
from .slow.builds import Builds
from .stdio import start_stdio
from .tcp import start_tcp
from .text_sync import use_spliced_documents

NAME = "relaylens"
log = logging.getLogger("relaylens.server")


def _version() -> str:
    try:
        return version("relaylens")
    except PackageNotFoundError:
        return "unknown"


class _Unreadable(NamedTuple):
    """A request whose params do not fit its method's types."""

    id: Any
    method: str
    error: JsonRpcException


class RelayLensProtocol(LanguageServerProtocol):
    """pygls's protocol, except that a request whose params cannot be read (a negative
    line, a missing field) gets its InvalidParams error as an answer.  pygls raises while
    decoding it, before it is a request; its message loop then only logs, and the client
    would wait for the answer forever.  A request whose id is neither an integer nor a
    string (`"id": []`) is answered InvalidRequest with a null id, as JSON-RPC says,
    without running its handler: pygls would run it and then fail to send its answer."""

    def structure_message(self, data: dict[str, Any]):
        if isinstance(data, dict) and isinstance(data.get("method"), str) and not _valid_id(data.get("id")):
            return _Unreadable(None, data["method"], JsonRpcInvalidRequest(f"the id {data['id']!r} is not an integer or a string"))
        try:
            return super().structure_message(data)
        except JsonRpcException as err:
            if isinstance(data, dict) and data.get("id") is not None and isinstance(data.get("method"), str):
                return _Unreadable(data["id"], data["method"], err)
            raise

    def handle_message(self, message) -> None:
        collector = getattr(self._server, "collector", None)
        if collector is not None:
            collector.touch()  # (collect when the server has been idle a while: collector.py)
        if not isinstance(message, _Unreadable):
            super().handle_message(message)
            if collector is not None:
                collector.touch()  # a second after the end of this message's handler
            return
        cause = message.error.__cause__
        try:
            detail = ": " + "; ".join(transform_error(cause)) if cause is not None else ""
        except Exception:  # noqa: BLE001 -- not a cattrs error: say what it is
            detail = f": {cause}"
        log.warning("request %s (%s): %s%s", message.id, message.method, message.error.message, detail)
        err = message.error
        self._send_response(message.id, None, lsp.ResponseError(
            code=err.code, message=f"{err.message} for {message.method}{detail}", data=err.data))


def _valid_id(value: Any) -> bool:
    """LSP's request ids: an integer or a string (None: a notification)."""
    return value is None or (isinstance(value, (int, str)) and not isinstance(value, bool))


class RelayLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(NAME, _version(), protocol_cls=RelayLensProtocol)
        limit = SizeLimit()
        self.documents = Documents(self, limit)
        self.analyses = Analyses(limit)
        self.diagnostics = diagnostics.DiagnosticStore(self)
        self.builds = Builds(self)
        self.collector = IdleCollector(lambda: self.diagnostics.scheduler.busy)


def _lifecycle(server: RelayLensServer) -> None:
    """initializationOptions configure the builds, the size limit and the settings; the
    documents' edits are spliced (text_sync.py); the worker starts once the client is ready (so the first build does not wait for its
    imports), stops at shutdown, and is gone before pygls ends the event loop at exit."""

    @server.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        use_spliced_documents(server.workspace)  # (pygls made it just before: text_sync.py)
        server.builds.configure(params.initialization_options)
        server.documents.limit.configure(params.initialization_options)
        settings.configure(server, params.initialization_options)

    @server.feature(lsp.INITIALIZED)
    def initialized(params: lsp.InitializedParams) -> None:
        server.builds.start_worker()

    @server.feature(lsp.SHUTDOWN)
    def shutdown(params: None) -> None:
        server.builds.shutdown()

    @server.feature(lsp.EXIT)
    async def exit_(params: None) -> None:
        await server.builds.stopped()  # (pygls runs this first, then closes stdout and exits)


def build() -> RelayLensServer:
    server = RelayLensServer()
    _lifecycle(server)
    for feature in (diagnostics, code_actions, navigation, declaration, symbols, hover, rename, completion,
                    signature_help, semantic_tokens, folding, formatting, code_lens,
                    virtual_documents, line_map, snapshots, graph, build_status, settings, inlay_hints, profile,
                    numerics, byoc):
        feature.register(server)
    return server


def serve(tcp: bool = False, port: int = 2087) -> int:
    """Run until the client says exit; the exit status (0, or 1 for an `exit` without
    `shutdown`).  Logs go to stderr (stdout is the protocol)."""
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
    server = build()
    forget_generated_sources()  # what attrs and cattrs compiled: 1.6 MB of source text
    server.collector.install()  # the cycle collector runs when the server is idle (collector.py)
    if tcp:
        return start_tcp(server, port, server.builds.stopped)
    return start_stdio(server, server.builds.stopped)
