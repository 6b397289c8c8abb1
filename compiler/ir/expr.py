"""Relay expressions: frozen, slotted dataclasses compared by identity.

Every node carries `span` (where it came from; see span.py) and `ty` (its type when known:
read from a `ty=` comment or set by type inference).  Both are keyword-only, so a node is
rebuilt with `dataclasses.replace(node, args=...)` and keeps them.  Two nodes written alike
on different lines are different objects; `structural_equal` compares structure.

A variable is one object: every use of `%x` is the very `Var` its binder created, so a
memo keyed by node sees a shared node once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..lazy_modules import numpy as np

from .attrs import EMPTY_ATTRS, Attrs, MetaRef
from .span import AnySpan
from .types import GlobalTypeVar, Type, TypeVar
from .deferred import Deferred
from .pickling import fast_pickling


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    span: AnySpan | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Expr(Node):
    ty: Type | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A local variable: a parameter, `let`, pattern or `free_var` binder."""

    name: str
    type_annotation: Type | None = None
    virtual_device: Any = None  # `%x {virtual_device=...}: T` (an attribute value)

    def __repr__(self) -> str:
        return f"Var(%{self.name})"


@dataclass(frozen=True, slots=True, eq=False)
class GlobalVar(Expr):
    """A global function name, `@main`; interned per module."""

    name: str

    def __repr__(self) -> str:
        return f"GlobalVar(@{self.name})"


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expr):
    """A tensor constant.  `data` is a numpy array, or None when the text refers to a
    metadata entry that could not be found (`meta` then says which).  A constant a pass
    folded may hold a `Deferred` value (deferred.py), computed when `data` is first
    read; `known`, `shape`, `dtype` and `nbytes` tell what a type needs without it."""

    data: Any
    meta: MetaRef | None = None

    def __repr__(self) -> str:
        if self.meta is not None:
            return f"Constant({self.meta})"
        raw = _DATA.__get__(self)
        return f"Constant({raw!r})" if isinstance(raw, Deferred) else f"Constant({self.data!r})"

    @property
    def raw(self) -> Any:
        """What `data` holds, without computing a deferred value."""
        return _DATA.__get__(self)

    @property
    def known(self) -> bool:
        """Whether the value is (or will be, when read) known: `data is not None`."""
        return _DATA.__get__(self) is not None

    @property
    def shape(self) -> tuple[int, ...]:
        raw = _DATA.__get__(self)
        return raw.shape if isinstance(raw, Deferred) else tuple(np.shape(raw))

    @property
    def dtype(self) -> str:
        raw = _DATA.__get__(self)
        return raw.dtype if isinstance(raw, Deferred) else _dtype_name(np.asarray(raw).dtype)

    @property
    def nbytes(self) -> int:
        raw = _DATA.__get__(self)
        return raw.nbytes if isinstance(raw, Deferred) else int(np.asarray(raw).nbytes)


@dataclass(frozen=True, slots=True, eq=False)
class Op(Expr):
    """A primitive operator, by name (`nn.conv2d`).  One object per name: use `op()`."""

    name: str

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def __reduce__(self):  # unpickled as the one object of its name (a build kept on disk)
        return op, (self.name,)


_OPS: dict[str, Op] = {}


