"""`run --check` as data: compiled code against the reference interpreter, and when they
part, where.  The language server's Check Numerics command reads it (server/slow/numerics.py).

    result = check_numerics(module, everything, build, inputs, progress=callback)
    result.ok, result.outputs          # [(label, Comparison)], labels "output", "output.0", ...
    result.nonfinite                   # Origin of the first NaN/inf in compiled code (or None)
    result.nonfinite_interpreted       # ... in the reference interpreter on the module as written
    result.culprit                     # the first kernel whose outputs differ on the same inputs
    result.kernels, result.after_passes   # when no kernel differs: each kernel's error, and
                                          # the passes' share (the module after them, interpreted)

    compare_outputs(got, want)                            # the two steps `run --check` prints
    explain_difference(module, everything, build, inputs)   # (cli/run_numerics.py)

`module` is the module as written and `everything` its @main's arguments (weights and
inputs); `build` the compiled result of the same text with the weights bound, `inputs` the
arguments left to its @main.  The steps are those of `relaylens run --check`: run both,
compare each output (compare.py), trace a non-finite output to the expression that made it
when the inputs were finite (nonfinite.py: compiled kernel by kernel, and the interpreter
on the module as written), and when an output differs bisect the kernels (bisect.py).
`progress(step, fraction)` hears of each step and of each kernel the bisection checks;
it may raise to stop the check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..interpreter import Interpreter
from ..ir.expr import Call, Function
from ..ir.functor import post_order
from .bisect import KernelCheck, bisect_kernels, compare_after_passes
from .compare import Comparison, compare
from .nonfinite import Origin, find_nonfinite_compiled, find_nonfinite_interpreted, nonfinite_counts

Progress = Callable[[str, float], None]


@dataclass
class NumericsCheck:
    outputs: list[tuple[str, Comparison]]
    inputs_nonfinite: bool = False  # the arguments already hold NaN/inf: nothing is traced
    nonfinite: Origin | None = None
    nonfinite_interpreted: Origin | None = None
    culprit: KernelCheck | None = None
    kernels: list[KernelCheck] = field(default_factory=list)  # those the bisection ran
    after_passes: Comparison | None = None  # only when outputs differ and no kernel does

    @property
    def ok(self) -> bool:
        return all(c.ok for _, c in self.outputs)


def labelled(value: Any, name: str = "output") -> list[tuple[str, Any]]:
    """(label, tensor) per leaf of a value: `output`, or `output.0`, `output.1.0` for tuples."""
    if isinstance(value, tuple):
        return [leaf for i, v in enumerate(value) for leaf in labelled(v, f"{name}.{i}")]
    return [(name, value)]


def compare_outputs(got: Any, want: Any) -> list[tuple[str, Comparison]]:
    """Each output of a run (`got`) against the reference's (`want`), labelled."""
    return [(label, compare(g, w)) for (label, g), (_, w) in zip(labelled(got), labelled(want))]


@dataclass
class Explanation:
    """Why outputs differ: the first kernel that differs on the same inputs (`culprit`),
    or, when none does, every kernel's check and the passes' share (`after_passes`)."""

    culprit: KernelCheck | None
    kernels: list[KernelCheck]
    after_passes: Comparison | None = None


def explain_difference(module, everything: list, build, inputs: list,
                       on_check: Callable[[KernelCheck], None] | None = None) -> Explanation:
    """Bisect the kernels; when every kernel agrees on its own inputs, compare the module
    after the passes (interpreted) with the module as written."""
    kernels = bisect_kernels(build, inputs, on_check=on_check)
    culprit = next((c for c in kernels if not c.ok), None)
    after = compare_after_passes(module, everything, build, inputs) if culprit is None else None
    return Explanation(culprit, kernels, after)


def check_numerics(module, everything: list, build, inputs: list,
                   progress: Progress | None = None) -> NumericsCheck:
    def step(what: str, fraction: float) -> None:
        if progress is not None:
            progress(what, fraction)

    step("running the compiled code", 0.0)
    got = build.executable.run(*inputs)
    step("running the reference interpreter", 0.1)
    want = Interpreter(module).call("main", list(everything))
    result = NumericsCheck(compare_outputs(got, want))
    result.inputs_nonfinite = any(nonfinite_counts(a) != (0, 0) for a in everything)
    if not result.inputs_nonfinite:
        if nonfinite_counts(got) != (0, 0):
            step("tracing the first non-finite value in the compiled code", 0.3)
            result.nonfinite = find_nonfinite_compiled(build, inputs)
        if nonfinite_counts(want) != (0, 0):
            step("tracing the first non-finite value in the interpreter", 0.4)
            result.nonfinite_interpreted = find_nonfinite_interpreted(module, everything)
    if result.ok:
        return result
    total = max(1, _kernel_call_sites(build))

    def kernel_checked(check: KernelCheck) -> None:
        step(f"bisecting: kernel #{check.index} {check.place.display}", 0.5 + 0.4 * min(1.0, check.index / total))

    step("bisecting the kernels", 0.5)
    explained = explain_difference(module, everything, build, inputs, on_check=kernel_checked)
    result.culprit, result.kernels, result.after_passes = explained.culprit, explained.kernels, explained.after_passes
    return result


def _kernel_call_sites(build) -> int:
    """How many calls of fused functions @main's body writes (a loop may make more)."""
    return sum(1 for node in post_order(build.module["main"].body)
               if isinstance(node, Call) and isinstance(node.op, Function))
