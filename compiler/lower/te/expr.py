"""Tensor expressions: what each op computes, as index arithmetic over its inputs.

In the spirit of TVM's `te`: a `Tensor` is either a `placeholder` (an input buffer) or
the result of `compute(shape, lambda *i: expr)`, whose body is a scalar `PrimExpr` in the
output indices `i`.  Reading an input is `x[i, j]`.  A reduction is a body of the form
`te.sum(expr, axis=[k])` over `reduce_axis` variables.

    def dense(data, weight, attrs, out_type):
        k = te.reduce_axis(data.shape[1], "k")
        return te.compute(out_type.shape, lambda i, j: te.sum(data[i, k] * weight[j, k], axis=[k]),
                          "T_dense")

Expressions are small frozen objects compared by identity.  Arithmetic operators build
them (`a + 1`, `a * b`, `-a`); comparisons are functions (`lt(a, b)`) because `==` stays
identity.  Python numbers next to an expression take its dtype.  Indices are int64.

`loc` on an expression is the Relay source it computes (a span); `compute` stamps the
span of the op being lowered onto every node of its body that has none yet (a span filler
at the scalar level), so each LLVM instruction can point at its Relay expression.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ...ir.dtypes import FLOATS, INTS, UINTS, bits, is_float, is_signed  # noqa: F401 (te.bits, ...)
from ..errors import LoweringError  # noqa: F401 (te.LoweringError: what a compute rule raises)
from ...ir.pickling import fast_pickling

INDEX = "int64"

DTYPES = FLOATS + INTS + UINTS + ("bool",)  # what lowering compiles (ir/dtypes.py: all but bfloat16)


# --------------------------------------------------------------------------- expressions


class PrimExpr:
    """A scalar expression.  Subclasses are frozen dataclasses with `dtype` and `loc`."""

    __slots__ = ()
    dtype: str
    loc: Any

    def __add__(self, other): return binary("add", self, other)
    def __radd__(self, other): return binary("add", other, self)
    def __sub__(self, other): return binary("sub", self, other)
    def __rsub__(self, other): return binary("sub", other, self)
    def __mul__(self, other): return binary("mul", self, other)
    def __rmul__(self, other): return binary("mul", other, self)
    def __truediv__(self, other): return binary("div", self, other)
    def __rtruediv__(self, other): return binary("div", other, self)
    def __floordiv__(self, other): return binary("floordiv", self, other)
    def __rfloordiv__(self, other): return binary("floordiv", other, self)
    def __mod__(self, other): return binary("floormod", self, other)
    def __rmod__(self, other): return binary("floormod", other, self)
    def __neg__(self): return binary("sub", const(0, self.dtype), self)

    def __bool__(self) -> bool:
        raise TypeError("a tensor expression has no truth value; use te.select / te.lt")

    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True, eq=False)
class Const(PrimExpr):
    value: int | float | bool
    dtype: str
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Var(PrimExpr):
    """A loop or index variable (int64), or a scalar parameter."""

    name: str
    dtype: str = INDEX
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class IterVar(PrimExpr):
    """An axis of a compute: a data axis (one per output dimension) or a reduction axis."""

    name: str
    extent: int
    reduce: bool = False
    dtype: str = INDEX
    loc: Any = field(default=None, kw_only=True)


# add sub mul div (true division for floats, truncating for ints), floordiv floormod,
# min max pow, and/or (bool), lt le gt ge eq ne (result bool); max_nnan: a if a > b else b,
# max for operands without NaN (as LLVM's `nnan` flag: with a NaN the result is either
# operand), one instruction (x86 `maxps`) where `max` keeps NaN in three
BINARY_OPS = ("add", "sub", "mul", "div", "floordiv", "floormod", "truncmod", "min", "max", "max_nnan", "pow",
              "and", "or", "xor", "shl", "shr", "lt", "le", "gt", "ge", "eq", "ne")
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")


@dataclass(frozen=True, slots=True, eq=False)
class Binary(PrimExpr):
    op: str
    a: PrimExpr
    b: PrimExpr
    dtype: str
    loc: Any = field(default=None, kw_only=True)


# Math intrinsics (float unless noted): exp log log2 log10 sqrt rsqrt sin cos tan atan tanh
# erf sigmoid abs (any) floor ceil round (half away from zero) trunc isnan isinf isfinite
# (-> bool) not (bool) popcount; reinterpret (the same bits as another dtype of the same
# width: `intrinsic("reinterpret", v, dtype="float32")`); fast_exp fast_tanh fast_erf (the
# approximations of mathfuncs.py on float32 and float16, exact on float64); softmax_exp
# (2^64 e^x for softmax's x - max(x) <= 0: mathfuncs.py)
INTRINSICS = ("exp", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "atan",
              "tanh", "erf", "sigmoid", "abs", "floor", "ceil", "round", "trunc", "isnan",
              "isinf", "isfinite", "not", "neg", "reinterpret", "fast_exp", "fast_tanh", "fast_erf", "fma",
              "softmax_exp")


@dataclass(frozen=True, slots=True, eq=False)
class Call(PrimExpr):
    """A math intrinsic applied to scalars."""

    name: str
    args: tuple[PrimExpr, ...]
    dtype: str
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Cast(PrimExpr):
    value: PrimExpr
    dtype: str
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Select(PrimExpr):
    """`cond ? a : b`.  Only the side taken is evaluated by compiled code, so a side may
    read out of bounds where the condition excludes it (padding)."""

    cond: PrimExpr
    a: PrimExpr
    b: PrimExpr
    dtype: str
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Load(PrimExpr):
    """`tensor[indices]`: one element of an input or of another compute."""

    tensor: "Tensor"
    indices: tuple[PrimExpr, ...]
    dtype: str
    loc: Any = field(default=None, kw_only=True)


REDUCERS = ("sum", "prod", "max", "max_nnan", "min", "argmax", "argmin")


@dataclass(frozen=True, slots=True, eq=False)
class Reduce(PrimExpr):
    """A reduction over `axes` (reduce IterVars); only as the whole body of a compute.

    For `argmax`/`argmin` the result is the int index `index` (an expression of the
    reduce axes) where `source` is largest/smallest, first one on ties."""

    combiner: str
    source: PrimExpr
    axes: tuple[IterVar, ...]
    dtype: str
    index: PrimExpr | None = None
    loc: Any = field(default=None, kw_only=True)


@dataclass(eq=False)
class Buffer:
    """Memory after lowering: a function parameter (an input or output) or a temporary
    (`scope="local"`), row-major, `shape` for printing and flattening."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    scope: str = "param"

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True, slots=True, eq=False)
class BufferLoad(PrimExpr):
    """One element of a buffer at a flat (row-major) index; what `Load` lowers to."""

    buffer: Buffer
    index: PrimExpr
    dtype: str
    loc: Any = field(default=None, kw_only=True)


