"""textDocument/prepareRename and textDocument/rename: `%` locals, `@` globals, type names
and constructors, everywhere the symbol index saw them (type names inside `ty=` comments
included).

prepareRename answers the name without its sigil (what the user edits) or refuses with a
reason: an operator, keyword, literal, graph binding `%N` (numbered by position), a type
variable, or a document with syntax errors (a definition that did not parse has no
references in the index, and would keep the old name).  rename checks the new name (a
leading sigil of the right kind may be typed or left out) and refuses:

* a name its class cannot take: `%` names follow the grammar's LOCAL terminal, `@` names
  GLOBAL, type names and constructors IDENT, minus keywords, `Tensor` and dtype names
  (which the parser would read as types), and for constructors the operator names (a
  constructor would capture every call of that operator);
* a name already taken in scope: another local of that name visible where this one is
  (their regions overlap), another global, type, type variable or constructor.

Edits are computed on the analysis of the current text; ranges go through `convert`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from .. import convert
from ...compiler.parser.lower_types import DTYPE_NAME
from ..known_ops import known_ops
from ..tokens import M, T, shown_keywords, terminal
from . import Refused, current_analysis_for, guarded

if TYPE_CHECKING:
    from ...compiler.parser import Symbol
    from ..analysis import Analysis
    from ..server import RelayLensServer

WHAT = {"local": "variable", "global": "global", "type": "type", "constructor": "constructor"}
_RULES: dict[str, re.Pattern] = {}


def _rule(kind: str) -> re.Pattern:
    if kind not in _RULES:
        name = {"local": "LOCAL", "global": "GLOBAL"}.get(kind, "IDENT")
        _RULES[kind] = re.compile(terminal(name))
    return _RULES[kind]


def _line(analysis: "Analysis", span) -> int:
    return convert.line(analysis.source, span.start) + 1


def _refuse_broken(analysis: "Analysis") -> None:
    errors = [d for d in analysis.result.diagnostics if d.is_error and d.source == "syntax"]
    if errors:
        where = errors[0].location()
        at = f" (the first on line {where[1]})" if where else ""
        raise Refused(f"Cannot rename while the document has syntax errors{at}: "
                      "a definition that does not parse would keep the old name.")


def _not_a_symbol(analysis: "Analysis", offset: int) -> str:
    """Why there is nothing to rename at `offset`, from the token there."""
    if any(c.start <= offset < c.end for c in analysis.result.scan.comments):
        return "Nothing to rename in a comment."
    for start, end, kind, mods in analysis.syntax.tokens:
        if start <= offset <= end:
            text = analysis.source.text[start:end]
            if kind == T["function"] and mods & M["defaultLibrary"]:
                return f"'{text}' is an operator of the library; operators cannot be renamed."
            if kind == T["type"] and mods & M["defaultLibrary"]:
                return f"'{text}' is a built-in type and cannot be renamed."
            if kind == T["keyword"]:
                return f"'{text}' is a keyword and cannot be renamed."
            if kind in (T["number"], T["string"], T["macro"]):
                return "A literal cannot be renamed."
            if kind == T["property"]:
                return f"'{text}' is an operator attribute; its name is fixed by the operator."
        if start > offset:
            break
    return "Nothing to rename here: place the cursor on a %variable, @global, type or constructor."


def target(analysis: "Analysis", offset: int) -> "Symbol":
    """The symbol to rename at `offset`, or Refused with the reason."""
    _refuse_broken(analysis)
    found = analysis.index.at(offset)
    if found is None:
        raise Refused(_not_a_symbol(analysis, offset))
    symbol = found[0]
    if symbol.kind == "graph":
        raise Refused(f"%{symbol.name} is a graph binding, numbered by its position; "
                      "it cannot be renamed.")
    if symbol.kind not in WHAT:
        raise Refused(f"{symbol.name} is a type variable; type variables cannot be renamed.")
    return symbol


def _name_range(analysis: "Analysis", symbol: "Symbol", span) -> lsp.Range:
    return convert.offset_range(analysis.source, span.start + len(symbol.sigil), span.end)


def check_new_name(analysis: "Analysis", symbol: "Symbol", new_name: str) -> str:
    """The new name without its sigil, or Refused."""
    kind, sigil = symbol.kind, symbol.sigil
    name = new_name.strip()
    if sigil and name.startswith(sigil):
        name = name[len(sigil):]
    written = sigil + name
    what = WHAT[kind]
    if not name:
        raise Refused(f"The new {what} name is empty.")
    if not _rule(kind).fullmatch(written):
        rule = {"local": "a letter or '_', then letters, digits, '_' or '/' (parts may be "
                         "joined by '.', '::' or '-')",
                "global": "a letter or '_', then letters, digits, '_' or '/'"}.get(
            kind, "a letter or '_', then letters, digits, '_' or '/'")
        raise Refused(f"'{written}' is not a valid {what} name: a {what} name is "
                      f"{sigil + ' followed by ' if sigil else ''}{rule}.")
    if kind in ("type", "constructor"):
        if name in shown_keywords() or name in ("Tensor", "match", "meta"):
            raise Refused(f"'{name}' is a keyword and cannot name a {what}.")
        if DTYPE_NAME.fullmatch(name):
            raise Refused(f"'{name}' would be read as a dtype, not as a {what}.")
    if kind == "constructor" and (name in known_ops() or name in analysis.syntax.ops_in_text):
        raise Refused(f"'{name}' is an operator name; a constructor of that name would "
                      "capture every call of the operator.")
    _check_collision(analysis, symbol, name)
    return name


def _check_collision(analysis: "Analysis", symbol: "Symbol", name: str) -> None:
    if name == symbol.name:
        return
    index, scopes = analysis.index, analysis.syntax.scopes
    if symbol.kind == "local":
        mine = scopes.region(symbol)
        for other in index.symbols:
            if other.kind != "local" or other.name != name or other.definition is None:
                continue
            theirs = scopes.region(other)
            if mine is None or theirs is None or (mine[0] <= theirs[1] and theirs[0] <= mine[1]):
                raise Refused(f"%{name} is already bound in the scope of %{symbol.name} "
                              f"(line {_line(analysis, other.definition)}); renaming would "
                              "change which variable a name refers to.")
        return
    clashes = {"global": ("global",), "type": ("type", "type_var"),
               "constructor": ("constructor",)}[symbol.kind]
    for other in index.symbols:
        if other.kind in clashes and other.name == name and other is not symbol:
            shown = other.sigil + name
            where = other.definition or (other.references[0] if other.references else None)
            line = f" (line {_line(analysis, where)})" if where is not None else ""
            label = "type variable" if other.kind == "type_var" else WHAT[other.kind]
            raise Refused(f"{shown} already exists as a {label} in this document{line}.")


def edits(analysis: "Analysis", symbol: "Symbol", name: str) -> list[lsp.TextEdit]:
    spans = ([symbol.definition] if symbol.definition is not None else []) + list(symbol.references)
    seen, out = set(), []
    for span in sorted(spans, key=lambda s: s.start):
        if span.start in seen:
            continue
        seen.add(span.start)
        out.append(lsp.TextEdit(range=_name_range(analysis, symbol, span), new_text=name))
    return out


def register(server: "RelayLensServer") -> None:
    def analysis_at(params) -> tuple["Analysis", int]:
        analysis = current_analysis_for(server, params.text_document.uri)
        if analysis is None:
            raise Refused("This document is not open.")
        return analysis, convert.offset(analysis.source, params.position)

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    @guarded()
    def prepare_rename(params: lsp.PrepareRenameParams) -> lsp.PrepareRenamePlaceholder | None:
        analysis, offset = analysis_at(params)
        symbol = target(analysis, offset)
        span = analysis.index.at(offset)[1]
        return lsp.PrepareRenamePlaceholder(range=_name_range(analysis, symbol, span),
                                            placeholder=symbol.name)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    @guarded()
    def rename(params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        analysis, offset = analysis_at(params)
        symbol = target(analysis, offset)
        name = check_new_name(analysis, symbol, params.new_name)
        uri = params.text_document.uri
        changes = edits(analysis, symbol, name) if name != symbol.name else []
        if get_capability(server.client_capabilities,
                          "workspace.workspace_edit.document_changes", False):
            doc = lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=analysis.version)
            return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(doc, changes)])
        return lsp.WorkspaceEdit(changes={uri: changes})
