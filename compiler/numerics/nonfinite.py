"""The expression that first made a NaN or an infinity, in the interpreter and in compiled code.

    origin = find_nonfinite_interpreted(module, args)   # the module as written, by the interpreter
    origin = find_nonfinite_compiled(build, inputs)     # the build's kernels, one by one
    origin.diagnostic()                                 # a warning at the expression, with notes

An op call (or a kernel call) is the origin when its result holds NaN or ±inf and none of
its arguments does: the first such call in evaluation order.  When the first non-finite
value is a constant's (weights that hold one, or a constant the passes folded from a
negative variance under a square root), the constant is the origin: its span is the
expression it was folded from.  In compiled code the
kernels run one by one, from the interpreter walking the built @main (the same machine
code as the AOT entry); the first kernel whose outputs turn non-finite on finite inputs is
then run by the reference interpreter on the same inputs, to name the op inside it.  When
the reference stays finite there, the kernel itself is wrong, and the origin says so.
None when no value is non-finite, or when the inputs already are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..diagnostics import Diagnostic, Severity
from ..interpreter import Interpreter
from ..interpreter.values import Closure
from ..ir.expr import Call, Constant, Function, Tuple
from .where import FusedPlace, expression_place, layers_of, op_name


def nonfinite_counts(value: Any) -> tuple[int, int]:
    """(NaN count, infinity count) over the float tensors of a value (tuples walked)."""
    if isinstance(value, tuple):
        counts = [nonfinite_counts(v) for v in value]
        return sum(c[0] for c in counts), sum(c[1] for c in counts)
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return int(np.isnan(value).sum()), int(np.isinf(value).sum())
    return 0, 0


def _nonfinite(value: Any) -> bool:
    if isinstance(value, tuple):
        return any(_nonfinite(v) for v in value)
    return isinstance(value, np.ndarray) and value.dtype.kind in "fc" and not bool(np.isfinite(value).all())


@dataclass
class Origin:
    call: Call | Constant  # the op call that made it (in the source, or inside the fused function), or a constant
    nan: int
    inf: int
    kernel: FusedPlace | None = None  # compiled code: the fused function that made it
    kernel_wrong: bool = False  # the reference interpreter stays finite on the kernel's inputs

    def what(self) -> str:
        parts = [f"{n} {w}" for n, w in ((self.nan, "NaN"), (self.inf, "infinite")) if n]
        return " and ".join(parts) or "non-finite values"

    def diagnostic(self) -> Diagnostic:
        """A warning at the expression; notes name its layers and the fused function."""
        notes: list[tuple[Any, str]] = []
        if self.kernel is not None:
            notes.append((None, f"in the compiled code: kernel {self.kernel.text()}"))
        if isinstance(self.call, Constant):
            message = (f"the first non-finite value is a constant's: {self.what()} (a weight, or a value the "
                       f"passes folded from the expression here)")
        elif self.kernel_wrong:
            message = (f"the compiled kernel gives {self.what()} on finite inputs where the reference "
                       f"interpreter gives finite values: a miscompiled kernel")
        else:
            layers = layers_of(self.call.span)
            message = (f"the first non-finite value comes from {op_name(self.call)} here: {self.what()} "
                       f"from finite arguments" + (f" (layer {', '.join(layers)})" if layers else ""))
        return Diagnostic(message, self.call.span, Severity.WARNING, tuple(notes), source="run")

    def text(self) -> str:
        """One line, for tests and the language server: `op at file:line:col (layer ...)`."""
        what = "a constant" if isinstance(self.call, Constant) else op_name(self.call)
        return f"{what} at {expression_place(self.call)}"


class _Found(Exception):
    def __init__(self, origin: Origin, call: Call, args: tuple) -> None:
        self.origin = origin
        self.call = call
        self.args_seen = args


def _first_origin(interpreter_run) -> tuple[Origin | None, Call | None, tuple]:
    """The first call observed making a non-finite value from finite arguments (or the
    constant it read one from), the call, and its arguments; the run stops there."""
    def observe(call: Call, args: tuple, result: Any) -> None:
        if not _nonfinite(result):
            return
        for expr, value in zip(call.args, args):
            const = _constant_in(expr)
            if const is not None and _nonfinite(value):
                raise _Found(Origin(const, *nonfinite_counts(value)), call, args)
        if not any(_nonfinite(a) for a in args):
            raise _Found(Origin(call, *nonfinite_counts(result)), call, args)

    try:
        interpreter_run(observe)
    except _Found as found:
        return found.origin, found.call, found.args_seen
    return None, None, ()


def find_nonfinite_interpreted(module, args, entry: str = "main") -> Origin | None:
    """The first op call of `module` (run by the interpreter on `args`) that makes a
    non-finite value from finite arguments."""
    if _nonfinite(tuple(args)):
        return None
    return _first_origin(lambda observe: Interpreter(module, observe=observe).call(entry, list(args)))[0]


def find_nonfinite_compiled(build, inputs) -> Origin | None:
    """The first kernel of `build` (run one by one on `inputs`, the compiled @main's
    arguments) whose outputs are non-finite on finite inputs, and the op inside it."""
    if _nonfinite(tuple(inputs)):
        return None
    kernels = build.executable.kernel_calls()
    origin, call, args = _first_origin(
        lambda observe: Interpreter(build.module, kernels=kernels, observe=observe).call("main", list(inputs)))
    if origin is None:
        return None
    func = call.op
    if isinstance(func, Function) and func in kernels:
        place = FusedPlace.of(build, func, kernels[func].name)
        if isinstance(origin.call, Constant):  # a constant of @main the kernel reads
            origin.kernel = place
            return origin
        inner = find_in_function(build.module, func, args)
        if inner is None:
            return Origin(origin.call, origin.nan, origin.inf, place, kernel_wrong=True)
        inner.kernel = place
        return inner
    return origin


def _constant_in(expr) -> Constant | None:
    """The constant an argument is, or the first one among a tuple argument's fields."""
    if isinstance(expr, Constant):
        return expr
    if isinstance(expr, Tuple):
        return next((c for c in map(_constant_in, expr.fields) if c is not None), None)
    return None


def find_in_function(module, func: Function, args: tuple) -> Origin | None:
    """The first op call inside `func`, run by the reference interpreter on `args`, that
    makes a non-finite value from finite arguments."""
    return _first_origin(lambda observe: Interpreter(module, observe=observe).call(Closure(func), list(args)))[0]
