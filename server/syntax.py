"""Syntax-level facts about one analysis, for the editing features, computed once.

`Syntax(result)` hangs off an `Analysis` (`analysis.syntax`); each fact is computed on
first use and kept, so every request on that version reads it:

* `tokens`: the semantic tokens of the text, as `(start, end, type, modifiers)` offsets.
  Names the parser resolved come from the `SymbolIndex` (so a `%x` is a parameter or a
  `let` variable, `List` a type, `Cons` a constructor); the rest from a lexer built on the
  grammar's own terminal patterns, run over the scanner's text (comments blanked); then
  the comments, with the parts of `/* ty=... span=... */` annotations told apart.
* `regions`: for each `%` local, the text where it is visible (its function for a
  parameter, its `let` to the end of its block, its clause for a pattern variable, the
  rest of the file for a `free_var`), from the IR's spans.  Completion and rename read it.
* `folds`: bracketed blocks over several lines, multi-line comments and runs of `//`
  lines, and the `#[metadata]` section, as offsets.

The second half works on raw text, for a document that may not parse: `cursor_context`
reads what surrounds the cursor (the word being typed, the call it sits in, whether a type
is expected), and `map_offset` carries an offset of the editor's text over to the text an
older analysis was made from.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cached_property

from ..compiler.ir.expr import Function, Let, Match, pattern_vars
from ..compiler.ir.functor import post_order
from ..compiler.ir.span import document_span
from ..compiler.parser import ParseResult, Symbol
from ..compiler.parser.annotations import is_annotation
from ..compiler.parser.grammar import grammar
from ..compiler.ir.dtypes import DTYPE_NAMES
from ..compiler.parser.lower_types import DTYPE  # the parser's own rule for dtype names

# ---- the legend --------------------------------------------------------------------------
TOKEN_TYPES = ("variable", "parameter", "function", "type", "typeParameter", "enumMember",
               "keyword", "number", "string", "comment", "property", "decorator", "macro")
TOKEN_MODIFIERS = ("declaration", "readonly", "defaultLibrary", "annotation")
T = {name: i for i, name in enumerate(TOKEN_TYPES)}
M = {name: 1 << i for i, name in enumerate(TOKEN_MODIFIERS)}

KEYWORDS = frozenset({"def", "type", "extern", "fn", "let", "if", "else", "match", "free_var",
                      "ref", "ref_read", "ref_write", "True", "False", "None", "nullptr", "_"})
DTYPES = DTYPE_NAMES  # in the order completion offers them


def terminal(name: str) -> str:
    """The regular expression of one of the grammar's terminals."""
    return grammar().get_terminal(name).pattern.to_regexp()


def _lexer() -> re.Pattern:
    order = ("META_REF", "STRING", "LOCAL", "GRAPH", "GLOBAL", "NUMBER", "DOTTED", "IDENT")
    return re.compile("|".join(f"(?P<{name}>{terminal(name)})" for name in order))


_LEX: re.Pattern | None = None


def lexer() -> re.Pattern:
    global _LEX
    if _LEX is None:
        _LEX = _lexer()
    return _LEX


_OPS: dict | None = None


def known_ops() -> dict:
    """The operator library by name ({} if it cannot be loaded; then asked again later)."""
    global _OPS
    if _OPS is None:
        try:
            from ..compiler.ops import all_ops  # lazy: the operator library loads on first use

            _OPS = {op.name: op for op in all_ops()}
        except Exception:  # noqa: BLE001 -- a broken op file must not break the editor
            return {}
    return _OPS


_SPAN_KEY = re.compile(r"(?:^|\s)(span=)")
_HEADER = re.compile(r"#\[[^\]\n]*\]")
_BRACKETS = re.compile(r'[{}()\[\]]|"(?:\\.|[^"\\])*"')


def _symbol_style(symbol: Symbol, params: set[int], definition: bool) -> tuple[int, int]:
    kind = symbol.kind
    if kind == "local":
        style = (T["parameter"] if id(symbol.node) in params else T["variable"], 0)
    elif kind == "graph":
        style = (T["variable"], M["readonly"])
    elif kind == "global":
        style = (T["function"], 0)
    elif kind == "type":
        style = (T["type"], 0)
    elif kind == "constructor":
        style = (T["enumMember"], 0)
    else:  # type_var
        style = (T["typeParameter"], 0)
    return (style[0], style[1] | M["declaration"]) if definition else style