# --------------------------------------------------------------------------- building expressions


def const(value: Any, dtype: str) -> Const:
    if dtype == "bool":
        return Const(bool(value), dtype)
    if is_float(dtype):
        return Const(float(value), dtype)
    return Const(int(value), dtype)


def as_expr(value: Any, dtype: str = INDEX) -> PrimExpr:
    """An expression for a value: expressions pass, Python numbers become constants."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return const(value, "bool")
    if isinstance(value, (int, float)):
        return const(value, dtype)
    if hasattr(value, "dtype") and hasattr(value, "item"):  # numpy scalar
        return const(value.item(), str(value.dtype))
    raise TypeError(f"not a tensor expression: {value!r}")


def _pair(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    if isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        return a, as_expr(b, a.dtype)
    if isinstance(b, PrimExpr) and not isinstance(a, PrimExpr):
        return as_expr(a, b.dtype), b
    a, b = as_expr(a), as_expr(b)
    if a.dtype != b.dtype:
        raise TypeError(f"dtype mismatch in tensor expression: {a.dtype} and {b.dtype}")
    return a, b


def binary(op: str, a: Any, b: Any) -> Binary:
    a, b = _pair(a, b)
    return Binary(op, a, b, "bool" if op in COMPARISONS else a.dtype)


def lt(a, b): return binary("lt", a, b)
def le(a, b): return binary("le", a, b)
def gt(a, b): return binary("gt", a, b)
def ge(a, b): return binary("ge", a, b)
def eq(a, b): return binary("eq", a, b)
def ne(a, b): return binary("ne", a, b)
def minimum(a, b): return binary("min", a, b)
def maximum(a, b): return binary("max", a, b)
def power(a, b): return binary("pow", a, b)
def truncdiv(a, b): return binary("div", a, b)
def truncmod(a, b): return binary("truncmod", a, b)
def logical_and(a, b): return binary("and", a, b)
def logical_or(a, b): return binary("or", a, b)


def intrinsic(name: str, *args: Any, dtype: str | None = None) -> Call:
    if name not in INTRINSICS:
        raise ValueError(f"unknown intrinsic {name}")
    exprs = tuple(as_expr(a) for a in args)
    result = dtype or ("bool" if name in ("isnan", "isinf", "isfinite") else exprs[0].dtype)
    return Call(name, exprs, result)


def exp(x): return intrinsic("exp", x)
def log(x): return intrinsic("log", x)
def sqrt(x): return intrinsic("sqrt", x)
def tanh(x): return intrinsic("tanh", x)
def erf(x): return intrinsic("erf", x)
def sigmoid(x): return intrinsic("sigmoid", x)
def abs(x): return intrinsic("abs", x)  # noqa: A001 (te.abs, as TVM spells it)
def floor(x): return intrinsic("floor", x)
def ceil(x): return intrinsic("ceil", x)


def fma(a: Any, b: Any, c: Any) -> Call:
    """a * b + c rounded once (a fused multiply-add); te/evaluate.py computes it exactly
    so, and the code generator emits LLVM's `fma` (one instruction with FMA units)."""
    return intrinsic("fma", a, b, c)


