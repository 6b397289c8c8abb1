"""Evaluate tensor expressions with numpy: the reference for compute rules.

Each computed tensor is evaluated whole, vectorised: its axes become broadcastable index
arrays (data axes first, then the reduction axes), the body is evaluated over them, and a
reduction folds the trailing axes.  Used by the tests to check a compute rule against the
op's numpy semantics without compiling anything.

Loads clamp their indices into range: a `select` evaluates both sides here, and the side
it discards may index outside the tensor (padding reads `x[i - 1]` at `i = 0`).  The LLVM
code generator only evaluates the side taken.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from . import expr as te
from . import mathfuncs

_erf = np.vectorize(math.erf, otypes=[np.float64])


def evaluate(outputs: te.Tensor | Sequence[te.Tensor], inputs: Mapping[te.Tensor, np.ndarray] | Sequence[tuple[te.Tensor, np.ndarray]]) -> list[np.ndarray]:
    """The values of `outputs` given arrays for their placeholders."""
    outs = [outputs] if isinstance(outputs, te.Tensor) else list(outputs)
    pairs = inputs.items() if isinstance(inputs, Mapping) else inputs
    values: dict[int, np.ndarray] = {id(t): np.asarray(a, dtype=t.dtype) for t, a in pairs}
    for t in te.post_order(outs):
        if id(t) in values:
            continue
        if t.op is None:
            raise KeyError(f"no value for placeholder {t.name}")
        values[id(t)] = _evaluate_compute(t, values)
    return [values[id(t)] for t in outs]


def over_loops(e: te.PrimExpr, loops: Sequence[tuple[te.Var, int]]) -> np.ndarray:
    """Expression `e`, which reads no tensor, at every value of the (variable, extent)
    `loops`: an array broadcastable to their extents (of extent 1 along those it does not read)."""
    rank = len(loops)
    env = {id(v): np.arange(n, dtype=np.int64).reshape([n if j == k else 1 for j in range(rank)])
           for k, (v, n) in enumerate(loops)}
    return np.asarray(_eval(e, env, {}))


def _evaluate_compute(t: te.Tensor, values: dict[int, np.ndarray]) -> np.ndarray:
    body = t.op.body
    reduce_axes = body.axes if isinstance(body, te.Reduce) else ()
    axes = list(t.op.axes) + list(reduce_axes)
    rank = len(axes)
    env: dict[int, np.ndarray] = {}
    for k, ax in enumerate(axes):
        shape = [1] * rank
        shape[k] = ax.extent
        env[id(ax)] = np.arange(ax.extent, dtype=np.int64).reshape(shape)
    full = tuple(ax.extent for ax in axes)
    if not isinstance(body, te.Reduce):
        out = np.broadcast_to(_eval(body, env, values), full)
        return np.array(out, dtype=t.dtype).reshape(t.shape)
    source = np.broadcast_to(_eval(body.source, env, values), full)
    n = len(t.op.axes)
    red = tuple(range(n, rank))
    if body.combiner in ("argmax", "argmin"):
        flat = source.reshape(full[:n] + (-1,))
        pos = (np.argmax if body.combiner == "argmax" else np.argmin)(flat, axis=-1)
        index = np.broadcast_to(_eval(body.index, env, values), full).reshape(full[:n] + (-1,))
        return np.take_along_axis(index, pos[..., None], axis=-1)[..., 0].astype(t.dtype).reshape(t.shape)
    fold = {"sum": np.sum, "prod": np.prod, "max": np.max, "max_nnan": np.max, "min": np.min}[body.combiner]
    if any(full[k] == 0 for k in red):
        raise ValueError(f"{t.name}: reduction over an empty axis")
    return np.asarray(fold(source, axis=red), dtype=t.dtype).reshape(t.shape)


def _np_dtype(dtype: str) -> np.dtype:
    return np.dtype(dtype)


def _eval(e: te.PrimExpr, env: dict[int, np.ndarray], values: dict[int, np.ndarray]) -> np.ndarray:
    memo: dict[int, np.ndarray] = {}

    def go(n: te.PrimExpr) -> np.ndarray:
        key = id(n)
        if key in memo:
            return memo[key]
        memo[key] = result = _node(n, go, env, values)
        return result

    return go(e)


def _node(n, go, env, values) -> np.ndarray:
    dt = _np_dtype(n.dtype)
    if isinstance(n, te.Const):
        return np.asarray(n.value, dtype=dt)
    if isinstance(n, (te.IterVar, te.Var)):
        if id(n) not in env:
            raise KeyError(f"unbound variable {n.name}")
        return env[id(n)]
    if isinstance(n, te.Load):
        arr = values.get(id(n.tensor))
        if arr is None:
            raise KeyError(f"no value for tensor {n.tensor.name}")
        if not n.indices:
            return arr[()]
        idx = tuple(np.clip(go(i), 0, max(d - 1, 0)) for i, d in zip(n.indices, arr.shape))
        return arr[np.broadcast_arrays(*idx)] if len(idx) > 1 else arr[idx[0]]
    if isinstance(n, te.Cast):
        v = go(n.value)
        with np.errstate(invalid="ignore"):
            return v.astype(dt) if n.dtype != "bool" else (v != 0)
    if isinstance(n, te.Select):
        return np.where(go(n.cond), go(n.a), go(n.b)).astype(dt)
    if isinstance(n, te.Binary):
        return _binary(n.op, go(n.a), go(n.b), n.a.dtype).astype(dt)
    if isinstance(n, te.Call) and n.name == "reinterpret":
        return np.asarray(go(n.args[0])).view(dt)
    if isinstance(n, te.Call) and n.name.startswith("fast_"):
        return _fast(n.name, go(n.args[0])).astype(dt)
    if isinstance(n, te.Call):
        return _call(n.name, [go(a) for a in n.args]).astype(dt)
    raise TypeError(f"cannot evaluate {type(n).__name__} here")


def _fast(name: str, x: np.ndarray) -> np.ndarray:
    """A fast approximation as compiled code computes it: its float32 expression
    (mathfuncs.py) evaluated step for step; on float64 the exact function."""
    if x.dtype == np.float64:
        return _call(name.removeprefix("fast_"), [x])
    v = te.Var("v", "float32")
    return _eval(mathfuncs.INLINED[name](v), {id(v): x.astype(np.float32)}, {})


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once to the dtype of `a`.  float32: the product is exact in
    float64, the sum is rounded to float64 with its error kept (Knuth's two-sum) and made
    odd when inexact (rounding to odd), so rounding that to float32 rounds the exact value
    once.  float64: a * b + c in two roundings (no expansion fuses float64)."""
    with np.errstate(all="ignore"):
        if np.asarray(a).dtype != np.float32:
            return a * b + c
        p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
        c64 = np.asarray(c, np.float64)
        s = p + c64
        back = s - p
        err = (p - (s - back)) + (c64 - back)
        inexact = np.isfinite(s) & (err != 0) & (np.asarray(s).view(np.int64) & 1 == 0)
        s = np.where(inexact, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        return s.astype(np.float32)


def _binary(op: str, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == "add": return a + b
        if op == "sub": return a - b
        if op == "mul": return a * b
        if op == "div":
            if te.is_float(dtype):
                return a / b
            bs = np.where(b == 0, 1, b)
            q = np.abs(a) // np.abs(bs)
            return np.where((a < 0) != (bs < 0), -q, q)
        if op == "floordiv": return a // np.where(b == 0, 1, b) if not te.is_float(dtype) else np.floor(a / b)
        if op == "floormod": return np.mod(a, b) if te.is_float(dtype) else np.mod(a, np.where(b == 0, 1, b))
        if op == "truncmod": return np.fmod(a, b) if te.is_float(dtype) else np.fmod(a, np.where(b == 0, 1, b))
        if op == "min": return np.minimum(a, b)
        if op == "max": return np.maximum(a, b)
        if op == "max_nnan": return np.where(a > b, a, b)
        if op == "pow": return np.power(a, b)
        if op == "and": return np.logical_and(a, b) if dtype == "bool" else a & b
        if op == "or": return np.logical_or(a, b) if dtype == "bool" else a | b
        if op == "xor": return np.logical_xor(a, b) if dtype == "bool" else a ^ b
        if op == "shl": return a << b
        if op == "shr": return a >> b
        if op == "lt": return a < b
        if op == "le": return a <= b
        if op == "gt": return a > b
        if op == "ge": return a >= b
        if op == "eq": return a == b
        if op == "ne": return a != b
    raise ValueError(f"unknown binary op {op}")


def _call(name: str, args: list[np.ndarray]) -> np.ndarray:
    x = args[0]
    if name == "fma":
        return fma(*args)
    with np.errstate(all="ignore"):
        if name == "erf":
            return _erf(x).astype(x.dtype)
        if name == "sigmoid":
            return 1 / (1 + np.exp(-x))
        if name == "softmax_exp":  # exact: 2^64 e^x; on float32 0 below mathfuncs.SOFTMAX_EXP_LOW
            wide = x.astype(np.float64)
            low = mathfuncs.SOFTMAX_EXP_LOW if x.dtype == np.float32 else -np.inf
            return np.where(wide < low, 0.0, np.exp(wide) * 2.0 ** 64).astype(x.dtype)
        if name == "rsqrt":
            return 1 / np.sqrt(x)
        if name == "round":
            return np.sign(x) * np.floor(np.abs(x) + 0.5)
        if name == "not":
            return np.logical_not(x)
        if name == "neg":
            return -x
        table = {"exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
                 "sin": np.sin, "cos": np.cos, "tan": np.tan, "atan": np.arctan, "tanh": np.tanh,
                 "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
                 "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
        return table[name](x)