class Syntax:
    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.source = result.source
        self.index = result.index
        self._ops_used: set[str] = set()  # filled by the lexer

    # ---- tokens ----------------------------------------------------------------------------
    @cached_property
    def _starts(self) -> dict[int, tuple[Symbol, object]]:
        """Each definition and reference of the index by its start offset."""
        found: dict[int, tuple[Symbol, object]] = {}
        for symbol in self.index.symbols:
            for span in symbol.references:
                found.setdefault(span.start, (symbol, span))
            if symbol.definition is not None:
                found[symbol.definition.start] = (symbol, symbol.definition)
        return found

    @cached_property
    def tokens(self) -> list[tuple[int, int, int, int]]:
        code = self.result.scan.code
        out: list[tuple[int, int, int, int]] = []
        self._lex(code, 0, len(code), 0, out)
        text = self.source.text
        comments = self.result.scan.comments
        for comment in comments:
            if comment.block and is_annotation(comment.body):
                self._annotation(comment, out)
            else:
                out.append((comment.start, comment.end, T["comment"], 0))
        spans = [(c.start, c.end) for c in comments]
        firsts = [s for s, _ in spans]
        for m in _HEADER.finditer(text, 0, len(code)):
            i = bisect_right(firsts, m.start()) - 1
            if code[m.start()] == " " and not (i >= 0 and spans[i][0] <= m.start() < spans[i][1]):
                out.append((m.start(), m.end(), T["decorator"], 0))
        if self.result.scan.metadata is not None:
            end = self.result.scan.metadata[0]
            start = text.rfind("#[", 0, end)
            if start >= 0:
                out.append((start, end, T["decorator"], 0))
        out.sort()
        return out

    @cached_property
    def ops_in_text(self) -> set[str]:
        """The operator names the text uses (as the lexer classified them)."""
        self.tokens  # noqa: B018 -- the lexer fills the set
        return self._ops_used

    def _lex(self, code: str, start: int, end: int, extra: int, out: list) -> None:
        starts, params, ops = self._starts, self.params, known_ops()
        for m in lexer().finditer(code, start, end):
            s, e = m.span()
            hit = starts.get(s)
            if hit is not None:
                symbol, span = hit
                kind, mods = _symbol_style(symbol, params, span is symbol.definition)
                out.append((s, min(span.end, e) if span.end > s else e, kind, mods | extra))  # `%t` of `%t.0`
                continue
            group = m.lastgroup
            if group in ("LOCAL", "GRAPH"):
                out.append((s, e, T["variable"], extra))
            elif group == "GLOBAL":
                out.append((s, e, T["function"], extra))
            elif group == "NUMBER":
                out.append((s, e, T["number"], extra))
            elif group == "STRING":
                out.append((s, e, T["string"], extra))
            elif group == "META_REF":
                out.append((s, e, T["macro"], extra))
            else:
                word = m.group()
                if word == "match" and code[e : e + 1] == "?":
                    out.append((s, e + 1, T["keyword"], extra))
                elif word in KEYWORDS:
                    out.append((s, e, T["keyword"], extra))
                elif word == "Tensor" or DTYPE.fullmatch(word):
                    out.append((s, e, T["type"], M["defaultLibrary"] | extra))
                else:
                    j = e
                    while j < end and code[j] in " \t\r\n":
                        j += 1
                    nxt = code[j : j + 2]
                    if nxt[:1] == "=" and nxt[1:2] not in ("=", ">"):
                        out.append((s, e, T["property"], extra))
                    elif nxt[:1] == "(" or word in ops or "." in word:
                        out.append((s, e, T["function"], M["defaultLibrary"] | extra))
                        self._ops_used.add(word)

    def _annotation(self, comment, out: list) -> None:
        """`/* ty=T span=S */`: delimiters as comment, keys as decorator, the type's tokens,
        the origins as a string; every part with the `annotation` modifier."""
        ann = M["annotation"]
        text = self.source.text
        body_start = comment.start + 2
        closed = comment.end - comment.start >= 4 and text[comment.end - 2 : comment.end] == "*/"
        body_end = comment.end - 2 if closed else comment.end
        out.append((comment.start, body_start, T["comment"], ann))
        body = text[body_start:body_end]
        span_key = None
        for span_key in _SPAN_KEY.finditer(body):
            pass
        head_end = body_end if span_key is None else body_start + span_key.start(1)
        stripped = body.lstrip()
        if stripped.startswith("ty="):
            key = body_start + len(body) - len(stripped)
            out.append((key, key + 3, T["decorator"], ann))
            self._lex(text, key + 3, head_end, ann, out)
        if span_key is not None:
            key = body_start + span_key.start(1)
            out.append((key, key + 5, T["decorator"], ann))
            rest = text[key + 5 : body_end]
            lead = len(rest) - len(rest.lstrip())
            if rest.strip():
                out.append((key + 5 + lead, key + 5 + len(rest.rstrip()), T["string"], ann))
        if closed:
            out.append((comment.end - 2, comment.end, T["comment"], ann))

    # ---- scopes -----------------------------------------------------------------------------
    @cached_property
    def _binders(self) -> tuple[dict[int, tuple[int, int]], set[int]]:
        """Where each bound Var is visible (by id), and the ids of the parameters."""
        source = self.source
        regions: dict[int, tuple[int, int]] = {}
        params: set[int] = set()
        lets: list = []

        def put(var, span) -> None:
            doc = document_span(span, source)
            if doc is not None:
                regions[id(var)] = (doc.start, doc.end)

        for func in self.result.module.functions.values():
            for node in post_order(func):
                if isinstance(node, Function):
                    for p in node.params:
                        params.add(id(p))
                        put(p, node.span)
                elif isinstance(node, Let):
                    doc = document_span(node.span, source)
                    if doc is not None:
                        lets.append((node.var, doc))
                elif isinstance(node, Match):
                    for clause in node.clauses:
                        for var in pattern_vars(clause.lhs):
                            put(var, clause.span)
        # a let reaches the end of its block, also when error recovery cut the block short
        ends = self._block_ends([doc.start for _, doc in lets])
        for var, doc in lets:
            regions[id(var)] = (doc.start, max(doc.end, ends[doc.start]))
        return regions, params

    def _block_ends(self, offsets: list[int]) -> dict[int, int]:
        """For each offset, where the innermost `{...}` or `(...)` around it closes (the end
        of its definition, or of the text, when that block is not closed).  One sweep."""
        closing: dict[int, int] = {}
        enclosing: dict[int, int | None] = {}
        stack: list[int] = []
        queries = sorted(set(offsets))
        q = 0
        for m in _BRACKETS.finditer(self.result.scan.code):
            while q < len(queries) and queries[q] < m.start():
                enclosing[queries[q]] = stack[-1] if stack else None
                q += 1
            ch = m.group()
            if ch in "({":
                stack.append(m.start())
            elif ch in ")}" and stack:
                closing[stack.pop()] = m.start()
        for rest in queries[q:]:
            enclosing[rest] = stack[-1] if stack else None
        out = {}
        for offset, opened in enclosing.items():
            end = closing.get(opened) if opened is not None else None
            if end is None:
                item = self.item_at(offset)
                end = item[1] if item else len(self.source.text)
            out[offset] = end
        return out

    @property
    def params(self) -> set[int]:
        return self._binders[1]

    @cached_property
    def regions(self) -> dict[int, tuple[int, int]]:
        """For each `%` local symbol (by id), the [start, end] where its name is visible."""
        binders = self._binders[0]
        end = len(self.source.text)
        out: dict[int, tuple[int, int]] = {}
        for symbol in self.index.symbols:
            if symbol.kind == "local" and symbol.definition is not None:
                region = binders.get(id(symbol.node))
                if region is None:  # a free_var: everything after it
                    region = (symbol.definition.start, end)
                out[id(symbol)] = region
        return out

    def region(self, symbol: Symbol) -> tuple[int, int] | None:
        return self.regions.get(id(symbol))

    def locals_at(self, offset: int) -> list[Symbol]:
        """The `%` locals visible at `offset`: bound before it, the innermost of each name."""
        best: dict[str, Symbol] = {}
        for symbol in self.index.symbols:
            if symbol.kind != "local" or symbol.definition is None:
                continue
            region = self.regions.get(id(symbol))
            if region is None or not (region[0] <= offset <= region[1]):
                continue
            if symbol.definition.end >= offset:  # bound later, or the binder being written
                continue
            known = best.get(symbol.name)
            if known is None or known.definition.start < symbol.definition.start:
                best[symbol.name] = symbol
        return list(best.values())

    def item_at(self, offset: int) -> tuple[int, int] | None:
        """The [start, end) of the top-level definition holding `offset`."""
        for item in self.result.scan.items:
            if item.start <= offset <= item.end:
                return item.start, item.end
        return None

    def graph_at(self, offset: int) -> list[Symbol]:
        """The `%N` bindings made before `offset` in its definition (latest first)."""
        item = self.item_at(offset)
        lo = item[0] if item else 0
        best: dict[str, Symbol] = {}
        for symbol in self.index.symbols:
            if symbol.kind == "graph" and symbol.definition is not None and \
                    lo <= symbol.definition.start and symbol.definition.end < offset:
                best[symbol.name] = symbol
        return sorted(best.values(), key=lambda s: -s.definition.start)

    def type_vars_at(self, offset: int) -> list[Symbol]:
        item = self.item_at(offset)
        if item is None:
            return []
        return [s for s in self.index.symbols if s.kind == "type_var" and s.definition is not None
                and item[0] <= s.definition.start < item[1]]

    # ---- folding ------------------------------------------------------------------------------
    @cached_property
    def folds(self) -> list[tuple[int, int, str | None]]:
        """`(start, end, kind)` offsets: the brackets' own offsets for a block, the whole
        comment, the metadata section; kind is None, "comment" or "region"."""
        code = self.result.scan.code
        lines = self.source.line_starts
        out: list[tuple[int, int, str | None]] = []
        stack: list[tuple[str, int]] = []
        pairs = {")": "(", "]": "[", "}": "{"}
        for m in _BRACKETS.finditer(code):
            ch = m.group()
            if ch in "([{":
                stack.append((ch, m.start()))
            elif ch in pairs:
                while stack and stack[-1][0] != pairs[ch]:
                    stack.pop()  # an unclosed bracket inside: drop it
                if stack:
                    _, start = stack.pop()
                    if bisect_right(lines, start) < bisect_right(lines, m.start()):
                        out.append((start, m.start(), None))
        text = self.source.text
        run: list = []
        for comment in self.result.scan.comments:
            if comment.block:
                out.append((comment.start, comment.end, "comment"))
                continue
            if run and "\n" not in text[run[-1].end + 1 : comment.start] and \
                    not text[run[-1].end : comment.start].strip():
                run.append(comment)
                continue
            if len(run) > 1:
                out.append((run[0].start, run[-1].end, "comment"))
            run = [comment]
        if len(run) > 1:
            out.append((run[0].start, run[-1].end, "comment"))
        if self.result.scan.metadata is not None:
            start = text.rfind("#[", 0, self.result.scan.metadata[0])
            out.append((max(start, 0), len(text.rstrip()), "region"))
        return out


