"""Structural equality of Relay IR.

    structural_equal(a, b, *, spans=False, types=False, map_free_vars=True) -> bool
    assert_structural_equal(a, b, **same keywords)   # AssertionError naming the first mismatch
    first_mismatch(a, b, **same keywords) -> Mismatch | None

`a` and `b` are expressions, types or IRModules (patterns and clauses work too).

The rules, in TVM's SEqual spirit:

* Graph-aware.  A graph node of `a` corresponds to exactly one node of `b` and back: pairs
  are remembered, so `%0 = f(%x); add(%0, %0)` is *not* equal to `add(f(%x), f(%x))`
  (one node cannot stand for two).  Graph nodes are the kinds the printer binds to `%n`
  when shared: Call, non-empty Tuple, TupleGetItem, Let, If, Function, RefCreate/Read/
  Write, Match, and Vars.  (TVM leaves TupleGetItem out; we follow the printer, so two
  graphs are equal exactly when they print alike up to variable names.)  Values are not
  graph nodes: Constants, Ops, GlobalVars, Constructors, ErrorExprs, the empty tuple and
  all types compare by value wherever they occur.
* Binders (function params, let vars, pattern vars, type params) are paired when their
  binders are compared; their names are ignored and their annotations compared.  A Var
  met before any binder is free: with `map_free_vars` it is paired on first encounter,
  otherwise it must be the very same object on both sides.  Free TypeVars likewise.
* GlobalVar by name, Op by name, Constructor by name and ADT name, GlobalTypeVar by name,
  IncompleteType equals any IncompleteType, `None` only `None` (an absent annotation is
  not an IncompleteType).
* Constant: dtype, shape and values (NaN equals NaN); with no data, its `meta` ref (one with
  neither, an unknown value a pass folded, equals only itself).  When
  data is present the meta ref is where it was printed, not what it is, and is ignored.
* Attrs: the same keys (order ignored) and equal values: integers by value and dtype (a
  Python int is int32, or int64 when it needs it), floats likewise (float32), tuples
  elementwise, expressions and types structurally, anything else by type and `==`.
* Shapes: an int dimension equals `IntImm(v, "int32")`; `?`, `meta[...]` and wider ints by
  value.
* `spans=True` also compares the spans of the node kinds the text format annotates
  (`expr.ANNOTATED`: calls, constants, variables, functions, tuples, projections) by
  `origin_key(span)` (span.py): the origins a printer writes, so a parsed node holding a
  document range and a `span=conv1:0:0` layer equals its reprint holding the layer only,
  and a document range equals a printed `name:line:col` reference to it.  None equals
  only None.  Type spans never count: types are values (see types.py).
* `types=True` also compares every expression's `ty`.
* IRModule: the same global names with equal functions (globals compare by name across
  them), and the same type definitions (type params paired, constructors in order with
  their field types).  The module's name and metadata table are not compared.

The value rules (shapes, attribute scalars, constant data) live in structural_keys.py,
shared with structural_hash.py, which hashes consistently with these rules (equal => same
hash); what a mismatch reports is in structural_report.py.

Nothing here recurses on the Python stack: the comparison runs on an explicit work stack,
so 50,000-deep chains are fine.
"""

from __future__ import annotations

from typing import Any, Callable

