"""The printer: IR → Relay text, in TVM's style (graph normal form, `/* ty= span= */`).

    print_module(mod, *, spans=False, types=False, metadata=True, header=True) -> str
    print_expr(expr, *, spans=False, types=False) -> str
    print_type(ty) -> str
    print_attr_value(value) -> str
    Printer(...).print_module(mod) -> PrintResult(text, locations, constants)
    NotePolicy: expr -> (type, span) written in its comment (Printer(note=...))
"""

from .literals import print_attr_value
from .exprs import NotePolicy
from .printer import HEADER, Printer, PrintResult, print_expr, print_module
from .types import print_type

__all__ = ["HEADER", "NotePolicy", "Printer", "PrintResult", "print_attr_value", "print_expr", "print_module",
           "print_type"]
