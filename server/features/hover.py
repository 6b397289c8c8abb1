"""textDocument/hover: what the name or expression under the cursor is, in Markdown.

For a symbol: its kind and name and, when known, its type (a local's annotation or
inferred `ty`); for a global, its signature line; for a type, its definition; for a
constructor, its fields and the type it builds.  On an expression: the story first — what
it is and its type, then what the slow path knows (provenance_hover.py): its frontend
layers, its fused function, what each pass made of it.  On an operator's name, the op's
signature, doc, fusion pattern and the attributes the call writes follow below.

Inside a virtual document (`relaylens:` URIs) the hover is virtual_documents.py's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from ...compiler.ir.expr import Call, Constructor, Function, GlobalVar, Var
from ...compiler.ops import get_op
from ...compiler.printer.literals import print_attr_value
from ...compiler.ir.module import TypeData
from ...compiler.parser import Symbol
from ...compiler.printer import print_type
from ...compiler.printer.types import print_type_def, type_params_text
from ..reading import Reading
from ..slow.uris import is_virtual
from . import analysis_for, guarded, virtual_documents
from .byoc import hover_markdown as byoc_markdown
from .navigation import symbol_at
from .provenance_hover import bound_markdown, parameter_markdown, provenance_markdown

if TYPE_CHECKING:
    from ..server import RelayLensServer

KIND_NAMES = {"local": "local variable", "graph": "graph binding", "global": "global function",
              "type": "type", "constructor": "constructor", "type_var": "type variable"}


def type_text(ty) -> str | None:
    """`ty` as the printer writes it; None for no type, or one the printer cannot write
    (completion and signature help show these too)."""
    try:
        return print_type(ty) if ty is not None else None
    except Exception:  # noqa: BLE001 -- a type the printer cannot write is shown as none
        return None


def signature(name: str, func: Function) -> str:
    params = ", ".join(
        f"%{p.name}" + (f": {t}" if (t := type_text(p.type_annotation)) else "")
        for p in func.params)
    ret = type_text(func.ret_type)
    return f"def @{name}{type_params_text(func.type_params)}({params})" + (f" -> {ret}" if ret else "")


def describe(symbol: Symbol, module) -> str:
    """The Markdown shown for `symbol`."""
    title = f"**{KIND_NAMES.get(symbol.kind, symbol.kind)}** `{symbol.sigil}{symbol.name}`"
    node = symbol.node
    code = None
    if isinstance(node, GlobalVar) and node in module.functions:
        code = signature(node.name, module.functions[node])
    elif isinstance(node, TypeData):
        code = print_type_def(node)
    elif isinstance(node, Constructor):
        fields = f"({', '.join(print_type(t) for t in node.inputs)})" if node.inputs else ""
        code = f"{node.name}{fields}  /* of type {node.belongs_to.name} */"
    else:
        ty = None
        if isinstance(node, Var):
            ty = node.type_annotation or node.ty
        elif node is not None:
            ty = getattr(node, "ty", None)
        if (text := type_text(ty)) is not None:
            code = f"{symbol.sigil}{symbol.name}: {text}"
    if symbol.definition is None:
        title += " — not defined"
    return title if code is None else f"{title}\n\n```relay\n{code}\n```"


def describe_op(call: Call) -> str:
    """Markdown for an operator, below the expression's story: signature, doc, fusion
    pattern, the attributes this call writes (a table) and the rest at their defaults
    (one line)."""
    opdef = get_op(call.op.name)
    if opdef is None:
        return f"**unknown operator** `{call.op.name}`"
    lines = [f"```relay\n{opdef.signature()}\n```", "", opdef.doc]
    if opdef.pattern is not None:
        lines += ["", f"Fusion pattern: {opdef.pattern.label}"]
    written = [a for a in opdef.attrs if a.name in call.attrs]
    rows = [f"| `{a.name}` | {_attr_given(call, a.name)} | {a.default_text()} | {a.doc} |" for a in written]
    if rows:
        lines += ["", "| attribute | here | default | |", "| --- | --- | --- | --- |", *rows]
    defaults = [a.name for a in opdef.attrs if a.name not in call.attrs]
    if defaults:
        lines += ["", "at their defaults: " + ", ".join(f"`{name}`" for name in defaults)]
    return "\n".join(lines)


def _attr_given(call: Call, name: str) -> str:
    if name not in call.attrs:
        return "—"
    try:
        return f"`{print_attr_value(call.attrs[name])}`"
    except Exception:  # an odd value: say nothing rather than fail the hover
        return "…"


def describe_expr(node) -> str | None:
    """The first line of a hover on an expression: what it is and its type."""
    ty = type_text(node.ty)
    if ty is None:
        return None
    if isinstance(node, Call) and hasattr(node.op, "name"):
        kind = f"**call** `{node.op.name}`"
    else:
        kind = f"**{type(node).__name__.lower()}**"
    return f"{kind}\n\n```relay\n: {ty}\n```"


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guarded()
    def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        uri = params.text_document.uri
        if is_virtual(uri):
            return virtual_documents.hover(server, params)
        found = symbol_at(server, uri, params.position)
        if found is not None:
            analysis, symbol, reading = found
            span = analysis.index.at(reading.offset(params.position))[1]  # type: ignore[arg-type]
            where = reading.range_of(span)
            if where is None:
                return None
            text = describe(symbol, analysis.result.module)
            module = analysis.result.module
            if isinstance(symbol.node, Var) and "main" in module and symbol.node in module["main"].params:
                text = _joined(text, bound_markdown(server, uri, symbol.name)
                               or parameter_markdown(server, uri, symbol.name))
            return _markdown(text, where)
        analysis = analysis_for(server, uri, typing=True)  # as symbol_at: types as far as known
        if analysis is None:
            return None
        reading = Reading(analysis, server.documents.get(uri).text)  # the analysis may be of the text before an edit
        offset = reading.offset(params.position)
        hit = analysis.exprs.at(offset) if offset is not None else None
        if hit is None or reading.offset_range(hit[0], hit[1]) is None:
            return None
        start, end, node = hit
        slow = _joined(byoc_markdown(server, uri, (start, end), analysis.source.text, params.position),
                       provenance_markdown(server, uri, (start, end), analysis.source.text, params.position))
        story = _joined(describe_expr(node) or (f"**call** `{node.op.name}`" if isinstance(node, Call) else None), slow)
        name = analysis.exprs.op_name_range(start, node)
        if name is not None and name[0] <= offset < name[1]:  # on the operator's name: its docs below
            where = reading.offset_range(*name)
            return _markdown(_joined(story, describe_op(node)), where) if where is not None else None
        if story is None:
            return None
        return _markdown(story, reading.offset_range(start, end))  # type: ignore[arg-type]


def _joined(first: str | None, then: str | None) -> str | None:
    if first is None or then is None:
        return first or then
    return f"{first}\n\n---\n\n{then}"


def _markdown(value: str, where: lsp.Range) -> lsp.Hover:
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=value), range=where)
