"""Comparing a computed array with a reference, as a numerical engineer does.

    c = compare(got, want)        # -> Comparison
    c.ok, c.text()                # "max abs error 2.4e-07, max rel error 3.1e-06, worst at [0, 3]:
                                  #  1.2345679 vs 1.2345680 (float32 tolerance 1e-05 + 1e-04 * max|reference|)"

Rules, one place:
* NaN equals NaN at the same position; an infinity equals the same infinity.  A NaN or an
  infinity where the other side has something else is a difference (the worst one).
* Tolerance per dtype (TOLERANCES), norm-wise: |got - want| <= atol + rtol * max|want| at
  every element.  Not rtol * |want_i|: an element near zero is usually the small result of
  a large sum that cancelled (a convolution over 1152 terms of size 1 giving 0.0036), and
  its rounding error is the sum's, not its own size's — elementwise relative error flags
  correct kernels (ResNet-18's; docs/cli.md).  Integers and booleans must be equal.
* A value that is not a tensor (a closure, a constructor: @main may return a function) is
  not compared: the comparison says so and passes.
* The worst element is the one that exceeds its tolerance the most (the largest |diff|),
  its index and both values printed; the largest absolute and elementwise relative errors
  are reported over the elements that are finite on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# dtype -> (rtol, atol): about 2^10 ulps of relative error, so rounding through a deep
# model passes and a wrong kernel does not (docs/cli.md, "--check")
TOLERANCES = {"float16": (1e-2, 1e-3), "bfloat16": (5e-2, 1e-2), "float32": (1e-4, 1e-5),
              "float64": (1e-7, 1e-9)}


def tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) for `dtype`; (0, 0) for integers and booleans."""
    return TOLERANCES.get(str(np.dtype(dtype)) if str(dtype) != "bfloat16" else "bfloat16", (0.0, 0.0))


@dataclass(frozen=True)
class Comparison:
    ok: bool
    dtype: str
    rtol: float
    atol: float
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst: tuple[int, ...] | None = None  # index of the worst element, None if all agree exactly
    got: float | None = None  # the two values there
    want: float | None = None
    mismatch: str = ""  # shapes or dtypes that differ: nothing else is compared
    note: str = ""  # why nothing was compared (not a tensor)

    def text(self) -> str:
        if self.mismatch or self.note:
            return self.mismatch or self.note
        where = ""
        if self.worst is not None:
            where = f", worst at [{', '.join(map(str, self.worst))}]: {self.got:.8g} vs {self.want:.8g}"
        if not (self.rtol or self.atol):
            return f"max abs error {self.max_abs:.3g}{where} ({self.dtype}: exact)"
        return (f"max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g}{where} "
                f"({self.dtype} tolerance {self.atol:.0e} + {self.rtol:.0e} * max|reference|)")


def compare(got, want) -> Comparison:
    """`got` against the reference `want` (arrays of one shape and dtype)."""
    if not all(isinstance(v, (np.ndarray, np.generic, int, float, bool)) for v in (got, want)):
        return Comparison(True, "", 0.0, 0.0, note=f"{_kind(want)}: not compared (only tensors are)")
    got, want = np.asarray(got), np.asarray(want)
    dtype = str(want.dtype)
    rtol, atol = tolerance(want.dtype)
    if got.shape != want.shape or got.dtype != want.dtype:
        return Comparison(False, dtype, rtol, atol,
                          mismatch=f"Tensor[{got.shape}, {got.dtype}] but the reference is "
                                   f"Tensor[{want.shape}, {want.dtype}]")
    if got.size == 0:
        return Comparison(True, dtype, rtol, atol)
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(all="ignore"):
        same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(g) & (g == w))
        finite = np.isfinite(g) & np.isfinite(w)
        diff = np.where(finite, np.abs(g - w), 0.0)
        scale = float(np.abs(w[finite]).max()) if finite.any() else 0.0
        allowed = np.full(w.shape, atol + rtol * scale)
        excess = np.where(finite, diff / np.where(allowed > 0, allowed, 1.0) if (rtol or atol) else diff, 0.0)
        excess = np.where(~finite & ~same_special, np.inf, excess)  # NaN vs number: the worst
        rel = np.where(finite, diff / np.maximum(np.abs(w), np.finfo(np.float64).tiny), 0.0)
    bad = excess > (1.0 if (rtol or atol) else 0.0)
    max_abs = float(diff.max())
    max_rel = float(rel.max())
    if not np.any(excess > 0):
        return Comparison(True, dtype, rtol, atol, max_abs, max_rel)
    index = np.unravel_index(int(np.argmax(excess)), got.shape)
    return Comparison(not bool(bad.any()), dtype, rtol, atol, max_abs, max_rel,
                      tuple(int(i) for i in index), float(g[index]), float(w[index]))


def _kind(value) -> str:
    name = type(value).__name__
    return {"Closure": "a function", "Constructor": "a constructor", "ConstructorValue": "a value of a data type",
            "RefValue": "a reference"}.get(name, f"a {name} value")