from .attrs import Attrs
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
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from .module import IRModule, TypeData
from .span import AnySpan, origin_key
from .structural_keys import SPANNED, arrays_equal, as_array, scalar_key, shapes_equal
from .structural_report import Mismatch, Path, describe, render_path
from .types import (
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

__all__ = ["Mismatch", "assert_structural_equal", "first_mismatch", "structural_equal"]

_NoneType = type(None)

# Kinds whose node, once paired, stands for one node on the other side (see the docstring).
# The empty Tuple is left out in code.
_GRAPH = frozenset({Var, Call, Tuple, TupleGetItem, Let, If, Function, RefCreate, RefRead,
                    RefWrite, Match})
# Kinds that are equal to themselves without looking inside (no binders below them).
_SELF_EQUAL = frozenset({Op, GlobalVar, Constructor, Constant, ErrorExpr, TensorType,
                         GlobalTypeVar, IncompleteType, MetaType, _NoneType})
_EXPRS = frozenset({Var, GlobalVar, Constant, Op, Call, Tuple, TupleGetItem, Let, If, Function,
                    RefCreate, RefRead, RefWrite, Constructor, Match, ErrorExpr})


def _span_key(span: AnySpan | None) -> tuple:
    return origin_key(span)  # () for None; see span.py


class _Equal:
    """One comparison: the pairings found so far and a stack of pairs still to compare."""

    def __init__(self, spans: bool, types: bool, map_free_vars: bool, track: bool) -> None:
        self.spans = spans
        self.types = types
        self.map_free_vars = map_free_vars
        self.track = track  # build paths for the mismatch report
        self.lmap: dict[Any, Any] = {}  # graph nodes and Vars, left -> right
        self.rmap: dict[Any, Any] = {}
        self.tlmap: dict[TypeVar, TypeVar] = {}  # TypeVars
        self.trmap: dict[TypeVar, TypeVar] = {}
        self.type_pairs: set[tuple[int, int]] = set()
        self.stack: list[tuple[Any, Any, Path]] = []
        self.mismatch: Mismatch | None = None

    # driver -----------------------------------------------------------------------
    def equal(self, a: Any, b: Any) -> bool:
        root: Path = ("",) if self.track else None
        if isinstance(a, IRModule) or isinstance(b, IRModule):
            if not (isinstance(a, IRModule) and isinstance(b, IRModule)):
                return self._fail(root, a, b, "an IRModule compared with something else")
            return self._modules(a, b)
        self.stack.append((a, b, root))
        return self._run()

    def _run(self) -> bool:
        stack = self.stack
        pop, push = stack.pop, stack.append
        lmap, rmap = self.lmap, self.rmap
        spans, types = self.spans, self.types
        while stack:
            a, b, path = pop()
            cls = type(a)
            if cls is not type(b):
                return self._fail(path, a, b, f"{_kind(a)} vs {_kind(b)}")
            if a is b and cls in _SELF_EQUAL:
                continue
            if cls in _GRAPH and (cls is not Tuple or a.fields):
                seen = lmap.get(a)
                if seen is not None:
                    if seen is b:
                        continue
                    return self._fail(path, a, b, self._shared_reason(a, seen, "left"))
                seen = rmap.get(b)
                if seen is not None:
                    return self._fail(path, a, b, self._shared_reason(b, seen, "right"))
                lmap[a] = b
                rmap[b] = a
            if spans and cls in SPANNED and not self._spans_equal(a, b, path):
                return False
            if types and cls in _EXPRS:
                push((a.ty, b.ty, path and (path, ".ty")))
            handler = _HANDLERS.get(cls)
            if handler is None:
                return self._fail(path, a, b, f"cannot compare {_kind(a)}")
            if not handler(self, a, b, path):
                return False
        return True

    def _fail(self, path: Path, a: Any, b: Any, reason: str) -> bool:
        if self.mismatch is None:
            where = render_path(path) if self.track else "?"
            self.mismatch = Mismatch(where, reason, a, b)
        return False

    @staticmethod
    def _shared_reason(node: Any, partner: Any, side: str) -> str:
        if isinstance(node, Var):
            return (f"{describe(node)} on the {side} already corresponds to {describe(partner)} "
                    "(a variable stands for a different binding)")
        return (f"this {side} node is shared and already corresponds to another node "
                "(one side shares a subexpression that the other duplicates)")

    def _spans_equal(self, a: Any, b: Any, path: Path) -> bool:
        sa, sb = a.span, b.span
        if sa is sb or _span_key(sa) == _span_key(sb):
            return True
        return self._fail(path, a, b, f"spans differ: {sa or '<no span>'} vs {sb or '<no span>'}")

    def _push_all(self, xs: tuple, ys: tuple, path: Path, label: str) -> None:
        """Push expression pairs so that the first is compared first; skip pairs already
        paired (a variable use, a shared node)."""
        push, lmap = self.stack.append, self.lmap
        for i in range(len(xs) - 1, -1, -1):
            x, y = xs[i], ys[i]
            if lmap.get(x) is y and y is not None:
                continue
            push((x, y, path and (path, label, i)))

    def _push_pairs(self, xs: tuple, ys: tuple, path: Path, label: str) -> None:
        """Push type (or pattern) pairs, the first on top.  Types hash by value, recursively,
        so they never go near a dict."""
        push = self.stack.append
        for i in range(len(xs) - 1, -1, -1):
            push((xs[i], ys[i], path and (path, label, i)))

    def _bind(self, a: Any, b: Any, path: Path) -> bool:
        """Pair two binders (parameters, let and pattern variables)."""
        if type(a) is not Var or type(b) is not Var:
            return self._fail(path, a, b, f"binder {_kind(a)} vs {_kind(b)}")
        seen = self.lmap.get(a)
        if seen is not None:
            if seen is b:
                return True
            return self._fail(path, a, b, self._shared_reason(a, seen, "left"))
        seen = self.rmap.get(b)
        if seen is not None:
            return self._fail(path, a, b, self._shared_reason(b, seen, "right"))
        self.lmap[a] = b
        self.rmap[b] = a
        if self.spans and not self._spans_equal(a, b, path):
            return False
        if self.types:
            self.stack.append((a.ty, b.ty, path and (path, ".ty")))
        return self._var_fields(a, b, path)

    def _bind_all(self, xs: tuple, ys: tuple, path: Path, label: str, bind: Callable) -> bool:
        for i in range(len(xs) - 1, -1, -1):
            if not bind(xs[i], ys[i], path and (path, label, i)):
                return False
        return True

    def _bind_type(self, a: Any, b: Any, path: Path) -> bool:
        if type(a) is not TypeVar or type(b) is not TypeVar:
            return self._fail(path, a, b, f"type parameter {_kind(a)} vs {_kind(b)}")
        seen = self.tlmap.get(a)
        if seen is not None:
            return seen is b or self._fail(path, a, b, f"type variable {a.name} already corresponds to {seen.name}")
        seen = self.trmap.get(b)
        if seen is not None:
            return self._fail(path, a, b, f"type variable {b.name} on the right already corresponds to {seen.name}")
        self.tlmap[a] = b
        self.trmap[b] = a
        return True

    def _lengths(self, what: str, xs: tuple, ys: tuple, a: Any, b: Any, path: Path) -> bool:
        if len(xs) == len(ys):
            return True
        return self._fail(path, a, b, f"{len(xs)} vs {len(ys)} {what}")

    def _attrs(self, x: Attrs, y: Attrs, a: Any, b: Any, path: Path) -> bool:
        if not x and not y:
            return True
        if x.keys() != y.keys():
            only_l = sorted(set(x) - set(y))
            only_r = sorted(set(y) - set(x))
            return self._fail(path, a, b, f"attrs differ in keys: only left {only_l}, only right {only_r}")
        for key, vx in x.items():
            if not self._attr_value(key, vx, y[key], a, b, path and (path, ".attrs", key)):
                return False
        return True

    def _attr_value(self, key: str, vx: Any, vy: Any, a: Any, b: Any, path: Path) -> bool:
        # A small explicit stack for nested tuples; expressions and types go on the main one.
        push = self.stack.append
        work = [(vx, vy, path)]
        while work:
            u, v, p = work.pop()
            if isinstance(u, (Expr, Type)) or isinstance(v, (Expr, Type)):
                push((u, v, p))
            elif isinstance(u, (tuple, list)) and isinstance(v, (tuple, list)):
                if len(u) != len(v):
                    return self._fail(p, a, b, f"attribute {key}: {len(u)} vs {len(v)} elements")
                work.extend((u[i], v[i], p and (p, "", i)) for i in range(len(u) - 1, -1, -1))
            elif scalar_key(u) != scalar_key(v):
                return self._fail(p, a, b, f"attribute {key}: {u!r} vs {v!r}")
        return True

    def _var_fields(self, a: Var, b: Var, path: Path) -> bool:
        """What a variable is besides its binding: annotation and virtual device."""
        self.stack.append((a.type_annotation, b.type_annotation, path and (path, ".type_annotation")))
        if a.virtual_device is None and b.virtual_device is None:
            return True
        return self._attr_value("virtual_device", a.virtual_device, b.virtual_device, a, b,
                                path and (path, ".virtual_device"))

    # expressions ------------------------------------------------------------------
    def _same(self, a: Any, b: Any, path: Path) -> bool:
        return True

    def _free_var(self, a: Var, b: Var, path: Path) -> bool:
        # Reached only for a Var not bound yet: a free variable (now paired by `_run`).
        if not self.map_free_vars and a is not b:
            return self._fail(path, a, b, "different free variables (map_free_vars=False)")
        return self._var_fields(a, b, path)

    def _global_var(self, a: GlobalVar, b: GlobalVar, path: Path) -> bool:
        return a.name == b.name or self._fail(path, a, b, f"@{a.name} vs @{b.name}")

    def _op(self, a: Op, b: Op, path: Path) -> bool:
        return a.name == b.name or self._fail(path, a, b, f"operator {a.name} vs {b.name}")

    def _constructor(self, a: Constructor, b: Constructor, path: Path) -> bool:
        if a.name == b.name and a.belongs_to.name == b.belongs_to.name:
            return True
        return self._fail(path, a, b, f"constructor {a.belongs_to.name}.{a.name} vs {b.belongs_to.name}.{b.name}")

    def _error_expr(self, a: ErrorExpr, b: ErrorExpr, path: Path) -> bool:
        return a.message == b.message or self._fail(path, a, b, "different error expressions")

    def _constant(self, a: Constant, b: Constant, path: Path) -> bool:
        if isinstance(a.raw, Deferred) or isinstance(b.raw, Deferred):  # what can be told without computing
            if not (a.known and b.known):
                return self._fail(path, a, b, "a constant with data vs a metadata reference without")
            if a.dtype != b.dtype:
                return self._fail(path, a, b, f"constant dtype {a.dtype} vs {b.dtype}")
            if a.shape != b.shape:
                return self._fail(path, a, b, f"constant shape {a.shape} vs {b.shape}")
            if _same_recipe(a.raw, b.raw):
                return True
        da, db = a.data, b.data
        if da is None or db is None:
            if da is not None or db is not None:
                return self._fail(path, a, b, "a constant with data vs a metadata reference without")
            # the same metadata entry; an unknown value a pass made (no entry) equals only itself
            return (a.meta == b.meta and a.meta is not None) or a is b \
                or self._fail(path, a, b, f"constant {a.meta} vs {b.meta}")
        if da is db:
            return True
        xa, xb = as_array(da), as_array(db)
        if xa.dtype != xb.dtype:
            return self._fail(path, a, b, f"constant dtype {xa.dtype} vs {xb.dtype}")
        if xa.shape != xb.shape:
            return self._fail(path, a, b, f"constant shape {xa.shape} vs {xb.shape}")
        return arrays_equal(xa, xb) or self._fail(path, a, b, "constant values differ")

    def _call(self, a: Call, b: Call, path: Path) -> bool:
        if not self._lengths("arguments", a.args, b.args, a, b, path):
            return False
        if not self._lengths("type arguments", a.type_args, b.type_args, a, b, path):
            return False
        self._push_pairs(a.type_args, b.type_args, path, ".type_args")
        if not self._attrs(a.attrs, b.attrs, a, b, path):
            return False
        self._push_all(a.args, b.args, path, ".args")
        op_a, op_b = a.op, b.op
        if op_a is not op_b or type(op_a) is not Op:
            self.stack.append((op_a, op_b, path and (path, ".op")))
        return True

    def _tuple(self, a: Tuple, b: Tuple, path: Path) -> bool:
        if not self._lengths("fields", a.fields, b.fields, a, b, path):
            return False
        self._push_all(a.fields, b.fields, path, ".fields")
        return True

    def _tuple_get_item(self, a: TupleGetItem, b: TupleGetItem, path: Path) -> bool:
        if a.index != b.index:
            return self._fail(path, a, b, f"index {a.index} vs {b.index}")
        self.stack.append((a.tuple_value, b.tuple_value, path and (path, ".tuple_value")))
        return True

    def _let(self, a: Let, b: Let, path: Path) -> bool:
        push = self.stack.append
        push((a.body, b.body, path and (path, ".body")))
        push((a.value, b.value, path and (path, ".value")))
        return self._bind(a.var, b.var, path and (path, ".var"))

    def _if(self, a: If, b: If, path: Path) -> bool:
        push = self.stack.append
        push((a.false_branch, b.false_branch, path and (path, ".false_branch")))
        push((a.true_branch, b.true_branch, path and (path, ".true_branch")))
        push((a.cond, b.cond, path and (path, ".cond")))
        return True

    def _function(self, a: Function, b: Function, path: Path) -> bool:
        if not (self._lengths("parameters", a.params, b.params, a, b, path)
                and self._lengths("type parameters", a.type_params, b.type_params, a, b, path)):
            return False
        push = self.stack.append
        push((a.body, b.body, path and (path, ".body")))
        if not self._attrs(a.attrs, b.attrs, a, b, path):
            return False
        push((a.ret_type, b.ret_type, path and (path, ".ret_type")))
        return (self._bind_all(a.type_params, b.type_params, path, ".type_params", self._bind_type)
                and self._bind_all(a.params, b.params, path, ".params", self._bind))

    def _ref_create(self, a: RefCreate, b: RefCreate, path: Path) -> bool:
        self.stack.append((a.value, b.value, path and (path, ".value")))
        return True

    def _ref_read(self, a: RefRead, b: RefRead, path: Path) -> bool:
        self.stack.append((a.ref, b.ref, path and (path, ".ref")))
        return True

    def _ref_write(self, a: RefWrite, b: RefWrite, path: Path) -> bool:
        push = self.stack.append
        push((a.value, b.value, path and (path, ".value")))
        push((a.ref, b.ref, path and (path, ".ref")))
        return True

    def _match(self, a: Match, b: Match, path: Path) -> bool:
        if a.complete != b.complete:
            return self._fail(path, a, b, "a complete match vs a partial one")
        if not self._lengths("clauses", a.clauses, b.clauses, a, b, path):
            return False
        self._push_pairs(a.clauses, b.clauses, path, ".clauses")
        self.stack.append((a.data, b.data, path and (path, ".data")))
        return True

    def _clause(self, a: Clause, b: Clause, path: Path) -> bool:
        push = self.stack.append
        push((a.rhs, b.rhs, path and (path, ".rhs")))
        push((a.lhs, b.lhs, path and (path, ".lhs")))  # whole pattern (binders) before rhs
        return True

    def _pattern_var(self, a: PatternVar, b: PatternVar, path: Path) -> bool:
        return self._bind(a.var, b.var, path and (path, ".var"))

    def _pattern_constructor(self, a: PatternConstructor, b: PatternConstructor, path: Path) -> bool:
        if not self._lengths("sub-patterns", a.patterns, b.patterns, a, b, path):
            return False
        self._push_pairs(a.patterns, b.patterns, path, ".patterns")
        self.stack.append((a.constructor, b.constructor, path and (path, ".constructor")))
        return True

    def _pattern_tuple(self, a: PatternTuple, b: PatternTuple, path: Path) -> bool:
        if not self._lengths("sub-patterns", a.patterns, b.patterns, a, b, path):
            return False
        self._push_pairs(a.patterns, b.patterns, path, ".patterns")
        return True

    # types ------------------------------------------------------------------------
    def _first_time(self, a: Any, b: Any) -> bool:
        key = (id(a), id(b))
        if key in self.type_pairs:
            return False
        self.type_pairs.add(key)
        return True

    def _tensor_type(self, a: TensorType, b: TensorType, path: Path) -> bool:
        if a.dtype != b.dtype:
            return self._fail(path, a, b, f"dtype {a.dtype} vs {b.dtype}")
        if not shapes_equal(a.shape, b.shape):
            return self._fail(path, a, b, "shapes differ")
        return True

    def _tuple_type(self, a: TupleType, b: TupleType, path: Path) -> bool:
        if self._first_time(a, b):
            if not self._lengths("fields", a.fields, b.fields, a, b, path):
                return False
            self._push_pairs(a.fields, b.fields, path, ".fields")
        return True

    def _type_var(self, a: TypeVar, b: TypeVar, path: Path) -> bool:
        seen = self.tlmap.get(a)
        if seen is not None:
            return seen is b or self._fail(path, a, b, f"type variable {a.name} corresponds to {seen.name}")
        seen = self.trmap.get(b)
        if seen is not None:
            return self._fail(path, a, b, f"type variable {b.name} on the right corresponds to {seen.name}")
        if not self.map_free_vars and a is not b:
            return self._fail(path, a, b, "different free type variables (map_free_vars=False)")
        self.tlmap[a] = b
        self.trmap[b] = a
        return True

    def _global_type_var(self, a: GlobalTypeVar, b: GlobalTypeVar, path: Path) -> bool:
        return a.name == b.name or self._fail(path, a, b, f"type {a.name} vs {b.name}")

    def _type_call(self, a: TypeCall, b: TypeCall, path: Path) -> bool:
        if a.func.name != b.func.name:
            return self._fail(path, a, b, f"type {a.func.name} vs {b.func.name}")
        if self._first_time(a, b):
            if not self._lengths("type arguments", a.args, b.args, a, b, path):
                return False
            self._push_pairs(a.args, b.args, path, ".args")
        return True

    def _func_type(self, a: FuncType, b: FuncType, path: Path) -> bool:
        if not self._first_time(a, b):
            return True
        if not (self._lengths("argument types", a.arg_types, b.arg_types, a, b, path)
                and self._lengths("type parameters", a.type_params, b.type_params, a, b, path)):
            return False
        self.stack.append((a.ret_type, b.ret_type, path and (path, ".ret_type")))
        self._push_pairs(a.arg_types, b.arg_types, path, ".arg_types")
        return self._bind_all(a.type_params, b.type_params, path, ".type_params", self._bind_type)

    def _ref_type(self, a: RefType, b: RefType, path: Path) -> bool:
        if self._first_time(a, b):
            self.stack.append((a.value, b.value, path and (path, ".value")))
        return True

    def _meta_type(self, a: MetaType, b: MetaType, path: Path) -> bool:
        return a.ref == b.ref or self._fail(path, a, b, f"{a.ref} vs {b.ref}")

    # modules ----------------------------------------------------------------------
    def _modules(self, a: IRModule, b: IRModule) -> bool:
        root: Path = ("<module>",) if self.track else None
        types_a = {gtv.name: data for gtv, data in a.type_definitions.items()}
        types_b = {gtv.name: data for gtv, data in b.type_definitions.items()}
        if types_a.keys() != types_b.keys():
            return self._fail(root, a, b, f"type definitions differ: only left {sorted(types_a.keys() - types_b.keys())}, "
                              f"only right {sorted(types_b.keys() - types_a.keys())}")
        funcs_a = {gv.name: f for gv, f in a.functions.items()}
        funcs_b = {gv.name: f for gv, f in b.functions.items()}
        if funcs_a.keys() != funcs_b.keys():
            return self._fail(root, a, b, f"global functions differ: only left {sorted(funcs_a.keys() - funcs_b.keys())}, "
                              f"only right {sorted(funcs_b.keys() - funcs_a.keys())}")
        for name in sorted(types_a):
            if not self._type_data(types_a[name], types_b[name], ("type " + name,) if self.track else None):
                return False
        for name in sorted(funcs_a):
            self.stack.append((funcs_a[name], funcs_b[name], ("@" + name,) if self.track else None))
            if not self._run():
                return False
        return True

    def _type_data(self, a: TypeData, b: TypeData, path: Path) -> bool:
        if not (self._lengths("type parameters", a.type_vars, b.type_vars, a, b, path)
                and self._lengths("constructors", a.constructors, b.constructors, a, b, path)):
            return False
        if not self._bind_all(a.type_vars, b.type_vars, path, ".type_vars", self._bind_type):
            return False
        for i, (ca, cb) in enumerate(zip(a.constructors, b.constructors)):
            cpath = path and (path, ".constructors", i)
            if not self._lengths("fields", ca.inputs, cb.inputs, ca, cb, cpath):
                return False
            self._push_pairs(ca.inputs, cb.inputs, cpath, ".inputs")
            self.stack.append((ca, cb, cpath))
            if not self._run():
                return False
        return True


# The handler of each node class, called as handler(comparison, a, b, path): a table of the
# class's functions, not of an instance's bound methods, which would make every comparison
# a reference cycle for the collector (156 of them left by a ResNet-50 build).
_HANDLERS: dict[type, Callable[[_Equal, Any, Any, Path], bool]] = {
    _NoneType: _Equal._same,
    Var: _Equal._free_var,
    GlobalVar: _Equal._global_var,
    Constant: _Equal._constant,
    Op: _Equal._op,
    Call: _Equal._call,
    Tuple: _Equal._tuple,
    TupleGetItem: _Equal._tuple_get_item,
    Let: _Equal._let,
    If: _Equal._if,
    Function: _Equal._function,
    RefCreate: _Equal._ref_create,
    RefRead: _Equal._ref_read,
    RefWrite: _Equal._ref_write,
    Constructor: _Equal._constructor,
    Match: _Equal._match,
    ErrorExpr: _Equal._error_expr,
    Clause: _Equal._clause,
    PatternWildcard: _Equal._same,
    PatternVar: _Equal._pattern_var,
    PatternConstructor: _Equal._pattern_constructor,
    PatternTuple: _Equal._pattern_tuple,
    TensorType: _Equal._tensor_type,
    TupleType: _Equal._tuple_type,
    TypeVar: _Equal._type_var,
    GlobalTypeVar: _Equal._global_type_var,
    TypeCall: _Equal._type_call,
    FuncType: _Equal._func_type,
    RefType: _Equal._ref_type,
    IncompleteType: _Equal._same,
    MetaType: _Equal._meta_type,
}


def _kind(x: Any) -> str:
    return "None" if x is None else type(x).__name__


def structural_equal(a: Any, b: Any, *, spans: bool = False, types: bool = False,
                     map_free_vars: bool = True) -> bool:
    """Whether `a` and `b` (expressions, types or modules) have the same structure."""
    return _Equal(spans, types, map_free_vars, track=False).equal(a, b)


def first_mismatch(a: Any, b: Any, *, spans: bool = False, types: bool = False,
                   map_free_vars: bool = True) -> Mismatch | None:
    """The first difference between `a` and `b`, or None when they are structurally equal."""
    eq = _Equal(spans, types, map_free_vars, track=True)
    if eq.equal(a, b):
        return None
    assert eq.mismatch is not None
    return eq.mismatch


def assert_structural_equal(a: Any, b: Any, **kw: Any) -> None:
    """Raise AssertionError naming the first mismatch (where, why, both sides, their spans)."""
    mismatch = first_mismatch(a, b, **kw)
    if mismatch is not None:
        raise AssertionError(str(mismatch))


def _same_recipe(a: Any, b: Any) -> bool:
    """Two deferred values (deferred.py) made alike: the same operator and attributes
    object on the same argument constants (or ones made alike), so equal without
    computing either."""
    if not (isinstance(a, Deferred) and isinstance(b, Deferred)):
        return False
    if a is b:
        return True
    return a.op == b.op and a.attrs is b.attrs and len(a.args) == len(b.args) \
        and all(x is y or x.raw is y.raw or _same_recipe(x.raw, y.raw) for x, y in zip(a.args, b.args))
