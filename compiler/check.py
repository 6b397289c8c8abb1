"""The fast path every front end shares: parse, resolve names, infer types.

`relaylens check`, `relaylens print --types` and the language server all go through
`check_text`, so they report the same diagnostics for the same text.  The language
server re-checks an edited text with `recheck`, which re-reads and re-types only the
statement the edit touched when it can (compiler/parser/incremental.py), and gives the
same result as `check_text` would.

Both read at most `max_chars` characters (MAX_SOURCE_CHARS unless the caller says, None
for no limit): over it, `check_text` reads nothing and returns one error saying so, with
no span (it is about the file as a whole).  Checking costs about 2.5 s and 115 MB per MB
of Relay text (a 20 MB file: 50 s and 2.3 GB), so the limit is what bounds a check of
any file; 32 Mi characters is 70 times the largest text of the corpus (460 KB).  The
limit counts the whole text, a #[metadata] section too: finding where the section starts
takes the scanner, which is itself linear work (4 s for 20 MB).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .diagnostics import Diagnostic
from .ir.expr import Call, ErrorExpr, Expr, Function, GlobalVar, Op, Var
from .ir.functor import children
from .ir.functor import post_order
from .ir.types import Type
from .ir.module import IRModule
from .ir.span import Source, document_span
from .ops import attr_schema
from .parser import ParseResult, parse
from .pauses import pause_point, steady
from .parser.parse import OnSyntax
from .parser.incremental import Change, Cone, cone, own_nodes, prepare
from .parser.scan import Scan
from .parser.symbols import SymbolIndex
from .support import gc_paused
from .typing.infer import TypeChecker, infer_expr_types


@dataclass(frozen=True, slots=True)
class CheckResult:
    parsed: ParseResult
    type_diagnostics: tuple[Diagnostic, ...]
    # the nodes whose type the text wrote (`ty=` comments), with that type
    commented: Mapping[Expr, Type] = field(default_factory=dict)
    # False: the module's types are not (all) inferred yet, or were left half written by a
    # stopped inference (`recheck`'s `on_committed`); `type_diagnostics` are the last ones
    # known to stand, `commented` the types the text writes
    typed: bool = True

    @property
    def module(self):
        return self.parsed.module

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Syntax and name diagnostics, then type diagnostics, each in source order."""
        return [*self.parsed.diagnostics, *self.type_diagnostics]


MAX_SOURCE_CHARS = 32 << 20


Parsed = Callable[[ParseResult, tuple[Diagnostic, ...]], None]
Committed = Callable[["CheckResult", Change], None]


def check_text(text: str, name: str = "<input>", incremental: bool = False,
               max_chars: int | None = MAX_SOURCE_CHARS, on_parsed: Parsed | None = None,
               on_syntax: OnSyntax | None = None) -> CheckResult:
    """`incremental`: keep what `recheck` needs to re-check the next version of the text.
    `max_chars`: a longer text is not read; the result is an empty module and one error.
    `on_parsed(parsed, ())`: called once the text is parsed, before it is typed (the
    language server publishes the syntax and name diagnostics then).  `on_syntax(source,
    syntax diagnostics)`: called before that, once the text is read (parser/parse.py)."""
    if max_chars is not None and len(text) > max_chars:
        return _too_large(text, name, max_chars)
    with gc_paused():  # the cycle collector would walk the whole module again and again
        parsed = parse(text, name, incremental, attr_schema=attr_schema, on_syntax=on_syntax)
        if on_parsed is not None:
            on_parsed(parsed, ())
        commented: dict = {}
        checker = TypeChecker(parsed.module, check_annotations=True)  # what infer_types does
        checker.commented = commented
        diagnostics = checker.run(_cut_off(parsed))
        if parsed.incremental is not None:
            _note_unused(parsed, checker.types, commented)
    return CheckResult(parsed, tuple(diagnostics), commented)


def _cut_off(parsed: ParseResult) -> list[Expr]:
    """The statements to type besides what the definitions use: none in a text without
    syntax errors (typed as TVM types it), every statement in one with them.  A statement
    that does not parse is a hole, which cuts what it used off the definition's dataflow:
    while the user types `%17 = concatenate(%16, ` the statements before it would lose
    their types (the editor's inlay hints and hovers, all at once, until the `)`)."""
    if not any(d.is_error and d.source == "syntax" for d in parsed.diagnostics):
        return []
    return [s.node for s in parsed.index.symbols if s.kind == "graph" and isinstance(s.node, Expr)]


