"""relaylens/graph {uri, after?, version?, layout?, compare?} -> the dataflow graph of the
module after a pass, as Model Explorer's graph JSON (compiler/graph; docs/lsp.md,
docs/graph.md), with the document range of each node, for a graph view that selects a
node's Relay line and highlights the node under the cursor.  `layout: true` adds each
graph's layout (compiler/graph/view.py, the export's); `compare: true` adds the snapshot
before (`before`, the same fields) and which nodes became which (`mapping`).

The graph is the build worker's to compute (it holds the snapshots; server/slow/builds.py):
this handler waits for the build of the version asked (default: the latest), asks, and
converts the nodes' offsets to LSP ranges.  No build, or no such pass: an error answer
that says why.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from .. import convert
from ..slow.builds import NotBuilt
from . import Refused
from .virtual_documents import uri_param

if TYPE_CHECKING:
    from ..server import RelayLensServer

METHOD = "relaylens/graph"
log = logging.getLogger("relaylens.server")


def _param(params: Any, name: str) -> Any:  # pygls hands JSON objects over as namedtuples
    if isinstance(params, dict):
        return params.get(name)
    return getattr(params, name, None)


def register(server: "RelayLensServer") -> None:
    @server.feature(METHOD)
    async def graph(params: Any) -> dict:
        uri = uri_param(params)
        after, version = _param(params, "after"), _param(params, "version")
        if after is not None and (isinstance(after, bool) or not isinstance(after, (str, int))):
            raise Refused(f"{METHOD}: `after` is a pass name or a snapshot number, not {after!r}")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise Refused(f"{METHOD}: `version` is a number, not {version!r}")
        options = {}
        for flag in ("layout", "compare"):
            value = _param(params, flag)
            if value is not None and not isinstance(value, bool):
                raise Refused(f"{METHOD}: `{flag}` is true or false, not {value!r}")
            options[flag] = bool(value)
        try:
            built, doc = await server.builds.graph(uri, version, after, options)
        except NotBuilt as err:
            raise Refused(str(err)) from None
        except JsonRpcException:
            raise
        except Exception as err:  # noqa: BLE001 -- an error answer, never a dead request
            log.exception("%s failed", METHOD)
            raise Refused(f"internal error: {type(err).__name__}: {err}") from None
        answer = {"uri": built.report.uri, "version": built.report.version, **_snapshot(built.source, doc)}
        if options["compare"]:
            answer["before"] = _snapshot(built.source, doc.before) if doc.before is not None else None
            answer["mapping"] = {gid: [[left, right] for left, right in entries]
                                 for gid, entries in (doc.mapping or {}).items()}
        return answer


def _snapshot(source, doc) -> dict:
    """One snapshot's part of the answer: its graph, its nodes' ranges, its layout if made."""
    ranges = {gid: {nid: convert.offset_range(source, start, end) for nid, (start, end) in nodes.items()}
              for gid, nodes in doc.offsets.items()}
    out = {"index": doc.index, "passName": doc.pass_name, "graph": doc.collection, "ranges": ranges}
    if doc.layouts is not None:
        out["layout"] = doc.layouts
    return out
