"""Functions that only hand work on, left unoptimised (`optnone`): a parallel loop's
trampoline, and a kernel's entry function when all its loops are parallel.

A parallel loop (llvm.py `parallel`) becomes a body function and a trampoline that
unpacks the captured values and calls the body on the pieces its thread takes
(shares.py); the kernel's own function then holds the team's dispatch (team.py) and the
stores of the captured values.  Neither computes anything of the kernel's: the trampoline
runs once per thread and loop, its loop once per piece (a few per thread), the entry once
per call.  Yet O3 and code generation spent on them what they spend on any code of their
size, about 50 us of LLVM's time per machine instruction: ResNet-50's 29 kernels took
1.86 CPU s of LLVM with them optimised, 1.65 with the trampolines `optnone` and 1.56 with
the entry functions that hold no loop of their own too (h-build14, 3 rounds each, the
least); the body functions' machine code is instruction for instruction the same (they
are `noinline`, so nothing of the glue reaches them), only the trampolines' and those
entry functions' is not.  At O0 a trampoline keeps its values on the stack: a few loads
and stores more per piece, nanoseconds per parallel loop.

An entry function with a loop of its own (a serial loop of the kernel, or one vectorized)
stays optimised: that loop is the kernel's work.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ..schedule.loopnest import Allocate, For, IfThenElse, Seq, Stmt


def leave_unoptimised(fn: ir.Function) -> None:
    """Mark `fn` `optnone` (and `noinline`, which LLVM requires with it)."""
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")


def only_hands_on(body: Stmt) -> bool:
    """Whether a kernel whose function emits `body` runs every loop of it in parallel
    loops (outlined into body functions), with at least one: its own code then has no
    loop."""
    found = [False]

    def walk(s: Stmt) -> bool:
        if isinstance(s, For):
            if s.kind != "parallel":
                return False
            found[0] = True
            return True  # its body is outlined: not this function's code
        if isinstance(s, Seq):
            return all(walk(x) for x in s.stmts)
        if isinstance(s, Allocate):
            return walk(s.body)
        if isinstance(s, IfThenElse):
            return walk(s.then_case) and (s.else_case is None or walk(s.else_case))
        return True  # a store or a prefetch: straight-line code

    return walk(body) and found[0]
