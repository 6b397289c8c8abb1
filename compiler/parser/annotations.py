"""Reading back the comments TVM's printer writes after expressions (reference §6):

    add(%0, %1) /* ty=Tensor[(1, 8), float32] span=conv1/Conv:0:0 */

`split_annotation(body)` splits the inside of such a comment into its type text (parsed
later with the grammar's `type` rule) and its spans.  Our own multi-origin form, which TVM
never printed, lists several origins:

    /* span=[conv1/Conv:0:0, "odd, name":0:0] */

A name is bare, or double-quoted with `\\"` and `\\\\` escapes when it holds whitespace,
a comma, a bracket, a quote or a comment delimiter.  The single form splits its
`name:line:col` from the right, so names may hold colons (`onnx::Conv_7:0:0`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..ir.span import LayerSpan

_SPAN_KEY = re.compile(r"(?:^|\s)span=")
_QUOTED = re.compile(r'"((?:\\.|[^"\\])*)"')
_LINE_COL = re.compile(r":(-?\d+):(-?\d+)")


@dataclass(frozen=True, slots=True)
class Annotation:
    type_text: str | None  # the text after `ty=`
    type_offset: int  # where that text starts inside the comment body
    spans: tuple[LayerSpan, ...]


def is_annotation(body: str) -> bool:
    stripped = body.lstrip()
    return stripped.startswith("ty=") or stripped.startswith("span=")


@lru_cache(maxsize=8192)
def split_annotation(body: str) -> Annotation | None:
    """The type text and spans of a `ty=`/`span=` comment body, or None if it is neither."""
    if not is_annotation(body):
        return None
    spans: tuple[LayerSpan, ...] = ()
    head = body
    found = list(_SPAN_KEY.finditer(body))
    if found:
        m = found[-1]
        head = body[: m.start()]
        spans = parse_spans(body[m.end() :].strip())
    type_text, type_offset = None, 0
    stripped = head.lstrip()
    if stripped.startswith("ty="):
        type_offset = len(head) - len(stripped) + 3
        type_text = head[type_offset:].rstrip()
    return Annotation(type_text, type_offset, spans)


def parse_spans(text: str) -> tuple[LayerSpan, ...]:
    if text.startswith("[") and text.endswith("]"):
        spans = []
        rest = text[1:-1].strip()
        while rest:
            span, rest = _one_span(rest, in_list=True)
            spans.append(span)
            rest = rest.lstrip()
            if rest.startswith(","):
                rest = rest[1:].lstrip()
        return tuple(spans)
    span, _ = _one_span(text, in_list=False)
    return (span,)


def _one_span(text: str, in_list: bool) -> tuple[LayerSpan, str]:
    """One `name:line:col` at the start of `text`, and what follows it."""
    if text.startswith('"'):
        m = _QUOTED.match(text)
        if m is not None:
            name = re.sub(r"\\(.)", r"\1", m.group(1))
            pos = _LINE_COL.match(text, m.end())
            if pos is not None:
                return LayerSpan(name, int(pos.group(1)), int(pos.group(2))), text[pos.end() :]
            return LayerSpan(name), text[m.end() :]
    item = text
    rest = ""
    if in_list:
        comma = text.find(",")
        if comma >= 0:
            item, rest = text[:comma], text[comma:]
    parts = item.strip().rsplit(":", 2)
    if len(parts) == 3 and _is_int(parts[1]) and _is_int(parts[2]):
        return LayerSpan(parts[0], int(parts[1]), int(parts[2])), rest
    return LayerSpan(item.strip()), rest


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()
