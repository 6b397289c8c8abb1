"""The fast path every front end shares: parse, resolve names, infer types.

`relaylens check`, `relaylens print --types` and the language server all go through
`check_text`, so they report the same diagnostics for the same text.
"""

from __future__ import annotations

from dataclasses import dataclass

from .diagnostics import Diagnostic
from .parser import ParseResult, parse
from .typing import infer_types


@dataclass(frozen=True, slots=True)
class CheckResult:
    parsed: ParseResult
    type_diagnostics: tuple[Diagnostic, ...]
    commented: frozenset = frozenset()  # nodes whose type the text wrote (`ty=` comments)

    @property
    def module(self):
        return self.parsed.module

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Syntax and name diagnostics, then type diagnostics, each in source order."""
        return [*self.parsed.diagnostics, *self.type_diagnostics]


def check_text(text: str, name: str = "<input>") -> CheckResult:
    parsed = parse(text, name)
    commented: set = set()
    diagnostics = infer_types(parsed.module, check_annotations=True, commented=commented)
    return CheckResult(parsed, tuple(diagnostics), frozenset(commented))
