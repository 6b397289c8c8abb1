"""The profile's code lenses above `def @main` (textDocument/codeLens, beside code_lens.py's
fused-function lenses; docs/lsp.md "Code lenses").

    ▶ Profile                                   no profile under way: runs one
    ⏱ profiling… · cancel                       one is under way: cancels it
    12.3 ms · 2 threads · 1.05x onnxruntime     the last profile: shows its table

The first two run the client commands `relaylens.profile` and `relaylens.cancelProfile`
with the document's URI; the last `relaylens.showProfile` with it.  The figures are the
median end-to-end time per run, the threads, and (when onnxruntime profiled the ONNX model
beside) our time over onnxruntime's with every optimisation on.  Figures of an older
version than the document's stay, marked "stale (version N)": the lens stands on @main
wherever it now is, and the server refreshes the lenses when a profile starts and ends.
Profiling runs generated code, so a lens only offers it; nothing runs until it is clicked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from . import current_analysis_for

if TYPE_CHECKING:
    from ..slow.profiling import ProfileReport
    from ..server import RelayLensServer

PROFILE = "relaylens.profile"
CANCEL = "relaylens.cancelProfile"
SHOW = "relaylens.showProfile"


def main_line(server: "RelayLensServer", uri: str) -> int | None:
    """The 0-based line of `def @main` in the document as it is now, if it has one."""
    analysis = current_analysis_for(server, uri)
    if analysis is None:
        return None
    for symbol in analysis.index.symbols:
        if symbol.kind == "global" and symbol.name == "main" and symbol.definition is not None:
            return convert.range_of(symbol.definition).start.line
    return None


def summary(report: "ProfileReport") -> str:
    """"12.3 ms · 2 threads · 1.05x onnxruntime": the run, the threads, and the comparison."""
    text = f"{report.run_ms:.3g} ms · {report.threads} thread{'s' * (report.threads != 1)}"
    ratio = (report.compare or {}).get("ratio")
    return text + (f" · {ratio:.2f}x onnxruntime" if ratio else "")


def profile_lenses(server: "RelayLensServer", uri: str) -> list[lsp.CodeLens]:
    line = main_line(server, uri)
    if line is None:
        return []
    where = lsp.Range(start=lsp.Position(line=line, character=0), end=lsp.Position(line=line, character=0))
    profiles = server.builds.profiles

    def lens(title: str, command: str, tooltip: str) -> lsp.CodeLens:
        return lsp.CodeLens(range=where, command=lsp.Command(title=title, command=command, arguments=[uri],
                                                             tooltip=tooltip))

    if profiles.running(uri):
        found = [lens("⏱ profiling… · cancel", CANCEL, "stop the profile under way")]
    else:
        found = [lens("▶ Profile", PROFILE, "build to machine code, run @main 10 times on random inputs "
                                           "and time every kernel (runs generated code)")]
    report = profiles.latest(uri)
    if report is not None:
        doc = server.documents.opened(uri)
        stale = doc is not None and doc.version != report.version
        kernels = len(report.functions)
        tooltip = (f"version {report.version}: {report.runs} runs, {kernels} kernel{'s' * (kernels != 1)} "
                   f"({report.kernels_ms:.3g} ms of {report.run_ms:.3g} ms); open the table")
        if report.compare:
            tooltip += (f"\nonnxruntime {report.compare['version']} on {report.compare['model']}: "
                        f"{report.compare['optimized_run_ms']:.3g} ms with every optimisation on")
        found.append(lens(summary(report) + (f" · stale (version {report.version})" if stale else ""), SHOW,
                          tooltip))
    return found
