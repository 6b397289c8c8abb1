"""Re-reading one statement after an edit, instead of the whole file.

The language server analyses a document after every edit, and a printed model is one
@main of thousands of `%N = ...;` statements: a full parse of 20,000 lines takes seconds
in Python.  An edit inside one statement of a definition's body changes that statement
only, so only it is read again; everything else is kept, its spans moved by the anchors
(compiler/ir/anchors.py).

How.  A parse made with `incremental=True` cuts the text into regions: each `%N = ...`
statement of a body made only of such statements, and the text between.  The lowering
records on each statement's region its name, the node it bound and the scopes it was
read in (`Statement`).  After an edit:

1. `prepare(previous, text)` finds the changed range (common prefix and suffix of the
   two texts).  It must lie inside one recorded statement and leave what the scanner
   sees alone (no comment, string or keyword in it): the scan and the line table are
   then the old ones with the edit spliced in (`scan.rescan`, `Source.edited`).  The statement's new
   text is parsed alone (the grammar's `stmt` start); if it does not parse, it is
   recovered as the whole-file parse recovers a statement of a body (recovery.py: the
   same diagnostics, the same hole `%N = ⁇`), in a stand-in body (`_read_statement`).
   Then it is lowered in the scopes it was read in, its spans anchored to a new region.
   Nothing shared is touched yet: names it uses are recorded aside, and any name the
   file does not define sends the edit to a full parse.  The result is a `Pending`
   re-read.
2. The caller types the new value (compiler/check.py): if its type is the old one,
   nothing after it can change (else it types what depends on it again), and
3. `Pending.commit()` copies the new value into the old node object (so every statement
   that refers to `%N` sees it), or, when the value is another kind of node (a call
   became a hole, or back), points the nodes that use `%N` at the new one; it swaps the
   statement's index entries and diagnostics (a syntax error found on its `;` is its
   own) and moves the regions after it.  The previous `ParseResult` is spent: its
   module, index and spans now describe the new text.  `cone` then finds what depends
   on the statement's value, for typing it again.

Anything else (an edit across statements, in a header or a comment, a syntax error
whose recovery reaches past the statement) returns None: the caller parses the whole
file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace

from lark import Tree
from lark.exceptions import LarkError

from ..diagnostics import Diagnostic
from ..ir import expr as E
from ..ir.anchors import Anchors, Piece
from ..ir.functor import children
from ..ir.span import Source, Span, document_span
from ..pauses import pause_point, sorted_in_pieces
from .errors import AFTER_DEFINITION, BLOCK_END, NAMED_BINDING
from .grammar import first_token, kids, parse_text
from .recovery import MAX_RECOVERIES, recover_alone
from .lower import Lowerer, Statement
from .result import (ParseResult, annotation_ends, diagnostic_order, has_unreadable_section,
                     is_unknown_constants_warning, unknown_constants_warning)
from .scan import HOLE, rescan
from .symbols import Symbol, SymbolIndex

# characters whose insertion or removal may change what the scanner sees (comments,
# strings, metadata, the `#[version]` header, the recovery's hole, which it reports)
_SCANNED = frozenset('/*"#' + HOLE)
_ASSIGNED = re.compile(r"%(\d+)\s*=(?!=)")
PAUSE_STATEMENTS = 128  # statements between two pause points (compiler/pauses.py)


@dataclass
class Incremental:
    """What a parse keeps for incremental re-reading: its lowering (name tables) and the
    anchors of its source."""

    lowerer: Lowerer
    anchors: Anchors
    _graph: dict[str, list[Symbol]] | None = field(default=None, repr=False)

    def graph_symbols(self, index: SymbolIndex) -> dict[str, list[Symbol]]:
        """Every `%N` definition of the file by number, nested ones included."""
        if self._graph is None:
            table: dict[str, list[Symbol]] = {}
            for symbol in index.symbols:
                if symbol.kind == "graph" and symbol.definition is not None:
                    table.setdefault(symbol.name, []).append(symbol)
            self._graph = table
        return self._graph


def anchor(source: Source, parsed: list, diagnostics: list[Diagnostic]) -> None:
    """Cut `source` into regions (each statement of the bodies made only of `%N = ...`
    statements, and the text between) and anchor the spans made from now on to them;
    the diagnostics made so far are re-made anchored."""
    bounds = {0}
    for item, tree in parsed:
        if tree is None or tree.data != "def_item":
            continue
        body = kids(tree)[-1]
        if not (isinstance(body, Tree) and body.data == "block"):
            continue
        statements = kids(body)[:-1]
        if not statements or any(s.data != "graph_stmt" for s in statements):
            continue
        parts = body.children
        for i, (stmt, semicolon) in enumerate(zip(parts[:-1], parts[1:])):  # a statement runs up to its `;`
            if not i % PAUSE_STATEMENTS:
                pause_point()
            if isinstance(stmt, Tree) and stmt.data == "graph_stmt":
                bounds.add(item.start + first_token(stmt).start_pos)  # (comments after it included)
                bounds.add(item.start + semicolon.start_pos)
    anchors = Anchors(sorted_in_pieces(list(bounds), int), len(source.text), source)
    object.__setattr__(source, "anchors", anchors)
    diagnostics[:] = [_anchored(d, source) for d in diagnostics]


def _anchored(d: Diagnostic, source: Source) -> Diagnostic:
    if isinstance(d.span, Span) and d.span.source is source:
        return replace(d, span=Span(source, d.span.start, d.span.end))
    return d


@dataclass
class Change:
    """Where the re-read statement was and is: [start, old_end) became [start, new_end)."""

    start: int
    old_end: int
    new_end: int
    nodes: list[E.Expr]  # the statement's nodes after the commit (its value first)
    old_nodes: list[E.Expr]  # the nodes the statement had before
    piece: Piece | None = None  # the statement's new region
    retyped: bool = False  # the whole module was typed again (compiler/check.py)
    cone: int = 0  # or else the number of statements typed again

    @property
    def delta(self) -> int:
        return self.new_end - self.old_end


class _Recorder(SymbolIndex):
    """The symbol index a re-read statement is lowered into: new symbols are its own,
    uses of existing ones are only noted, so nothing shared changes before the commit."""

    def __init__(self) -> None:
        super().__init__()
        self.uses: list[tuple[Symbol, Span]] = []

    def refer(self, symbol: Symbol, span: Span) -> None:
        if any(symbol is s for s in self.symbols):
            symbol.references.append(span)
        else:
            self.uses.append((symbol, span))


class _GraphBefore:
    """The `%N` names a statement starting at `start` sees: the latest definition before
    it of each number (what the full parse's running table holds there)."""

    def __init__(self, table: dict[str, list[Symbol]], start: int) -> None:
        self.table, self.start = table, start
        self.local: dict[str, tuple[E.Expr, Symbol]] = {}

    def get(self, name: str):
        if name in self.local:
            return self.local[name]
        best = None
        for symbol in self.table.get(name, ()):
            at = symbol.definition.start  # type: ignore[union-attr]
            if at < self.start and (best is None or at > best.definition.start):
                best = symbol
        return None if best is None else (best.node, best)

    def __setitem__(self, name: str, value: tuple[E.Expr, Symbol]) -> None:
        self.local[name] = value


@dataclass
class Pending:
    """A statement read again, not yet committed (see the module's docstring)."""

    previous: "ParseResult"
    source: Source
    scanned: object
    index: int  # of the statement's region
    piece: Piece  # its new region
    statement: Statement
    value: E.Expr  # the new value, a fresh node
    symbol: Symbol  # the new definition of `%N` (its span replaces the old one)
    recorder: _Recorder
    diagnostics: list[Diagnostic]
    start: int
    old_end: int
    new_end: int
    written: dict = field(default_factory=dict)  # the new nodes' types from `ty=` comments
    users: list[E.Expr] | None = None  # when the value's class changed: the nodes using it
    constants: list[Span] = field(default_factory=list)  # its `meta[relay.Constant]` of no value

    def is_new(self, node: E.Expr) -> bool:
        """Whether `node` was made by this re-read (not a node it refers to)."""
        span = document_span(node.span)
        return span is not None and span.starts_in(self.piece)

    def owned(self, node: E.Expr) -> bool:
        """Whether `node` was made by the statement before the edit."""
        span = document_span(node.span)
        return span is not None and span.starts_in(self.previous.incremental.anchors.pieces[self.index])  # type: ignore[union-attr]

    def old_nodes(self) -> list[E.Expr]:
        """The nodes the statement made before the edit (its value first)."""
        return _walk(self.statement.value, self.owned)

    def old_uses(self) -> list[E.Expr]:
        """The nodes outside the old statement that it used."""
        nodes = self.old_nodes()
        mine = {id(n) for n in nodes}
        return [c for n in nodes for c in children(n) if id(c) not in mine and isinstance(c, E.Expr)] + \
            [n.op for n in nodes if isinstance(n, E.Call) and id(n.op) not in mine]

    def commit(self) -> tuple["ParseResult", Change]:
        prev = self.previous
        state = prev.incremental
        assert state is not None
        old_nodes = self.old_nodes()
        old, new = self.statement.value, self.value
        if self.users is None:
            for f in fields(new):  # the node others refer to takes the new content
                object.__setattr__(old, f.name, getattr(new, f.name))
        else:  # another class of node: those that use it are pointed at the new one
            for user in self.users:
                _repoint(user, old, new)
            self.statement.value = self.statement.symbol.node = new
            old = new
        nodes = [old, *_walk(old, self.is_new)[1:]]

        index = prev.index
        entries = index.entries()
        lo, hi = index.between(self.start, self.old_end)
        gone = entries[lo:hi]
        self._forget(gone, index)
        graph = state.graph_symbols(index)
        self.statement.symbol.definition = self.symbol.definition
        added: list[tuple[Span, Symbol]] = [(self.symbol.definition, self.statement.symbol)]  # type: ignore[list-item]
        for symbol in self.recorder.symbols:
            if symbol is self.symbol:
                continue
            if symbol.node is new:
                symbol.node = old
            index.symbols.append(symbol)
            if symbol.kind == "graph" and symbol.definition is not None:
                graph.setdefault(symbol.name, []).append(symbol)
            if symbol.definition is not None:
                added.append((symbol.definition, symbol))
            added += [(r, symbol) for r in symbol.references]
        for symbol, span in self.recorder.uses:
            symbol.references.append(span)
            added.append((span, symbol))
        added.sort(key=lambda e: (e[0].start, -e[0].end))

        diagnostics = [d for d in prev.diagnostics if not _own(d, self.start, self.old_end)]
        kept_constants = [c for c in state.lowerer.unknown_constants if not self.start <= c.start < self.old_end]
        state.anchors.replace(self.index, self.piece, self.new_end - self.old_end)
        self.piece.info = self.statement
        state.anchors.current = self.source
        self.diagnostics = [_anchored(d, self.source) if _on_semicolon(d, self.new_end) else d
                            for d in self.diagnostics]  # its region is the text after
        entries[lo:hi] = added
        diagnostics += self.diagnostics
        if prev.module.metadata is None:  # the one warning about unknown constants, counted again
            diagnostics = [d for d in diagnostics if not is_unknown_constants_warning(d)]
            spans = state.lowerer.unknown_constants = sorted([*kept_constants, *self.constants],
                                                             key=lambda s: s.start)
            if spans:
                diagnostics.append(unknown_constants_warning(spans, has_unreadable_section(diagnostics)))
        diagnostics.sort(key=diagnostic_order)
        result = ParseResult(prev.module, diagnostics, self.source, index, self.scanned, state)  # type: ignore[arg-type]
        return result, Change(self.start, self.old_end, self.new_end, nodes, old_nodes, self.piece)

    def _forget(self, gone: list[tuple[Span, Symbol]], index: SymbolIndex) -> None:
        """Take the old statement's uses and nested definitions out of the index."""
        dropped: set[int] = set()
        for span, symbol in gone:
            if span is symbol.definition:
                if symbol is not self.statement.symbol:
                    dropped.add(id(symbol))
            else:
                refs = symbol.references
                for i in range(len(refs) - 1, -1, -1):
                    if refs[i] is span:
                        del refs[i]
                        break
                if symbol.definition is None and not refs:  # a name never defined, used no more
                    dropped.add(id(symbol))
        if dropped:
            index.symbols[:] = [s for s in index.symbols if id(s) not in dropped]
            graph = self.previous.incremental.graph_symbols(index)  # type: ignore[union-attr]
            for name, symbols in graph.items():
                symbols[:] = [s for s in symbols if id(s) not in dropped]


def prepare(previous: "ParseResult", text: str) -> Pending | None:
    """Read again the one statement an edit changed, or None (then parse the whole file)."""
    state = previous.incremental
    if state is None:
        return None
    old = previous.source.text
    if old == text:
        return None
    start, old_stop, new_stop = changed_range(old, text)
    if _SCANNED.intersection(old[start:old_stop]) or _SCANNED.intersection(text[start:new_stop]):
        return None
    anchors = state.anchors
    k = anchors.index_of(start)
    piece = anchors.pieces[k]
    if piece.info is None and k > 0 and start == piece.base and anchors.pieces[k - 1].info is not None:
        k, piece = k - 1, anchors.pieces[k - 1]  # typed at the very end of a statement
    statement = piece.info
    if not isinstance(statement, Statement) or old_stop > piece.limit:
        return None
    delta = len(text) - len(old)
    stmt_start, old_end, new_end = piece.base, piece.limit, piece.limit + delta
    if _noted_from_outside(previous.diagnostics, stmt_start, old_end):
        return None
    if _broken_elsewhere(previous.diagnostics, stmt_start, old_end):
        return None
    if previous.scan.code[old_end + 1 : old_end + 200].lstrip().startswith("}"):
        return None  # the body's last statement, no value after it: the error on its `;` is the body's
    if previous.scan.code[old_end : old_end + 1] != ";":
        return None  # no `;` of its own (the recovery ended it at the next statement): read alone, the
        # statement would parse whole and the error on the missing `;` be lost (found by the recheck fuzzer)
    if any(d.code == BLOCK_END and _on_semicolon(d, old_end) for d in previous.diagnostics):
        return None  # "a block ends with a value" on its `;`: the token after the `;` made it (a broken
        # statement further down, as the recovery mended it); read alone, it would be lost (the recheck fuzzer)
    if _used_outside(previous.index, statement, stmt_start, old_end):
        return None
    if _assigned_numbers(old[stmt_start:old_end]) != _assigned_numbers(text[stmt_start:new_end]):
        return None  # lower.py's "%N is used before it is defined" looks for `%N =` in the text after
        # the use, wherever it is (the recheck fuzzer: `f(.., %1="")` edited to `%0=""`)

    scanned = rescan(previous.scan, text, start, old_stop, new_stop)
    if scanned is None:
        return None
    source = previous.source.edited(text, start, old_stop, new_stop)
    new_piece = Piece(stmt_start, new_end)
    object.__setattr__(source, "anchors", anchors)
    anchors.forced = new_piece  # the spans of the syntax errors too
    try:
        read = _read_statement(scanned.code, stmt_start, new_end, source, previous.diagnostics)
    finally:
        anchors.forced = None
    if read is None:
        return None
    tree, tree_base, syntax = read
    if tree.data != "graph_stmt" or str(kids(tree)[0])[1:] != statement.name:
        return None
    if tree_base + first_token(tree).start_pos != stmt_start:
        return None  # blanks before a statement belong to the text between statements

    lowerer = state.lowerer
    recorder = _Recorder()
    diagnostics: list[Diagnostic] = list(syntax)
    saved = (lowerer.source, lowerer.index, lowerer.diagnostics, lowerer.annotations, lowerer.graph,
             lowerer.scopes, lowerer.type_scopes, lowerer.globals, lowerer.types, lowerer.base,
             lowerer.unknown_constants)
    known = (len(lowerer.globals), len(lowerer.types), len(lowerer.module.global_vars))
    anchors.forced = new_piece
    try:
        lowerer.source, lowerer.index, lowerer.diagnostics = source, recorder, diagnostics
        lowerer.annotations = annotation_ends(scanned, stmt_start, new_end)  # (the statement's own)
        lowerer.graph = _GraphBefore(state.graph_symbols(previous.index), stmt_start)  # type: ignore[assignment]
        lowerer.scopes = list(statement.scopes)
        lowerer.type_scopes = list(statement.type_scopes)
        lowerer.globals, lowerer.types = dict(lowerer.globals), dict(lowerer.types)
        lowerer.base = tree_base
        lowerer.unknown_constants = []  # the file's warning is made again on commit
        _, value, symbol = lowerer.graph_statement(tree)
        grew = (len(lowerer.globals), len(lowerer.types), len(lowerer.module.global_vars)) != known
        constants = lowerer.unknown_constants
    except Exception:  # noqa: BLE001 -- the full parse reports whatever this was
        return None
    finally:
        anchors.forced = None
        (lowerer.source, lowerer.index, lowerer.diagnostics, lowerer.annotations, lowerer.graph,
         lowerer.scopes, lowerer.type_scopes, lowerer.globals, lowerer.types, lowerer.base,
         lowerer.unknown_constants) = saved
    if grew or any(s.definition is None for s, _ in recorder.uses):
        return None  # a name the file does not define: the full parse warns about it
    if {(s.kind, s.name) for s in recorder.symbols if s is not symbol and s.definition is not None} != \
            _defined_inside(previous.index, statement, stmt_start, old_end):
        return None  # names defined anew or no more: what uses elsewhere are told may change
    pending = Pending(previous, source, scanned, k, new_piece, statement, value, symbol, recorder,
                      diagnostics, stmt_start, old_end, new_end, constants=constants)
    old_value = statement.value
    if not pending.is_new(value):
        return None
    span = document_span(old_value.span)
    if span is None or not span.starts_in(piece):  # the value is not this statement's own node
        return None
    if type(value) is not type(old_value):  # `%5 = add(...)` became `%5 = ⁇` (or back)
        users = _users(previous, statement)
        if users is None:
            return None
        pending.users = users
    pending.written = {n: n.ty for n in _walk(value, pending.is_new) if n.ty is not None}
    return pending


def changed_range(old: str, new: str) -> tuple[int, int, int]:
    """(start, old_stop, new_stop): old[start:old_stop] became new[start:new_stop]."""
    n = min(len(old), len(new))
    lo, hi = 0, n  # the common prefix is at least lo and less than hi + 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[lo:mid] == new[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    start = lo
    lo, hi = 0, n - start
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid : len(old) - lo] == new[len(new) - mid : len(new) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return start, len(old) - lo, len(new) - lo


def _inside(d: Diagnostic, start: int, end: int) -> bool:
    span = document_span(d.span)
    return span is not None and start <= span.start and span.end <= end and span.start < end


def _defined_inside(index: SymbolIndex, statement: Statement, start: int, end: int) -> set[tuple[str, str]]:
    """The names the statement at [start, end) defines inside it (besides its own)."""
    entries = index.entries()
    lo, hi = index.between(start, end)
    return {(sym.kind, sym.name) for span, sym in entries[lo:hi] if span is sym.definition and sym is not statement.symbol}


def _assigned_numbers(text: str) -> set[str]:
    """The numbers N of every `%N =` in `text` (what lower.py's x_graph looks for)."""
    return set(_ASSIGNED.findall(text))


def _used_outside(index: SymbolIndex, statement: Statement, start: int, end: int) -> bool:
    """Whether a name the statement defines inside it (a `%N` in a `fn` body, say; graph
    numbers are one table for the file) is used after it: the commit drops the old
    definition, and those uses would lose it."""
    entries = index.entries()
    lo, hi = index.between(start, end)
    for span, symbol in entries[lo:hi]:
        if span is symbol.definition and symbol is not statement.symbol:
            if any(not start <= r.start < end for r in symbol.references):
                return True
    return False


def _on_semicolon(d: Diagnostic, end: int) -> bool:
    span = document_span(d.span)
    return d.source == "syntax" and span is not None and span.start == end


def _own(d: Diagnostic, start: int, end: int) -> bool:
    """Whether `d` is the statement's at [start, end): inside it, or a syntax error
    found on its `;`."""
    return _inside(d, start, end) or _on_semicolon(d, end)


def _noted_from_outside(diagnostics: list[Diagnostic], start: int, end: int) -> bool:
    """Whether a diagnostic outside the statement points into it (a note would go stale)."""
    for d in diagnostics:
        if not d.notes or _own(d, start, end):
            continue
        for note_span, _ in d.notes:
            span = document_span(note_span)
            if span is not None and start <= span.start < end:
                return True
    return False


def _broken_elsewhere(diagnostics: list[Diagnostic], start: int, end: int) -> bool:
    """Whether a definition's braces do not balance (text after its closing brace): then
    the body closed early, the statements after it were read in other scopes than a whole
    parse of the edited text may give them (found by the recheck fuzzer: a use of `%5`
    lost), so read the whole file.  Likewise a name bound without `let` (`%y = ...`):
    a whole read does not report its uses as undefined again (lower.py), and a statement
    read alone cannot see that.  Other errors, inside the statement or elsewhere, do not
    prevent the re-read."""
    return any(d.code in (AFTER_DEFINITION, NAMED_BINDING) and not _inside(d, start, end) for d in diagnostics)


def _walk(root: E.Expr, keep) -> list[E.Expr]:
    """`root` and the nodes under it for which `keep` holds (not below the others)."""
    out, seen, stack = [root], {id(root)}, list(children(root))
    while stack:
        node = stack.pop()
        if id(node) in seen or not isinstance(node, E.Expr) or not keep(node):
            continue
        seen.add(id(node))
        out.append(node)
        stack.extend(children(node))
    return out


def _read_statement(code: str, start: int, end: int, source: Source,
                    previous: list[Diagnostic]) -> tuple[Tree, int, list[Diagnostic]] | None:
    """The tree of the statement at code[start:end] (its `;` at `end`), the offset its
    token positions count from, and its syntax errors; None if the whole file must be read.

    A statement that does not parse is recovered as the whole-file parse recovers it in
    its body (recovery.py `recover_alone`): the same diagnostics, the same hole.  That
    holds when every error lies in the statement or on its `;` (the parser cannot have
    seen what follows), and the mended body still holds the statement alone; otherwise
    None."""
    try:
        return parse_text(code[start:end], "stmt"), start, []
    except LarkError:
        pass
    read = recover_alone(code, start, end, 0, source)
    if read is None:
        return None
    tree, base, syntax, errors, _ = read
    if len(errors) + sum(d.source == "syntax" for d in previous) >= MAX_RECOVERIES:
        return None  # the whole-file parse may give up on the definition
    return tree, base, syntax


def _users(previous: "ParseResult", statement: Statement) -> list[E.Expr] | None:
    """The nodes that hold the statement's value as an operand (as many as `%N` has
    uses), found from the uses' places; None if some use is not found."""
    value = statement.value
    anchors = previous.incremental.anchors  # type: ignore[union-attr]
    references = statement.symbol.references
    pieces = {id(p): p for p in (anchors.piece_at(r.start) for r in references)}
    users: dict[int, E.Expr] = {}
    count = 0
    for piece in pieces.values():
        # a use in a statement, or in a body's value after its last statement
        roots = [piece.info.value] if isinstance(piece.info, Statement) else list(previous.module.functions.values())

        def here(node: E.Expr, piece: Piece = piece) -> bool:
            span = document_span(node.span)
            return span is not None and span.starts_in(piece)

        for root in roots:
            for node in _walk(root, here):
                if node is not value and id(node) not in users:
                    uses = sum(1 for c in _operands(node) if c is value)
                    if uses:
                        users[id(node)] = node
                        count += uses
    return list(users.values()) if count == len(references) else None


def _operands(node: E.Expr) -> list:
    """The expressions a node holds in its fields (its operands)."""
    out = []
    for f in fields(node):
        v = getattr(node, f.name)
        if isinstance(v, E.Expr):
            out.append(v)
        elif isinstance(v, tuple):
            out += [x for x in v if isinstance(x, E.Expr)]
    return out


def _repoint(node: E.Expr, old: E.Expr, new: E.Expr) -> None:
    """Make `node` hold `new` wherever it held `old`."""
    for f in fields(node):
        v = getattr(node, f.name)
        if v is old:
            object.__setattr__(node, f.name, new)
        elif isinstance(v, tuple) and any(x is old for x in v):
            object.__setattr__(node, f.name, tuple(new if x is old else x for x in v))


@dataclass
class Cone:
    """What depends on a re-read statement's value: the statements that use it, and
    those that use them, in text order (`pieces`, the statement's own first); and the
    definitions whose body value, after their last statement, uses one (`functions`,
    with the region of that value)."""

    pieces: list[Piece]
    functions: list[tuple[E.Function, Piece]]
    anchors: Anchors

    def place(self, span: Span) -> Piece:
        """The region a span starts in."""
        return self.anchors.piece_at(span.start)

    def nodes(self) -> list[E.Expr]:
        """Every node the cone's statements and body values made (their own, not those
        they refer to), and the functions."""
        out: list[E.Expr] = []
        for piece in self.pieces:
            out += own_nodes(piece)
        for func, piece in self.functions:
            out += _walk(func, _starting_in(piece))
        return out


def cone(result: "ParseResult", piece: Piece, limit: int) -> Cone | None:
    """The cone of the statement at `piece` (after a commit), or None when it has more
    than `limit` statements or a use is found in no statement or body value."""
    anchors = result.incremental.anchors  # type: ignore[union-attr]
    seen = {id(piece)}
    order, queue = [piece], [piece]
    functions: dict[tuple[int, int], tuple[E.Function, Piece]] = {}
    countdown = PAUSE_STATEMENTS
    while queue:
        countdown -= 1
        if not countdown:
            countdown = PAUSE_STATEMENTS
            pause_point()
        statement = queue.pop().info
        for reference in statement.symbol.references:  # type: ignore[union-attr]
            user = anchors.piece_at(reference.start)
            if id(user) in seen:
                continue
            seen.add(id(user))
            if isinstance(user.info, Statement):
                order.append(user)
                queue.append(user)
                if len(order) > limit:
                    return None
                continue
            owner = [f for f in result.module.functions.values()
                     if (s := document_span(f.span)) is not None and s.start <= reference.start < s.end]
            if len(owner) != 1:
                return None
            functions[id(owner[0]), id(user)] = (owner[0], user)
    order.sort(key=lambda p: p.base)
    return Cone(order, list(functions.values()), anchors)


def own_nodes(piece: Piece) -> list[E.Expr]:
    """The nodes the statement at `piece` made (its value first), not those it uses."""
    return _walk(piece.info.value, _starting_in(piece))  # type: ignore[union-attr]


def _starting_in(piece: Piece):
    def here(node: E.Expr) -> bool:
        span = document_span(node.span)
        return span is not None and span.starts_in(piece)
    return here
