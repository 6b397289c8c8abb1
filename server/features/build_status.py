"""relaylens/status {} -> the build worker (pid, state, restarts), the builds under way and
the reports kept (docs/lsp.md): for a status view, and for tests that must find the
worker to kill it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import guarded

if TYPE_CHECKING:
    from ..server import RelayLensServer

METHOD = "relaylens/status"


def register(server: "RelayLensServer") -> None:
    @server.feature(METHOD)
    @guarded()
    def status(params: Any) -> dict[str, Any]:
        return server.builds.status()
