"""textDocument/hover: what the name under the cursor is, in Markdown.

For a symbol: its kind and name and, when known, its type (a local's annotation or
inferred `ty`); for a global, its signature line; for a type, its definition; for a
constructor, its fields and the type it builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from ...compiler.ir.expr import Constructor, Function, GlobalVar, Var
from ...compiler.ir.module import TypeData
from ...compiler.parser import Symbol
from ...compiler.printer import print_type
from ...compiler.printer.types import print_type_def, type_params_text
from . import guarded
from .navigation import symbol_at

if TYPE_CHECKING:
    from ..server import RelayLensServer

KIND_NAMES = {"local": "local variable", "graph": "graph binding", "global": "global function",
              "type": "type", "constructor": "constructor", "type_var": "type variable"}


def _type_text(ty) -> str | None:
    try:
        return print_type(ty) if ty is not None else None
    except TypeError:
        return None


def signature(name: str, func: Function) -> str:
    params = ", ".join(
        f"%{p.name}" + (f": {t}" if (t := _type_text(p.type_annotation)) else "")
        for p in func.params)
    ret = _type_text(func.ret_type)
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
        if (text := _type_text(ty)) is not None:
            code = f"{symbol.sigil}{symbol.name}: {text}"
    if symbol.definition is None:
        title += " — not defined"
    return title if code is None else f"{title}\n\n```relay\n{code}\n```"


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guarded()
    def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        found = symbol_at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        analysis, symbol = found
        span = analysis.index.at(convert.offset(analysis.source, params.position))[1]
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown,
                                       value=describe(symbol, analysis.result.module)),
            range=convert.range_of(span))
