"""A constant's value computed when it is first read, not when the pass that folded it ran.

    c = Constant(Deferred((64, 3, 7, 7), "float32", "layout_transform", attrs, (w,), compute))
    c.shape, c.dtype          # known at once (ir/expr.py's `Constant`): types, kernels, plans
    c.data                    # computed now, once, and kept: a numpy array, as for any constant

FoldConstant folds a model's weights into their kernels' layouts (ResNet-50: 94 NCHWc
layout transforms, 13 Winograd weight transforms and their transposes, 130 MB).  Eager,
that was half the CPU of the build's serial part before its kernels are lowered on every
core (0.12-0.32 s of 0.37-0.55 s, most of it the system time of 35,000 first touches of
new memory), while nothing before the executable reads a weight's values: types, fusion,
compositions and kernels need its shape and dtype only.  Deferred, the values are computed
by the first reader, in a ResNet-50 build the executable's thread while forked workers
lower the kernels (lower/pipeline.py), numpy releasing the interpreter lock.

Reading `Constant.data` computes; everything else about a deferred constant is known
without it.  The computation is pure (an operator's numpy compute on constants), made
once under a lock (two threads may read), and its result is C-contiguous and aligned,
as FoldConstant's eager results are.  `transient()` is the value without keeping it: a
deferred constant computed from another (a layout transform of a folded batch-norm scale)
reads its argument so, and the argument's 89 MB (ResNet-50's scaled weights, which only
the FoldScaleAxis snapshot refers to) are freed once read instead of living as long as
the build.  A deferred constant pickles with its value (computed then) and its recipe,
so that a kept build hashes and compares its constants as the build that kept it did.

The recipe (operator, attributes, argument constants) is what structural hashing and
equality see of a deferred constant (structural_hash.py, structural_equal.py): two with
the same recipe are equal without computing either; otherwise they compare by value.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable

from ..lazy_modules import numpy as np


class Deferred:
    """The value of a constant, known by shape and dtype until it is read."""

    __slots__ = ("shape", "dtype", "op", "attrs", "args", "_compute", "_value", "_lock", "hashed")

    def __init__(self, shape: tuple[int, ...], dtype: str, op: str, attrs: Any, args: tuple,
                 compute: Callable[[], np.ndarray] | None, value: np.ndarray | None = None) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype  # its name, as TensorType writes it
        self.op, self.attrs, self.args = op, attrs, args  # the recipe: args are Constants
        self._compute = compute
        self._value = value
        self._lock = threading.Lock()
        self.hashed: int | None = None  # structural_hash.py's, kept once made

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    @property
    def ready(self) -> bool:
        return self._value is not None

    def value(self) -> np.ndarray:
        """Computed at the first call, kept for every later one."""
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._compute()
                value = self._value
        return value

    def transient(self) -> np.ndarray:
        """The value, kept if it was already, else computed and not kept."""
        value = self._value
        return value if value is not None else self._compute()

    def __reduce__(self):
        return _restored, (self.shape, self.dtype, self.op, self.attrs, self.args, self.value())

    def __repr__(self) -> str:
        return f"Deferred({self.op}, {self.shape}, {self.dtype}{', ready' if self.ready else ''})"


def _restored(shape, dtype, op, attrs, args, value) -> Deferred:
    return Deferred(shape, dtype, op, attrs, args, None, value)


def resolved(value: Any) -> Any:
    """`value`, or a deferred one's value (computed now if it was not)."""
    return value.value() if isinstance(value, Deferred) else value
