"""Relay text → IRModule with spans, diagnostics and a symbol index.

Public API (stable; the CLI, printer tests and the server use it):

    parse(text, name="<string>") -> ParseResult
        .module       IRModule (always; definitions with errors are left out or hold ErrorExpr)
        .diagnostics  list[Diagnostic]
        .source       Source
        .index        SymbolIndex (definitions and references, for the editor)
"""


from .parse import ParseResult, parse
from .symbols import Symbol, SymbolIndex

__all__ = ["parse", "ParseResult", "Symbol", "SymbolIndex"]