def _note_unused(parsed: ParseResult, typed: Mapping, commented: dict) -> None:
    """Add to `commented` the types the comments of unused statements wrote (a whole
    check types only what the definitions use): `recheck` needs them if an edit uses
    such a statement again."""
    for piece in parsed.incremental.anchors.pieces:  # type: ignore[union-attr]
        if piece.info is not None and piece.info.value not in typed:
            for node in own_nodes(piece):
                if node.ty is not None:
                    commented.setdefault(node, node.ty)


def recheck(previous: CheckResult, text: str, max_chars: int | None = MAX_SOURCE_CHARS,
            on_parsed: Parsed | None = None,
            on_committed: Committed | None = None) -> tuple[CheckResult, Change] | None:
    """Check `text`, an edit of `previous`'s text, re-reading only the statement the edit
    changed; None when that cannot be done (then `check_text` the whole of it).  The
    result is what `check_text` gives; `previous` is spent (its nodes, index and spans
    now describe `text`).

    The new statement is typed against the types of what it uses.  That is the answer
    of a whole check when its type is the old one, it has no error, it is used, and the
    old statement used no `fn` with an unannotated parameter.  Otherwise the type of
    something else may change (a statement after it; what an ERROR flows back into; a
    parameter typed by the old use; nothing, for an unused statement a whole check does
    not type): then the statement and what uses it are typed again (`_retype_cone`), or
    when that cannot be done the module, from scratch, which costs a fifth of a whole
    check.  Before that, `on_committed(untyped, change)` is called with the result as it
    stands (`typed` False: the type diagnostics outside the statement, the types the
    text writes), then `on_parsed(parsed, those type diagnostics)` (the language server
    stores the first and publishes the second at once).  A `previous` that is not
    `typed` (its typing was stopped) is typed again whole after the statement is read.
    A text over `max_chars` gives None (`check_text` then says it is too large).

    Reading the statement and committing it updates `previous` in place, so it runs
    `steady()` (compiler/pauses.py: it pauses, never stops).  The typing after it may
    stop when the caller took the untyped result (`on_committed`): a `Stopped` then
    leaves that result as the text's latest, `typed` False.
    """
    if max_chars is not None and len(text) > max_chars:
        return None
    with gc_paused():
        with steady():  # (`previous` is updated in place, compiler/pauses.py)
            done = _recheck(previous, text, on_parsed, on_committed)
        if done is None or isinstance(done[0], CheckResult):
            return done  # type: ignore[return-value]
        retype, change = done
        if on_committed is None:
            with steady():
                return retype(), change
        return retype(), change


def retype(untyped: CheckResult) -> CheckResult:
    """Type again, whole, a module whose typing was stopped (`CheckResult.typed` False)."""
    with gc_paused():
        return _retype_whole(untyped.parsed, dict(untyped.commented))


def _recheck(previous: CheckResult, text: str, on_parsed: Parsed | None, on_committed: Committed | None):
    """The statement read and committed: (the result, the change) when it is typed too,
    else (the typing still to do, the change); None when it cannot be read alone."""
    pending = prepare(previous.parsed, text)
    if pending is None:
        return None
    commented: dict = {}
    typed = infer_expr_types(previous.module, pending.value, pending.is_new, check_annotations=True,
                             commented=commented) if previous.typed else None
    holes = isinstance(pending.value, ErrorExpr) and isinstance(pending.statement.value, ErrorExpr)
    alone = typed is not None and pending.statement.symbol.references and (
        holes  # `%5 = ⁇` still (typing inside a broken statement): ERROR before and after
        or (typed[0] is not None and typed[0] == pending.statement.value.ty and not pending.diagnostics
            and not typed[1] and _uses_are_fixed(previous.module, pending.old_uses())))
    local = typed is not None and pending.statement.symbol.references and \
        _uses_are_fixed(previous.module, pending.old_uses())
    kept = [d for d in previous.type_diagnostics if not _within(d, pending.start, pending.old_end)]
    old_uses = _uses(pending.old_nodes())
    parsed, change = pending.commit()
    old = set(change.old_nodes)
    written = {n: t for n, t in previous.commented.items() if n not in old}
    value = change.nodes[0]
    if alone:
        if pending.value in commented:
            commented[value] = commented.pop(pending.value)
        written.update(commented)
        diagnostics = sorted([*kept, *typed[1]], key=_line_col)  # type: ignore[index]
        return CheckResult(parsed, tuple(diagnostics), written), change
    for node, ty in pending.written.items():
        written[value if node is pending.value else node] = ty
    if on_committed is not None:
        on_committed(CheckResult(parsed, tuple(kept), dict(written), typed=False), change)
    if on_parsed is not None:
        on_parsed(parsed, tuple(kept))

    def retype() -> CheckResult:
        if local:
            done = _retype_cone(parsed, change, tuple(kept), written, old_uses)
            if done is not None:
                return done[0]
        change.retyped = True
        return _retype_whole(parsed, written)

    return retype, change