# ---- the text around the cursor ------------------------------------------------------------
WINDOW = 8000  # how far back the cursor context looks
_EDGE = re.compile(r'/\*|\*/|//|"|\n')
_STRING_END = re.compile(r'(?:\\.|[^"\\\n])*"')
_WORD = re.compile(r"[%@]?[A-Za-z0-9_./]*\Z")
_CALLEE = re.compile(r"(?:(def|fn)\s*)?([%@]?[A-Za-z_][A-Za-z0-9_./]*|%[0-9]+)\s*\Z")
_KEYWORD_ARG = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?![=>])")
_NOT_CALLS = frozenset({"if", "ref", "ref_read", "ref_write", "match", "match?", "fn", "def"})


def blank(text: str) -> tuple[str, str | None]:
    """`text` with comments and strings turned to spaces (newlines kept), and what its end
    lies inside: "comment", "string" or None.  Block comments nest, as in the scanner."""
    out = []
    pos = 0
    depth = 0  # block comment nesting
    line_comment = False
    for m in _EDGE.finditer(text):
        tok, at = m.group(), m.start()
        if depth:
            if tok == "/*":
                depth += 1
            elif tok == "*/":
                depth -= 1
                if not depth:
                    out.append(re.sub(r"[^\n]", " ", text[pos : m.end()]))
                    pos = m.end()
            continue
        if line_comment:
            if tok == "\n":
                line_comment = False
                out.append(" " * (at - pos))
                pos = at
            continue
        if tok == "/*":
            out.append(text[pos:at])
            pos, depth = at, 1
        elif tok == "//":
            out.append(text[pos:at])
            pos, line_comment = at, True
        elif tok == '"':
            end = _STRING_END.match(text, at + 1)
            if end is None:  # an open string up to the end of the line or text
                nl = text.find("\n", at)
                if nl < 0:
                    out.append(text[pos:at] + " " * (len(text) - at))
                    return "".join(out), "string"
                continue
            out.append(text[pos:at] + " " * (end.end() - at))
            pos = end.end()
    if depth or line_comment:
        out.append(re.sub(r"[^\n]", " ", text[pos:]))
        return "".join(out), "comment"
    out.append(text[pos:])
    return "".join(out), None


