"""The fast path every front end shares: parse, resolve names, infer types.

`relaylens check`, `relaylens print --types` and the language server all go through
`check_text`, so they report the same diagnostics for the same text.  The language
server re-checks an edited text with `recheck`, which re-reads and re-types only the
statement the edit touched when it can (compiler/parser/incremental.py), and gives the
same result as `check_text` would.
"""

from __future__ import annotations

from dataclasses import dataclass

from .diagnostics import Diagnostic
from .ir.expr import Function, GlobalVar
from .ir.span import document_span
from .parser import ParseResult, parse
from .parser.incremental import Change, prepare
from .typing import infer_types
from .typing.infer import infer_expr_types


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


def check_text(text: str, name: str = "<input>", incremental: bool = False) -> CheckResult:
    """`incremental`: keep what `recheck` needs to re-check the next version of the text."""
    parsed = parse(text, name, incremental)
    commented: set = set()
    diagnostics = infer_types(parsed.module, check_annotations=True, commented=commented)
    return CheckResult(parsed, tuple(diagnostics), frozenset(commented))


def recheck(previous: CheckResult, text: str) -> tuple[CheckResult, Change] | None:
    """Check `text`, an edit of `previous`'s text, by re-reading the one statement the
    edit changed; None when that is not possible (then `check_text` the whole of it).

    When it succeeds, `previous` is spent: its nodes, index and spans now describe `text`.
    The statement's value is typed against the types of what it uses.  The whole text
    is checked instead when the answer could differ from a whole check: the value's type
    changed (statements after it might change too); the statement has an error (an
    ERROR type also flows back into what it uses); or the old statement used a function
    with an unannotated parameter (that use may have been what fixed its type); or
    nothing uses the statement (a whole check types only what its function reaches).
    """
    pending = prepare(previous.parsed, text)
    if pending is None:
        return None
    commented: set = set()
    typed = infer_expr_types(previous.module, pending.value, pending.is_new, check_annotations=True,
                             commented=commented)
    if typed is None or typed[0] is None or typed[0] != pending.statement.value.ty:
        return None
    if pending.diagnostics or typed[1] or not _uses_are_fixed(previous.module, pending.old_uses()):
        return None
    if not pending.statement.symbol.references:
        return None  # an unused statement: a whole check does not type it
    kept = [d for d in previous.type_diagnostics if not _within(d, pending.start, pending.old_end)]
    parsed, change = pending.commit()
    old = set(change.old_nodes)
    diagnostics = sorted([*kept, *typed[1]], key=_line_col)
    still = {n for n in previous.commented if n not in old}
    if pending.value in commented:
        commented.discard(pending.value)
        commented.add(change.nodes[0])
    return CheckResult(parsed, tuple(diagnostics), frozenset(still | commented)), change


def _uses_are_fixed(module, uses) -> bool:
    """Whether the types of `uses` come from their own definitions, not from their uses."""
    for node in uses:
        func = module.functions.get(node) if isinstance(node, GlobalVar) else node
        if isinstance(func, Function) and any(p.type_annotation is None for p in func.params):
            return False
    return True


def _within(d: Diagnostic, start: int, end: int) -> bool:
    span = document_span(d.span)
    return span is not None and start <= span.start < end


def _line_col(d: Diagnostic) -> tuple[int, int]:
    loc = d.location()
    return (loc[1], loc[2]) if loc else (0, 0)
