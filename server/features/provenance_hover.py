"""The slow path's part of a hover on a source expression (Markdown, put right under its
name and type by hover.py): the frontend layer(s); the fused function by its display name,
its symbol and links to its LLVM IR (module.ll at the function, then the function alone)
and schedule, then one line "why: …" naming the FuseOps rule that fused the expression
there or kept it apart; the kernels that put a parameter it reads in the layout it reads
it in, at every run (a weight left unbound, the model's input); for each pass that
changed the expression itself (renumbering aside: compiler/provenance.py), what it was
before and what it became, linked to that pass's snapshot.

Read only from the build of the document's current version; while that build is due
or running the part says *building…*, and with no build (the text has errors) it is
absent.  Links are `relaylens:` URIs (docs/lsp.md) with a `#L<line>` hint: plain Markdown
any client shows (Neovim shows the URI); VS Code's hover follows only some schemes, so the
extension turns them into command links (vscode-client/src/features/hoverLinks.ts).
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
                    report.function(expr.fused) if expr.fused else None, report.movers(expr.range))


def bound_markdown(server: "RelayLensServer", uri: str, name: str) -> str | None:
    """For a hover on @main's parameter `name`: the file whose array the build bound it
    to, when the current build did."""
    built = server.builds.current(uri)
    if built is None or name not in built.report.bound:
        return None
    return (f"**bound** to `{name}` of `{built.report.weights}`: a constant in the build, folded with "
            "what it feeds (the setting `relaylens.params.bind` turns this off)")


def parameter_markdown(server: "RelayLensServer", uri: str, name: str) -> str | None:
    """For a hover on @main's parameter `name` left unbound: the kernels that read it at
    every run, each with those that put it in the shape or layout it reads it in (no pass
    removes or rewrites a parameter, so that is what became of it)."""
    built = server.builds.current(uri)
    if built is None:
        return None
    report = built.report
    found = report.parameters.get(name)
    if found is None:
        return None
    doc, version = report.uri, report.version
    lines = []
    for kernel, via in found.readers:
        fn = report.function(kernel)
        shown = fn.display_name if fn is not None else kernel
        link = (f" · [LLVM IR]({uris.make('llvm', 'module.ll', doc, version)}#L{fn.module_lines[0][0]})"
                if fn is not None and fn.module_lines else "")
        lines.append(f"{shown} · `{kernel}`{link}")
        lines += [f"after {what} · `{name_on_way}`" for name_on_way, what in via]
    head = "**parameter of @main**: no pass removes or rewrites it; each run passes it in"
    if not lines:
        return head + "  \nread by no kernel: @main itself uses it"
    return head + "\n\n**read at every run by**  \n" + "  \n".join(lines)


def describe(expr: ExprReport, doc: str, version: int | None, fn, movers=()) -> str:
    """Frontend layers, then the fused function and the kernels that move a parameter
    into its layout for it at every run (`movers`, FusedReports), then each pass that
    changed the expression itself, as before → after."""
    parts: list[str] = []
    if expr.layers:
        parts.append("**frontend layer" + "s" * (len(expr.layers) > 1) + "**: "
                     + ", ".join(f"`{layer}`" for layer in expr.layers))
    if fn is not None:
        links = []
        if fn.module_lines:  # module.ll at the function, as the ƒ lens opens it (the line colours apply)
            first = fn.module_lines[0][0]
            links.append(f"[LLVM IR]({uris.make('llvm', 'module.ll', doc, version)}#L{first})")
        if fn.llvm_ir:
            links.append(f"[{'alone' if links else 'LLVM IR'}]({uris.make('llvm', f'{fn.name}.ll', doc, version)})")
        if fn.schedule_steps:
            links.append(f"[schedule]({uris.make('schedule', f'{fn.name}.txt', doc, version)})")
        parts.append(f"**fused into** {fn.display_name}  \n`{fn.name}`" + (" · " + " · ".join(links) if links else "")
                     + (f"  \nwhy: {expr.fusion}" if expr.fusion else ""))
    elif expr.fusion:
        parts.append(f"why: {expr.fusion}")
    if movers:
        parts.append("**at every run, beside it**  \n" + "  \n".join(
            f"{m.display_name}{f' of `{m.moves}`' if m.moves else ''}{m.layouts} · `{m.name}`"
            + (f" · [LLVM IR]({uris.make('llvm', 'module.ll', doc, version)}#L{m.module_lines[0][0]})" if m.module_lines else "")
            for m in movers)
            + ("  \n_a weight bound from an .npz is put in its layout once, at build time_" if any(m.moves for m in movers) else ""))
    lines = [_change_line(change, doc, version) for change in expr.changes[:SHOWN_CHANGES]]
    if len(expr.changes) > SHOWN_CHANGES:
        rest = ", ".join(f"#{c.index} {c.pass_name}" for c in expr.changes[SHOWN_CHANGES:])
        lines.append(f"- and {len(expr.changes) - SHOWN_CHANGES} more: {rest}")
    parts.append("**passes that changed it**\n" + "\n".join(lines) if lines else "no pass changed it")
    return "\n\n".join(parts)


def _change_line(change, doc: str, version: int | None) -> str:
    link = uris.make("pass", f"{change.index}-{change.pass_name}.relay", doc, version)
    title = f"#{change.index} {change.pass_name}"
    before = f"`{change.before}` → " if change.before else ""
    if not change.became:
        return f"- [{title}]({link}): {before}gone (folded or removed)"
    shown = [b for b in change.became if b[0]]
    if not shown:
        return f"- [{title}]({link}): changed"
    line, snippet = shown[0]
    others = [str(other) for other, _ in shown[1:]]
    more = f" (and {len(others)} more node{'s' * (len(others) > 1)}: line {', '.join(others)})" if others else ""
    if snippet == change.before:  # rebuilt elsewhere (into a composite, a fused function), text the same
        return f"- [{title}]({link}#L{line}): `{snippet}` moved, unchanged (line {line}){more}"
    return f"- [{title}]({link}#L{line}): {before}`{snippet}` (line {line}){more}"
