"""The folding budget: how many bytes of constants a pass may compute ahead of time.

Constant folding evaluates what the text already determines, so a few bytes of text can
ask for gigabytes: `full(1f, shape=[20000, 20000])` is 1.6 GB once folded (and more again
when printed).  A pass that materialises constants (FoldConstant, SimplifyExpr's folded
constants) first asks `FoldBudget.refusal` with the arguments' values; a fold that would
take it over the budget is refused *before* anything is computed, and the expression
stays as it was, with a warning at it saying why (the pass's `diagnostics`).

The budget is the PassContext option `relay.FoldConstant.max_bytes` (TVM-style key): the
most bytes of new constants one run of a pass may create, counting the fold's result and
the scratch memory of its reference compute where that is larger than the operands
(im2col for a convolution).  A value computed when first read (ir/deferred.py) that only
the next such fold reads is computed with it and not kept: FoldConstant refunds it, so a
chain of weight transforms costs what its last step keeps.  Unset, it is DEFAULT_FLOOR plus WEIGHTS_FACTOR times the
bytes of the constants the module already holds (its weights), so a real model folds as
it always did while a short text stays within 64 MiB: a build never allocates more than
a bounded multiple of the model's own weights for folding.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from ..ir.expr import Constant, Expr, Tuple
from ..ir.functor import post_order
from ..ir.module import IRModule
from ..ir.types import TensorType, TupleType, Type
from ..ops import get_op
from ..ops.relation_memo import known_result, normalized, remember_result, result_key
from .infra import PassContext

MAX_BYTES = "relay.FoldConstant.max_bytes"
DEFAULT_FLOOR = 64 << 20  # 64 MiB: far above any fold of a weight-less text
WEIGHTS_FACTOR = 2


def max_fold_bytes(ctx: PassContext, mod: IRModule | None = None) -> int:
    """The budget in force: the context's option, else the default for `mod`."""
    configured = ctx.get(MAX_BYTES)
    if configured is not None:
        return int(configured)
    return DEFAULT_FLOOR + WEIGHTS_FACTOR * (constant_bytes(mod) if mod is not None else 0)


def constant_bytes(mod: IRModule) -> int:
    """The bytes of the distinct constants of the module's functions (its weights)."""
    total = 0
    seen: set[int] = set()
    done: set = set()
    for func in mod.functions.values():
        for node in post_order(func, done=done):
            done.add(node)
            if isinstance(node, Constant) and node.known and id(node.raw) not in seen:
                seen.add(id(node.raw))
                total += node.nbytes  # a deferred value's too, not computed
    return total


def human(nbytes: int) -> str:
    """`1.5 GiB`, `64 MiB`, `12 bytes`."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            value = nbytes / (1 << shift)
            return f"{value:.3g} {unit}"
    return f"{nbytes} bytes"


class FoldBudget:
    """What is left of the budget of one pass run; `refusal` asks before a fold."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.spent = 0
        self.last_cost = 0  # what the last fold let through was charged
        self.refunds_left = max_bytes  # refunds give back at most the budget once more
        self._deferred: dict[int, tuple[Any, int]] = {}  # id(Deferred) -> (it, its cost)

    def charged(self, deferred: Any) -> None:
        """`deferred` (ir/deferred.py), the value of the fold just let through, cost
        `last_cost`: refundable while it is only an intermediate (`refund`)."""
        self._deferred[id(deferred)] = (deferred, self.last_cost)

    def refund(self, deferred: Any) -> None:
        """Give back what a deferred value of this run cost, now that only another
        deferred value of this run reads it, transiently (`Deferred.transient`): it is
        computed while that one is and never kept (a Winograd weight transform, then its
        reshape, then the transpose the kernel reads: only the last stays).  At most the
        budget is given back in one run: a pickled build (ir/deferred.py) computes and keeps
        every step, so a run never makes more than twice the budget even then."""
        entry = self._deferred.pop(id(deferred), None)
        if entry is not None and entry[0] is deferred:
            back = min(entry[1], self.refunds_left)
            self.spent -= back
            self.refunds_left -= back

    def refusal(self, name: str, attrs: Any, args: Sequence[Any]) -> str | None:
        """Why folding op `name` on these argument values (numpy arrays, or tuples of
        them) would break the budget, or None, in which case the cost is spent."""
        cost = fold_cost(name, attrs, args)
        if cost is None:
            return (f"not folded: the size of the {name} result cannot be told before computing "
                    f"it, and the folding budget ({MAX_BYTES} = {human(self.max_bytes)}) needs it")
        if self.spent + cost > self.max_bytes:
            budget = f"the folding budget ({MAX_BYTES} = {human(self.max_bytes)})"
            if self.spent:
                budget = f"the {human(max(self.max_bytes - self.spent, 0))} left of {budget}"
            return f"not folded: computing {name} here needs {human(cost)}, more than {budget}"
        self.spent += cost
        self.last_cost = cost
        return None


