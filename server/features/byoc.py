"""BYOC partitioning in the editor (docs/byoc.md, "In the editor"), read from the `byoc`
part of a build report (slow/byoc_report.py); which table and targets a model is built
with is slow/byoc_setup.py's.

* relaylens/byocRegions {uri} -> {uri, version, targets, regions: [{target, colour,
  function, title, lines}]}: the lines of the calls each external function took, for the
  client to colour by target (`colour` is the target's place in the target list; lines
  0-based, inclusive).  null while the current version has no finished partitioned build.
* Code lenses: one per external function on its first call's line, "mynpu · 3 ops ·
  conv2d_bias_relu", opening the function in the module after PartitionGraph; in a pattern
  table, one per def, "matched 12 times in 2 models", whose command (the client's
  `relaylens.showMatches`, with the locations) lists them.
* Hover on a call (`hover_markdown`): the target, composite, pattern and external function
  that took it; for a call left on the host, the pattern that came closest and what kept
  it out (the attribute, the type, the constant), or that no pattern calls its op.
* textDocument/references on a def's name in a pattern table adds every place it matched
  in the open models (`match_locations`).

Matches are counted over the open models whose latest build read this table.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.uris import from_fs_path, to_fs_path

from .. import convert
from ..slow import uris
from ..slow.builds import Built
from ..slow.byoc_report import ByocReport, ExternalFunction, Placement
from ..text_edits import offset_mapper
from ...compiler.ir.expr import GlobalVar
from ...compiler.ir.span import Source
from ...compiler.transform.patterns.table_check import is_pattern_table
from . import Refused, analysis_for, guarded
from .virtual_documents import uri_param

if TYPE_CHECKING:
    from ..server import RelayLensServer

REGIONS = "relaylens/byocRegions"
OPEN = "relaylens.open"
SHOW_MATCHES = "relaylens.showMatches"  # a client command: (uri, position, locations)
DROPPED = ("matches here, but MergeComposite dropped the match: it overlaps a match made first, "
           "or a value inside it is also used outside it")


# --- regions ---------------------------------------------------------------------------------


def regions(built: Built) -> dict[str, Any] | None:
    report, byoc = built.report, built.report.byoc
    if byoc is None:
        return None
    source = built.source
    out = []
    for fn in byoc.functions:
        lines = sorted({(convert.line(source, s), convert.line(source, max(s, e - 1))) for s, e in fn.ranges})
        out.append({"target": fn.target, "colour": _colour(byoc, fn.target), "function": fn.name,
                    "title": fn.title, "lines": [list(r) for r in lines]})
    return {"uri": report.uri, "version": report.version, "targets": list(byoc.targets), "regions": out}


def _colour(byoc: ByocReport, target: str) -> int:
    return byoc.targets.index(target) if target in byoc.targets else len(byoc.targets)


# --- lenses ----------------------------------------------------------------------------------


def function_lens(built: Built, fn: ExternalFunction, line: int | None = None, stale: str = "") -> lsp.CodeLens:
    report, byoc = built.report, built.report.byoc
    if line is None:
        line = convert.line(built.source, fn.anchor[0])
    at = lsp.Range(start=lsp.Position(line=line, character=0), end=lsp.Position(line=line, character=0))
    snapshot = report.snapshots[byoc.snapshot]
    snap_uri = uris.make("pass", snapshot.file_name, report.uri, report.version)
    arguments: list[Any] = [snap_uri]
    if fn.printed is not None:
        arguments.append(convert.offset_range(built.text_source(snap_uri, snapshot.text), *fn.printed))
    title = fn.title + (f" · {stale}" if stale else "")
    return lsp.CodeLens(range=at, command=lsp.Command(
        title=title, command=OPEN, arguments=arguments,
        tooltip=f"{fn.name}: the external function for {fn.target}, in the module after PartitionGraph"))


def lenses(server: "RelayLensServer", uri: str, built: Built | None) -> list[lsp.CodeLens]:
    """The BYOC lenses of a document: its external functions', or a table's matches."""
    if built is not None:
        byoc = built.report.byoc
        return [function_lens(built, fn) for fn in byoc.functions] if byoc is not None else []
    latest = server.builds.find(uri, None)
    doc = server.documents.opened(uri)
    if latest is not None and latest.report.byoc is not None and doc is not None:
        now = Source(uri, doc.text)
        moved = offset_mapper(doc.text, latest.report.text)
        why = "rebuilding…" if server.builds.building(uri) else "out of date"
        return [function_lens(latest, fn, convert.line(now, moved(fn.anchor[0])), why)
                for fn in latest.report.byoc.functions]
    return table_lenses(server, uri)


def table_lenses(server: "RelayLensServer", uri: str) -> list[lsp.CodeLens]:
    """In a pattern table: "matched N times in M models" on each def."""
    analysis = analysis_for(server, uri)
    if analysis is None or not is_pattern_table(analysis.result.module, analysis.source.text):
        return []
    found = []
    for gv, func in analysis.result.module.functions.items():
        if func.span is None:
            continue
        where = convert.range_of(func.span)
        locations = match_locations(server, uri, gv.name)
        models = len({loc.uri for loc in locations})
        n = len(locations)
        title = (f"matched {n} time{'s' * (n != 1)} in {models} model{'s' * (models != 1)}" if n
                 else "no match in the open models")
        found.append(lsp.CodeLens(range=lsp.Range(start=where.start, end=where.start), command=lsp.Command(
            title=title, command=SHOW_MATCHES, arguments=[uri, where.start, locations],
            tooltip=f"where @{gv.name} matched, in the open models built with this table")))
    return found


# --- find matches ----------------------------------------------------------------------------


def match_locations(server: "RelayLensServer", table_uri: str, pattern: str) -> list[lsp.Location]:
    """Every place `@pattern` of the table `table_uri` matched, in the open models' latest builds."""
    path = _path(table_uri)
    found = []
    for model in list(server.builds.reports):
        built = server.builds.find(model, None)
        byoc = built.report.byoc if built is not None else None
        if byoc is None or byoc.table is None or os.path.normpath(byoc.table) != path:
            continue
        for m in byoc.matches:
            if m.pattern == pattern and m.ranges:
                start = min(r[0] for r in m.ranges)
                end = max(r[1] for r in m.ranges)
                found.append(lsp.Location(uri=model, range=convert.offset_range(built.source, start, end)))
    return found


