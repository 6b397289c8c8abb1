"""Parse results, cached per (uri, version): what every handler reads.

The fast path (parse, name resolution, type inference: `compiler/check.py`) runs when a document opens and, debounced, after
it changes, in pieces (server/pieces.py, started by the diagnostics feature); requests never recompute.
While an analysis is in progress, readers get the latest analysis stored, except when
the one in progress is updating it in place, or there is none yet, or `current` is
asked for, or the latest is still being typed (except for hover and definition:
`for_request(typing=True)`): then `settle` (set by the diagnostics feature) finishes it first.  An
analysis of an older version never replaces a newer one.  While the user types, the last analysis answers:
its ranges are converted on its own text, so they stay consistent with one another even
when the editor's text has moved on.  Only a document that was never analysed (a request
before didOpen finished, say) is analysed on demand, and so is the current version for the
requests whose answer is laid over the editor's text as it is now (rename and formatting
edits, semantic tokens, folding ranges: `Analyses.current`); the debounced run then finds
that version done.  Completion reads the latest analysis and the last one without syntax
errors (`good`), plus the text around the cursor.

An edit inside one statement of a long body is analysed incrementally (`recheck`:
only that statement is read and typed again, compiler/parser/incremental.py): the new
analysis takes over the previous one's module, index and expression table, updated in
place, and the previous analysis is spent (`spent`; requests never read a spent one).
A statement the edit left unparsable is re-read alone too, recovered as a whole parse
would (a hole).  When typing remains to be done after the parse (a whole check, or an
edit that changed a type), `on_parsed` hears of the syntax and name diagnostics first (the
diagnostics feature publishes them at once for long documents), and a whole read tells
`on_syntax` of the syntax diagnostics before it resolves names.  That typing may be
stopped by the next edit: meanwhile the analysis as read (`typed` False) is the latest
(`on_read`), a reader finishes its typing before it reads it (the diagnostics feature's
`settle`), and the next analysis, starting from it, types the module whole.

A document over the size limit (`SizeLimit`, documents.py) is only parsed: its analysis
is `syntax_only` (no types, never built) and carries one warning saying so.  A file the
client never opened (a request on a workspace file: documents.py) is analysed apart
(`of_file`), and only the last few such analyses are kept.

Derived, syntax-level facts (tokens, scopes, folds: `syntax.py`) are computed once per
analysis, on first use, and kept on it.  The two tables that hover and definition read
(the symbols by position, the expressions by range) are built by `prepare()`, which the
fast path calls once it has published the diagnostics: a request only looks them up
(sorting 60,000 symbol positions of a 20,000-line file takes 0.1 s, which the first
hover after every edit used to pay).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..compiler.check import CheckResult, Parsed, check_text, recheck, retype
from ..compiler.diagnostics import Diagnostic, Severity
from ..compiler.ir.span import Source
from ..compiler.parser import ParseResult, SymbolIndex, parse
from ..compiler.transform.patterns.table_check import table_check
from ..compiler.parser.parse import OnSyntax
from .documents import SizeLimit
from .exprs import ExprIndex
from .syntax import Syntax

log = logging.getLogger("relaylens.server")

@dataclass(frozen=True, slots=True)
class Analysis:
    uri: str
    version: int | None
    result: ParseResult
    type_diagnostics: tuple[Diagnostic, ...] = ()
    commented: Mapping = field(default_factory=dict)  # nodes with a `ty=` comment in the text → its type
    syntax_only: bool = False  # over the size limit: parsed, not typed, not built
    typed: bool = True  # False: read, its typing in progress or stopped (see `analyse`)
    _syntax: list = field(default_factory=list, repr=False, compare=False)
    _exprs: list = field(default_factory=list, repr=False, compare=False)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Syntax and name diagnostics, then type diagnostics; a BYOC pattern table's read
        as a table (its wildcards' unknown types are no warnings: table_check.py)."""
        found = [*self.result.diagnostics, *self.type_diagnostics]
        if self.syntax_only:
            return found
        as_table = table_check(self.result.module, found, self.source.text)
        return found if as_table is None else as_table

    @property
    def exprs(self) -> "ExprIndex":
        """The expressions by source range (for hover on any expression), built on first use."""
        if not self._exprs:
            self._exprs.append(ExprIndex(self.result))
        return self._exprs[0]

    @property
    def source(self) -> Source:
        return self.result.source

    @property
    def index(self) -> SymbolIndex:
        return self.result.index

    @property
    def syntax(self) -> "Syntax":
        """Tokens, scopes and folds of this analysis (server/syntax.py), computed on first
        use and kept: every later request on this version reads them."""
        if not self._syntax:
            self._syntax.append(Syntax(self.result))
        return self._syntax[0]

    def checked(self) -> CheckResult:
        return CheckResult(self.result, self.type_diagnostics, self.commented, self.typed)

    def prepare(self) -> None:
        """Build the lookup tables of hover and definition now (each is built once), and
        the table of `%N` definitions an incremental re-read looks names up in (0.1 s at
        20,000 lines, which the first edit after an open used to pay)."""
        self.index.at(0)  # the first lookup sorts the symbol index by position
        self.exprs  # noqa: B018 -- built on first use
        if self.result.incremental is not None:  # what the next edit's re-read looks names up in
            self.result.incremental.graph_symbols(self.index)

    @property
    def has_syntax_errors(self) -> bool:
        return any(d.is_error and d.source == "syntax" for d in self.result.diagnostics)


