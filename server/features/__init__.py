"""One module per LSP method (or family); each registers its handlers on the server.

Every handler does document → analysis → convert, and goes through `guarded`: an
exception is logged and the client gets an empty answer, never a crash.  The one exception
that reaches the client is `Refused` (a JSON-RPC error, RequestFailed), which a handler
raises on purpose to say why it will not do what was asked (a rename onto a taken name).
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, Callable

from pygls.exceptions import JsonRpcException

from ..slow.uris import is_virtual

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..server import RelayLensServer

log = logging.getLogger("relaylens.server")


class Refused(JsonRpcException):
    """A request the server declines, with the reason as the message (LSP RequestFailed)."""

    CODE = -32803


def _not_a_refusal(record: logging.LogRecord) -> bool:
    """pygls logs every error response with its traceback; a refusal is an answer, not a
    failure, so it is logged as one line at INFO level instead."""
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, Refused):
        log.info("refused: %s", exc.message)
        return False
    return True


logging.getLogger("pygls.protocol.json_rpc").addFilter(_not_a_refusal)


def guarded(default: Any = None) -> Callable:
    """Wrap a handler: an exception is logged and `default` is answered (a `Refused` goes
    to the client as an error response)."""

    def wrap(handler: Callable) -> Callable:
        @functools.wraps(handler)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            except JsonRpcException:
                raise
            except Exception:  # noqa: BLE001 -- a handler never raises to the client
                log.exception("%s failed", handler.__name__)
                return default

        return run

    return wrap


def text_for(server: "RelayLensServer", uri: str) -> str | None:
    """The document's text as it is now (None for a `relaylens:` document); a document
    the server will not read raises `Unreadable` (server/documents.py)."""
    return None if is_virtual(uri) else server.documents.get(uri).text


def analysis_for(server: "RelayLensServer", uri: str, typing: bool = False) -> "Analysis | None":
    """The analysis a request reads (None for a `relaylens:` document); a document the
    server will not read raises `Unreadable` (server/documents.py), the client's answer.
    `typing`: one whose typing is in progress will do, as it stands (Analyses.for_request)."""
    if is_virtual(uri):  # LLVM IR or a snapshot (a `relaylens:` document): not analysed
        return None
    doc = server.documents.get(uri)
    if not doc.opened:
        return server.analyses.of_file(uri, doc.text)
    return server.analyses.for_request(uri, doc.version, doc.text, typing)


def current_analysis_for(server: "RelayLensServer", uri: str) -> "Analysis | None":
    """The analysis of the document's text as it is now (made now if the latest is older),
    for answers laid over that text: edits, semantic tokens, folding ranges."""
    if is_virtual(uri):  # LLVM IR or a snapshot (a `relaylens:` document): not analysed
        return None
    doc = server.documents.get(uri)
    if not doc.opened:
        return server.analyses.of_file(uri, doc.text)
    return server.analyses.current(uri, doc.version, doc.text)
