"""The loop-nest IR: what a scheduled compute lowers to and what the LLVM generator reads.

A `PrimFunc` has buffer parameters (inputs, then outputs) and a body of statements:
`For` loops (from 0 to a constant extent, with a kind: serial, parallel, vectorized,
unrolled), `Store`s of a scalar expression at a flat index, `IfThenElse`, `Allocate` of a
temporary buffer, `Seq`, and `Prefetch`, a hint that changes no value (the cache line of an
element read later, or with `write` one written later; an index past the buffer reads
nothing).  Expressions are `te`
expressions in which every read is a `BufferLoad` and every variable a loop `Var`.  Each
statement carries `loc`, the Relay source it computes (a span), for debug locations.

`print_func` prints it in a small Python-like syntax (TVMScript in spirit), the form in
which schedule records show each step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from ..te import expr as te
from ..te.arith import flat_index, simplify  # noqa: F401 (the index arithmetic of stores and loads; ln.simplify in tests)
from ..te.expr import Buffer, BufferLoad, PrimExpr, Var

FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled")


class Stmt:
    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    var: Var
    extent: int
    body: Stmt
    kind: str = "serial"
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Store(Stmt):
    buffer: Buffer
    index: PrimExpr
    value: PrimExpr
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class IfThenElse(Stmt):
    cond: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Allocate(Stmt):
    """A temporary buffer (`scope="local"`) live for `body`."""

    buffer: Buffer
    body: Stmt
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Prefetch(Stmt):
    """Bring the cache line of `buffer[index]` closer ahead of its reads, or with `write`
    ahead of its stores (owned, writable: x86's PREFETCHW): a hint, no value changes, and
    an index outside the buffer reads nothing (x86's prefetches never fault)."""

    buffer: Buffer
    index: PrimExpr
    write: bool = False
    loc: Any = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class Seq(Stmt):
    stmts: tuple[Stmt, ...]
    loc: Any = field(default=None, kw_only=True)


@dataclass(eq=False)
class PrimFunc:
    """One fused function after lowering.  `params` are inputs then outputs
    (`num_outputs` of them at the end); `span` is the fused function's Relay span."""

    name: str
    params: tuple[Buffer, ...]
    body: Stmt
    num_outputs: int = 1
    span: Any = None

    @property
    def inputs(self) -> tuple[Buffer, ...]:
        return self.params[: len(self.params) - self.num_outputs]

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return self.params[len(self.params) - self.num_outputs:]


def seq(*stmts: Stmt | None) -> Stmt:
    """A sequence, flattened, without Nones; a single statement stays itself."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.stmts if isinstance(s, Seq) else (s,))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def walk(stmt: Stmt) -> Iterator[Stmt]:
    """Every statement, pre-order."""
    stack = [stmt]
    while stack:
        s = stack.pop()
        yield s
        if isinstance(s, Seq):
            stack.extend(reversed(s.stmts))
        elif isinstance(s, (For, Allocate)):
            stack.append(s.body)
        elif isinstance(s, IfThenElse):
            if s.else_case is not None:
                stack.append(s.else_case)
            stack.append(s.then_case)


# --------------------------------------------------------------------------- printing

_PREC = {"or": 1, "and": 2, "lt": 3, "le": 3, "gt": 3, "ge": 3, "eq": 3, "ne": 3,
         "add": 4, "sub": 4, "mul": 5, "div": 5, "floordiv": 5, "floormod": 5, "truncmod": 5}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
           "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "and", "or": "or"}


def print_expr(e: PrimExpr, prec: int = 0) -> str:
    if isinstance(e, te.Const):
        if e.dtype == te.INDEX or e.dtype == "bool":
            return str(e.value)
        return f"{e.dtype}({e.value!r})"
    if isinstance(e, (te.Var, te.IterVar)):
        return e.name
    if isinstance(e, BufferLoad):
        return f"{e.buffer.name}[{print_expr(e.index)}]"
    if isinstance(e, te.Load):
        return f"{e.tensor.name}[{', '.join(print_expr(i) for i in e.indices)}]"
    if isinstance(e, te.Binary):
        if e.op in _SYMBOL:
            p = _PREC[e.op]
            # a right operand of the same precedence is grouped unless regrouping gives the
            # same value: x - (y - z), x / (y / z), x * (y / z) keep their parentheses
            right = p + 1 if e.op in ("sub", "div", "floordiv", "floormod", "truncmod") or \
                isinstance(e.b, te.Binary) and e.b.op in ("div", "floordiv", "floormod", "truncmod") else p
            text = f"{print_expr(e.a, p)} {_SYMBOL[e.op]} {print_expr(e.b, right)}"
            return f"({text})" if p < prec else text
        return f"{e.op}({print_expr(e.a)}, {print_expr(e.b)})"
    if isinstance(e, te.Call):
        return f"{e.name}({', '.join(print_expr(a) for a in e.args)})"
    if isinstance(e, te.Cast):
        return f"{e.dtype}({print_expr(e.value)})"
    if isinstance(e, te.Select):
        return f"select({print_expr(e.cond)}, {print_expr(e.a)}, {print_expr(e.b)})"
    if isinstance(e, te.Reduce):
        axes = ", ".join(a.name for a in e.axes)
        return f"{e.combiner}({print_expr(e.source)}, axis=[{axes}])"
    return repr(e)


def print_stmt(s: Stmt, indent: int = 0) -> list[str]:
    pad = "  " * indent
    if isinstance(s, For):
        kind = "range" if s.kind == "serial" else s.kind
        return [f"{pad}for {s.var.name} in {kind}({s.extent}):", *print_stmt(s.body, indent + 1)]
    if isinstance(s, Store):
        return [f"{pad}{s.buffer.name}[{print_expr(s.index)}] = {print_expr(s.value)}"]
    if isinstance(s, Prefetch):
        return [f"{pad}prefetch{'_write' if s.write else ''}({s.buffer.name}[{print_expr(s.index)}])"]
    if isinstance(s, IfThenElse):
        lines = [f"{pad}if {print_expr(s.cond)}:", *print_stmt(s.then_case, indent + 1)]
        if s.else_case is not None:
            lines += [f"{pad}else:", *print_stmt(s.else_case, indent + 1)]
        return lines
    if isinstance(s, Allocate):
        b = s.buffer
        return [f"{pad}{b.name} = allocate({b.dtype}, {list(b.shape)})", *print_stmt(s.body, indent)]
    if isinstance(s, Seq):
        return [line for st in s.stmts for line in print_stmt(st, indent)]
    return [f"{pad}{s!r}"]


def print_func(f: PrimFunc) -> str:
    params = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in f.params)
    return "\n".join([f"def {f.name}({params}):", *print_stmt(f.body, 1)]) + "\n"