def op(name: str) -> Op:
    """The operator object of a name (one per name, so `op("add") is op("add")`)."""
    found = _OPS.get(name)
    if found is None:
        found = _OPS[name] = Op(name)
    return found


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs = EMPTY_ATTRS
    type_args: tuple[Type, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class Tuple(Expr):
    fields: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int


@dataclass(frozen=True, slots=True, eq=False)
class Let(Expr):
    var: Var
    value: Expr
    body: Expr


@dataclass(frozen=True, slots=True, eq=False)
class If(Expr):
    cond: Expr
    true_branch: Expr
    false_branch: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Function(Expr):
    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None = None
    type_params: tuple[TypeVar, ...] = ()
    attrs: Attrs = EMPTY_ATTRS

    @property
    def is_primitive(self) -> bool:
        value = self.attrs.get("Primitive")
        return value is not None and int(value) == 1


@dataclass(frozen=True, slots=True, eq=False)
class RefCreate(Expr):
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class RefRead(Expr):
    ref: Expr


@dataclass(frozen=True, slots=True, eq=False)
class RefWrite(Expr):
    ref: Expr
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Constructor(Expr):
    """A constructor of an algebraic data type (`Cons` of `List`)."""

    name: str
    inputs: tuple[Type, ...]
    belongs_to: GlobalTypeVar
    tag: int = 0

    def __repr__(self) -> str:
        return f"Constructor({self.name})"


@dataclass(frozen=True, slots=True, eq=False)
class Pattern(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class PatternWildcard(Pattern):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class PatternVar(Pattern):
    var: Var


@dataclass(frozen=True, slots=True, eq=False)
class PatternConstructor(Pattern):
    constructor: Constructor
    patterns: tuple[Pattern, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class PatternTuple(Pattern):
    patterns: tuple[Pattern, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Clause(Node):
    lhs: Pattern
    rhs: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Match(Expr):
    data: Expr
    clauses: tuple[Clause, ...]
    complete: bool = True


@dataclass(frozen=True, slots=True, eq=False)
class ErrorExpr(Expr):
    """Stands where the text had a syntax error, so the rest still forms an IR."""

    message: str = ""


def pattern_vars(pattern: Pattern) -> list[Var]:
    """The variables a pattern binds, left to right."""
    found: list[Var] = []
    stack = [pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, PatternVar):
            found.append(p.var)
        elif isinstance(p, (PatternConstructor, PatternTuple)):
            stack.extend(reversed(p.patterns))
    return found


def _brief(node: Node) -> str:
    """A one-line repr: a node's repr never walks its graph (a DAG can be exponential)."""
    if isinstance(node, Call):
        callee = getattr(node.op, "name", type(node.op).__name__)
        return f"Call({callee}, {len(node.args)} args)"
    if isinstance(node, Function):
        names = ", ".join("%" + p.name for p in node.params[:6])
        return f"Function({names}{', …' if len(node.params) > 6 else ''})"
    if isinstance(node, Let):
        return f"Let(%{node.var.name})"
    if isinstance(node, Tuple):
        return f"Tuple({len(node.fields)} fields)"
    if isinstance(node, TupleGetItem):
        return f"TupleGetItem(.{node.index})"
    if isinstance(node, Match):
        return f"Match({len(node.clauses)} clauses)"
    if isinstance(node, ErrorExpr):
        return f"ErrorExpr({node.message!r})"
    if isinstance(node, PatternVar):
        return f"PatternVar(%{node.var.name})"
    if isinstance(node, PatternConstructor):
        return f"PatternConstructor({node.constructor.name}, {len(node.patterns)} patterns)"
    if isinstance(node, PatternTuple):
        return f"PatternTuple({len(node.patterns)} patterns)"
    return type(node).__name__


for _cls in (Call, Tuple, TupleGetItem, Let, If, Function, RefCreate, RefRead, RefWrite, Match, ErrorExpr,
             PatternWildcard, PatternVar, PatternConstructor, PatternTuple, Clause):
    _cls.__repr__ = _brief  # type: ignore[method-assign]


# The node kinds whose type and span the text format writes in a trailing comment
# (`/* ty=T span=S */`, as TVM's printer does).  Structural equality with spans compares
# the spans of these kinds: they are the ones a printed module keeps.
ANNOTATED = (Call, Constant, Var, Function, Tuple, TupleGetItem)


fast_pickling(globals())  # ir/pickling.py: a kept build unpickles thousands of these

_DATA = Constant.__dict__["data"]  # the slot: an array, None, or a Deferred
_DTYPE_NAMES: dict[Any, str] = {}


def _dtype_name(dtype: Any) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


def _read_data(self: Constant, _get=_DATA.__get__) -> Any:
    raw = _get(self)
    return raw.value() if type(raw) is Deferred else raw


def _constant_state(self: Constant, _get=_DATA.__get__) -> list:
    return [self.span, self.ty, _get(self), self.meta]  # a deferred value pickles as itself (deferred.py)


assert [f for f in Constant.__dataclass_fields__] == ["span", "ty", "data", "meta"]
Constant.data = property(_read_data, _DATA.__set__, doc="The value: a deferred one is computed now.")
Constant.__getstate__ = _constant_state
