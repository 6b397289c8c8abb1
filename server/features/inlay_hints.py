"""textDocument/inlayHint: the type of each binding, right after its name.

    %0 = nn.conv2d(%x, %w, ...);     shows   %0: (1, 64, 56, 56) f32 = nn.conv2d(...)
    let %y = add(%0, 1f);            shows   let %y: (1, 64, 56, 56) f32 = add(...)

A hint goes after the name of every graph binding (`%N = value`) and every `let %x = value`
whose type the fast path inferred (analysis.py), unless the text already says it: a `let`
with a type annotation, or a value (or let variable) whose `/* ty=... */` comment gives
the same type.  A comment giving another type does not hide the hint (the check reports
the mismatch).  The label is the short form below; its tooltip is the type in full.

Short form (docs/lsp.md, "Inlay hints"): a tensor is its shape then its dtype,
`(1, 64, 56, 56) f32`, a 0-d tensor its dtype alone (`f32`, as Relay writes `float32`);
dtypes shorten `float`→`f`, `bfloat`→`bf`, `uint`→`u`, `int`→`i` before the bits (`i64`,
`u8`, `f16x4`), `bool` stays; a tuple is its fields' short forms, `(f32, (4) i64)`;
any other type (functions, ADTs, refs) is printed as Relay writes it.  Labels longer than
`WIDTH` characters are cut with `…`.

Only the requested range is answered: the bindings are found by bisection in the symbol
index (sorted once per analysis, by `Analysis.prepare`), so a screen of a 20,000-line file
costs its own bindings, not the file's.  The setting `relaylens.inlayHints.types`
(settings.py) turns type hints off.  After a profile (relaylens/profile, profile.py), the
hints of its figures are added on each fused group's first line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from ...compiler.ir.expr import Expr, Var
from ...compiler.ir.types import TensorType, TupleType, Type
from ...compiler.printer import print_type
from ...compiler.printer.literals import dim_text
from . import analysis_for, guarded, profile, settings

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..server import RelayLensServer

WIDTH = 60
BOUND = re.compile(r"[ \t]*=(?![=>])")  # what follows the name of a binding (not `=>` of a clause)
DTYPE = re.compile(r"(bfloat|float|uint|int)(\d+(?:x\d+)?)")
SHORT_KIND = {"bfloat": "bf", "float": "f", "uint": "u", "int": "i"}


def short_dtype(dtype: str) -> str:
    m = DTYPE.fullmatch(dtype)
    return SHORT_KIND[m[1]] + m[2] if m else dtype


def short_type(ty: Type) -> str:
    """The short form of a type (module docstring)."""
    if isinstance(ty, TensorType):
        if not ty.shape:
            return short_dtype(ty.dtype)
        return f"({', '.join(dim_text(d) for d in ty.shape)}) {short_dtype(ty.dtype)}"
    if isinstance(ty, TupleType):
        fields = [short_type(f) for f in ty.fields]
        return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
    return print_type(ty)


def _cut(text: str) -> str:
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def type_hints(analysis: "Analysis", start: int, end: int) -> list[lsp.InlayHint]:
    """Hints for the bindings whose name starts in [start, end) of the analysed text."""
    source = analysis.source
    text = source.text
    entries = analysis.index.entries()
    lo, hi = analysis.index.between(start, end)
    hints = []
    for span, symbol in entries[lo:hi]:
        if span is not symbol.definition or symbol.kind not in ("graph", "local"):
            continue
        bound = BOUND.match(text, span.end)
        if bound is None:  # a parameter or a pattern variable, or `let %x: T =` (written)
            continue
        shown = _unsaid_type(analysis, symbol.node, bound.end())
        if shown is None:
            continue
        ty, written = shown
        hints.append(lsp.InlayHint(
            position=convert.position(source, span.end),
            label=": " + _cut(short_type(ty)),
            kind=lsp.InlayHintKind.Type,
            tooltip=written,
        ))
    return hints


def _unsaid_type(analysis: "Analysis", node: object, value_at: int) -> tuple[Type, str] | None:
    """A binding's type and its full text, or None: unknown, or already in the text."""
    written = _text(getattr(node, "ty", None))  # inference leaves `ty` None unless complete
    if written is None:
        return None
    said = [analysis.commented.get(node)]
    if isinstance(node, Var):  # a let: its value is the expression right after `=`
        said.append(analysis.commented.get(_value_at(analysis, value_at, node.ty)))
    if any(_text(t) == written for t in said):
        return None
    return node.ty, written


def _text(ty: Type | None) -> str | None:
    try:
        return print_type(ty) if ty is not None else None
    except TypeError:  # a type the printer does not know: say nothing
        return None


def _value_at(analysis: "Analysis", offset: int, ty: Type) -> Expr | None:
    """The let's value: the expression of type `ty` that starts at the first non-blank at
    or after `offset` (the innermost expression there is the value when it starts there)."""
    text = analysis.source.text
    while offset < len(text) and text[offset] in " \t\r\n":
        offset += 1
    hit = analysis.exprs.at(offset)
    return hit[2] if hit is not None and hit[0] == offset and hit[2].ty == ty else None


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))
    @guarded(default=[])
    def inlay_hint(params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        analysis = analysis_for(server, params.text_document.uri)
        if analysis is None or analysis.syntax_only:
            return []
        source = analysis.source
        start = convert.offset(source, params.range.start)
        end = convert.offset(source, params.range.end)
        types = type_hints(analysis, start, end) if settings.of(server).inlay_types else []
        return types + profile.profile_hints(server, params.text_document.uri, source, start, end)