@dataclass(slots=True)
class Bracket:
    at: int  # offset of the bracket in the text
    char: str
    commas: int  # commas at this level between the bracket and the inner position
    segment: int  # where the current element at this level starts


@dataclass(slots=True)
class CallSite:
    callee: str  # as written: `nn.conv2d`, `@f`, `Cons`
    callee_start: int
    open: int  # offset of its `(`
    arg_index: int  # commas at the call's level before the cursor
    keyword: str | None  # `name=` already written in the current argument
    written: set[str] = field(default_factory=set)  # attribute names written in the call
    in_value: bool = False  # the cursor is inside a bracketed attribute value


@dataclass(slots=True)
class Cursor:
    offset: int
    prefix: str  # the word being typed, its sigil included
    in_comment: bool = False
    in_string: bool = False
    type_position: bool = False  # a type is expected (after `:`, `->`, in a type's brackets)
    dtype_position: bool = False  # the dtype of `Tensor[shape, dtype]`
    shape_position: bool = False  # the shape of `Tensor[...]`
    call: CallSite | None = None


def _brackets(code: str, stop_at_block: bool = True) -> list[Bracket]:
    """The unclosed brackets before the end of `code`, innermost first (up to a `{` or a
    `;` at the outermost level reached)."""
    found: list[Bracket] = []
    nest = 0
    commas, segment = 0, None
    for i in range(len(code) - 1, -1, -1):
        c = code[i]
        if c in ")]}":
            nest += 1
        elif c in "([{":
            if nest:
                nest -= 1
                continue
            found.append(Bracket(i, c, commas, segment if segment is not None else i + 1))
            commas, segment = 0, None
            if c == "{" and stop_at_block or len(found) > 12:
                break
        elif nest == 0:
            if c == ",":
                if segment is None:
                    segment = i + 1
                commas += 1
            elif c == ";":
                break
    return found


