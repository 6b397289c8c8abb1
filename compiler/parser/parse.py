"""The parser's driver: scan, parse each definition with Lark, recover, lower to IR.

Recovery works at two levels.  Each top-level definition is parsed on its own, so a
broken one costs only itself (its name stays defined, so calls to it don't cascade).
Inside a function body, a syntax error is reported and the statement holding it is
replaced, in a copy of the text of the same length, by a hole (`%3 = ⁇;` keeps `%3`
bound); then the definition is parsed again.  Two common slips are mended instead of
dropped: a missing `;` between statements and a `;` after a block's last value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lark import Tree

from ..diagnostics import Diagnostic, Severity
from ..ir.expr import Function
from ..ir.module import IRModule
from ..ir.span import Source, Span
from ..metadata import MetadataError, parse_metadata
from ..pauses import pause_point
from ..support import gc_paused
from .errors import HOLE
from .grammar import kids, parse_type_text
from .incremental import Incremental, anchor
from .lower import AttrSchema, Lowerer
from .recovery import recover
from .result import (UNREADABLE_SECTION, ParseResult, annotation_ends, diagnostic_order,
                     has_unreadable_section, unknown_constants_warning)
from .scan import Scan, scan
from .symbols import SymbolIndex

_DEF_NAME = re.compile(r"def\s+@([A-Za-z_][\w/]*)")


OnSyntax = Callable[[Source, list[Diagnostic]], None]


def parse(text: str, name: str = "<string>", incremental: bool = False,
          attr_schema: AttrSchema | None = None, on_syntax: OnSyntax | None = None) -> ParseResult:
    """Parse a whole file.  Never raises on any input: problems become diagnostics.

    `incremental` keeps what `incremental.reparse` needs to re-read one statement after an
    edit (the language server's case): spans anchored to the statements they lie in.
    `on_syntax(source, diagnostics)` is called once the text is read, before names are
    resolved, with the syntax diagnostics (the scan's and the grammar's, in source order):
    the language server publishes them at once for a long document."""
    with gc_paused():
        return _parse(text, name, incremental, attr_schema, on_syntax)


def _parse(text: str, name: str, incremental: bool = False, attr_schema: AttrSchema | None = None,
           on_syntax: OnSyntax | None = None) -> ParseResult:
    source = Source(name, text)
    scanned = scan(source)
    diagnostics = list(scanned.diagnostics)
    module = IRModule()
    index = SymbolIndex()
    if scanned.metadata is not None:
        _load_metadata(module, source, scanned.metadata, diagnostics)
    lowerer = Lowerer(source, module, index, diagnostics, annotation_ends(scanned), parse_type_text, attr_schema)
    code = scanned.code
    if not scanned.items:
        _parse_expression_file(lowerer, source, code, diagnostics, on_syntax)
    else:
        first = scanned.first_code_offset()
        if first < scanned.items[0].start:
            diagnostics.append(
                Diagnostic("expected a definition (def, type or extern type)", Span(source, first, first + 1), source="syntax")
            )
        parsed = []
        for item in scanned.items:
            tree = _parse_with_recovery(code, item.start, item.end, "item", item.keyword == "def", source, diagnostics)
            parsed.append((item, tree))
        if on_syntax is not None:  # (before the anchors: the diagnostics are converted at once)
            on_syntax(source, sorted(diagnostics, key=diagnostic_order))
        if incremental:
            anchor(source, parsed, diagnostics)
        for item, tree in parsed:  # types first: constructors must be known in bodies
            if tree is not None and tree.data in ("type_item", "extern_item"):
                lowerer.base = item.start
                _guard(lambda: lowerer.declare_type(tree), source, item.start, diagnostics)
        for item, tree in parsed:
            lowerer.base = item.start
            if tree is not None and tree.data == "def_item":
                _guard(lambda: lowerer.define_function(tree), source, item.start, diagnostics)
            elif tree is None and item.keyword == "def":
                m = _DEF_NAME.match(code, item.start)
                if m is not None:
                    lowerer.declare_broken_global(m.group(1), Span(source, m.start(1) - 1, m.end(1)))
        for _, tree in parsed:
            _free(tree)
    lowerer.check_undefined()
    if lowerer.unknown_constants:
        diagnostics.append(unknown_constants_warning(lowerer.unknown_constants, has_unreadable_section(diagnostics)))
    diagnostics.sort(key=diagnostic_order)
    state = Incremental(lowerer, source.anchors) if source.anchors is not None else None
    return ParseResult(module, diagnostics, source, index, scanned, state)


def _parse_expression_file(lowerer: Lowerer, source: Source, code: str, diagnostics: list[Diagnostic],
                           on_syntax: OnSyntax | None = None) -> None:
    """A file with no definitions is one expression, read as the body of @main (what
    `print(mod["main"])` writes and people paste)."""
    if not code.strip():
        return
    tree = _parse_with_recovery(code, 0, len(code), "expr_file", True, source, diagnostics)
    if on_syntax is not None:
        on_syntax(source, sorted(diagnostics, key=diagnostic_order))
    if tree is None:
        return
    lowerer.base = 0
    lowerer.scopes.append({})

    def build() -> None:
        body = lowerer.block(kids(tree)[0])
        span = lowerer.span(tree)
        free = tuple(var for var, _ in lowerer.free_vars.values())
        main = body if isinstance(body, Function) and not free else Function(free, body, span=span)
        gv = lowerer.module.get_global_var("main", span)
        lowerer.module.add(gv, main)

    _guard(build, source, 0, diagnostics)


def _parse_with_recovery(
    code: str, start: int, end: int, rule: str, statements: bool, source: Source, diagnostics: list[Diagnostic]
) -> Tree | None:
    return recover(code[start:end], rule, statements, start, source, diagnostics)


def _free(tree: Tree | None) -> None:
    """Take a parse tree apart a few statements at a time, with pause points between
    (compiler/pauses.py): freed at once, the tree of a 20,000-statement body holds up
    whatever runs it for 0.1 s.  Nodes of few children go whole."""
    stack = [tree] if isinstance(tree, Tree) else []
    countdown = PAUSE_NODES
    while stack:
        children = stack[-1].children
        if not children:
            stack.pop()
            continue
        child = children.pop()
        if isinstance(child, Tree) and len(child.children) > 8:
            stack.append(child)
        del child
        countdown -= 1
        if not countdown:
            countdown = PAUSE_NODES
            pause_point()


PAUSE_NODES = 128  # subtrees freed between two pause points


def _load_metadata(module: IRModule, source: Source, metadata: tuple[int, str], diagnostics: list[Diagnostic]) -> None:
    offset, text = metadata
    try:
        module.metadata = parse_metadata(text)
    except MetadataError as err:
        at = min(offset + (getattr(err, "offset", 0) or 0), len(source.text))
        end = min(at + 1, len(source.text))
        diagnostics.append(Diagnostic(f"{UNREADABLE_SECTION}{err}", Span(source, at, end), source="metadata"))


def _guard(action, source: Source, at: int, diagnostics: list[Diagnostic]) -> None:
    """Run one lowering step; an internal failure becomes a diagnostic, never a crash."""
    try:
        action()
    except RecursionError:
        diagnostics.append(Diagnostic("this definition is nested too deeply to read", Span(source, at, at + 1)))
    except Exception as exc:  # noqa: BLE001 - a bug must not take the editor down
        diagnostics.append(
            Diagnostic(f"internal error while reading this definition: {type(exc).__name__}: {exc}", Span(source, at, at + 1), source="internal")
        )




__all__ = ["parse", "ParseResult", "HOLE"]