def reinterpret(value: Any, dtype: str) -> Call:
    """The bits of `value` read as `dtype` (of the same width)."""
    value = as_expr(value)
    if bits(value.dtype) != bits(dtype):
        raise TypeError(f"reinterpret {value.dtype} as {dtype}: widths differ")
    return intrinsic("reinterpret", value, dtype=dtype)


def cast(value: Any, dtype: str) -> PrimExpr:
    value = as_expr(value, dtype)
    return value if value.dtype == dtype else Cast(value, dtype)


def select(cond: Any, a: Any, b: Any) -> Select:
    cond = as_expr(cond, "bool")
    if cond.dtype != "bool":
        raise TypeError(f"select condition must be bool, not {cond.dtype}")
    a, b = _pair(a, b)
    return Select(cond, a, b, a.dtype)


def all_of(*conds: PrimExpr) -> PrimExpr:
    """The conjunction of conditions (true for none)."""
    result: PrimExpr = const(True, "bool")
    for c in conds:
        result = c if isinstance(result, Const) else logical_and(result, c)
    return result


_names = itertools.count()


def reduce_axis(extent: int, name: str = "k") -> IterVar:
    return IterVar(name, int(extent), reduce=True)


def _reduce(combiner: str, source: Any, axis: IterVar | Sequence[IterVar], index: Any = None) -> Reduce:
    axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
    if not axes or not all(isinstance(a, IterVar) and a.reduce for a in axes):
        raise TypeError("reduction axes must be te.reduce_axis variables")
    source = as_expr(source)
    dtype = INDEX if combiner in ("argmax", "argmin") else source.dtype
    return Reduce(combiner, source, axes, dtype, None if index is None else as_expr(index))


def sum(source, axis): return _reduce("sum", source, axis)  # noqa: A001
def prod(source, axis): return _reduce("prod", source, axis)
def max(source, axis): return _reduce("max", source, axis)  # noqa: A001
def max_nnan(source, axis): return _reduce("max_nnan", source, axis)  # a row with NaN: a NaN or a number
def min(source, axis): return _reduce("min", source, axis)  # noqa: A001


def argmax(source, axis, index): return _reduce("argmax", source, axis, index)
def argmin(source, axis, index): return _reduce("argmin", source, axis, index)


# --------------------------------------------------------------------------- tensors


@dataclass(eq=False)
class ComputeOp:
    axes: tuple[IterVar, ...]
    body: PrimExpr
    tag: str = ""  # the Relay op it computes ("nn.conv2d"), for default schedules
    span: Any = None  # the Relay expression it computes


