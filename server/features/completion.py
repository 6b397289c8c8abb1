"""textDocument/completion: what may be typed at the cursor, also in text that does not parse.

The place is read from the text around the cursor (`cursor.cursor_context`): the word
being typed and its sigil, the call it sits in, whether a type is expected.  Names come
from the latest analysis and from the last one without syntax errors (the cursor carried
over to each one's text by `map_offset`), plus the binders typed since (`typed_binders`):

    %...            the locals visible at the cursor, then the graph bindings before it
    @...            globals
    after `:`/`->`  `Tensor[...]`, dtypes, the document's types and type variables
    Tensor[s, |]    dtypes
    op(..., |)      the op's attributes not written yet (`name=default` as a snippet),
                    then operators
    elsewhere       operators (a snippet with the positional arguments), constructors,
                    keywords

Every item replaces the whole word typed so far (a `textEdit` over it, so `nn.co` becomes
`nn.conv2d` whatever the client counts as a word); snippets only for clients that take them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from .. import convert
from ...compiler.ir.dtypes import DTYPE_NAMES
from ...compiler.ir.expr import Var
from ...compiler.ir.span import Source
from ...compiler.printer import print_type
from ..cursor import cursor_context
from ..known_ops import known_ops
from ..text_edits import common_prefix, map_offset, typed_binders
from . import guarded, text_for
from .hover import signature as global_signature, type_text

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..server import RelayLensServer

TRIGGERS = ["%", "@", ".", ":"]
KEYWORDS = ("let", "fn", "if", "match", "free_var", "ref", "ref_read", "ref_write", "True", "False")
K = lsp.CompletionItemKind


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("}", "\\}")


class Items:
    """Completion items over one replaced range, each label once."""

    def __init__(self, rng: lsp.Range, snippets: bool) -> None:
        self.range = rng
        self.snippets = snippets
        self.items: list[lsp.CompletionItem] = []
        self._labels: set[str] = set()

    def add(self, label: str, kind, *, insert: str | None = None, snippet: str | None = None,
            detail: str | None = None, doc: str | None = None, sort: str = "5") -> None:
        if label in self._labels:
            return
        self._labels.add(label)
        fmt = None
        text = insert if insert is not None else label
        if snippet is not None and self.snippets:
            text, fmt = snippet, lsp.InsertTextFormat.Snippet
        self.items.append(lsp.CompletionItem(
            label=label, kind=kind, detail=detail, documentation=doc or None,
            sort_text=f"{sort}{label}", filter_text=label,
            insert_text_format=fmt, text_edit=lsp.TextEdit(range=self.range, new_text=text)))


def _analyses(server: "RelayLensServer", uri: str) -> list["Analysis"]:
    out = []
    for analysis in (server.analyses.latest(uri), server.analyses.good(uri)):
        if analysis is not None and analysis not in out:
            out.append(analysis)
    return out


def _ops(items: Items, followed_by_paren: bool, sort: str = "5") -> None:
    for op in known_ops().values():
        args = list(op.inputs) if op.inputs is not None else ["args"]
        snippet = None
        if not followed_by_paren:
            snippet = op.name + "(" + ", ".join(
                f"${{{i}:{_escape(a)}}}" for i, a in enumerate(args, 1)) + ")$0"
        items.add(op.name, K.Function, snippet=snippet, detail=op.signature(),
                  doc=op.doc, sort=sort)


def _attrs(items: Items, op, written: set[str]) -> None:
    for i, attr in enumerate(op.attrs):
        if attr.name in written:
            continue
        default = attr.default_text()
        value = "" if attr.required else _escape(default)
        doc = "\n".join(x for x in (attr.doc, f"{attr.kind.name}; default {default}") if x)
        items.add(attr.name, K.Property, insert=attr.name + "=",
                  snippet=f"{attr.name}=${{1:{value}}}" if value else f"{attr.name}=$1",
                  detail=f"= {default}", doc=doc, sort=f"0{i:03d}")


def _locals(items: Items, analyses: list["Analysis"], text: str, offset: int) -> None:
    for analysis in analyses:
        at = map_offset(analysis.source.text, text, offset)
        scopes = analysis.syntax.scopes
        for symbol in sorted(scopes.locals_at(at), key=lambda s: s.name):
            var = symbol.node
            ty = type_text(var.type_annotation or var.ty) if isinstance(var, Var) else None
            kind = "parameter" if id(var) in scopes.params else "local"
            items.add("%" + symbol.name, K.Variable, detail=f"{kind}: {ty}" if ty else kind,
                      sort="1")
        for rank, symbol in enumerate(scopes.graph_at(at)):
            ty = type_text(getattr(symbol.node, "ty", None))
            line = analysis.source.line_text(symbol.definition.line).strip()
            items.add("%" + symbol.name, K.Variable, detail=ty or line, doc=line,
                      sort=f"2{rank:05d}")
    # binders typed since the last analysis without syntax errors (or in this definition)
    good = [a for a in analyses if not a.has_syntax_errors]
    if any(a.source.text == text for a in good):
        return
    if good:
        start = min(common_prefix(a.source.text, text) for a in good)
    else:
        start = max(text.rfind("def ", 0, offset), 0)
    start = text.rfind("\n", 0, start) + 1
    for name in typed_binders(text, start, offset):
        items.add(name, K.Variable, detail="typed since the last analysis", sort="3")


def _globals(items: Items, analyses: list["Analysis"]) -> None:
    for analysis in analyses:
        module = analysis.result.module
        for symbol in analysis.index.by_kind("global"):
            func = module.functions.get(symbol.node)
            detail = global_signature(symbol.name, func) if func is not None else None
            items.add("@" + symbol.name, K.Function, detail=detail, sort="1")


def _types(items: Items, analyses: list["Analysis"], text: str, offset: int, dtypes_only: bool) -> None:
    for i, dtype in enumerate(DTYPE_NAMES):
        items.add(dtype, K.Struct, detail="dtype", sort=f"2{i:02d}")
    if dtypes_only:
        return
    items.add("Tensor", K.Class, snippet="Tensor[(${1}), ${2:float32}]", detail="Tensor[(shape), dtype]",
              sort="0")
    for analysis in analyses:
        at = map_offset(analysis.source.text, text, offset)
        for symbol in analysis.index.by_kind("type"):
            items.add(symbol.name, K.Enum, detail="type", sort="1")
        for symbol in analysis.syntax.scopes.type_vars_at(at):
            items.add(symbol.name, K.TypeParameter, detail="type variable", sort="1")


def _constructors(items: Items, analyses: list["Analysis"]) -> None:
    for analysis in analyses:
        for symbol in analysis.index.by_kind("constructor"):
            ctor = symbol.node
            fields = getattr(ctor, "inputs", ())
            detail = None
            try:
                detail = symbol.name + (f"({', '.join(print_type(t) for t in fields)})" if fields else "")
            except Exception:  # noqa: BLE001
                pass
            items.add(symbol.name, K.EnumMember, detail=detail, sort="4")


def complete(server: "RelayLensServer", uri: str, text: str, pos: lsp.Position) -> lsp.CompletionList | None:
    source = Source(uri, text)
    offset = convert.offset(source, pos)
    cursor = cursor_context(text, offset)
    if cursor.in_comment or cursor.in_string or cursor.shape_position:
        return None
    prefix = cursor.prefix
    if prefix[:1].isdigit():
        return None
    snippets = get_capability(server.client_capabilities,
                              "text_document.completion.completion_item.snippet_support", False)
    items = Items(lsp.Range(start=convert.back(pos, prefix), end=pos), snippets)
    analyses = _analyses(server, uri)
    followed_by_paren = text[offset : offset + 1] == "("
    if prefix.startswith("%"):
        _locals(items, analyses, text, offset)
    elif prefix.startswith("@"):
        _globals(items, analyses)
    elif cursor.dtype_position or cursor.type_position:
        _types(items, analyses, text, offset, cursor.dtype_position)
    elif cursor.call is not None and cursor.call.keyword is not None:
        return None  # an attribute's value
    else:
        call = cursor.call
        op = known_ops().get(call.callee) if call is not None and not call.in_value else None
        if op is not None:
            _attrs(items, op, call.written)
        _ops(items, followed_by_paren)
        _constructors(items, analyses)
        if call is None:
            for word in KEYWORDS:
                items.add(word, K.Keyword, sort="6")
    return lsp.CompletionList(is_incomplete=False, items=items.items)


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=TRIGGERS))
    @guarded()
    def completion(params: lsp.CompletionParams) -> lsp.CompletionList | None:
        uri = params.text_document.uri
        text = text_for(server, uri)
        if text is None:
            return None
        return complete(server, uri, text, params.position)
