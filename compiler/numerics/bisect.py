"""The first compiled kernel whose outputs part from the reference interpreter's.

    checks = bisect_kernels(build, inputs)            # stops after the first kernel that differs
    checks = bisect_kernels(build, inputs, every=True)  # all kernels, in call order
    bad = next((c for c in checks if not c.ok), None)
    bad.place.text(), bad.text()

The kernels run one by one, in @main's evaluation order, from the interpreter walking the
built @main (the same machine code the AOT entry calls).  Each kernel call is also run by
the reference interpreter on the *same* arguments — the compiled values of the kernels
before it — and the two results are compared by compare.py's tolerances.  Because every
kernel starts from the same inputs on both sides, errors do not accumulate: the first
kernel that differs is the one that computes differently, not one downstream of it.  When
no kernel differs, whatever separates the compiled output from the reference comes from
the passes (the reference then ran the module as written) or from rounding that only grows
across kernels; `max_abs`/`max_rel` per kernel show how much each one adds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..interpreter import Interpreter
from ..interpreter.values import Closure
from ..ir.expr import Function
from ..provenance import Provenance
from .compare import Comparison, compare
from .where import FusedPlace


@dataclass
class KernelCheck:
    index: int  # its position among the kernel calls of @main
    place: FusedPlace
    outputs: list[Comparison] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.outputs)

    @property
    def max_abs(self) -> float:
        return max((c.max_abs for c in self.outputs), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((c.max_rel for c in self.outputs), default=0.0)

    def text(self) -> str:
        worst = next((c for c in self.outputs if not c.ok), None) or max(
            self.outputs, key=lambda c: c.max_abs, default=None)
        return worst.text() if worst is not None else "no outputs"


class _Differs(Exception):
    pass


def bisect_kernels(build, inputs, every: bool = False,
                   on_check: Callable[[KernelCheck], None] | None = None) -> list[KernelCheck]:
    """A check per kernel call of the built @main run on `inputs` (the compiled @main's
    arguments), in call order; the last one is the first that differs unless `every`.
    `on_check` hears of each check as it is made (and may raise to stop the run)."""
    kernels = build.executable.kernel_calls()
    provenance = Provenance(build)
    places: dict[Function, FusedPlace] = {}
    checks: list[KernelCheck] = []

    def checked(func: Function, kernel):
        def call(*args: Any) -> Any:
            got = kernel(*args)
            want = Interpreter(build.module).call(Closure(func), list(args))
            if func not in places:
                places[func] = FusedPlace.of(build, func, kernel.name, provenance)
            check = KernelCheck(len(checks), places[func], [compare(g, w) for g, w in zip(leaves(got), leaves(want))])
            checks.append(check)
            if on_check is not None:
                on_check(check)
            if not check.ok and not every:
                raise _Differs
            return got
        return call

    try:
        Interpreter(build.module, kernels={f: checked(f, k) for f, k in kernels.items()}).call("main", list(inputs))
    except _Differs:
        pass
    return checks


def leaves(value: Any) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [np.asarray(value)]


def compare_after_passes(module, arguments, build, inputs) -> Comparison | None:
    """The reference interpreter on the built module (after the passes, weights bound; run
    on `inputs`) against the reference interpreter on `module` as written (on `arguments`):
    the passes' own share of a difference.  The worst output's comparison."""
    before = leaves(Interpreter(module).call("main", list(arguments)))
    after = leaves(Interpreter(build.module).call("main", list(inputs)))
    return max((compare(a, b) for a, b in zip(after, before)), key=lambda c: (not c.ok, c.max_rel), default=None)
