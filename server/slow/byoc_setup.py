"""Which pattern table and targets the editor's build of a model partitions for (docs/byoc.md,
"In the editor"), as the server decides it before sending the build to the worker.

    request = byoc_request(server, uri, text)   # a ByocRequest, or None: a plain build
    dependents(server, table_uri)               # the open models built with that table

In order, the first that says anything:

1. a directive line in the model, with `relaylens build`'s options (directive.py):
       // relaylens: --patterns mynpu_patterns.relay --target mynpu [--target-ops exp]
   the path relative to the model's folder;
2. the settings `relaylens.byoc.patterns` (a path relative to the first workspace folder),
   `relaylens.byoc.target` ("mynpu" or "mynpu,dsp") and `relaylens.byoc.targetOps`.

The table is read as the editor holds it when it is open (unsaved edits count), else
from disk inside the workspace (documents.py's rule).  What cannot be done (an unreadable
table, a directive that does not read, a table without a target) is a problem reported
on the model as a build diagnostic (at the directive's line); the build then goes on
without partitioning.  A pattern table itself is never partitioned.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pygls.uris import from_fs_path, to_fs_path

from ...compiler.transform.patterns.directive import build_directive
from ..features import Refused, settings
from .byoc_report import ByocRequest, byoc_config

if TYPE_CHECKING:
    from ..server import RelayLensServer

Range = tuple[int, int]


def byoc_request(server: "RelayLensServer", uri: str, text: str, read: bool = True) -> ByocRequest | None:
    """`read=False`: only say which table (`table_uri`), without reading it."""
    found = build_directive(text)
    chosen = settings.of(server)
    if found is not None:
        where: Range | None = (found.start, found.end)
        problems = [((s, e), message) for s, e, message in found.problems]
        base = _folder(uri)
        patterns, targets, ops = found.patterns, found.targets, found.ops
        said = "the directive's --patterns"
    elif chosen.byoc_patterns or chosen.byoc_targets:
        where, problems = None, []
        base = _workspace_folder(server)
        patterns, targets, ops = chosen.byoc_patterns, chosen.byoc_targets, chosen.byoc_ops
        said = "relaylens.byoc.patterns"
        if not targets:
            problems.append((None, "relaylens.byoc.patterns is set but relaylens.byoc.target is not: "
                                   "which external compiler takes the matches?"))
    else:
        return None
    table_uri = name = table = None
    if patterns and not problems:
        path = patterns if os.path.isabs(patterns) or base is None else os.path.join(base, patterns)
        table_uri = from_fs_path(os.path.normpath(path))
        name = os.path.normpath(path)
    if table_uri is not None and read:
        try:
            table = server.documents.get(table_uri).text
        except Refused as err:
            problems.append((where, f"{said} {patterns}: {err.message}"))
    if problems:
        return ByocRequest(None, table_uri, tuple(problems))
    return ByocRequest(byoc_config(name, table, targets, ops), table_uri)


def dependents(server: "RelayLensServer", table_uri: str) -> list[str]:
    """The open documents whose build reads the table `table_uri`."""
    found = []
    for uri in server.documents.open_uris():
        if uri == table_uri:
            continue
        doc = server.documents.opened(uri)
        request = byoc_request(server, uri, doc.text, read=False) if doc is not None else None
        if request is not None and request.table_uri is not None and _same(request.table_uri, table_uri):
            found.append(uri)
    return found


def _same(a: str, b: str) -> bool:
    pa, pb = to_fs_path(a), to_fs_path(b)
    return a == b or (pa is not None and pb is not None and os.path.normpath(pa) == os.path.normpath(pb))


def _folder(uri: str) -> str | None:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return os.path.dirname(path) if path else None


def _workspace_folder(server: "RelayLensServer") -> str | None:
    try:
        workspace = server.workspace
    except RuntimeError:
        return None
    uris = [*(f.uri for f in workspace.folders.values()), workspace.root_uri]
    paths = [to_fs_path(u) for u in uris if u]
    return next((p for p in paths if p), None)
