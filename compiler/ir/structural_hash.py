"""Structural hashing of Relay IR, consistent with structural equality.

    structural_hash(x, *, spans=False) -> int   # structural_equal(a, b, spans=s) => same hash

`x` is an expression, a type, an IRModule, a pattern or a clause.  Variables are numbered
in the order a canonical walk first meets them, so alpha-equivalent expressions hash alike;
sharing is not hashed (a shared and a duplicated subgraph hash alike, though they are not
equal) and neither are `ty` fields.  The value rules come from structural_keys.py, the
same ones structural_equal.py uses.  One exception to "equal => same hash": a constant
whose value is deferred (deferred.py) hashes by its recipe, so that hashing never computes
it, and equals a constant of the same value made otherwise without hashing alike: a cache
keyed by this hash misses there, never finds a wrong entry.

Nothing here recurses on the Python stack: expressions are walked with
`functor.post_order` and types with an explicit stack, so 50,000-deep chains are fine.  The
hash is deterministic across processes (no salted `str` hashing), so it can key an on-disk
cache.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .attrs import Attrs, IntImm, MetaRef, Opaque
from .deferred import Deferred
from .expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    ErrorExpr,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    pattern_vars,
)
from .functor import children, post_order
from .module import IRModule
from .span import AnySpan, origin_key
from .structural_keys import SPANNED, as_array, dim_key, scalar_key
from .types import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    MetaType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)

__all__ = ["structural_hash"]


# Kind tags: fixed integers, so the hash does not depend on PYTHONHASHSEED.
(_H_NONE, _H_VAR, _H_GLOBAL, _H_CONST, _H_META_CONST, _H_OP, _H_CALL, _H_TUPLE, _H_GET, _H_LET,
 _H_IF, _H_FN, _H_REF_NEW, _H_REF_READ, _H_REF_WRITE, _H_CTOR, _H_MATCH, _H_ERROR, _H_CLAUSE,
 _H_P_WILD, _H_P_VAR, _H_P_CTOR, _H_P_TUPLE, _H_TENSOR, _H_TUPLE_T, _H_TVAR, _H_GTV, _H_TCALL,
 _H_FUNC_T, _H_REF_T, _H_INCOMPLETE, _H_META_T, _H_ANY, _H_ATTR, _H_MODULE, _H_TYPEDEF,
 _H_INT, _H_FLOAT, _H_STR, _H_BOOL, _H_OTHER, _H_LIST, _H_DEFERRED) = range(1, 44)

_STR_HASHES: dict[str, int] = {}


def _h_str(s: str) -> int:
    h = _STR_HASHES.get(s)
    if h is None:
        h = int.from_bytes(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
        if len(_STR_HASHES) < 100_000:
            _STR_HASHES[s] = h
    return h


def _h_bytes(b: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "little")


def _h_dim(d: Any) -> int:
    d = dim_key(d)
    if type(d) is int:
        return hash(d)
    if isinstance(d, IntImm):
        return hash((_H_INT, d.value, _h_str(d.dtype)))
    if isinstance(d, AnyDim):
        return _H_ANY
    if isinstance(d, MetaRef):
        return hash((_H_META_T, _h_str(d.key), d.index))
    return hash((_H_OTHER, _h_str(repr(d))))


def _h_span(span: AnySpan | None) -> int:
    if span is None:
        return _H_NONE
    return hash(tuple([(_h_str(name), line, col) for name, line, col in origin_key(span)]))


def _h_scalar(value: Any) -> int:
    key = scalar_key(value)
    tag = key[0]
    if tag == "int":
        return hash((_H_INT, key[1], _h_str(key[2])))
    if tag == "float":
        x = key[1]
        return hash((_H_FLOAT, _H_NONE if x == "nan" else x, _h_str(key[2])))
    value = key[1]
    if value is None:
        return _H_NONE
    if isinstance(value, bool):
        return hash((_H_BOOL, int(value)))
    if isinstance(value, str):
        return hash((_H_STR, _h_str(value)))
    if isinstance(value, MetaRef):
        return hash((_H_META_T, _h_str(value.key), value.index))
    if isinstance(value, Opaque):
        return hash((_H_OTHER, _h_str(value.text)))
    return hash((_H_OTHER, _h_str(type(value).__name__)))


def _constant_hash(c: Constant) -> int:
    raw = c.raw
    if isinstance(raw, Deferred):
        return _deferred_hash(raw)
    if raw is None:
        meta = c.meta
        return hash((_H_META_CONST, _h_str(meta.key), meta.index)) if meta is not None else _H_META_CONST
    arr = as_array(c.data)
    kind = arr.dtype.kind
    if arr.size <= 16 and kind in "biufc":  # the common scalar: no bytes, no copies
        values = tuple([0 if v != v else v for v in arr.reshape(-1).tolist()])  # NaN -> 0
        return hash((_H_CONST, _h_str(arr.dtype.str), arr.shape, values))
    flat = arr.reshape(-1)
    if flat.size > 4096:  # a sample, the same for any two equal arrays
        flat = flat[:: flat.size // 1024]
    if arr.dtype.kind == "O":
        content = 0
    else:
        if arr.dtype.kind in "fc":
            flat = flat + 0  # a copy, and -0.0 becomes 0.0 (they compare equal)
            flat[np.isnan(flat)] = 0  # every NaN alike
        content = _h_bytes(np.ascontiguousarray(flat).tobytes())
    return hash((_H_CONST, _h_str(arr.dtype.str), arr.shape, content))


def _deferred_hash(d: Deferred) -> int:
    """A deferred value (deferred.py) by its recipe, computed or not: its operator,
    attributes and argument constants, so that hashing never computes it."""
    if d.hashed is None:
        d.hashed = hash((_H_DEFERRED, _h_str(d.op), _Hasher(False)._attrs(d.attrs),
                         tuple([_constant_hash(a) for a in d.args])))
    return d.hashed


def _attr_exprs(attrs: Attrs) -> list[Any]:
    """The expressions inside attribute values (`@f` in `(attr=@f)`), in key order."""
    found: list[Any] = []
    for _, value in sorted(attrs.items()):
        work = [value]
        while work:
            v = work.pop()
            if isinstance(v, Expr):
                found.append(v)
            elif isinstance(v, (tuple, list)):
                work.extend(reversed(v))
    return found


def _hash_children(node: Any) -> tuple[Any, ...]:
    kids = children(node)
    if type(node) in (Call, Function) and node.attrs:
        extra = _attr_exprs(node.attrs)
        if extra:
            return kids + tuple(extra)
    return kids


class _Hasher:
    """Hashes bottom-up; variables are numbered in the order a canonical walk first meets
    them, so alpha-equivalent expressions (and shared vs duplicated subgraphs) hash alike."""

    def __init__(self, spans: bool) -> None:
        self.spans = spans
        self.memo: dict[Any, int] = {}
        self.var_numbers: dict[Var, int] = {}
        self.tvar_numbers: dict[TypeVar, int] = {}
        self.type_memo: dict[int, int] = {}  # id(type) -> hash; the types live as long as we do
        self.keep: list[Any] = []  # types hashed outside an expression, kept alive for type_memo

    def expr(self, root: Any) -> int:
        memo = self.memo
        if root in memo:
            return memo[root]
        node_hash = self._node
        for node in post_order(root, _hash_children, memo):
            memo[node] = node_hash(node)
        return memo[root]

    def _node(self, x: Any) -> int:
        cls = type(x)
        memo = self.memo
        span = _h_span(x.span) if self.spans and cls in SPANNED else 0
        if cls is Var:
            number = self.var_numbers.setdefault(x, len(self.var_numbers))
            device = _H_NONE if x.virtual_device is None else self._attr_value(x.virtual_device)
            return hash((_H_VAR, number, self.type(x.type_annotation), device, span))
        if cls is Call:
            return hash((_H_CALL, memo[x.op], tuple([memo[a] for a in x.args]), self._attrs(x.attrs),
                         tuple([self.type(t) for t in x.type_args]), span))
        if cls is Op:
            return hash((_H_OP, _h_str(x.name), span))
        if cls is Constant:
            return hash((_constant_hash(x), span))
        if cls is Tuple:
            return hash((_H_TUPLE, tuple([memo[f] for f in x.fields]), span))
        if cls is TupleGetItem:
            return hash((_H_GET, memo[x.tuple_value], x.index, span))
        if cls is Let:
            return hash((_H_LET, memo[x.var], memo[x.value], memo[x.body], span))
        if cls is Function:
            return hash((_H_FN, tuple([memo[p] for p in x.params]), memo[x.body], self.type(x.ret_type),
                         tuple([self.type(t) for t in x.type_params]), self._attrs(x.attrs), span))
        if cls is GlobalVar:
            return hash((_H_GLOBAL, _h_str(x.name), span))
        if cls is If:
            return hash((_H_IF, memo[x.cond], memo[x.true_branch], memo[x.false_branch], span))
        if cls is RefCreate:
            return hash((_H_REF_NEW, memo[x.value], span))
        if cls is RefRead:
            return hash((_H_REF_READ, memo[x.ref], span))
        if cls is RefWrite:
            return hash((_H_REF_WRITE, memo[x.ref], memo[x.value], span))
        if cls is Constructor:
            return hash((_H_CTOR, _h_str(x.name), _h_str(x.belongs_to.name), span))
        if cls is Match:
            clauses = tuple([self.clause(c) for c in x.clauses])
            return hash((_H_MATCH, memo[x.data], clauses, x.complete, span))
        if cls is ErrorExpr:
            return hash((_H_ERROR, _h_str(x.message), span))
        raise TypeError(f"structural_hash: cannot hash {cls.__name__}")

    def clause(self, c: Clause) -> int:
        return hash((_H_CLAUSE, self.pattern(c.lhs), self.expr(c.rhs)))

    def pattern(self, root: Pattern) -> int:
        done: dict[Pattern, int] = {}
        stack: list[tuple[Pattern, bool]] = [(root, False)]
        while stack:
            p, expanded = stack.pop()
            subs = p.patterns if isinstance(p, (PatternConstructor, PatternTuple)) else ()
            if subs and not expanded:
                stack.append((p, True))
                stack.extend((s, False) for s in reversed(subs))
                continue
            span = 0  # patterns carry no printed span (expr.ANNOTATED)
            if isinstance(p, PatternVar):
                h = hash((_H_P_VAR, self.expr(p.var), span))
            elif isinstance(p, PatternConstructor):
                ctor = p.constructor
                h = hash((_H_P_CTOR, _h_str(ctor.name), _h_str(ctor.belongs_to.name),
                          tuple([done[s] for s in subs]), span))
            elif isinstance(p, PatternTuple):
                h = hash((_H_P_TUPLE, tuple([done[s] for s in subs]), span))
            else:
                h = hash((_H_P_WILD, span))
            done[p] = h
        return done[root]

    def _attrs(self, attrs: Attrs) -> int:
        if not attrs:
            return _H_ATTR
        items = []
        for key, value in sorted(attrs.items()):
            items.append((_h_str(key), self._attr_value(value)))
        return hash((_H_ATTR, tuple(items)))

    def _attr_value(self, value: Any) -> int:
        # Attribute values nest shallowly (lists of ints); expressions are already hashed.
        if isinstance(value, Expr):
            return self.expr(value)
        if isinstance(value, Type):
            return self.type(value)
        if isinstance(value, (tuple, list)):
            return hash((_H_LIST, tuple([self._attr_value(v) for v in value])))
        return _h_scalar(value)

    def type(self, root: Any) -> int:
        if root is None:
            return _H_NONE
        memo = self.type_memo
        h = memo.get(id(root))
        if h is not None:
            return h
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            t, expanded = stack.pop()
            if id(t) in memo:
                continue
            if not expanded:
                kids = _type_children(t)
                if kids:
                    stack.append((t, True))
                    stack.extend((k, False) for k in reversed(kids) if k is not None and id(k) not in memo)
                    continue
            memo[id(t)] = self._type_node(t)
        return memo[id(root)]

    def _type_node(self, t: Any) -> int:
        memo, cls = self.type_memo, type(t)

        def h(x: Any) -> int:
            return _H_NONE if x is None else memo[id(x)]

        if cls is TensorType:
            return hash((_H_TENSOR, _h_str(t.dtype), tuple([_h_dim(d) for d in t.shape])))
        if cls is TupleType:
            return hash((_H_TUPLE_T, tuple([h(f) for f in t.fields])))
        if cls is TypeVar:
            return hash((_H_TVAR, self.tvar_numbers.setdefault(t, len(self.tvar_numbers))))
        if cls is GlobalTypeVar:
            return hash((_H_GTV, _h_str(t.name)))
        if cls is TypeCall:
            return hash((_H_TCALL, _h_str(t.func.name), tuple([h(a) for a in t.args])))
        if cls is FuncType:
            return hash((_H_FUNC_T, tuple([h(p) for p in t.type_params]),
                         tuple([h(a) for a in t.arg_types]), h(t.ret_type)))
        if cls is RefType:
            return hash((_H_REF_T, h(t.value)))
        if cls is IncompleteType:
            return _H_INCOMPLETE
        if cls is MetaType:
            return hash((_H_META_T, _h_str(t.ref.key), t.ref.index))
        raise TypeError(f"structural_hash: cannot hash type {cls.__name__}")

    def module(self, mod: IRModule) -> int:
        parts: list[Any] = [_H_MODULE]
        for gtv, data in sorted(mod.type_definitions.items(), key=lambda kv: kv[0].name):
            self.keep.append(data)
            ctors = []
            for ctor in data.constructors:
                ctors.append((_h_str(ctor.name), tuple([self.type(t) for t in ctor.inputs])))
            parts.append((_H_TYPEDEF, _h_str(gtv.name), tuple([self.type(v) for v in data.type_vars]),
                          tuple(ctors)))
        for gv, func in sorted(mod.functions.items(), key=lambda kv: kv[0].name):
            parts.append((_h_str(gv.name), self.expr(func)))
        return hash(tuple(parts))


def _type_children(t: Any) -> tuple[Any, ...]:
    cls = type(t)
    if cls is TupleType:
        return t.fields
    if cls is FuncType:
        return (*t.type_params, *t.arg_types, t.ret_type)
    if cls is TypeCall:
        return t.args
    if cls is RefType:
        return (t.value,)
    return ()


def structural_hash(x: Any, *, spans: bool = False) -> int:
    """A hash consistent with `structural_equal(..., spans=spans)`: equal => same hash.

    Sharing is not hashed (a shared and a duplicated subgraph hash alike, though they are
    not equal); `ty` fields are not hashed.  Deterministic across processes.
    """
    hasher = _Hasher(spans)
    if isinstance(x, IRModule):
        return hasher.module(x)
    if isinstance(x, Type):
        hasher.keep.append(x)
        return hasher.type(x)
    if isinstance(x, Clause):
        return hasher.clause(x)
    if isinstance(x, Pattern):
        for var in pattern_vars(x):
            hasher.expr(var)
        return hasher.pattern(x)
    if x is None:
        return _H_NONE
    return hasher.expr(x)