def analyse(uri: str, version: int | None, text: str, previous: Analysis | None = None,
            limit: SizeLimit | None = None, on_parsed: Parsed | None = None,
            on_syntax: OnSyntax | None = None,
            on_read: Callable[[Analysis], None] | None = None) -> Analysis:
    """Analyse `text`: incrementally from `previous` (an analysis of the same document,
    spent if that succeeds) when the edit allows it, else from scratch; only parse it
    when it is over `limit`.  `on_parsed` is called with the syntax and name diagnostics
    (and the type diagnostics known to stand) before the types are inferred, when that
    is still to do (compiler/check.py); before that, when the whole text is read,
    `on_syntax` with the syntax diagnostics alone (compiler/parser/parse.py).

    When an incremental analysis has typing left to do once the statement is read, it
    calls `on_read` with the analysis as it stands then (`typed` False; it spent
    `previous`), and that typing may be stopped (compiler/pauses.py `Stopped`): the
    caller keeps that analysis as the document's latest, and the next analysis of the
    document starting from it reads its edit and types the module again whole."""
    size = limit.size_over(text) if limit is not None else None
    if size is not None:
        note = Diagnostic(f"this document is {limit.describe(size)}: it is only parsed "
                          "(no type checking, no build)", severity=Severity.WARNING, source="size")
        return Analysis(uri, version, parse(text, uri), (note,), syntax_only=True)
    if previous is not None and previous.source.text == text and not previous.syntax_only:
        # a new version of the same text (an edit undone before it was analysed, say)
        checked = previous.checked() if previous.typed else retype(previous.checked())
        return Analysis(uri, version, previous.result, checked.type_diagnostics, checked.commented,
                        _syntax=previous._syntax, _exprs=previous._exprs)
    if previous is not None and previous.result.incremental is not None:
        read: list[Analysis] = []

        def committed(untyped: CheckResult, change) -> None:
            analysis = Analysis(uri, version, untyped.parsed, untyped.type_diagnostics, untyped.commented,
                                typed=False)
            _splice_exprs(previous, analysis, change)
            read.append(analysis)
            if on_read is not None:
                on_read(analysis)

        try:
            done = recheck(previous.checked(), text, on_parsed=on_parsed, on_committed=committed)
        except Exception:  # noqa: BLE001 -- a bug in the shortcut must not cost the analysis
            log.exception("incremental analysis of %s failed; analysing it whole", uri)
            done = None
        if done is not None:
            checked, change = done
            analysis = Analysis(uri, version, checked.parsed, checked.type_diagnostics, checked.commented)
            if read:
                analysis._exprs.extend(read[0]._exprs)
            else:
                _splice_exprs(previous, analysis, change)
            return analysis
    checked = check_text(text, uri, incremental=True, on_parsed=on_parsed, on_syntax=on_syntax)
    return Analysis(uri, version, checked.parsed, checked.type_diagnostics, checked.commented)


