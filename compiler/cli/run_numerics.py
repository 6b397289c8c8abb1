"""What `relaylens run` says about the numbers: where a NaN or an infinity came from, and
`--check`'s comparison with the reference interpreter, bisected to the first kernel that
differs (compiler/numerics does the work; this module prints it).

    warn_nonfinite(value, args, trace, name, err)   after any run: a warning at the source of
                                                    the first non-finite value
    check_outputs(module, everything, value, build, inputs, name, err) -> ok   for --check
                                                    (compiler/numerics/check.py's steps)
"""

from __future__ import annotations

from typing import Callable, TextIO

from ..diagnostics import Diagnostic, Severity
from ..interpreter import Interpreter, Value
from ..numerics import nonfinite_counts
from ..numerics.check import Explanation, compare_outputs, explain_difference
from ..numerics.nonfinite import Origin
from .common import PROG, plural, render


def warn_nonfinite(value: Value, args, trace: Callable[[], Origin | None], name: str, err: TextIO) -> None:
    """When `value` holds NaN or ±inf: a warning, then where the first one was made (`trace`),
    or that the inputs already held one."""
    nan, inf = nonfinite_counts(value)
    if not nan and not inf:
        return
    what = " and ".join(p for p in (f"{nan} NaN" if nan else "", plural(inf, "infinite value") if inf else "") if p)
    if any(nonfinite_counts(a) != (0, 0) for a in args):
        print(f"{PROG}: warning: the output holds {what}; the inputs or weights already hold NaN or "
              f"infinite values", file=err)
        return
    print(f"{PROG}: warning: the output holds {what} though the inputs and weights are finite", file=err)
    origin = trace()
    if origin is None:
        print(f"{PROG}: note: no op made a non-finite value from finite arguments (a constant holds one)",
              file=err)
        return
    print(render(origin.diagnostic(), name), file=err)


def check_outputs(module, everything: list[Value], value: Value, build, inputs, name: str, err: TextIO) -> bool:
    """Compare each compiled output with the interpreter's on the module as written; when
    one differs beyond its dtype's tolerance, bisect the kernels and name the first that
    differs.  True when every output agrees."""
    outputs = compare_outputs(value, Interpreter(module).call("main", everything))
    if not outputs:
        print("check: @main returns no tensors (an empty tuple): nothing to compare", file=err)
    for label, c in outputs:
        print(f"check {label}: {c.text()}{'' if c.ok else '  DIFFERS'}", file=err)
    ok = all(c.ok for _, c in outputs)
    if not ok:
        print_explanation(explain_difference(module, everything, build, inputs), build, name, err)
    return ok


def print_explanation(explained: Explanation, build, name: str, err: TextIO) -> None:
    """The first kernel whose outputs differ from the reference on the same inputs; or,
    when every kernel agrees, how the module after the passes compares with the module as
    written (the passes, or rounding accumulated over the kernels)."""
    bad = explained.culprit
    if bad is not None:
        place = bad.place
        print(render(Diagnostic(
            f"bisection: kernel #{bad.index} {place.name} (\"{place.display}\") is the first whose outputs "
            f"differ from the reference interpreter's on the same inputs: {bad.text()}",
            _first_span(place, build), Severity.WARNING,
            ((None, f"its Relay lines: {place.lines or '(none)'}"
                    + (f"; layers: {', '.join(place.layers)}" if place.layers else "")),),
            source="run"), name), file=err)
        return
    checks, after = explained.kernels, explained.after_passes
    largest = max(checks, key=lambda c: c.max_rel, default=None)
    print(f"{PROG}: note: bisection: each of the {len(checks)} kernel calls matches the reference interpreter "
          f"on its own inputs" + (f" (largest: #{largest.index} {largest.place.display}, max rel error "
                                  f"{largest.max_rel:.3g})" if largest is not None else ""), file=err)
    print(f"{PROG}: note: the module after the passes, interpreted, against the module as written: {after.text() if after else 'no outputs'}; "
          f"the difference is rounding accumulated across kernels, or the passes' rewriting", file=err)


def _first_span(place, build):
    """The span of the kernel's fused function in the built module (its source lines)."""
    for func, kernel_name in build.fused_names.items():
        if kernel_name == place.name:
            return func.span
    return None
