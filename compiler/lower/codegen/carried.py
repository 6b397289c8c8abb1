"""A loop counter's quotients and remainders by constants, carried beside it (llvm.py `loop`).

A fused loop's counter is divided by constants to recover the loops it fused (`i // 28`,
`i % 28` for a row loop fused with the channel blocks).  Emitted as divisions, LLVM's
scalar evolution reads every address made from them as a function of the counter
(`i - 28 * (i /u 28)` and its multiples), and loop strength reduction, run on each loop
inside, builds its formulae over those terms for every address of their unrolled bodies:
in six of ResNet-50's 1x1 convolutions (a tile of 14 accumulators, 144 loads a trip of
the reduction loop) 0.06-0.16 CPU s a kernel, LLVM's largest single cost, 0.5 s of the
2.6 the workers spend in LLVM over the 29 kernels; MobileNet v2's five alike 0.3 s.
Carried instead (a quotient and a remainder as phis: the remainder steps by one and wraps
to 0 at the divisor, the quotient steps when it wraps), each is a value scalar evolution
does not look into, and the loops inside are the same machine code but for the registers
and displacements chosen; the loop itself does an add, a compare and a select where it
divided.

Only a loop that holds a register tile's reduction loop carries them (`is_loop` in
llvm.py: a serial loop around an unrolled one, where strength reduction has the addresses
of a whole tile to combine; an innermost or vectorised loop's addresses are reduced and
vectorised from their closed forms), and only where no condition reads its counter: a
division's range (a remainder below its divisor) lets LLVM fold the padding tests of a
depthwise convolution, which a carried remainder hides (LLVM then kept their branches and
fused fewer products into FMAs: outputs a rounding apart).
"""

from __future__ import annotations

from typing import Callable, Iterable

import llvmlite.ir as ir

from ..schedule.loopnest import For, IfThenElse, Stmt, walk
from ..te import expr as te
from .scalar import I64, index_constant


def divisors(s: For, is_loop: Callable[[For], bool], exprs: Callable[[Stmt], Iterable[te.PrimExpr]],
             nodes: Callable[[list[te.PrimExpr]], Iterable[te.PrimExpr]]) -> tuple[int, ...]:
    """The constants `s`'s counter is divided by in its body (floordiv or floormod, each
    below its extent), to carry; none when the body holds no loop `is_loop` takes or a
    condition reads the counter.  `exprs`: every expression node under a statement;
    `nodes`: under expressions; each once."""
    if not any(isinstance(st, For) and is_loop(st) for st in walk(s.body)):
        return ()
    conditions = [st.cond for st in walk(s.body) if isinstance(st, IfThenElse)]
    found = set()
    for e in exprs(s.body):
        if isinstance(e, te.Select):
            conditions.append(e.cond)
        elif isinstance(e, te.Binary) and e.op in ("floordiv", "floormod") and e.a is s.var \
                and e.dtype == te.INDEX and isinstance(e.b, te.Const) and 1 < e.b.value < s.extent:
            found.add(int(e.b.value))
    if not found or any(e is s.var for e in nodes(conditions)):
        return ()
    return tuple(sorted(found))


def start(b: ir.IRBuilder, begin: ir.Value, divisor: int) -> tuple[ir.Value, ir.Value]:
    """The quotient and remainder of the loop's first counter value `begin` (non-negative)."""
    if isinstance(begin, ir.Constant):
        return index_constant(begin.constant // divisor), index_constant(begin.constant % divisor)
    d = index_constant(divisor)
    return b.udiv(begin, d), b.urem(begin, d)


def step(b: ir.IRBuilder, quotient: ir.Value, remainder: ir.Value, divisor: int) -> tuple[ir.Value, ir.Value]:
    """The quotient and remainder of the next counter value, from this one's."""
    following = b.add(remainder, index_constant(1), flags=("nuw", "nsw"))
    wraps = b.icmp_unsigned("==", following, index_constant(divisor))
    return (b.add(quotient, b.zext(wraps, I64), flags=("nuw", "nsw")),
            b.select(wraps, index_constant(0), following))
