"""The slow path's part of a hover on a source expression (Markdown, appended by
hover.py): the frontend layer(s); for each pass that changed the expression, what it
became, linked to that pass's snapshot; the fused function and its LLVM IR, linked.

Read only from the build of the document's current version; while that build is due
or running the part says *building…*, and with no build (the text has errors) it is
absent.  Links are `relaylens:` URIs (docs/lsp.md) with a `#L<line>` hint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from ..slow import uris
from ..slow.report import ExprReport

if TYPE_CHECKING:
    from ..server import RelayLensServer

SHOWN_CHANGES = 6


def provenance_markdown(server: "RelayLensServer", uri: str, key: tuple[int, int], text: str,
                        position: lsp.Position) -> str | None:
    """Markdown for the expression at `key` (offsets into `text`, the analysed text, which
    may be older than the document; the expression at `position` is then looked up)."""
    built = server.builds.current(uri)
    if built is None:
        return "_building…_" if server.builds.building(uri) else None
    report = built.report
    if report.text == text:
        expr = report.expr(key)
    else:
        expr = report.expr_at(convert.offset(built.source, position))
    if expr is None:
        return None
    return describe(expr, report.uri, report.version,
                    report.function(expr.fused) if expr.fused else None)


def describe(expr: ExprReport, doc: str, version: int | None, fn) -> str:
    parts: list[str] = []
    if expr.layers:
        parts.append("**frontend layer" + "s" * (len(expr.layers) > 1) + "**: "
                     + ", ".join(f"`{layer}`" for layer in expr.layers))
    lines = []
    for change in expr.changes[:SHOWN_CHANGES]:
        link = uris.make("pass", f"{change.index}-{change.pass_name}.relay", doc, version)
        title = f"#{change.index} {change.pass_name}"
        if not change.became:
            lines.append(f"- [{title}]({link}): gone (folded or removed)")
            continue
        shown = [b for b in change.became if b[0]]
        if not shown:
            lines.append(f"- [{title}]({link}): changed")
            continue
        line, snippet = shown[0]
        more = f" (and {len(change.became) - 1} more)" if len(change.became) > 1 else ""
        lines.append(f"- [{title}]({link}#L{line}): `{snippet}` (line {line}){more}")
    if len(expr.changes) > SHOWN_CHANGES:
        lines.append(f"- … and {len(expr.changes) - SHOWN_CHANGES} more passes")
    parts.append("**passes**\n" + "\n".join(lines) if lines else "no pass changed it")
    if fn is not None:
        links = []
        if fn.llvm_ir:
            links.append(f"[LLVM IR]({uris.make('llvm', f'{fn.name}.ll', doc, version)})")
        if fn.module_lines:
            first = fn.module_lines[0][0]
            links.append(f"[in module.ll]({uris.make('llvm', 'module.ll', doc, version)}#L{first})")
        if fn.schedule_text:
            links.append(f"[schedule]({uris.make('schedule', f'{fn.name}.txt', doc, version)})")
        parts.append(f"**fused into** `{fn.name}`" + (" · " + " · ".join(links) if links else ""))
    return "\n\n".join(parts)
