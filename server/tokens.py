"""Semantic tokens: the legend, and the classification of one parsed text.

`semantic_tokens(result, params)` gives `(start, end, type, modifiers)` offsets, sorted,
and the operator names the text uses.  Names the parser resolved come from the
`SymbolIndex` (so a `%x` is a parameter or a `let` variable, `List` a type, `Cons` a
constructor); the rest from a lexer built on the grammar's own terminal patterns, run over
the scanner's text (comments blanked); then the comments, with the parts of
`/* ty=... span=... */` annotations told apart, and the `#[...]` header and metadata line.

Keywords are the grammar's own (`shown_keywords()`), dtype names follow the parser's rule
(`DTYPE_NAME`): nothing here keeps a second list.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from ..compiler.parser import ParseResult, Symbol
from ..compiler.parser.annotations import is_annotation
from ..compiler.parser.grammar import grammar, keywords
from ..compiler.parser.lower import NULL_NAMES
from ..compiler.parser.lower_types import DTYPE_NAME
from .known_ops import known_ops

# ---- the legend --------------------------------------------------------------------------
TOKEN_TYPES = ("variable", "parameter", "function", "type", "typeParameter", "enumMember",
               "keyword", "number", "string", "comment", "property", "decorator", "macro")
TOKEN_MODIFIERS = ("declaration", "readonly", "defaultLibrary", "annotation")
T = {name: i for i, name in enumerate(TOKEN_TYPES)}
M = {name: 1 << i for i, name in enumerate(TOKEN_MODIFIERS)}


@lru_cache(maxsize=1)
def shown_keywords() -> frozenset[str]:
    """The words shown as keywords: the grammar's (built on first use), but `Tensor` is
    shown as a type; and the attribute values `None` and `nullptr`."""
    return (keywords() - {"Tensor"}) | NULL_NAMES


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


_SPAN_KEY = re.compile(r"(?:^|\s)(span=)")
_HEADER = re.compile(r"#\[[^\]\n]*\]")


def semantic_tokens(result: ParseResult, params: set[int]) -> tuple[list[tuple[int, int, int, int]], set[str]]:
    """The tokens of `result`'s text, sorted, and the operator names it uses.  `params`
    holds the ids of the Vars that are function parameters (styled apart from lets)."""
    return _Classifier(result, params).tokens()


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


class _Classifier:
    def __init__(self, result: ParseResult, params: set[int]) -> None:
        self.result = result
        self.params = params
        self.ops_used: set[str] = set()  # filled by the lexer
        self.starts = _starts(result)

    def tokens(self) -> tuple[list[tuple[int, int, int, int]], set[str]]:
        scan = self.result.scan
        code = scan.code
        out: list[tuple[int, int, int, int]] = []
        self._lex(code, 0, len(code), 0, out)
        text = self.result.source.text
        comments = scan.comments
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
        if scan.metadata is not None:
            end = scan.metadata[0]
            start = text.rfind("#[", 0, end)
            if start >= 0:
                out.append((start, end, T["decorator"], 0))
        out.sort()
        return out, self.ops_used

    def _lex(self, code: str, start: int, end: int, extra: int, out: list) -> None:
        starts, params, ops, reserved = self.starts, self.params, known_ops(), shown_keywords()
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
                elif word in reserved:
                    out.append((s, e, T["keyword"], extra))
                elif word == "Tensor" or DTYPE_NAME.fullmatch(word):
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
                        self.ops_used.add(word)

    def _annotation(self, comment, out: list) -> None:
        """`/* ty=T span=S */`: delimiters as comment, keys as decorator, the type's tokens,
        the origins as a string; every part with the `annotation` modifier."""
        ann = M["annotation"]
        text = self.result.source.text
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


def _starts(result: ParseResult) -> dict[int, tuple[Symbol, object]]:
    """Each definition and reference of the index by its start offset."""
    found: dict[int, tuple[Symbol, object]] = {}
    for symbol in result.index.symbols:
        for span in symbol.references:
            found.setdefault(span.start, (symbol, span))
        if symbol.definition is not None:
            found[symbol.definition.start] = (symbol, symbol.definition)
    return found
