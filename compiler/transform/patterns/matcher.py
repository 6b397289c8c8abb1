"""Matching one pattern (a `def` of a pattern table) at one expression.

    m = match(entry, expr)          # None, or a Match
    m.bindings[param]               # the expression each parameter bound
    m.nodes                         # pattern node -> the expression it matched

The rules, as TVM's DFPatternMatcher has them for the patterns a table can write:

* a parameter matches anything (of its annotated type, if annotated; a `?` dimension
  matches any), and the same expression at every use; one listed in `Constants` only a
  constant;
* a call matches a call of the same operator with as many arguments, each argument
  matching, and every attribute the pattern writes equal to the expression's (compared
  after both are read by the operator's schema, so `1` equals `1i64` and an attribute
  the expression leaves to its default is compared with that default);  `add` and
  `multiply` also match with their two arguments swapped (TVM's commutative matching);
* `%t.N` matches a projection of index N; a tuple, a tuple of matching fields;
* a constant written in the pattern matches an equal constant (dtype and values).

Anything else a pattern writes (let, if, a function literal) matches nothing.  `explain`
says why a pattern does not match an expression, for the editor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...lazy_modules import numpy as np
from ...ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem, Var
from ...ir.types import AnyDim, TensorType, TupleType, Type
from ...ops import get_op
from .table import PatternEntry

COMMUTATIVE = ("add", "multiply")


@dataclass
class Match:
    entry: PatternEntry
    root: Expr
    nodes: dict[Expr, Expr] = field(default_factory=dict)  # pattern node -> matched expression

    @property
    def bindings(self) -> dict[Var, Expr]:
        return {p: self.nodes[p] for p in self.entry.params if p in self.nodes}


class _Matcher:
    def __init__(self, entry: PatternEntry) -> None:
        self.entry = entry
        self.params = set(entry.params)
        self.memo: dict[Expr, Expr] = {}
        self.why = ""

    def fail(self, why: str) -> bool:
        self.why = self.why or why
        return False

    def visit(self, pat: Expr, expr: Expr) -> bool:
        if pat in self.memo:
            if self.memo[pat] is expr:
                return True
            return self.fail(f"%{pat.name} is bound to another expression" if isinstance(pat, Var)
                             else "a shared sub-pattern matched two different expressions")
        saved = dict(self.memo)
        if self._visit(pat, expr):
            self.memo[pat] = expr
            return True
        self.memo = saved
        return False

    def _visit(self, pat: Expr, expr: Expr) -> bool:
        if isinstance(pat, Var):
            return self._param(pat, expr)
        if isinstance(pat, Call):
            return self._call(pat, expr)
        if isinstance(pat, TupleGetItem):
            if not isinstance(expr, TupleGetItem) or expr.index != pat.index:
                return self.fail(f"expected a projection .{pat.index}")
            return self.visit(pat.tuple_value, expr.tuple_value)
        if isinstance(pat, Tuple):
            if not isinstance(expr, Tuple) or len(expr.fields) != len(pat.fields):
                return self.fail(f"expected a tuple of {len(pat.fields)} fields")
            return all(self.visit(p, e) for p, e in zip(pat.fields, expr.fields))
        if isinstance(pat, Constant):
            if not isinstance(expr, Constant) or expr.data is None or pat.data is None:
                return self.fail("expected a constant")
            a, b = np.asarray(pat.data), np.asarray(expr.data)
            if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
                return self.fail("a constant of other values")
            return True
        if isinstance(pat, Op):
            return expr is pat or self.fail(f"expected {pat.name}")
        return self.fail(f"a pattern cannot match by {type(pat).__name__}")

    def _param(self, param: Var, expr: Expr) -> bool:
        if param not in self.params:
            return self.fail(f"%{param.name} is not a parameter of the pattern")
        if param in self.entry.constants and not isinstance(expr, Constant):
            return self.fail(f"%{param.name} must be a constant")
        want = param.type_annotation
        if want is not None and not type_matches(want, expr.ty):
            return self.fail(f"%{param.name}: the type differs from the annotation")
        return True

    def _call(self, pat: Call, expr: Expr) -> bool:
        if not isinstance(expr, Call):
            return self.fail(f"expected a call of {getattr(pat.op, 'name', 'a function')}")
        if not isinstance(pat.op, Op):
            return self.fail("a pattern calls operators only")
        if expr.op is not pat.op:
            return self.fail(f"expected {pat.op.name}, found {getattr(expr.op, 'name', 'another call')}")
        if len(expr.args) != len(pat.args):
            return self.fail(f"{pat.op.name} with {len(pat.args)} arguments")
        key = attrs_differ(pat, expr)
        if key is not None:
            return self.fail(f"{pat.op.name}: attribute {key} differs")
        if self._args(pat.args, expr.args):
            return True
        return pat.op.name in COMMUTATIVE and self._args(pat.args[::-1], expr.args)

    def _args(self, pats: tuple[Expr, ...], exprs: tuple[Expr, ...]) -> bool:
        saved = dict(self.memo)
        if all(self.visit(p, e) for p, e in zip(pats, exprs)):
            return True
        self.memo = saved
        return False


def attrs_differ(pat: Call, expr: Call) -> str | None:
    """The first attribute the pattern writes that the expression's call does not equal."""
    if not pat.attrs:
        return None
    opdef = get_op(pat.op.name)  # type: ignore[union-attr]
    try:
        want = opdef.normalize_attrs(pat.attrs) if opdef else pat.attrs
        have = opdef.normalize_attrs(expr.attrs) if opdef else expr.attrs
    except Exception:  # attributes the schema cannot read: compare them as written
        want, have = pat.attrs, expr.attrs
    for key in pat.attrs:
        if key not in have or not _same_value(want[key], have[key]):
            return key
    return None


def _same_value(a, b) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, (str, bool, type(None))) or isinstance(b, (str, bool, type(None))):
        return a == b
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return a == b


def type_matches(want: Type, have: Type | None) -> bool:
    """Whether `have` is of the annotated type (`?` dimensions match any)."""
    if have is None:
        return False
    if isinstance(want, TensorType):
        if not isinstance(have, TensorType) or want.dtype != have.dtype or len(want.shape) != len(have.shape):
            return False
        return all(isinstance(w, AnyDim) or w == h for w, h in zip(want.shape, have.shape))
    if isinstance(want, TupleType):
        return (isinstance(have, TupleType) and len(want.fields) == len(have.fields)
                and all(type_matches(w, h) for w, h in zip(want.fields, have.fields)))
    return want == have


def match(entry: PatternEntry, expr: Expr) -> Match | None:
    m = _Matcher(entry)
    if not m.visit(entry.func.body, expr):
        return None
    return Match(entry, expr, m.memo)


def explain(entry: PatternEntry, expr: Expr) -> str | None:
    """Why `entry` does not match at `expr` (None when it does)."""
    m = _Matcher(entry)
    return None if m.visit(entry.func.body, expr) else (m.why or "no match")
