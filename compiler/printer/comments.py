"""The trailing comments of printed expressions (reference §6): ` /* ty=T span=S */`.

A span prints its origins as `printed_origins` chooses them: a document range as
`source:line:col` of its start, a layer origin as `name:line:col`; several origins as a
list, `span=[a:1:2, b:0:0]` (our own syntax; TVM never printed more than one).  A name is
double-quoted, with `\\"` and `\\\\` escaped, when it is empty or holds whitespace, a
comma, a bracket, a quote or a comment delimiter (then `\\*` and `\\/` too); otherwise it is
bare.
"""

from __future__ import annotations

import re

from ..ir.span import AnySpan, LayerSpan, Span, printed_origins
from ..ir.types import Type
from .types import print_type

_NEEDS_QUOTES = re.compile(r'[\s,\[\]"]|/\*|\*/')


def span_name(name: str) -> str:
    if name and not _NEEDS_QUOTES.search(name):
        return name
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    if "/*" in name or "*/" in name:
        # Block comments nest and know no strings: a quoted `*/` still ends the comment (an
        # ONNX node named `a */ b` imported to text no parser read back), so no `*` or `/`
        # of such a name stays bare; the reader drops every backslash escape.
        escaped = escaped.replace("*", "\\*").replace("/", "\\/")
    return f'"{escaped}"'


def origin_text(origin: Span | LayerSpan) -> str:
    return f"{span_name(origin.name)}:{origin.line}:{origin.col}"


def span_text(span: AnySpan) -> str:
    """What follows `span=`: one origin, or several in brackets."""
    origins = printed_origins(span)
    if len(origins) == 1:
        return origin_text(origins[0])
    return "[" + ", ".join(origin_text(o) for o in origins) + "]"


def annotation(ty: Type | str | None, span: AnySpan | None) -> str:
    """` /* ty=T span=S */` with the parts that are given, or "" when neither is (the
    type may come already printed)."""
    parts = []
    if ty is not None:
        parts.append("ty=" + (ty if isinstance(ty, str) else print_type(ty)))
    if span is not None and printed_origins(span):
        parts.append("span=" + span_text(span))
    return f" /* {' '.join(parts)} */" if parts else ""