def _retype_whole(parsed: ParseResult, written: dict) -> CheckResult:
    """Type the whole module again from the types the text writes (`written`)."""
    also = _cut_off(parsed)
    _forget_types(parsed, written, also)
    commented: dict = {}
    checker = TypeChecker(parsed.module, check_annotations=True)
    checker.commented = commented
    diagnostics = checker.run(also)
    for node, ty in written.items():  # statements nothing uses are not typed: keep what they wrote
        commented.setdefault(node, ty)
    return CheckResult(parsed, tuple(diagnostics), commented)


def _forget_types(parsed: ParseResult, written: Mapping[Expr, Type], also: Sequence[Expr] = ()) -> None:
    """Put every node's type back to what the text wrote (None where it wrote none), as
    the parser left them: what `infer_types` starts from.  `also`: the statements typed
    besides what the definitions use (`_cut_off`), among them a graph binding a syntax
    error left inside a function's body, which no statement piece holds: an old type
    kept there would be taken for a comment's (a fuzzer's find: "the comment says
    ty=...", no comment in the text)."""
    roots: list[Expr] = [*parsed.module.global_vars.values(), *parsed.module.functions.values()]
    roots += [p.info.value for p in parsed.incremental.anchors.pieces if p.info is not None]  # type: ignore[union-attr]
    roots += also
    done: set = set()
    for i, root in enumerate(roots):  # (20,000 roots, one a statement: post_order's own pauses never come)
        if not i % PAUSE_ROOTS:
            pause_point()
        for node in post_order(root, done=done):
            done.add(node)
            if not isinstance(node, Op):
                object.__setattr__(node, "ty", written.get(node))
def _retype_cone(parsed: ParseResult, change: Change, diagnostics: tuple[Diagnostic, ...],
                 written: dict, old_uses: set[int]) -> tuple[CheckResult, Change] | None:
    """Type the re-read statement again, with what depends on its value (`cone`), the rest
    of the module keeping its types; None when that may differ from a whole check (then
    type the whole module): a module with constants of unknown value (their one note
    depends on every use), a use in a definition's value whose signature is not written
    in full, an operand of the cone with no type, a function whose type changes, and an
    edit that changes which values the statement uses (a whole check types only what
    the definitions use: what is typed may change then).  Statements of the cone that
    nothing uses (their uses are themselves unused) are not typed, as in a whole check."""
    state = parsed.incremental
    if state is None or state.lowerer.unknown_constants:
        return None
    found = cone(parsed, change.piece, CONE_LIMIT)
    if found is None:
        return None
    if any(f.ret_type is None or any(p.type_annotation is None for p in f.params) for f, _ in found.functions):
        return None
    if _uses(change.nodes) != old_uses:
        return None  # a value used or no longer used: what is typed at all may change
    live = _live(found)
    if found.pieces[0] not in live:
        return None
    dead = [p for p in found.pieces if p not in live]
    found.pieces = [p for p in found.pieces if p in live]
    for node in Cone(dead, [], found.anchors).nodes():  # as a whole check leaves them:
        object.__setattr__(node, "ty", written.get(node))  # the types their comments wrote
    nodes = found.nodes()
    mine = set(nodes)
    checker = TypeChecker(parsed.module, check_annotations=True)
    commented: dict = {}
    checker.commented = commented
    for gv, func in parsed.module.functions.items():
        if gv.ty is None:
            return None
        checker.global_types[gv] = gv.ty
        if func not in mine and func.ty is not None:
            checker.types[func] = func.ty
            checker.seeded.add(func)
    for i, node in enumerate(nodes):
        if not i % PAUSE_NODES:
            pause_point()
        operands = [c for c in children(node) if isinstance(c, Expr) and c not in mine]
        if isinstance(node, Call) and not isinstance(node.op, Op) and node.op not in mine:
            operands.append(node.op)
        for c in operands:
            if c.ty is None:
                if isinstance(c, (Var, GlobalVar, Op)):
                    continue  # a binder typed from its annotation, a global from its signature
                return None
            checker.types[c] = c.ty
            checker.seeded.add(c)
    old_types = {f: f.ty for f, _ in found.functions}
    for node in nodes:  # as the parser left them: the types their comments wrote
        object.__setattr__(node, "ty", written.get(node))
    for i, piece in enumerate(found.pieces):
        if not i % PAUSE_ROOTS:
            pause_point()
        checker.walk(piece.info.value)
    for func, _ in found.functions:
        checker.walk(func)
    checker.retry_pending(final=True)
    checker.finish()
    if any(f.ty != old for f, old in old_types.items()):
        return None
    regions = sorted([(p.base, p.limit) for p in found.pieces] +  # a body's value: up to the end of its definition
                     [(p.base, min(p.limit, document_span(f.span).end)) for f, p in found.functions])
    kept = [d for d in diagnostics if not _in_regions(d, regions) and not _of_bodies(d, found.functions)]
    for node, ty in written.items():
        if node not in mine:
            commented[node] = ty
    change.cone = len(found.pieces)
    result = CheckResult(parsed, tuple(sorted([*kept, *checker.diagnostics], key=_line_col)), commented)
    return result, change