def _splice_exprs(previous: Analysis, analysis: Analysis, change) -> None:
    """Hand `previous`'s expression table, moved across `change`, to `analysis`."""
    if previous._exprs:
        previous._exprs[0].splice(change, analysis.source)
        analysis._exprs.append(previous._exprs[0])


class Analyses:
    """The latest analysis of each open document."""

    FILES_KEPT = 4  # analyses of files the client did not open

    def __init__(self, limit: SizeLimit | None = None) -> None:
        self.limit = limit or SizeLimit()
        # settle(uri, exact, typing=False): finish what is in progress for `uri` when a reader
        # needs it (the diagnostics feature's analyses in pieces; `exact`: the reader needs the
        # current version; `typing`: it may read an analysis whose typing is in progress)
        self.settle: Callable[..., None] = lambda uri, exact, typing=False: None
        self._latest: dict[str, Analysis] = {}
        self._good: dict[str, Analysis] = {}  # the latest analysis without syntax errors
        self._files: dict[str, Analysis] = {}  # uri → analysis of a file read from disk

    def update(self, uri: str, version: int | None, text: str, on_parsed: Parsed | None = None,
               on_syntax: OnSyntax | None = None) -> Analysis:
        """Analyse this version unless it already is; keep it as the latest.  `on_parsed`,
        `on_syntax`: see `analyse`."""
        known = self._latest.get(uri)
        if known is not None and known.version == version and known.source.text == text and known.typed:
            return known
        analysis = analyse(uri, version, text, known, self.limit, on_parsed, on_syntax,
                           on_read=lambda read: self._keep(uri, known, read))
        self._keep(uri, known, analysis)
        return analysis

    def _keep(self, uri: str, known: Analysis | None, analysis: Analysis) -> None:
        """Store `analysis` as the latest (made from `known`), unless a newer version's is."""
        stored = self._latest.get(uri)
        if stored is not known and _newer(stored, analysis):
            return  # a newer version was analysed meanwhile (this one in pieces): it stays
        self._latest[uri] = analysis
        if not analysis.has_syntax_errors and analysis.typed:
            self._good[uri] = analysis
        elif known is not None and self._good.get(uri) is known and analysis.result.module is known.result.module:
            self._good.pop(uri, None)  # spent on this analysis

    def current(self, uri: str, version: int | None, text: str) -> Analysis:
        """The analysis of exactly this text (made now if the latest is older)."""
        self.settle(uri, True)
        return self.update(uri, version, text)

    def latest(self, uri: str) -> Analysis | None:
        self.settle(uri, False)
        return self._latest.get(uri)

    def good(self, uri: str) -> Analysis | None:
        """The latest analysis that had no syntax error (what completion falls back on
        while the user is typing an unfinished line)."""
        self.settle(uri, False)
        return self._good.get(uri)

    def for_request(self, uri: str, version: int | None, text: str, typing: bool = False) -> Analysis:
        """The analysis a request reads: the latest one, or a new one if there is none.
        `typing`: the latest may be one still being typed (`typed` False: each node's type
        the inferred one, the one its `ty=` comment wrote, the previous version's, or
        none), read as it stands rather than typed to its end first: what hover and
        definition take, which answer at once (the module typed again after a statement
        broke took 1-2 s at 100,000 lines, which the first hover waited for)."""
        self.settle(uri, False, typing)
        known = self._latest.get(uri)
        return known if known is not None else self.update(uri, version, text)

    def of_file(self, uri: str, text: str) -> Analysis:
        """The analysis of a file the client did not open (read from disk: documents.py)."""
        known = self._files.pop(uri, None)
        if known is None or known.source.text != text:
            known = analyse(uri, None, text, limit=self.limit)
        self._files[uri] = known  # the most recent last
        while len(self._files) > self.FILES_KEPT:
            del self._files[next(iter(self._files))]
        return known

    def stored(self, uri: str) -> Analysis | None:
        """The latest analysis as it is, without settling anything (for the analysis in
        progress itself)."""
        return self._latest.get(uri)

    def forget(self, uri: str) -> None:
        self._latest.pop(uri, None)
        self._good.pop(uri, None)


def _newer(stored: Analysis | None, analysis: Analysis) -> bool:
    """Whether `stored` is of a later version than `analysis`."""
    return stored is not None and stored.version is not None and analysis.version is not None \
        and stored.version > analysis.version
