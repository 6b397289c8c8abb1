"""Errors are data that carry spans; one renderer prints them.

The parser, the type checker and every later stage report `Diagnostic`s.  The CLI renders
them compiler-style (`file:line:col: error: message`, the source line, a caret underline);
the language server converts them to LSP diagnostics in its own conversion module.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Iterable

from .ir.span import AnySpan, LayerSpan, Span, document_span


class Severity(IntEnum):
    """Numbered as LSP numbers them."""

    ERROR = 1
    WARNING = 2
    INFO = 3
    HINT = 4

    @property
    def label(self) -> str:
        return {1: "error", 2: "warning", 3: "note", 4: "hint"}[self.value]


@dataclass(frozen=True, slots=True)
class Fix:
    """An edit that would resolve a diagnostic: `text` in place of `span`'s range (the
    language server offers it as a quick fix)."""

    title: str
    span: Span
    text: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    message: str
    span: AnySpan | None = None
    severity: Severity = Severity.ERROR
    notes: tuple[tuple[AnySpan | None, str], ...] = ()
    source: str = "relaylens"  # which stage: "syntax", "names", "types", ...
    code: str | None = None
    fixes: tuple[Fix, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity == Severity.ERROR

    def location(self) -> tuple[str, int, int] | None:
        doc = document_span(self.span)
        if doc is not None:
            return doc.name, doc.line, doc.col
        if self.span is not None:
            first = self.span.origins()[0]
            return first.name, first.line, first.col
        return None

    def render(self) -> str:
        """`file:line:col: error: message`, then the source line and a caret underline,
        then each note the same way."""
        lines = [_header(self.span, self.severity.label, self.message)]
        lines += _excerpt(self.span)
        for span, text in self.notes:
            lines.append(_header(span, "note", text))
            lines += _excerpt(span)
        return "\n".join(lines)


def _header(span: AnySpan | None, label: str, message: str) -> str:
    doc = document_span(span)
    if doc is not None:
        return f"{doc.name}:{doc.line}:{doc.col}: {label}: {message}"
    if span is not None:
        first = span.origins()[0]
        where = first.name if isinstance(first, LayerSpan) and not first.line else str(first)
        return f"{where}: {label}: {message}"
    return f"{label}: {message}"


def _excerpt(span: AnySpan | None, width_limit: int = 120) -> list[str]:
    doc = document_span(span)
    if doc is None:
        return []
    line, col = doc.source.location(doc.start)
    end_line, end_col = doc.source.location(max(doc.end, doc.start))
    text = doc.source.line_text(line)
    width = (end_col - col) if end_line == line else len(text) - col + 1
    width = max(1, width)
    start = 0
    if len(text) > width_limit:  # a window around the caret, not a 10,000-character line
        start = max(0, col - 1 - width_limit // 3)
        shown = text[start : start + width_limit]
        text = ("..." if start else "") + shown + ("..." if start + width_limit < len(text) else "")
        col = col - start + (3 if start else 0)
        width = min(width, width_limit)
    gutter = f"{line:>5} | "
    pad = "".join("\t" if ch == "\t" else " " for ch in text[: col - 1])
    return [gutter + text, " " * (len(gutter) - 2) + "| " + pad + "^" + "~" * (width - 1)]


@dataclass
class CompileError(Exception):
    """Raised by a stage that cannot go on; carries its diagnostic."""

    message: str
    span: AnySpan | None = None
    notes: list[tuple[AnySpan | None, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def diagnostic(self, source: str = "relaylens") -> Diagnostic:
        return Diagnostic(self.message, self.span, Severity.ERROR, tuple(self.notes), source)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to a misspelt `word`, if one is close enough to suggest."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def replacement(span: AnySpan | None, old: str, new: str, pattern: str | None = None) -> tuple[Fix, ...]:
    """A fix changing the first `old` in the document range of `span` to `new` (`pattern`,
    a regular expression with one group around the word, narrows where it is looked for:
    `r"[(,]\\s*(axsi)\\s*="` finds an attribute's name, not an argument of that name); none when
    `old` is not there."""
    doc = document_span(span)
    if doc is None:
        return ()
    text = doc.source.text[doc.start:doc.end]
    found = re.search(pattern or re.escape(old), text)
    if found is None:
        return ()
    at = doc.start + found.start(1 if found.re.groups else 0)
    return (Fix(f"Change to {new}", Span(doc.source, at, at + len(old)), new),)


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


__all__ = ["Diagnostic", "Fix", "Severity", "CompileError", "did_you_mean", "has_errors", "replacement", "Span"]
