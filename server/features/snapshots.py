"""relaylens/snapshots {uri} -> the passes of the current version's build, each with the
URI of the module after it, for a pass-pipeline view or a diff of two passes
(docs/lsp.md).  null while the document's current version has no finished build."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..slow import uris
from . import guarded
from .virtual_documents import uri_param

if TYPE_CHECKING:
    from ..server import RelayLensServer

METHOD = "relaylens/snapshots"


def register(server: "RelayLensServer") -> None:
    @server.feature(METHOD)
    @guarded()
    def snapshots(params: Any) -> dict[str, Any] | None:
        built = server.builds.current(uri_param(params))
        if built is None:
            return None
        report = built.report
        return {"uri": report.uri, "version": report.version,
                "passes": [{"index": s.index, "name": s.pass_name, "changed": s.changed,
                            "uri": uris.make("pass", s.file_name, report.uri, report.version)}
                           for s in report.snapshots]}