@dataclass(eq=False)
class Tensor:
    """A tensor of a static shape: an input (`op is None`) or computed."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    op: ComputeOp | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_placeholder(self) -> bool:
        return self.op is None

    def __getitem__(self, indices: Any) -> Load:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise IndexError(f"{self.name} has {len(self.shape)} dimensions, indexed with {len(indices)}")
        return Load(self, tuple(as_expr(i, INDEX) for i in indices), self.dtype)

    def __repr__(self) -> str:
        kind = "placeholder" if self.op is None else "compute"
        return f"<{kind} {self.name}{list(self.shape)} {self.dtype}>"


def placeholder(shape: Sequence[int], dtype: str, name: str = "placeholder") -> Tensor:
    return Tensor(name, tuple(int(d) for d in shape), dtype)


def compute(shape: Sequence[int], fcompute: Callable[..., Any], name: str = "T_compute",
            dtype: str | None = None, tag: str = "") -> Tensor:
    """The tensor whose element at `i` is `fcompute(*i)` (a PrimExpr or a Python number,
    then of `dtype`)."""
    shape = tuple(int(d) for d in shape)
    axes = tuple(IterVar(f"ax{k}", d) for k, d in enumerate(shape))
    body = fcompute(*axes)
    body = as_expr(body, dtype or "float32") if not isinstance(body, PrimExpr) else body
    if dtype is not None and body.dtype != dtype:
        body = cast(body, dtype) if not isinstance(body, Reduce) else body
    return Tensor(name, shape, body.dtype, ComputeOp(axes, body, tag))


# --------------------------------------------------------------------------- walking expressions


def children(e: PrimExpr) -> tuple[PrimExpr, ...]:
    """The expressions directly under `e` (none for a constant or a variable)."""
    kids = _CHILDREN.get(type(e))
    return kids(e) if kids is not None else ()


# by the node's exact type (no PrimExpr class is subclassed): the code generator and the
# scheduler's rewrites ask this of every node they pass, most of them leaves
_CHILDREN: dict[type, Callable[[Any], tuple[PrimExpr, ...]]] = {
    Binary: lambda e: (e.a, e.b),
    Call: lambda e: e.args,
    Cast: lambda e: (e.value,),
    Select: lambda e: (e.cond, e.a, e.b),
    Load: lambda e: e.indices,
    BufferLoad: lambda e: (e.index,),
    Reduce: lambda e: (e.source,) if e.index is None else (e.source, e.index),
}


# the table itself, for walks that read it without a call per node (codegen/lanes.py uses_var)
CHILDREN_BY_TYPE = _CHILDREN


def nodes(e: PrimExpr) -> list[PrimExpr]:
    """`e` and every expression under it, each once."""
    seen: dict[int, PrimExpr] = {}
    stack = [e]
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen[id(n)] = n
            stack.extend(children(n))
    return list(seen.values())


def rebuild(e: PrimExpr, kids: Sequence[PrimExpr]) -> PrimExpr:
    """`e` with new children (the same object when none changed)."""
    old = children(e)
    if len(old) == len(kids) and all(a is b for a, b in zip(old, kids)):
        return e
    if isinstance(e, Binary):
        return Binary(e.op, kids[0], kids[1], e.dtype, loc=e.loc)
    if isinstance(e, Call):
        return Call(e.name, tuple(kids), e.dtype, loc=e.loc)
    if isinstance(e, Cast):
        return Cast(kids[0], e.dtype, loc=e.loc)
    if isinstance(e, Select):
        return Select(kids[0], kids[1], kids[2], e.dtype, loc=e.loc)
    if isinstance(e, Load):
        return Load(e.tensor, tuple(kids), e.dtype, loc=e.loc)
    if isinstance(e, BufferLoad):
        return BufferLoad(e.buffer, kids[0], e.dtype, loc=e.loc)
    if isinstance(e, Reduce):
        return Reduce(e.combiner, kids[0], e.axes, e.dtype, kids[1] if len(kids) > 1 else None, loc=e.loc)
    raise TypeError(f"no children to replace in {type(e).__name__}")


def transform(e: PrimExpr, fn: Callable[[PrimExpr], PrimExpr | None]) -> PrimExpr:
    """Rewrite bottom-up: `fn(node)` returns a replacement or None to keep the node
    (with its rewritten children).  Shared subexpressions are rewritten once.

    The walk reads a node's children and rebuilds it through the tables by exact type
    (`_CHILDREN`, `_REBUILD`) without the calls of `children` and `rebuild`: the schedule's
    index tidying and substitutions walk some 200,000 nodes over ResNet-50's kernels,
    most of them leaves."""
    memo: dict[int, PrimExpr] = {}
    kids_of, rebuilt_as = _CHILDREN.get, _REBUILD

    def go(node: PrimExpr) -> PrimExpr:
        key = id(node)
        done = memo.get(key)
        if done is not None:
            return done
        kids_fn = kids_of(type(node))
        if kids_fn is not None:
            kids = kids_fn(node)
            changed = False
            new = []
            for k in kids:
                n = go(k)
                new.append(n)
                if n is not k:
                    changed = True
            if changed:
                node = rebuilt_as[type(node)](node, new)
        out = fn(node)
        done = memo[key] = node if out is None else out
        return done

    try:
        return go(e)
    finally:
        del go  # `go` reads itself through its closure: unbound, no cycle is left for the collector


# `rebuild` by the node's exact type, for children known to differ (`transform`)
_REBUILD: dict[type, Callable[[Any, list], PrimExpr]] = {
    Binary: lambda e, k: Binary(e.op, k[0], k[1], e.dtype, loc=e.loc),
    Call: lambda e, k: Call(e.name, tuple(k), e.dtype, loc=e.loc),
    Cast: lambda e, k: Cast(k[0], e.dtype, loc=e.loc),
    Select: lambda e, k: Select(k[0], k[1], k[2], e.dtype, loc=e.loc),
    Load: lambda e, k: Load(e.tensor, tuple(k), e.dtype, loc=e.loc),
    BufferLoad: lambda e, k: BufferLoad(e.buffer, k[0], e.dtype, loc=e.loc),
    Reduce: lambda e, k: Reduce(e.combiner, k[0], e.axes, e.dtype, k[1] if len(k) > 1 else None, loc=e.loc),
}


def substitute(e: PrimExpr, mapping: dict[Var | IterVar, PrimExpr]) -> PrimExpr:
    """`e` with variables replaced (keys compared by identity)."""
    table = {id(k): v for k, v in mapping.items()}
    return transform(e, lambda n: table.get(id(n)) if isinstance(n, (Var, IterVar)) else None)


def with_loc(e: PrimExpr, loc: Any) -> PrimExpr:
    """`e` with `loc` stamped on every node that has none (the nodes of other ops keep
    theirs; variables take none).  Each node is remade by its exact type (`_WITH_LOC`),
    as `dataclasses.replace` would make it, without replace's look at the fields on every
    call: compose.py stamps every compute's body, 13,000 nodes over ResNet-50's kernels,
    where replace was a fifth of the parent's composing before the workers start."""
    stamped = _WITH_LOC.get

    def stamp(n: PrimExpr) -> PrimExpr | None:
        if n.loc is None:
            make = stamped(type(n))
            if make is not None:
                return make(n, loc)
            if not isinstance(n, (Var, IterVar)):  # a node type the table lacks
                return dataclasses.replace(n, loc=loc)
        return None

    return transform(e, stamp)