def fold_cost(name: str, attrs: Any, args: Sequence[Any]) -> int | None:
    """The bytes folding `name(*args)` allocates: its result (from the op's type relation
    on the arguments' shapes, or from their values for an op whose result shape is one),
    plus its compute's scratch memory; None when that cannot be told without running it.
    0 for an op the library does not know or whose relation rejects the arguments: the
    interpreter refuses those before computing anything."""
    opdef = get_op(name)
    if opdef is None or opdef.type_relation is None:
        return 0
    types = [_value_type(a) for a in args]
    key = result_key(opdef, attrs, types)  # ops/relation_memo.py: the interpreter asks next
    try:
        normalized_attrs = normalized(opdef, attrs)
        result = known_result(key)
        if result is None:
            result = opdef.type_relation(types, normalized_attrs) if opdef.inputs is None \
                else opdef.type_relation(*types, normalized_attrs)
            remember_result(key, attrs, result)
    except Exception:  # noqa: BLE001 -- rejected: the fold would fail, nothing is computed
        return 0
    size = type_bytes(result)
    if size is None:
        size = _value_shaped_bytes(name, args, result)
    if size is None:
        return None
    return size + _scratch_bytes(name, normalized_attrs, args, result)


def type_bytes(ty: Type) -> int | None:
    """The bytes of a value of a static tensor type, or of a tuple of them."""
    if isinstance(ty, TensorType):
        if not ty.is_static:
            return None
        return math.prod(int(d) for d in ty.shape) * _itemsize(ty.dtype)
    if isinstance(ty, TupleType):
        sizes = [type_bytes(f) for f in ty.fields]
        return None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[misc]
    return None


def _itemsize(dtype: str) -> int:
    """Bytes per element (bfloat16 too, whether or not numpy knows it)."""
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        digits = "".join(c for c in dtype if c.isdigit())
        return max(int(digits or 8) // 8, 1)


def _value_type(value: Any) -> Type:
    if isinstance(value, tuple):
        return TupleType(tuple(_value_type(v) for v in value))
    data = np.asarray(value)
    name = _DTYPE_TEXT.get(data.dtype)
    if name is None:
        name = _DTYPE_TEXT[data.dtype] = str(data.dtype)
    return TensorType(tuple(data.shape), name)


_DTYPE_TEXT: dict[np.dtype, str] = {}


def _value_shaped_bytes(name: str, args: Sequence[Any], result: Type) -> int | None:
    """The result size of the ops whose result shape is given by argument values."""
    if not isinstance(result, TensorType):
        return None
    try:
        itemsize = _itemsize(result.dtype)
        if name == "arange":
            start, stop, step = (float(np.asarray(a).reshape(())) for a in args)
            return max(math.ceil((stop - start) / step), 0) * itemsize if step else 0
        if name == "dyn.broadcast_to":
            return math.prod(int(d) for d in np.asarray(args[1]).reshape(-1)) * itemsize
    except (TypeError, ValueError, OverflowError):
        return None
    return None


def _scratch_bytes(name: str, attrs: Any, args: Sequence[Any], result: Type) -> int:
    """Memory the op's reference compute takes beyond its operands and result: the one
    copy a convolution's im2col makes, groups * (weight / O) * (result / O) elements."""
    if not (name.startswith(("nn.conv", "nn.contrib_conv", "nn.contrib_depthwise"))
            and "transpose" not in name) or len(args) < 2:
        return 0
    weight, out = np.asarray(args[1]), type_bytes(result)
    layout = str(getattr(attrs, "kernel_layout", "") or "OIHW")
    channels = math.prod(d for d, c in zip(weight.shape, layout) if c in "Oo") or 1
    groups = int(getattr(attrs, "groups", 1) or 1)
    return groups * (weight.size // channels) * ((out or 0) // channels)


def constant_values(exprs: Iterable[Expr]) -> list[Any]:
    """The values of constants and tuples of them (numpy arrays, tuples of arrays)."""
    return [value_of(e) for e in exprs]


def value_of(expr: Expr) -> Any:
    """The value of a constant or a tuple of them (not a closure calling itself: that is a
    reference cycle per call, left for the collector)."""
    if isinstance(expr, Tuple):
        return tuple(value_of(f) for f in expr.fields)
    return expr.data if isinstance(expr, Constant) else None
