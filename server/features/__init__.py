"""One module per LSP method (or family); each registers its handlers on the server.

Every handler does document → analysis → convert, and goes through `guarded`: an
exception is logged and the client gets an empty answer, never a crash.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..server import RelayLensServer

log = logging.getLogger("relaylens.server")


def guarded(default: Any = None) -> Callable:
    """Wrap a handler: an exception is logged and `default` is answered."""

    def wrap(handler: Callable) -> Callable:
        @functools.wraps(handler)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            except Exception:  # noqa: BLE001 -- a handler never raises to the client
                log.exception("%s failed", handler.__name__)
                return default

        return run

    return wrap


def analysis_for(server: "RelayLensServer", uri: str) -> "Analysis | None":
    """The analysis a request reads, or None for a document we cannot read."""
    try:
        doc = server.workspace.get_text_document(uri)
        text = doc.source
    except Exception:  # noqa: BLE001 -- an unknown URI or an unreadable file
        log.info("no document for %s", uri)
        return None
    return server.analyses.for_request(uri, doc.version, text)
