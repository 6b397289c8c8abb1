"""Shared by the lowering tests: a `Case` is one op call on generated inputs.

The same cases run three ways: the compute rule evaluated by `te_eval` (test_lower_compute),
compiled through schedules and LLVM (test_lower_compiled), both against the op's numpy
reference (`OpDef.evaluate`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relaylens.compiler.ir.types import TensorType, TupleType
from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.ops import get_op


@dataclass
class Arr:
    """An input: shape, dtype and how to fill it ("normal", "positive" > 0.1, "unit" in
    (-0.9, 0.9), "int" small ints, "nonzero" ints without 0, "bool"), or fixed `value`."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    fill: str = "normal"
    value: Any = None

    def make(self, rng: np.random.Generator) -> np.ndarray:
        if self.value is not None:
            return np.asarray(self.value, dtype=self.dtype).reshape(self.shape)
        s = self.shape
        if self.dtype == "bool" or self.fill == "bool":
            return rng.random(s) < 0.5
        if not te.is_float(self.dtype):
            lo = 0 if self.dtype.startswith("uint") else -5
            a = rng.integers(lo, 6, size=s)
            if self.fill == "nonzero":
                a = np.where(a == 0, 1, a)
            return a.astype(self.dtype)
        if self.fill == "positive":
            return (rng.random(s) + 0.1).astype(self.dtype)
        if self.fill == "unit":
            return (rng.random(s) * 1.8 - 0.9).astype(self.dtype)
        if self.fill == "int":
            return rng.integers(-5, 6, size=s).astype(self.dtype)
        return rng.standard_normal(s).astype(self.dtype)


@dataclass
class Case:
    op: str
    args: list[Arr | tuple[Arr, ...]]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    rtol: float = 1e-5
    atol: float = 1e-6

    @property
    def id(self) -> str:
        return f"{self.op}-{self.name}" if self.name else self.op

    def inputs(self, seed: int = 0) -> list[Any]:
        rng = np.random.default_rng(seed)
        return [tuple(a.make(rng) for a in x) if isinstance(x, tuple) else x.make(rng) for x in self.args]

    def arg_types(self) -> list[Any]:
        def ty(a: Arr) -> TensorType:
            return TensorType(tuple(a.shape), a.dtype)
        return [TupleType(tuple(ty(a) for a in x)) if isinstance(x, tuple) else ty(x) for x in self.args]

    def reference(self, values: list[Any]) -> list[np.ndarray]:
        out = get_op(self.op).evaluate(values, self.attrs)
        return [np.asarray(o) for o in out] if isinstance(out, tuple) else [np.asarray(out)]

    def out_type(self) -> Any:
        return get_op(self.op).infer(self.arg_types(), self.attrs)


def assert_close(case: Case, got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want), f"{case.id}: {len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{case.id} output {k}: shape {g.shape}, expected {w.shape}"
        assert g.dtype == w.dtype, f"{case.id} output {k}: dtype {g.dtype}, expected {w.dtype}"
        if te.is_float(str(w.dtype)):
            np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol, err_msg=case.id)
        else:
            np.testing.assert_array_equal(g, w, err_msg=case.id)