def _before(code: str, at: int) -> str:
    return code[:at].rstrip()


def cursor_context(text: str, offset: int) -> Cursor:
    """What surrounds `offset` in `text` (which need not parse)."""
    lo = max(0, offset - WINDOW)
    if lo:
        nl = text.find("\n", lo)
        lo = nl + 1 if 0 <= nl < offset else lo
    code, inside = blank(text[lo:offset])
    word = _WORD.search(code)
    prefix = word.group() if word and inside is None else ""
    cursor = Cursor(offset, prefix, in_comment=inside == "comment", in_string=inside == "string")
    if cursor.in_comment:
        return cursor
    head = code[: len(code) - len(prefix)]
    stripped = head.rstrip()
    if (stripped.endswith(":") and not stripped.endswith("::")) or stripped.endswith("->"):
        cursor.type_position = True
    levels = _brackets(head)
    in_value = False
    for level in levels:
        before = _before(head, level.at)
        if level.char == "{":
            break
        if level.char == "[":
            if before.endswith("Tensor"):
                innermost = level is levels[0]
                cursor.dtype_position = innermost and level.commas > 0
                cursor.shape_position = not cursor.dtype_position
                break
            if before.endswith("="):
                in_value = True
                continue
            if re.search(r"[A-Za-z0-9_]\Z", before) and not re.search(r"(?:def\s+@\S+|fn)\Z", before):
                if level is levels[0]:
                    cursor.type_position = True  # `List[...]`
            break
        # `(`
        if (before.endswith(":") and not before.endswith("::")) or before.endswith("->"):
            cursor.type_position = True
            break
        callee = _CALLEE.search(before)
        if callee is None:
            continue  # a tuple or parenthesised expression: look further out
        if callee.group(1) or callee.group(2) in _NOT_CALLS:
            break  # parameters of `def`/`fn`, or `if (...)`
        kw = _KEYWORD_ARG.match(head, level.segment)
        cursor.call = CallSite(
            callee=callee.group(2), callee_start=lo + callee.start(2), open=lo + level.at,
            arg_index=level.commas, keyword=kw.group(1) if kw else None, in_value=in_value)
        cursor.call.written = _written(head[level.at + 1 :] + _call_rest(text, offset))
        break
    return cursor


