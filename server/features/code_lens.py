"""textDocument/codeLens: above the first line of each group of source expressions that
became one fused function, its display name ("ƒ conv2d + bias_add + relu · /conv1/Conv",
the `tvmgen_…` symbol in the tooltip) and "LLVM IR", "schedule (N steps)", "passes (N)".

Every lens runs the client command `relaylens.open` with a virtual document's URI and,
where it helps, the range to select in it (docs/lsp.md).  While the current version has
no finished build (it is being built, or its text has errors), the last build's lenses
stay, moved with the text to where their expressions now are and marked stale
("ƒ conv2d + relu · rebuilding…"); they still open that build's documents.  A kernel that
only puts a parameter in the layout a call reads it in is one lens after that call's
kernel's ("layout_transform %w"), not a second `ƒ` on the line (`report_lenses`); so is
one that takes a call's result back to its old layout.  Above `def
@main` stand the profile's lenses (profile_lens.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from lsprotocol import types as lsp

from .. import convert
from ..slow import uris
from ..slow.builds import Built
from ..slow.report import FusedReport
from ..text_edits import offset_mapper
from ...compiler.ir.span import Source
from . import byoc, guarded
from .profile_lens import profile_lenses

if TYPE_CHECKING:
    from ..server import RelayLensServer

OPEN = "relaylens.open"


def _lines_range(first: int, last: int) -> lsp.Range:
    """1-based inclusive lines as the LSP range from the start of the first to the start
    of the line after the last."""
    return lsp.Range(start=lsp.Position(line=first - 1, character=0),
                     end=lsp.Position(line=last, character=0))


def lenses_for(built: Built, fn: FusedReport, line: int | None = None, stale: str = "") -> list[lsp.CodeLens]:
    """The lenses of one fused function, on `line` (its anchor's line in the built text by
    default); `stale` ("rebuilding…", "out of date") marks those of an older build."""
    anchor, parts = built.derived(("lenses", id(fn)), lambda: _lens_parts(built, fn))
    line = anchor if line is None else line
    where = lsp.Range(start=lsp.Position(line=line, character=0), end=lsp.Position(line=line, character=0))
    return [lsp.CodeLens(range=where, command=lsp.Command(title=f"{title}{stale and ' · ' + stale}" if i == 0 else title,
                                                          command=OPEN, arguments=list(arguments), tooltip=tooltip))
            for i, (title, arguments, tooltip) in enumerate(parts)]


def report_lenses(built: Built, where: Callable[[FusedReport], int] | None = None, stale: str = "") -> list[lsp.CodeLens]:
    """The lenses of every fused function of `built`, each on the 0-based line `where(fn)`
    (its anchor's in the built text by default).  A kernel that only moves a value between
    layouts (`FusedReport.layouts`: a parameter into the layout a call reads it in, a
    result back) is one lens more after the `ƒ` group of the kernel on its line
    ("layout_transform %w", "layout_transform NCHW16c → NCHW": it runs with that call, at
    every inference), and a group of its own only on a line with no other kernel's."""
    if where is None:
        where = lambda fn: convert.position(built.source, fn.anchor[0]).line  # noqa: E731
    placed = [(fn, where(fn)) for fn in built.report.functions]
    owned = {line for fn, line in placed if not fn.layouts}
    out: list[lsp.CodeLens] = []
    for fn, line in placed:
        if fn.layouts and line in owned:
            _, parts = built.derived(("lenses", id(fn)), lambda fn=fn: _lens_parts(built, fn))
            if fn.moves:
                title = f"{fn.display_name} {fn.moves}"
                tooltip = (f"{fn.name}: puts {fn.moves} in the layout this call reads it in{fn.layouts}, at every run "
                           "(a weight bound from an .npz is put in it once, at build time)")
            else:
                title = f"{fn.display_name} {fn.layouts.removeprefix(': ')}"
                tooltip = f"{fn.name}: takes this result back to its layout{fn.layouts}, at every run"
            out.append(lsp.CodeLens(range=lsp.Range(start=lsp.Position(line=line, character=0),
                                                    end=lsp.Position(line=line, character=0)),
                                    command=lsp.Command(title=title, command=OPEN,
                                                        arguments=list(parts[0][1]), tooltip=tooltip)))
        else:
            out += lenses_for(built, fn, line, stale)
    return out


def _lens_parts(built: Built, fn: FusedReport) -> tuple[int, list[tuple[str, tuple, str | None]]]:
    """(the line of `fn`'s anchor in the built text, (title, arguments, tooltip) of each of its
    lenses): what does not change while the build is current, made once (`Built.derived`);
    the first is the name, which a stale lens marks."""
    report = built.report
    doc, version = report.uri, report.version
    snapshot = report.snapshots[fn.snapshot]
    snap_uri = uris.make("pass", snapshot.file_name, doc, version)
    in_snapshot: tuple = (snap_uri,)
    if fn.printed is not None:
        in_snapshot += (convert.offset_range(built.text_source(snap_uri, snapshot.text), *fn.printed),)
    if report.lowered and fn.module_lines:
        first, last = fn.module_lines[0]
        parts = [(f"ƒ {fn.display_name}", (uris.make("llvm", "module.ll", doc, version), _lines_range(first, last)),
                  f"{fn.name}: its lines in module.ll")]
    else:  # not lowered: the name shows where the function is in the snapshot
        parts = [(f"ƒ {fn.display_name}", in_snapshot, f"{fn.name} in the module after FuseOps")]
    if fn.llvm_ir:
        parts.append(("LLVM IR", (uris.make("llvm", f"{fn.name}.ll", doc, version),), None))
    if fn.schedule_steps:  # its text is made by the worker when the lens is clicked
        steps = fn.schedule_steps
        parts.append((f"schedule ({steps} step{'s' * (steps != 1)})",
                      (uris.make("schedule", f"{fn.name}.txt", doc, version),), None))
    parts.append((f"passes ({fn.passes})", in_snapshot,
                  "passes that changed its expressions themselves (renumbering aside)"))
    return convert.position(built.source, fn.anchor[0]).line, parts


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    @guarded(default=[])
    def code_lens(params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        built = server.builds.current(uri)
        partitioned = byoc.lenses(server, uri, built)  # external functions; a pattern table's matches
        if built is not None:
            fused = report_lenses(built)
        else:
            fused = stale_lenses(server, uri)
        return fused + partitioned + profile_lenses(server, uri)  # above @main: profile_lens.py


def stale_lenses(server: "RelayLensServer", uri: str) -> list[lsp.CodeLens]:
    """The last build's lenses, moved to where their expressions are in the current text
    and marked stale, until a build of this version replaces them: the file does not jump
    on every edit as lenses go and come back."""
    latest = server.builds.find(uri, None)
    doc = server.documents.opened(uri)
    if latest is None or doc is None:
        return []
    text = doc.text
    now = Source(uri, text)
    why = "rebuilding…" if server.builds.building(uri) else "out of date (the text has errors)"
    moved = offset_mapper(text, latest.report.text)  # the built text's offsets in the current one
    return report_lenses(latest, lambda fn: convert.line(now, moved(fn.anchor[0])), why)
