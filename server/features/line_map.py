"""relaylens/lineMap {uri} -> which Relay lines became which lines of module.ll, for a
client that colours both (docs/lsp.md).  null while the document's current version has
no finished build.  Lines are 0-based; ranges are inclusive [first, last].  Fused
functions that share a kernel (structurally identical) are one entry with all their
Relay lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import convert
from ..slow import uris
from ..slow.builds import Built
from . import guarded
from .virtual_documents import uri_param

if TYPE_CHECKING:
    from ..server import RelayLensServer

METHOD = "relaylens/lineMap"


def _merged(ranges: list[tuple[int, int]]) -> list[list[int]]:
    """Inclusive line ranges, sorted and merged where they touch or overlap."""
    out: list[list[int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return out


def line_map(built: Built) -> dict[str, Any]:
    report, source = built.report, built.source
    by_name: dict[str, dict[str, Any]] = {}  # identical functions share a kernel: one entry
    for fn in report.functions:
        entry = by_name.setdefault(fn.name, {"name": fn.name, "relay": [], "llvm": _merged(
            [(a - 1, b - 1) for a, b in fn.module_lines])})
        entry["relay"] += [(convert.line(source, start), convert.line(source, max(start, end - 1)))
                           for start, end in fn.ranges or (fn.anchor,)]
    functions = [{**entry, "relay": _merged(entry["relay"])} for entry in by_name.values()]
    return {"uri": report.uri, "version": report.version,
            "module": uris.make("llvm", "module.ll", report.uri, report.version),
            "functions": functions,
            "lines": [[ir - 1, line - 1] for ir, (line, _) in sorted(report.llvm_lines.items())]}


def register(server: "RelayLensServer") -> None:
    @server.feature(METHOD)
    @guarded()
    def relay_line_map(params: Any) -> dict[str, Any] | None:
        built = server.builds.current(uri_param(params))
        return line_map(built) if built is not None and built.report.lowered else None
