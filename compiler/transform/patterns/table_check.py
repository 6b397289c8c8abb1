"""Checking a pattern table as a table, not as a model (`relaylens check`, the editor).

    diagnostics = table_check(module, diagnostics, text)   # None: the file is not a pattern table

A table's parameters are wildcards, so their types are unknown by design: the type
checker's "cannot infer ..." warnings (one per parameter and per call that depends on
one) say nothing about a table and are left out, and so is the missing version header (a
table is not a model).  Everything else stays — syntax and name errors, unknown
operators and attributes, every type error, the warnings of annotated parameters — and
the table's own checks are added at their place (table.py: a `Constants` entry that names
no parameter, an unknown pattern attribute, a result that is not a call).

A file is a pattern table when it says so (`// relaylens: pattern-table`, directive.py),
or when it has no `@main` and one of its defs carries a pattern attribute (`Constants=`,
`Composite=`): a model's global functions never do.
"""

from __future__ import annotations

from ...diagnostics import Diagnostic, Severity
from ...ir.module import IRModule
from .directive import is_table_directive
from .table import KNOWN_ATTRS, attribute_errors, table_of_module


def is_pattern_table(module: IRModule, text: str) -> bool:
    if is_table_directive(text):
        return True
    if "main" in module:
        return False
    return any(key in func.attrs for func in module.functions.values() for key in KNOWN_ATTRS)


def unknown_by_design(d: Diagnostic) -> bool:
    """A diagnostic that a wildcard's unknown type (or a table's lack of a header) causes."""
    if d.severity != Severity.WARNING:
        return False
    if d.source == "types":
        return d.message.startswith("cannot infer ")
    return d.source == "syntax" and d.message.startswith("no version header")


def table_check(module: IRModule, diagnostics: list[Diagnostic], text: str) -> list[Diagnostic] | None:
    """The diagnostics of a checked file (its module, its check's diagnostics and its text)
    read as a pattern table; None when it is not one."""
    if not is_pattern_table(module, text):
        return None
    kept = [d for d in diagnostics if not unknown_by_design(d)]
    own = table_of_module(module, "this file", []).diagnostics + attribute_errors(module)
    said = {(d.message, d.span) for d in kept}
    return kept + [d for d in own if (d.message, d.span) not in said
                   and (d.span is not None or not any(k.is_error for k in kept))]