def _path(uri: str) -> str | None:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return os.path.normpath(path) if path else None


def pattern_references(server: "RelayLensServer", uri: str, symbol) -> list[lsp.Location]:
    """For references on a def's name in a pattern table: where it matched."""
    node = getattr(symbol, "node", None)
    if not isinstance(node, GlobalVar):
        return []
    analysis = analysis_for(server, uri)
    if analysis is None or not is_pattern_table(analysis.result.module, analysis.source.text):
        return []
    return match_locations(server, uri, node.name)


# --- hover -----------------------------------------------------------------------------------


def hover_markdown(server: "RelayLensServer", uri: str, key: tuple[int, int], text: str,
                   position: lsp.Position) -> str | None:
    """Where the call at `key` (offsets into `text`, the analysed text) went."""
    built = server.builds.current(uri)
    byoc = built.report.byoc if built is not None else None
    if byoc is None:
        return None
    if built.report.text == text:
        placed = byoc.call(tuple(key))
    else:
        placed = byoc.call_at(convert.offset(built.source, position))
    return describe(server, placed, byoc, built) if placed is not None else None


def describe(server: "RelayLensServer", placed: Placement, byoc: ByocReport, built: Built) -> str:
    table = os.path.basename(byoc.table) if byoc.table else None
    if placed.match is not None:
        m = byoc.matches[placed.match]
        pattern = _pattern_link(server, byoc, m.pattern) if m.pattern else "a pattern"
        composite = f"composite `{m.composite}` (pattern {pattern})"
        if placed.target is None:
            targets = ", ".join(byoc.targets) or "none"
            return f"**BYOC: host** · {composite}, which no target takes (targets: {targets})"
        return f"**BYOC: {placed.target}** · {composite} in {_function_link(built, placed.function)}"
    if placed.target is not None:
        return (f"**BYOC: {placed.target}** · `{placed.op}` taken as an op (`--target-ops`) in "
                f"{_function_link(built, placed.function)}")
    if placed.closest is not None:
        pattern = _pattern_link(server, byoc, placed.closest)
        if placed.why is None:
            return f"**BYOC: host** · {pattern} {DROPPED}"
        return f"**BYOC: host** · closest pattern {pattern}: {placed.why}"
    if table is not None:
        return f"**BYOC: host** · no pattern of `{table}` calls `{placed.op}`"
    return f"**BYOC: host** · `{placed.op}` is not among the ops {', '.join(byoc.targets) or 'a target'} takes"


def _function_link(built: Built, name: str | None) -> str:
    report, byoc = built.report, built.report.byoc
    fn = byoc.function(name) if name else None
    if fn is None:
        return f"`{name}`"
    snapshot = report.snapshots[byoc.snapshot]
    link = uris.make("pass", snapshot.file_name, report.uri, report.version)
    if fn.printed is not None:
        link += f"#L{built.text_source(link, snapshot.text).text.count(chr(10), 0, fn.printed[0]) + 1}"
    return f"[`{fn.name}`]({link})"


def _pattern_link(server: "RelayLensServer", byoc: ByocReport, name: str) -> str:
    """`@name`, linked to its def in the table (by line) when the server can read it."""
    if not byoc.table:
        return f"`@{name}`"
    uri = from_fs_path(byoc.table)
    try:
        text = server.documents.get(uri).text
    except Refused:
        return f"`@{name}`"
    m = re.search(rf"^[ \t]*def[ \t]+@{re.escape(name)}\b", text, re.MULTILINE)
    return f"[`@{name}`]({uri}#L{text.count(chr(10), 0, m.start()) + 1})" if m else f"[`@{name}`]({uri})"


def register(server: "RelayLensServer") -> None:
    @server.feature(REGIONS)
    @guarded()
    def byoc_regions(params: Any) -> dict[str, Any] | None:
        built = server.builds.current(uri_param(params))
        return regions(built) if built is not None else None