# a node of each type but Var and IterVar (which keep no loc) remade with a loc (`with_loc`)
_WITH_LOC: dict[type, Callable[[Any, Any], PrimExpr]] = {
    Const: lambda e, loc: Const(e.value, e.dtype, loc=loc),
    Binary: lambda e, loc: Binary(e.op, e.a, e.b, e.dtype, loc=loc),
    Call: lambda e, loc: Call(e.name, e.args, e.dtype, loc=loc),
    Cast: lambda e, loc: Cast(e.value, e.dtype, loc=loc),
    Select: lambda e, loc: Select(e.cond, e.a, e.b, e.dtype, loc=loc),
    Load: lambda e, loc: Load(e.tensor, e.indices, e.dtype, loc=loc),
    BufferLoad: lambda e, loc: BufferLoad(e.buffer, e.index, e.dtype, loc=loc),
    Reduce: lambda e, loc: Reduce(e.combiner, e.source, e.axes, e.dtype, e.index, loc=loc),
}


def inputs_of(t: Tensor) -> list[Tensor]:
    """The tensors `t`'s body reads, each once, in first-read order."""
    if t.op is None:
        return []
    seen: dict[int, Tensor] = {}
    stack, visited = [t.op.body], set()
    while stack:
        e = stack.pop()
        if id(e) in visited:
            continue
        visited.add(id(e))
        if isinstance(e, Load):
            seen.setdefault(id(e.tensor), e.tensor)
        stack.extend(reversed(children(e)))
    return list(seen.values())


def post_order(outputs: Sequence[Tensor], known: set[int] | None = None) -> list[Tensor]:
    """Every tensor the outputs depend on, producers before consumers; with `known`
    (tensor ids, a set closed under the tensors each depends on), only those not in it,
    without walking the bodies of those that are."""
    order: list[Tensor] = []
    done: set[int] = set(known) if known else set()
    stack: list[tuple[Tensor, bool]] = [(t, False) for t in reversed(outputs)]
    while stack:
        t, expanded = stack.pop()
        if id(t) in done:
            continue
        if expanded:
            done.add(id(t))
            order.append(t)
            continue
        stack.append((t, True))
        stack.extend((i, False) for i in reversed(inputs_of(t)) if id(i) not in done)
    return order


fast_pickling(globals())  # ir/pickling.py: a kept build unpickles thousands of these
