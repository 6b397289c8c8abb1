"""textDocument/formatting: the whole document rewritten by the printer, or nothing.

The printer writes what the IR holds, so formatting refuses (no edit, and a
window/showMessage saying why) whenever that would lose something the user wrote:

* a document over the size limit (only parsed: analysis.py);
* syntax or name errors (a statement the parser dropped, `__error__` in the IR);
* comments other than the printer's own `/* ty=... span=... */` annotations, which the
  printer cannot place back;
* `extern type` definitions, and a `#[metadata]` section holding anything but the
  constants the module uses, or that could not be read;
* a bare expression file (formatting would turn it into `def @main`);
* a result that does not read back as the same module (checked by parsing the output and
  comparing structurally, types included), or that has fewer annotations than the input.

`ty=` annotations are kept (printed where the IR has a type from one); `span=` annotations
are kept with their named origins, and none is invented for a node that had none.  The
definitions keep their order and variables their names (the printer's renaming is per
definition here, not across the file).  Metadata references are renumbered in print order,
with the section rewritten to match.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from ...compiler.ir.span import Span, document_span, sequential
from ...compiler.ir.structural_equal import first_mismatch
from ...compiler.check import check_text
from ...compiler.parser.annotations import is_annotation, split_annotation
from ...compiler.printer import NotePolicy, Printer
from . import current_analysis_for, guarded

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..server import RelayLensServer


class Refusal(Exception):
    """Why the document is left as it is."""


def _notes(*, types: bool, spans: bool, commented: Mapping) -> NotePolicy:
    """The annotations written back: `ty=` only where the user wrote one, `span=` only for
    named origins (a node parsed without a `span=` comment has only its document range:
    nothing to write)."""
    def note(expr):
        ty = expr.ty if types and expr in commented else None
        span = None
        if spans and expr.span is not None:
            span = sequential(*(o for o in expr.span.origins() if not isinstance(o, Span)))
        return ty, span
    return note


def _start(node, source) -> int:
    doc = document_span(node.span, source)
    return doc.start if doc is not None else 0


def _errors(result) -> list:
    """The errors that stop formatting: all but a missing metadata section's (the printer
    keeps such references as written)."""
    return [d for d in result.diagnostics
            if d.is_error and not (d.source == "metadata" and result.scan.metadata is None)]


def _check(analysis: "Analysis") -> tuple[bool, bool]:
    """Refusal unless the document can be printed without loss; which annotations it has."""
    if analysis.syntax_only:
        raise Refusal("the document is over the size limit, so it is only parsed (see its diagnostic)")
    result, source = analysis.result, analysis.source
    scan = result.scan
    errors = _errors(result)
    if errors:
        loc = errors[0].location()
        where = f" (line {loc[1]}: {errors[0].message})" if loc else f" ({errors[0].message})"
        raise Refusal(f"the document has {len(errors)} error(s){where}; fix them first so that "
                      "nothing you wrote is lost")
    plain = [c for c in scan.comments if not (c.block and is_annotation(c.body))]
    if plain:
        line = source.location(plain[0].start)[0]
        raise Refusal(f"the document has {len(plain)} comment(s) (the first on line {line}) "
                      "that the printer cannot keep; only /* ty=... span=... */ annotations "
                      "survive formatting")
    if not scan.items:
        raise Refusal("this is a bare expression, not a module; formatting would make it a def @main")
    if any(item.keyword == "extern" for item in scan.items):
        raise Refusal("the printer does not write `extern type` definitions back")
    table = result.module.metadata
    if table is not None and (set(table.keys()) - {"relay.Constant"}):
        raise Refusal("the #[metadata] section holds entries other than constants "
                      f"({', '.join(k for k in table.keys() if k != 'relay.Constant')}), "
                      "which the printer does not write back")
    notes = [split_annotation(c.body) for c in scan.comments]
    types = any(n is not None and n.type_text for n in notes)
    spans = any(n is not None and n.spans for n in notes)
    return types, spans


def format_text(analysis: "Analysis") -> str:
    """The printed document, or Refusal."""
    types, spans = _check(analysis)
    result, source = analysis.result, analysis.source
    module = result.module
    printer = Printer(order=lambda item: _start(item, source), names_per_definition=True,
                      note=_notes(types=types, spans=spans, commented=analysis.commented))
    printed = printer.print_module(module)
    table = module.metadata
    if table is not None and (table.count("relay.Constant") != len(printed.constants)
                              or any(a is None for a in printed.constants)):
        raise Refusal("the #[metadata] section holds constants the module does not use; "
                      "the printer would drop them")
    _verify(analysis, printed.text, types, spans)
    return printed.text


def _count(comments, what: str) -> int:
    return sum(1 for c in comments if c.block and (n := split_annotation(c.body)) is not None
               and (n.type_text if what == "ty" else n.spans))


def _verify(analysis: "Analysis", text: str, types: bool, spans: bool) -> None:
    """The printed text must read back as the same module, with every annotation."""
    again = check_text(text, analysis.source.name).parsed  # typed, as the document's analysis is
    errors = _errors(again)
    if errors:
        raise Refusal(f"the printer's output does not read back ({errors[0].message}); "
                      "please report this")
    mismatch = first_mismatch(analysis.result.module, again.module, types=types)
    if mismatch is not None:
        raise Refusal(f"the printer's output differs from the document ({mismatch}); please report this")
    before, after = analysis.result.scan.comments, again.scan.comments
    for what in ("ty", "span"):
        lost = _count(before, what) - _count(after, what)
        if lost > 0:
            raise Refusal(f"{lost} {what}= annotation(s) sit where the printer cannot write "
                          "them (after a let, if or match, say)")


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    @guarded()
    def formatting(params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
        analysis = current_analysis_for(server, params.text_document.uri)
        if analysis is None:
            return None
        try:
            text = format_text(analysis)
        except Refusal as why:
            server.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Warning, message=f"RelayLens did not format this document: {why}."))
            return None
        if text == analysis.source.text:
            return []
        return [lsp.TextEdit(range=convert.whole_range(analysis.source), new_text=text)]
