"""Run a `loopnest.PrimFunc` in pure Python over numpy arrays (tests only: slow, tiny sizes).

The function is turned into nested closures once, then run.  Scalar arithmetic follows
`te_eval` (the reference), but as compiled code would run it:

* `select` evaluates only the side taken, and `IfThenElse` guards are honoured;
* every read and write is bounds-checked (compiled code would read garbage): an
  `IndexError` names the buffer and the index;
* temporaries and outputs start as garbage (NaN, or 0x5a5a... for integers), so a value
  read before it is written shows up in the result;
* a `Prefetch` reads nothing (its index may pass the buffer's end);
* parallel loops run their iterations backwards, so a result that depends on their order
  shows up too.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from relaylens.compiler.lower.schedule.loopnest import Allocate, For, IfThenElse, Prefetch, PrimFunc, Seq, Stmt, Store
from relaylens.compiler.lower.te import evaluate as te_eval
from relaylens.compiler.lower.te import expr as te

Env = list  # slot per loop variable, then the memory table


def run(func: PrimFunc, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The outputs of `func` given arrays for its inputs (in parameter order)."""
    if len(inputs) != len(func.inputs):
        raise ValueError(f"{func.name} takes {len(func.inputs)} inputs, got {len(inputs)}")
    compiler = _Compiler()
    body = compiler.stmt(func.body)
    memory: dict[int, np.ndarray] = {}
    for buf, arr in zip(func.inputs, inputs):
        arr = np.asarray(arr, dtype=buf.dtype)
        if arr.shape != tuple(buf.shape):
            raise ValueError(f"input {buf.name}: shape {arr.shape}, expected {tuple(buf.shape)}")
        memory[id(buf)] = arr.reshape(-1).copy()
    for buf in func.outputs:
        memory[id(buf)] = _garbage(buf)
    env: Env = [None] * len(compiler.slots) + [memory]
    with np.errstate(all="ignore"):
        body(env)
    return [memory[id(b)].reshape(b.shape) for b in func.outputs]


def _garbage(buf: te.Buffer) -> np.ndarray:
    if te.is_float(buf.dtype):
        return np.full(buf.size, np.nan, dtype=buf.dtype)
    if buf.dtype == "bool":
        return np.ones(buf.size, dtype=bool)
    return np.full(buf.size, 0x5A5A5A5A5A5A5A5A, dtype=np.uint64).astype(buf.dtype)


class _Compiler:
    def __init__(self) -> None:
        self.slots: dict[int, int] = {}

    def slot(self, var: te.Var) -> int:
        if id(var) not in self.slots:
            self.slots[id(var)] = len(self.slots)
        return self.slots[id(var)]

    # ---- statements

    def stmt(self, s: Stmt) -> Callable[[Env], None]:
        if isinstance(s, Seq):
            parts = [self.stmt(x) for x in s.stmts]

            def run_seq(env):
                for p in parts:
                    p(env)
            return run_seq
        if isinstance(s, For):
            k, body, order = self.slot(s.var), self.stmt(s.body), range(s.extent)
            if s.kind == "parallel":
                order = range(s.extent - 1, -1, -1)

            def run_for(env):
                for i in order:
                    env[k] = np.int64(i)
                    body(env)
            return run_for
        if isinstance(s, Store):
            buf, index, value = s.buffer, self.expr(s.index), self.expr(s.value)
            conv = np.dtype(buf.dtype).type

            def run_store(env):
                arr = env[-1][id(buf)]
                i = int(index(env))
                if not 0 <= i < arr.size:
                    raise IndexError(f"store {buf.name}[{i}] out of bounds (size {arr.size})")
                arr[i] = conv(value(env))
            return run_store
        if isinstance(s, IfThenElse):
            cond, then = self.expr(s.cond), self.stmt(s.then_case)
            other = self.stmt(s.else_case) if s.else_case is not None else None

            def run_if(env):
                if cond(env):
                    then(env)
                elif other is not None:
                    other(env)
            return run_if
        if isinstance(s, Allocate):
            buf, body = s.buffer, self.stmt(s.body)

            def run_allocate(env):
                memory = env[-1]
                saved = memory.get(id(buf))
                memory[id(buf)] = _garbage(buf)
                body(env)
                if saved is not None:
                    memory[id(buf)] = saved
            return run_allocate
        if isinstance(s, Prefetch):  # a hint: its index is evaluated (it must not raise), nothing read
            index = self.expr(s.index)
            return lambda env: int(index(env)) and None
        raise TypeError(f"cannot run {type(s).__name__}")

    # ---- expressions

    def expr(self, e: te.PrimExpr) -> Callable[[Env], object]:
        conv = np.dtype(e.dtype).type
        if isinstance(e, te.Const):
            value = conv(e.value)
            return lambda env: value
        if isinstance(e, te.Var):
            if e.dtype != te.INDEX:
                raise TypeError(f"loop variable {e.name} must be {te.INDEX}, not {e.dtype}")
            k = self.slot(e)

            def var(env):
                v = env[k]
                if v is None:
                    raise NameError(f"loop variable {e.name} used outside its loop")
                return v
            return var
        if isinstance(e, te.BufferLoad):
            buf, index = e.buffer, self.expr(e.index)

            def load(env):
                arr = env[-1].get(id(buf))
                if arr is None:
                    raise NameError(f"buffer {buf.name} read outside its allocation")
                i = int(index(env))
                if not 0 <= i < arr.size:
                    raise IndexError(f"read {buf.name}[{i}] out of bounds (size {arr.size})")
                return arr[i]
            return load
        if isinstance(e, te.Select):
            c, a, b = self.expr(e.cond), self.expr(e.a), self.expr(e.b)
            return lambda env: a(env) if c(env) else b(env)
        if isinstance(e, te.Cast):
            v = self.expr(e.value)
            if e.dtype == "bool":
                return lambda env: np.bool_(v(env) != 0)
            return lambda env: np.asarray(v(env)).astype(e.dtype)[()]
        if isinstance(e, te.Binary):
            a, b, op, dt = self.expr(e.a), self.expr(e.b), e.op, e.a.dtype
            return lambda env: conv(te_eval._binary(op, a(env), b(env), dt))
        if isinstance(e, te.Call):
            args, name = [self.expr(x) for x in e.args], e.name
            return lambda env: conv(te_eval._call(name, [np.asarray(f(env)) for f in args]))
        raise TypeError(f"a lowered function cannot contain {type(e).__name__} ({e!r})")