def _call_rest(text: str, offset: int, limit: int = 4000) -> str:
    """The text after the cursor up to where the call around it closes (comments blanked)."""
    code, _ = blank(text[offset : offset + limit])
    nest = 0
    for i, c in enumerate(code):
        if c in "([{":
            nest += 1
        elif c in ")]}":
            if nest == 0:
                return code[:i]
            nest -= 1
        elif c == ";" and nest == 0:
            return code[:i]
    return code


def _written(call_text: str) -> set[str]:
    """The `name=` attributes at the outer level of a call's argument text."""
    names = set()
    nest, start = 0, 0
    for i, c in enumerate(call_text):
        if c in "([{":
            nest += 1
        elif c in ")]}":
            nest -= 1
        elif c == "," and nest <= 0:
            kw = _KEYWORD_ARG.match(call_text, start, i)
            if kw is not None:
                names.add(kw.group(1))
            start = i + 1
    kw = _KEYWORD_ARG.match(call_text, start)
    if kw is not None:
        names.add(kw.group(1))
    return names


def common_prefix(old: str, new: str) -> int:
    """How many leading characters `old` and `new` share."""
    lo, hi = 0, min(len(old), len(new))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def map_offset(old: str, new: str, offset: int) -> int:
    """The offset in `old` that corresponds to `offset` in `new`: the same place in the
    common prefix or suffix, else the start of the edited region."""
    if old == new:
        return offset
    prefix = common_prefix(old, new)
    lo, hi = 0, min(len(old), len(new)) - prefix  # the common suffix, not overlapping it
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid :] == new[len(new) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    if offset <= prefix:
        return offset
    if offset >= len(new) - lo:
        return offset - len(new) + len(old)
    return prefix


_TYPED_BINDER = re.compile(r"(?:let\s+|free_var\s+)?(%[A-Za-z_][A-Za-z0-9_/]*(?:\.[A-Za-z0-9_/]+)*)\s*(?::(?!:)|=(?![=>]))")
_TYPED_GRAPH = re.compile(r"(%[0-9]+)\s*=(?![=>])")


def typed_binders(text: str, start: int, end: int) -> list[str]:
    """`%` names bound in `text[start:end]` as far as the raw text shows (for what was
    typed since the last analysis): `let %x`, `%x: T`, `%3 = ...`."""
    code, _ = blank(text[start:end])
    names = [m.group(1) for m in _TYPED_BINDER.finditer(code)]
    names += [m.group(1) for m in _TYPED_GRAPH.finditer(code)]
    return names