CONE_LIMIT = 1 << 30  # statements in a cone; no limit: a whole check costs as much
PAUSE_ROOTS = 64  # statements (their walks) between two pause points (compiler/pauses.py)
PAUSE_NODES = 512  # nodes between two pause points


def _uses(nodes: list[Expr]) -> set[int]:
    """The nodes other than `nodes` (and other than operators) that `nodes` use."""
    ids = {id(n) for n in nodes}
    out = set()
    for n in nodes:
        for c in (*children(n), *([n.op] if isinstance(n, Call) else [])):
            if isinstance(c, Expr) and not isinstance(c, Op) and id(c) not in ids:
                out.add(id(c))
    return out


def _live(found) -> set:
    """The statements of `found` a definition uses (through the others): a statement's
    uses are all in the cone, the later ones; a use in a body's value is a definition's."""
    live: set = set()
    users: dict[int, list] = {}
    tails = {id(p) for _, p in found.functions}
    for i, piece in enumerate(reversed(found.pieces)):
        if not i % PAUSE_ROOTS:
            pause_point()
        info = piece.info
        for reference in info.symbol.references:
            user = found.place(reference)
            if id(user) in tails or user in live:
                live.add(piece)
                break
    return live


def _in_regions(d: Diagnostic, regions: list[tuple[int, int]]) -> bool:
    """Whether `d` starts in one of `regions` (sorted, not overlapping)."""
    span = document_span(d.span)
    if span is None:
        return False
    i = bisect_right(regions, (span.start, float("inf"))) - 1
    return i >= 0 and regions[i][0] <= span.start < regions[i][1]


def _of_bodies(d: Diagnostic, functions) -> bool:
    """A diagnostic a function's exit made at its body (its result against its annotation)."""
    span = document_span(d.span)
    return span is not None and d.message.startswith("the function returns") and any(
        (b := document_span(f.body.span)) is not None and (b.start, b.end) == (span.start, span.end)
        for f, _ in functions)


def _too_large(text: str, name: str, max_chars: int) -> CheckResult:
    """What `check_text` gives for a text over the size limit: nothing read, one error."""
    source = Source(name, text)
    message = (f"this text has {len(text):,} characters, more than the {max_chars:,} RelayLens "
               "checks; it was not read (keep weights beside the text, in a .npz, rather than "
               "in its #[metadata] section)")
    error = Diagnostic(message, None, source="size")  # no span: no line index of a huge text
    return CheckResult(ParseResult(IRModule(), [error], source, SymbolIndex(), Scan(code="")), ())


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
