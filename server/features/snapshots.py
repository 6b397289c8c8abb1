"""relaylens/snapshots {uri} -> the passes of the current version's build, each with the
URI of the module after it (and of the same numbered as the snapshot before, `aligned`),
for a pass-pipeline view or a diff of two passes (docs/lsp.md).  null while the document's current version has no finished build."""

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
                "passes": [_entry(s, report) for s in report.snapshots]}


def _entry(snapshot, report) -> dict[str, Any]:
    entry = {"index": snapshot.index, "name": snapshot.pass_name, "changed": snapshot.changed,
             "uri": uris.make("pass", snapshot.file_name, report.uri, report.version)}
    if snapshot.index:
        aligned = snapshot.file_name.removesuffix(".relay") + ".aligned.relay"
        entry["aligned"] = uris.make("pass", aligned, report.uri, report.version)
    return entry
