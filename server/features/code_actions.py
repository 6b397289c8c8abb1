"""textDocument/codeAction: the quick fixes the compiler attached to its diagnostics
(did-you-mean for an operator, attribute or variable; a missing ')').

The fixes travel with each LSP diagnostic in its `data` (convert.diagnostic), so the
client hands back exactly what was published: a fix is offered for the text it was made
for, and nothing is recomputed here.  A fix is preferred when its diagnostic has only one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from . import guarded

if TYPE_CHECKING:
    from ..server import RelayLensServer


def _fixes(diagnostic: lsp.Diagnostic) -> list[dict[str, Any]]:
    data = diagnostic.data
    fixes = data.get("fixes") if isinstance(data, dict) else None
    return [f for f in fixes if isinstance(f, dict)] if isinstance(fixes, list) else []


def quick_fixes(uri: str, diagnostics: list[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    actions = []
    for diagnostic in diagnostics:
        fixes = _fixes(diagnostic)
        for fix in fixes:
            rng = fix.get("range") or {}
            edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(**rng["start"]), end=lsp.Position(**rng["end"])),
                                new_text=str(fix.get("newText", "")))
            actions.append(lsp.CodeAction(title=str(fix.get("title", "Fix")), kind=lsp.CodeActionKind.QuickFix,
                                          diagnostics=[diagnostic], is_preferred=len(fixes) == 1,
                                          edit=lsp.WorkspaceEdit(changes={uri: [edit]})))
    return actions


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    @guarded(default=[])
    def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return quick_fixes(params.text_document.uri, params.context.diagnostics)
