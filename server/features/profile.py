"""relaylens/profile {uri, runs?} -> where the time of a compiled run goes (docs/lsp.md);
relaylens/lastProfile {uri} -> the last answer kept for the document (null if none);
and the inlay hints that show it on each fused group's first line.

Profiling runs generated code, so it happens only on this request (the editor's Profile
command), never on open or edit.  The build worker builds the document's current version
to machine code and runs @main `runs` times (default 10) on random inputs, every kernel
call timed (server/slow/profiling.py).  The answer is `ProfileReport.to_json()` plus
`current`: whether the document is still at the version profiled.  A document that does
not build, or whose @main cannot run on random inputs, answers with `error` set; one
that is not open, a cancelled request or a worker that died is a RequestFailed error.
With `compare` (default true) and an ONNX model `<stem>.onnx` beside the document in the
workspace, onnxruntime profiles it too (`compare` and each kernel's `ort_ms`).

Hints (textDocument/inlayHint, added to the type hints by inlay_hints.py): at the end of
the first line of each call site of a kernel, "1.23 ms · 4.1% · 190 GFLOP/s" (and
"· 1.30x onnxruntime": our time over onnxruntime's for its layers, when compared), for the
version profiled only (after an edit they are gone until the next profile: a line they
would point at may have moved).
"""

from __future__ import annotations

from itertools import accumulate
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from .. import convert
from ..slow.profiles import ProfileFailed
from . import Refused, log
from .virtual_documents import uri_param

if TYPE_CHECKING:
    from ...compiler.ir.span import Source
    from ..server import RelayLensServer

METHOD = "relaylens/profile"
LAST = "relaylens/lastProfile"
DEFAULT_RUNS = 10


def register(server: "RelayLensServer") -> None:
    @server.feature(METHOD)
    async def profile(params: Any) -> dict:
        uri = uri_param(params)
        runs = _param(params, "runs", DEFAULT_RUNS)
        if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
            raise Refused(f"runs must be a positive integer, not {runs!r}")
        compare = _param(params, "compare", True)
        if not isinstance(compare, bool):
            raise Refused(f"compare must be true or false, not {compare!r}")
        try:
            report = await server.builds.profiles.run(uri, runs, compare)
        except ProfileFailed as err:
            raise Refused(str(err)) from None
        except Exception as err:  # noqa: BLE001 -- an error answer, never a dead request
            log.exception("%s failed", METHOD)
            raise Refused(f"internal error: {type(err).__name__}: {err}") from None
        if report.error is None and server.client_capabilities is not None:
            _refresh_hints(server)
        return _answer(server, report)

    @server.feature(LAST)
    def last(params: Any) -> dict | None:
        report = server.builds.profiles.latest(uri_param(params))
        return _answer(server, report) if report is not None else None


def _param(params: Any, name: str, default: Any) -> Any:
    return params.get(name, default) if isinstance(params, dict) else getattr(params, name, default)


def _answer(server: "RelayLensServer", report) -> dict:
    doc = server.documents.opened(report.uri)
    return {**report.to_json(), "current": doc is not None and doc.version == report.version}


def _refresh_hints(server: "RelayLensServer") -> None:
    caps = server.client_capabilities
    ws = caps.workspace if caps is not None else None
    if ws is not None and ws.inlay_hint is not None and ws.inlay_hint.refresh_support:
        server.workspace_inlay_hint_refresh(None)


def profile_hints(server: "RelayLensServer", uri: str, source: "Source", start: int, end: int) -> list[lsp.InlayHint]:
    """The profile's hints on the lines of [start, end), for the version profiled only."""
    report = server.builds.profiles.latest(uri)
    doc = server.documents.opened(uri)
    if report is None or doc is None or doc.version != report.version or doc.text != source.text:
        return []
    first = source.text.count("\n", 0, start)
    last = source.text.count("\n", 0, end)
    lines = source.text.split("\n")
    starts = [0, *accumulate(len(t) + 1 for t in lines)]
    hints = []
    for f in report.functions:
        label = f"{f.ms:.3g} ms · {f.percent:.1f}% · {f.gflops:.3g} GFLOP/s"
        if f.ort_ms:
            label += f" · {f.ms / f.ort_ms:.2f}x onnxruntime"
        if f.calls > 1:
            label += f" · {f.calls:g} calls"
        for line in f.anchors:
            if first <= line <= last and line < len(lines):
                at = convert.position(source, starts[line] + len(lines[line].rstrip("\r")))
                hints.append(lsp.InlayHint(position=at, label=label, padding_left=True,
                                           tooltip=f"{f.display_name}\n{f.name}\n{_tooltip(f)}"))
    return hints


def _tooltip(f) -> str:
    layers = ", ".join(f"{name} {ms:.3g} ms" for name, ms in sorted(f.layers.items(), key=lambda kv: -kv[1])[:6])
    return (f"median {f.ms:.4g} ms [{f.min_ms:.4g}–{f.max_ms:.4g}] per run, {f.percent_of_peak:.1f}% of peak, "
            f"{f.mbytes:.3g} MB at {f.gbytes_per_s:.3g} GB/s" + (f"\nlayers: {layers}" if layers else ""))
