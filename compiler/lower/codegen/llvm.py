"""LLVM code generation: loop-nest `PrimFunc`s → an `llvmlite.ir.Module` with debug info.

Each PrimFunc becomes `void name(ptr noalias align 64 p0, ..., ptr noalias align 64 out0)`
with external linkage; the runtime passes 64-byte aligned, row-major, contiguous buffers.
Loop kinds:

* serial: a bottom-tested loop with a phi counter;
* vectorized: a straight-line body is emitted once on `<W x T>` vectors (lanes.py; a
  width that is not a power of two, once per power of two in it);
  other bodies make the same loop as serial, carrying `llvm.loop.vectorize.enable`/`width`
  (and `unroll.disable`; `interleave.count` when it expands a math function inline:
  MATH_INTERLEAVE) metadata, which the O3 pipeline's loop vectoriser honours; a body
  the vectoriser cannot handle (inner loops, libm calls, a buffer read where another
  iteration writes it) gets no metadata, because a forced vectorisation that fails prints
  LLVM warnings; such a loop of up to MAX_VECTOR_PIECES lanes that is not a power of two
  is emitted as one loop per power of two in its length, each a whole vector
  (`_vector_pieces`).  A loop around vector code carries `llvm.loop.unroll.disable`;
* unrolled: the body once per iteration, with the loop variable a constant; a register
  tile's reduction step as a loop carrying `llvm.loop.unroll.full`, which O3 unrolls
  into the same code (unrolled_by_llvm.py);
* parallel: the loop is outlined into an internal body function (buffers as `noalias`
  parameters, then the outer loop variables it uses, then its chunk `[begin, end)`) and
  a trampoline `void (ptr data)` that unpacks a struct of captured values and calls the
  body on the pieces of the range its thread takes (shares.py: its own static share
  first, then what the others left; `omp_get_thread_num`, and the team size the caller
  asked for, which the struct carries); the caller runs the trampoline on the inference's
  team when the AOT entry runs one (team.py: one OpenMP region per inference), else
  through libgomp's `GOMP_parallel`.  The team size comes from the module global
  `relaylens_num_threads` (0: the OpenMP default), which the JIT sets, at most
  shares.MAX_TEAM and the loop's extent.  A parallel loop inside a parallel region runs serially.
  The trampoline, and the kernel's function when all its loops are parallel, are glue
  left unoptimised (`optnone`, glue.py): a tenth of LLVM's time went on them.

Local buffers (`Allocate`) live on the stack (an alloca in the entry block) up to
`SMALL_ALLOCA_BYTES`, else on the heap (`aligned_alloc`/`free` around the body).
`select` evaluates only the side taken when a side reads memory (branches and a phi), and
only that side when its condition is a constant (an unrolled loop's variable).
Index arithmetic is folded where it is constant, a division by a constant has no guard
(unsigned where the loop bounds prove the dividend non-negative), an expression is
emitted once where its value stays good (emitted.py: across the statements and unrolled
iterations that follow, while its variables keep their values and nothing is stored into
what it reads), and an index operation or an address on values already combined so is
not emitted again where the first one dominates (`_Emitter.integer_binary`, `address`):
LLVM would remove the copies, but only after printing, parsing and optimising them (a
third of ResNet-50's unoptimised IR).  A loop around a register tile's reduction loop
carries its counter's quotients and remainders by constants instead of dividing
(carried.py: LLVM's strength reduction of the loop inside took a fifth of its time).
Scalar operations and the LLVM types of dtypes are in scalar.py.

Debug info (debuginfo.py): a DISubprogram per LLVM function at its PrimFunc's line, and a
DILocation on every instruction at the Relay line/column of the statement or expression
that produced it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Iterator

import llvmlite.ir as ir

from ...host import host
from ...support import ALIGN
from ..errors import LoweringError
from ..schedule.loopnest import Allocate, For, IfThenElse, Prefetch, PrimFunc, Seq, Stmt, Store, walk
from ..te import expr as te
from ..te.arith import bounds
from .debuginfo import DebugInfo, source_location
from . import carried
from .decided import condition_decided
from .emitted import Emitted
from .glue import leave_unoptimised, only_hands_on
from .ir_text import _Printer
from .lines import TextBuilder
from ..te.mathfuncs import INLINED
from .lane_total import emit_tree, tree_plan
from .lanes import LanePlan, Lanes, lane_plan, same_expr
from .team import parallel_call
from .shares import COUNTER_STRIDE, MAX_TEAM, share_loop, zero_counters
from .unrolled_by_llvm import llvm_unrolls
from .scalar import (I1, I32, I64, I8, PTR, VOID, binary, call, calls_libm, cast, constant, declare, elem_bytes,
                     index_constant, mem_type, reg_type)

SMALL_ALLOCA_BYTES = 4096
INDEX_LIMIT = 1 << 62  # index bounds flagged as not wrapping stay within this, far from i64's
AFFINE_OPS = ("add", "sub", "mul")  # index operations emitted as a base and a constant offset (`affine`)
MAX_VECTOR_PIECES = 64  # the longest vectorized loop cut into power-of-two pieces
# A long vectorized loop (more than INTERLEAVE_MIN iterations, left to the loop vectoriser)
# whose body expands a math function inline asks for MATH_INTERLEAVE vectors side by side:
# the expansion is a chain of some 70 dependent steps, and one vector at a time leaves the
# core waiting on their latencies.  Measured (1 thread, CPU time, alternating, the same
# bits): GPT-2's tanh GELU over 128 x 3072 0.94-1.01 -> 0.75-0.86 ms, BERT's erf GELU
# 0.97-1.01 -> 0.81-0.86, softmax's exponentials 0.27-0.38 -> 0.23-0.31 (2: about half of that).
MATH_INTERLEAVE = 4
INTERLEAVE_MIN = 64
BUFFER_ALIGN = ALIGN  # the parameters' promised alignment (support.py's arrays keep it)
PREFETCH_LOCALITY = 2  # llvm.prefetch's: PREFETCHT1 (into L2 and outward; 1-3 measured alike on Zen 3)
NUM_THREADS_GLOBAL = "relaylens_num_threads"


def generate(funcs: list[PrimFunc], source_name: str, module_name: str = "relaylens") -> ir.Module:
    """One LLVM module holding a function per PrimFunc (named as the PrimFunc), with debug
    info pointing into the Relay file `source_name`."""
    module = ir.Module(module_name)
    module.triple = host().triple
    debug = DebugInfo(module, source_name)
    for func in funcs:
        _generate_function(module, debug, func)
    return module


class _LoopID(ir.MDValue):
    """A distinct, self-referential `llvm.loop` node: `distinct !{!self, props...}`."""

    def __init__(self, module: ir.Module, props: list[ir.MDValue]) -> None:
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *props)

    def descr(self, buf: list[str]) -> None:
        buf.append("distinct ")
        super().descr(buf)

    __eq__ = object.__eq__
    __hash__ = object.__hash__


# --------------------------------------------------------------------------- functions


def _buffer_function(module: ir.Module, name: str, buffers: list[te.Buffer], extra: list[tuple[str, ir.Type]],
                     internal: bool) -> ir.Function:
    """A void function taking `noalias align 64` pointers to `buffers`, then `extra`."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * len(buffers) + [t for _, t in extra]), name)
    for arg, buf in zip(fn.args, buffers):
        arg.name = buf.name
        arg.attributes.add("noalias")
        arg.attributes.align = BUFFER_ALIGN
    for arg, (argname, _) in zip(fn.args[len(buffers):], extra):
        arg.name = argname
    fn.attributes.add("nounwind")
    if internal:
        fn.linkage = "internal"
    return fn


def _generate_function(module: ir.Module, debug: DebugInfo, func: PrimFunc) -> None:
    if module.globals.get(func.name) is not None:
        raise LoweringError(f"LLVM code generation: two functions named {func.name}", func.span)
    fn = _buffer_function(module, func.name, list(func.params), [], internal=False)
    where = source_location(func.span) or (0, 0)
    em = _Emitter(module, debug, fn, debug.subprogram(fn, where[0], local=False), where, func.span,
                  func.name, itertools.count(), in_parallel=False, plans=_LoopPlans(), printer=_Printer())
    em.buffers = {id(b): a for b, a in zip(func.params, fn.args)}
    em.stmt(func.body)
    em.finish()
    if only_hands_on(func.body):  # glue.py: its loops are all in body functions
        leave_unoptimised(fn)


class _Emitter:
    """Emits statements and expressions into one LLVM function.

    Each node is emitted inside `with self.at(node.loc):`, which makes it the current
    node: its instructions get its Relay line and column (the enclosing node's when it
    has none), and a `LoweringError` raised meanwhile without a span gets its span."""

    def __init__(self, module: ir.Module, debug: DebugInfo, fn: ir.Function, scope: ir.DIValue,
                 where: tuple[int, int], span: Any, root: str, counter: Iterator[int], in_parallel: bool,
                 plans: _LoopPlans, printer: _Printer) -> None:
        self.module, self.debug, self.fn, self.scope = module, debug, fn, scope
        self.printer = printer  # the text of operands and types, for the builders' lines (lines.py)
        self.plans = plans
        self.where = where  # the current node's Relay (line, column); first the function's own
        self.span = span  # the current node's span (the innermost one that has a span)
        self.root, self.counter, self.in_parallel = root, counter, in_parallel
        self.entry = fn.append_basic_block("entry")  # allocas only; branches to `body` at finish
        self.allocas = TextBuilder(self.entry, printer)
        self.allocas.debug_metadata = debug.location(where, scope)
        self.builder = TextBuilder(fn.append_basic_block("body"), printer)
        self.buffers: dict[int, ir.Value] = {}
        self.vars: dict[int, ir.Value] = {}
        self.extents: dict[int, int] = {}  # loop variable id -> its loop's extent (for index bounds)
        self.ranges: dict[int, tuple] = {}  # index bounds worked out: node id -> (node, bounds)
        self.emitted = Emitted()  # expressions emitted, where they may be used again (emitted.py)
        # index operations and addresses emitted, by operation and operand values
        # (`integer_binary`, `address`): scoped as `emitted`'s values that read no memory
        self.numbered: dict[tuple, ir.Value] = {}
        self.contract = False  # emitting an accumulation: float mul/add may fuse into FMAs
        self._inlined: list[te.PrimExpr] = []  # expansions emitted (kept alive: memo keys are ids)
        self._counters: ir.Value | None = None  # `counters`, allocated on first use
        # a broadcast's vector type and zero constants by (id(element type), lanes), with the
        # element type kept alive (lanes.py `splat`): made once, printed once
        self.splat_parts: dict[tuple[int, int], tuple] = {}
        self.builder.debug_metadata = debug.location(where, scope)

    def at(self, loc: Any) -> _At:
        """Make the node whose span is `loc` the current one for the block: the builder
        stamps its location on every instruction, a `LoweringError` without a span gets
        `loc`; the enclosing node's location and span come back after it."""
        return _At(self, loc)

    def finish(self) -> None:
        self.builder.ret_void()
        self.allocas.branch(self.fn.blocks[1])

    def entry_alloca(self, typ: ir.Type, count: int, name: str) -> ir.Value:
        """An alloca in the entry block (not inside any loop)."""
        slot = self.allocas.alloca(typ, size=ir.Constant(I64, count) if count != 1 else None, name=name)
        slot.align = BUFFER_ALIGN
        slot.type = PTR  # opaque, like every pointer here
        return slot

    # ------------------------------------------------------------------ statements

    def region(self, rebinds: te.Var | None = None, stores: bool = False) -> _Region:
        """A block of code that need not run (a loop body, a branch) or, given `rebinds`,
        an unrolled iteration, which binds that variable anew and runs whenever the code
        after it does: it may use what was emitted before it; what it emits is reused
        after it as emitted.py says (an unrolled iteration's values that do not use its
        variable), and so are an unrolled iteration's index operations and addresses
        (`numbered`, keyed by the values they use, so a rebound variable keys apart).
        `stores`: the region may store (emitted.py).  Entered with `with`."""
        return _Region(self, rebinds, stores)

    def stmt(self, s: Stmt) -> None:
        with self.at(getattr(s, "loc", None)):
            if isinstance(s, Seq):
                for one in s.stmts:
                    self.stmt(one)
            elif isinstance(s, Store):
                self.store(s)
            elif isinstance(s, For):
                self.for_(s)
            elif isinstance(s, IfThenElse):
                self.if_(s)
            elif isinstance(s, Allocate):
                self.allocate(s)
            elif isinstance(s, Prefetch):
                self.prefetch(s)
            else:
                raise LoweringError(f"LLVM code generation: unknown statement {type(s).__name__}")

    def store(self, s: Store) -> None:
        if s.value.dtype != s.buffer.dtype:
            raise LoweringError(f"LLVM code generation: storing {s.value.dtype} into {s.buffer.name} "
                                f"of {s.buffer.dtype}")
        index = self.expr(s.index)
        self.contract = self.accumulates(s)
        try:
            value = self.expr(s.value)
        finally:
            self.contract = False
        if s.buffer.dtype == "bool":
            value = self.builder.zext(value, I8)
        self.builder.store(value, self.address(s.buffer, index), align=elem_bytes(s.buffer.dtype))
        self.emitted.stored(s.buffer)

    @staticmethod
    def accumulates(s: Store) -> bool:
        return _accumulates(s)

    def address(self, buffer: te.Buffer, index: ir.Value) -> ir.Value:
        """The address of `buffer[index]`: one instruction per buffer and index value where
        it dominates (`numbered`, as index operations: a tile reads and writes its
        accumulators at the same addresses)."""
        ptr = self.buffers.get(id(buffer))
        if ptr is None:
            raise LoweringError(f"LLVM code generation: buffer {buffer.name} is not a parameter or allocated")
        key = ("address", id(ptr), buffer.dtype, self.value_key(index))
        found = self.numbered.get(key)
        if found is None:
            if index.type != I64:
                index = self.builder.sext(index, I64)
            found = self.numbered[key] = self.builder.gep(ptr, [index], inbounds=True,
                                                          source_etype=mem_type(buffer.dtype))
        return found

    def load(self, buffer: te.Buffer, index: ir.Value, typ: ir.Type, lanes: int = 0) -> ir.Value:
        """`buffer[index]` read as `typ` (`lanes` wide, 0: a scalar): the value an earlier
        read of the same address made where it is still good (emitted.py), else a load."""
        address = self.address(buffer, index)
        value = self.emitted.load_at(address, lanes)
        if value is None:
            value = self.builder.load(address, typ=typ, align=elem_bytes(buffer.dtype), name=buffer.name)
            self.emitted.put_load(buffer, address, lanes, value)
        return value

    def prefetch(self, s: Prefetch) -> None:
        """`llvm.prefetch` (read, locality 2: PREFETCHT1, data; with `s.write` for writing:
        PREFETCHW) of `s.buffer[s.index]`, whose address is not `inbounds`: the index may
        pass the buffer's end (loopnest.Prefetch)."""
        ptr = self.buffers.get(id(s.buffer))
        if ptr is None:
            raise LoweringError(f"LLVM code generation: buffer {s.buffer.name} is not a parameter or allocated")
        index = self.expr(s.index)
        if index.type != I64:
            index = self.builder.sext(index, I64)
        address = self.builder.gep(ptr, [index], source_etype=mem_type(s.buffer.dtype))
        hint = declare(self.module, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
        self.builder.call(hint, [address, ir.Constant(I32, int(s.write)), ir.Constant(I32, PREFETCH_LOCALITY),
                                 ir.Constant(I32, 1)])

    def if_(self, s: IfThenElse) -> None:
        cond = self.expr(s.cond)
        if s.else_case is None:
            with self.builder.if_then(cond), self.region(stores=True):
                self.stmt(s.then_case)
        else:
            with self.builder.if_else(cond) as (then, otherwise):
                with then, self.region(stores=True):
                    self.stmt(s.then_case)
                with otherwise, self.region(stores=True):
                    self.stmt(s.else_case)
        self.emitted.forget_loads()

    def allocate(self, s: Allocate) -> None:
        buf = s.buffer
        nbytes = buf.size * elem_bytes(buf.dtype)
        if nbytes <= SMALL_ALLOCA_BYTES:
            self.buffers[id(buf)] = self.entry_alloca(mem_type(buf.dtype), max(buf.size, 1), buf.name)
            self.stmt(s.body)
            return
        alloc = declare(self.module, "aligned_alloc", PTR, [I64, I64])
        size = -(-nbytes // BUFFER_ALIGN) * BUFFER_ALIGN
        self.buffers[id(buf)] = ptr = self.builder.call(alloc, [ir.Constant(I64, BUFFER_ALIGN), ir.Constant(I64, size)],
                                                        name=buf.name)
        self.stmt(s.body)
        self.builder.call(declare(self.module, "free", VOID, [PTR]), [ptr])

    def for_(self, s: For) -> None:
        if s.extent <= 0:
            return
        if s.kind == "parallel" and not self.in_parallel and s.extent > 1:
            self.parallel(s)
        elif s.kind == "unrolled" and (tree := tree_plan(s)) is not None:  # a row total (lane_total.py)
            emit_tree(self, s, tree)
        elif llvm_unrolls(s, self.plans.lanes):  # a register tile's reduction step: LLVM unrolls it (unrolled_by_llvm.py)
            self.bind_extent(s.var, s.extent)
            self.loop(s.var, ir.Constant(I64, 0), ir.Constant(I64, s.extent), lambda: self.stmt(s.body),
                      full_unroll=True)
        elif s.kind == "unrolled" or s.extent == 1:
            self.bind_extent(s.var, s.extent)
            for k in range(s.extent):
                with self.region(rebinds=s.var):
                    self.vars[id(s.var)] = index_constant(k)
                    self.stmt(s.body)
        else:
            self.bind_extent(s.var, s.extent)
            lanes = self.plans.lanes(s)
            # a loop around vector code is not unrolled: LLVM would fully unroll the
            # short ones (a 3x3 filter's), tripling the machine code for no speed
            no_unroll = self.plans.encloses_lanes(s.body)
            width = self.plans.width(s)
            if lanes is not None:
                first = 0
                for piece in _vector_pieces(s.extent):
                    Lanes(self, s, lanes, first, piece).emit()
                    first += piece
            elif width is not None:
                begin = 0
                interleave = MATH_INTERLEAVE if _calls_math(s) else 0
                for piece in _vector_pieces(s.extent):
                    self.loop(s.var, ir.Constant(I64, begin), ir.Constant(I64, begin + piece),
                              lambda: self.stmt(s.body), vectorize=piece, no_unroll=no_unroll,
                              interleave=interleave if piece > INTERLEAVE_MIN else 0)
                    begin += piece
            else:
                self.loop(s.var, ir.Constant(I64, 0), ir.Constant(I64, s.extent), lambda: self.stmt(s.body),
                          no_unroll=no_unroll, divisors=self.plans.divisors(s))
        self.vars.pop(id(s.var), None)
        self.extents.pop(id(s.var), None)

    def bind_extent(self, var: te.Var, extent: int) -> None:
        """`var` runs over [0, extent) from here on (the bounds of index expressions)."""
        if self.extents.get(id(var), extent) != extent:
            self.ranges.clear()  # worked out with another extent of var
        self.extents[id(var)] = extent

    def no_wrap(self, e: te.Binary) -> tuple[str, ...]:
        """The flags an index add, sub or mul may carry (`nsw`, `nuw`): what the loop
        extents bound its operands and result to (te/arith.py `bounds`).  Given them, LLVM's
        scalar evolution needs not prove them (IndVarSimplify and InstCombine did, for
        every address of a deep loop nest: ResNet-50's chunked convolutions, 40-50% of
        their O3 time)."""
        if e.dtype != te.INDEX or e.op not in ("add", "sub", "mul"):
            return ()
        known = [bounds(x, self.extents, self.ranges) for x in (e, e.a, e.b)]
        if any(k is None or not -INDEX_LIMIT < k[0] <= k[1] < INDEX_LIMIT for k in known):
            return ()
        result, a, b = known
        if a[0] >= 0 and b[0] >= 0 and result[0] >= 0:  # a sub only when a >= b throughout
            return ("nuw", "nsw")
        return ("nsw",)

    def loop(self, var: te.Var, begin: ir.Value, end: ir.Value, body: Callable[[], None],
             vectorize: int | None = None, no_unroll: bool = False, interleave: int = 0,
             divisors: tuple[int, ...] = (), full_unroll: bool = False) -> None:
        """`for var in [begin, end): body()` as a bottom-tested loop; the range may be empty
        unless both bounds are constants.  `vectorize`: the loop vectoriser's width hint
        (and `interleave`, its interleave count: vectors of that width side by side).
        `divisors`: the counter's quotients and remainders by them are carried beside it
        (carried.py), and are what the body's `var // d` and `var % d` give.  `full_unroll`:
        the loop asks LLVM to unroll it fully (unrolled_by_llvm.py)."""
        b = self.builder
        header = self.fn.append_basic_block(f"{var.name}.loop")
        exit_ = self.fn.append_basic_block(f"{var.name}.exit")
        pre = b.block
        starts = [carried.start(b, begin, d) for d in divisors]
        if isinstance(begin, ir.Constant) and isinstance(end, ir.Constant):
            b.branch(header)
        else:
            b.cbranch(b.icmp_signed("<", begin, end), header, exit_)
        b.position_at_end(header)
        counter = b.phi(I64, name=var.name)
        quotients = [(d, b.phi(I64, name=f"{var.name}.div{d}"), b.phi(I64, name=f"{var.name}.mod{d}"))
                     for d in divisors]
        self.vars[id(var)] = counter
        with self.region(stores=True):
            for d, quotient, remainder in quotients:  # what integer_binary finds for var // d, var % d
                divisor = self.value_key(index_constant(d))
                self.numbered[("floordiv", te.INDEX, id(counter), divisor)] = quotient
                self.numbered[("floormod", te.INDEX, id(counter), divisor)] = remainder
            body()
        latch = b.block
        for (d, quotient, remainder), first in zip(quotients, starts):
            for phi, value, following in zip((quotient, remainder), first, carried.step(b, quotient, remainder, d)):
                phi.add_incoming(value, pre)
                phi.add_incoming(following, latch)
        following = b.add(counter, ir.Constant(I64, 1), name=f"{var.name}.next")
        back = b.cbranch(b.icmp_signed("<", following, end), header, exit_)
        if full_unroll:
            back.set_metadata("llvm.loop", _LoopID(self.module, [self.module.add_metadata(["llvm.loop.unroll.full"])]))
        elif no_unroll and vectorize is None:
            back.set_metadata("llvm.loop", _LoopID(self.module, [self.module.add_metadata(["llvm.loop.unroll.disable"])]))
        if vectorize is not None:
            # no unrolling first: the full unroller would otherwise scalarise the loop
            # before the vectoriser sees it
            props = [self.module.add_metadata(["llvm.loop.vectorize.enable", ir.Constant(I1, 1)]),
                     self.module.add_metadata(["llvm.loop.unroll.disable"])]
            if vectorize & (vectorize - 1) == 0 and vectorize <= 64:
                props.append(self.module.add_metadata(["llvm.loop.vectorize.width", ir.Constant(I32, vectorize)]))
            if interleave > 1:
                props.append(self.module.add_metadata(["llvm.loop.interleave.count", ir.Constant(I32, interleave)]))
            back.set_metadata("llvm.loop", _LoopID(self.module, props))
        counter.add_incoming(begin, pre)
        counter.add_incoming(following, latch)
        b.position_at_end(exit_)

    def parallel(self, s: For) -> None:
        """Outline `s` and run it on the inference's team or through GOMP_parallel (team.py)."""
        buffers, free_vars = _free_refs(s)
        for buf in buffers:
            if id(buf) not in self.buffers:
                raise LoweringError(f"LLVM code generation: buffer {buf.name} is not a parameter or allocated")
        for v in free_vars:
            if id(v) not in self.vars:
                raise LoweringError(f"LLVM code generation: unbound variable {v.name}")
        name = f"{self.root}.par{next(self.counter)}"
        body_fn = _buffer_function(self.module, f"{name}.body", buffers,
                                   [(v.name, reg_type(v.dtype)) for v in free_vars] + [("begin", I64), ("end", I64)],
                                   internal=True)
        # not inlined into the trampoline's loop over pieces (shares.py).  Inlined there, O3
        # over ResNet-50's kernels took 16% longer (1.91 -> 2.23 CPU s) and machine code 11%.
        # Kept apart (against one inlined call before shares.py, the least of 4 builds
        # alternated, load 4-6): O3 1.83 -> 1.49 s, machine code 0.92 -> 1.11 s, the
        # build 4.79 -> 4.38 s; 1 thread, CPU time, MobileNet v2's depthwise kernels run
        # faster (1x144x56x56 0.212 -> 0.165 ms, 1x192x28x28 0.076 -> 0.043), the others
        # as before (ResNet-50's kernels 96.3 -> 96.0 ms in all).
        body_fn.attributes.add("noinline")
        where = self.where
        inner = _Emitter(self.module, self.debug, body_fn, self.debug.subprogram(body_fn, where[0], local=True),
                         where, self.span, self.root, self.counter, in_parallel=True, plans=self.plans,
                         printer=self.printer)
        inner.buffers = {id(b): a for b, a in zip(buffers, body_fn.args)}
        inner.vars = {id(v): a for v, a in zip(free_vars, body_fn.args[len(buffers):])}
        inner.extents = {id(v): self.extents[id(v)] for v in free_vars if id(v) in self.extents}
        inner.bind_extent(s.var, s.extent)
        inner.loop(s.var, body_fn.args[-2], body_fn.args[-1], lambda: inner.stmt(s.body),
                   divisors=self.plans.divisors(s))
        inner.finish()

        fields = [PTR] * len(buffers) + [reg_type(v.dtype) for v in free_vars] + [PTR, I64]  # counters, team
        struct = ir.LiteralStructType(fields)
        trampoline = ir.Function(self.module, ir.FunctionType(VOID, [PTR]), name)
        trampoline.linkage = "internal"
        trampoline.attributes.add("nounwind")
        leave_unoptimised(trampoline)  # glue.py: a tenth of LLVM's time went on trampolines
        trampoline.args[0].name = "data"
        tr = _Emitter(self.module, self.debug, trampoline, self.debug.subprogram(trampoline, where[0], local=True),
                      where, self.span, self.root, self.counter, in_parallel=True, plans=self.plans,
                      printer=self.printer)
        tb = tr.builder
        *captured, counters, team = [tb.load(tb.gep(trampoline.args[0], [ir.Constant(I32, 0), ir.Constant(I32, k)],
                                               inbounds=True, source_etype=struct), typ=t) for k, t in enumerate(fields)]
        tid = tb.sext(tb.call(declare(self.module, "omp_get_thread_num", I32, []), []), I64)
        share_loop(tb, trampoline, counters, tid, team, s.extent,
                   lambda begin, end: tb.call(body_fn, [*captured, begin, end]))
        tr.finish()

        b = self.builder
        data = self.entry_alloca(struct, 1, f"{name}.data")
        wanted = b.load(num_threads_global(self.module), typ=I32)
        default = b.call(declare(self.module, "omp_get_max_threads", I32, []), [])
        wanted = b.select(b.icmp_signed(">", wanted, ir.Constant(I32, 0)), wanted, default)
        limit = ir.Constant(I32, min(s.extent, MAX_TEAM))
        team_size = b.select(b.icmp_signed(">", wanted, limit), limit, wanted)
        values = [self.buffers[id(x)] for x in buffers] + [self.vars[id(v)] for v in free_vars] + [self.counters()]
        for k, value in enumerate([*values, b.sext(team_size, I64)]):
            b.store(value, b.gep(data, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True, source_etype=struct))
        zero_counters(b, self.module, values[-1], team_size)
        parallel_call(b, self.module, trampoline, data, team_size)
        self.emitted.forget_loads()

    def counters(self) -> ir.Value:
        """The work-sharing counters of this function's parallel regions (shares.py), one
        array in its frame for all of them (they run one after another)."""
        if self._counters is None:
            self._counters = self.entry_alloca(I64, MAX_TEAM * COUNTER_STRIDE, "shares.counters")
        return self._counters

    # ------------------------------------------------------------------ expressions

    def expr(self, e: te.PrimExpr) -> ir.Value:
        key = id(e) + self.contract  # emitted.py: the keys
        value = self.emitted.get(key)
        if value is None:
            if e.loc is None or e.loc is self.span:  # already the current node's place
                value = self._expr(e)
            else:
                with self.at(e.loc):
                    value = self._expr(e)
            self.emitted.put(key, e, value, self.reads_memory(e))
        return value

    def _expr(self, e: te.PrimExpr) -> ir.Value:
        b = self.builder
        if isinstance(e, te.Const):
            return constant(e.value, e.dtype)
        if isinstance(e, (te.Var, te.IterVar)):
            value = self.vars.get(id(e))
            if value is None:
                raise LoweringError(f"LLVM code generation: unbound variable {e.name}")
            return value
        if isinstance(e, te.BufferLoad):
            value = self.load(e.buffer, self.expr(e.index), mem_type(e.dtype))
            return b.icmp_unsigned("!=", value, ir.Constant(I8, 0)) if e.dtype == "bool" else value
        if isinstance(e, te.Select):
            return self.select(e)
        if isinstance(e, te.Binary):
            if e.dtype == te.INDEX and e.op in AFFINE_OPS:
                return self.offset(*self._affine(e))
            x, y = self.expr(e.a), self.expr(e.b)
            if e.a.dtype == te.INDEX:
                return self.integer_binary(e, x, y)
            return self._binary(e, x, y)
        if isinstance(e, te.Cast):
            x = self.expr(e.value)
            return cast(b, x, e.value.dtype, e.dtype)
        if isinstance(e, te.Call):
            args = [self.expr(a) for a in e.args]
            return call(self, e.name, args, e.args[0].dtype, e.dtype)
        raise LoweringError(f"LLVM code generation: {type(e).__name__} must be lowered before code generation")

    def integer_binary(self, e: te.Binary, x: ir.Value, y: ir.Value) -> ir.Value:
        """`e`, an operation on indices, given its operands' values: the instruction an
        earlier expression made of the same operation on the same values, where it still
        dominates (`numbered`, scoped as `memo`), else a new one.  Unrolled tiles spell the
        same index terms again in every address (`ax3.outer * 3` in each of a 3x3
        window's loads): emitted once, LLVM has fewer instructions to print, parse and
        deduplicate (its no-wrap flags are facts about the values, whichever expression
        proved them)."""
        key = (e.op, e.b.dtype, self.value_key(x), self.value_key(y))
        value = self.numbered.get(key)
        if value is None:
            value = self.numbered[key] = self._binary(e, x, y)
        return value

    def affine(self, e: te.PrimExpr) -> tuple[ir.Value | None, int, float, float]:
        """An index `e` as (base, offset, low, high): its value base + offset (base None:
        0), the base between low and high (infinite where unknown), the offsets of its
        sums and products by constants gathered without being emitted (`_affine`); the
        value `expr(e)` gives where `e` was emitted already, or is no such sum.  An index
        constant is its offset, without a value made and kept for it (a leaf of most
        index sums)."""
        if type(e) is te.Const and e.dtype == te.INDEX:
            v = int(e.value) & _INDEX_MASK
            return None, v - (1 << 64) if v >> 63 else v, 0, 0
        value = self.emitted.get(id(e) + self.contract)
        if value is None and isinstance(e, te.Binary) and e.dtype == te.INDEX and e.op in AFFINE_OPS:
            return self._affine(e)
        value = self.expr(e) if value is None else value
        if isinstance(value, ir.Constant):
            return None, int(value.constant), 0, 0
        known = bounds(e, self.extents, self.ranges)
        return (value, 0, -math.inf, math.inf) if known is None else (value, 0, *known)

    def _affine(self, e: te.Binary) -> tuple[ir.Value | None, int, float, float]:
        """`affine` of an index add, sub or mul: the bases combined (once per pair of
        values where it dominates, as `integer_binary`), the offsets added.  An unrolled
        tile's addresses differ by constants only: `(ax1 * 64 + (k + 1)) * 8` for k = 0,
        1, 2 is one base `ax1 * 64 * 8` and the offsets 8, 16, 24, where emitted node by
        node it was three adds and muls each, which LLVM's InstCombine gathered so: 36%
        of O3's time over ResNet-50's kernels."""
        (xb, xc, xl, xh), (yb, yc, yl, yh) = self.affine(e.a), self.affine(e.b)
        if yb is not None and (e.op == "sub" or e.op == "mul" and xb is not None):  # x - y, x * y: as written
            x, y = self.offset(xb, xc, xl, xh), self.offset(yb, yc, yl, yh)
            known = bounds(e, self.extents, self.ranges)
            value = self.integer_binary(e, x, y)
            return (value, 0, -math.inf, math.inf) if known is None else (value, 0, *known)
        if e.op == "mul":
            base, offset, low, high, k = (xb, xc, xl, xh, yc) if yb is None else (yb, yc, yl, yh, xc)
            if base is None or k == 0:
                return None, (offset if base is None else 0) * k, 0, 0
            if k == 1:
                return base, offset, low, high
            positive = k > 0 and low >= 0
            low, high = sorted((low * k, high * k))
            return self.index_op("mul", base, index_constant(k), low, high, positive), offset * k, low, high
        if e.op == "sub":
            return xb, xc - yc, xl, xh
        if xb is None or yb is None:
            return (yb, xc + yc, yl, yh) if xb is None else (xb, xc + yc, xl, xh)
        low, high = xl + yl, xh + yh
        return self.index_op("add", xb, yb, low, high, xl >= 0 and yl >= 0), xc + yc, low, high

    def offset(self, base: ir.Value | None, offset: int, low: float, high: float) -> ir.Value:
        """The value base + offset (`affine`'s answer), base between low and high."""
        if base is None:
            return index_constant(offset)
        if offset == 0:
            return base
        return self.index_op("add", base, index_constant(offset), low + offset, high + offset,
                             low >= 0 and offset >= 0)

    def index_op(self, op: str, x: ir.Value, y: ir.Value, low: float, high: float,
                 nonnegative: bool = True) -> ir.Value:
        """`x op y` on indices whose result lies between low and high (`nonnegative`: so do
        both operands), with the no-wrap flags `no_wrap` would give it, once per operation
        and values where it dominates (`numbered`)."""
        key = (op, te.INDEX, self.value_key(x), self.value_key(y))
        value = self.numbered.get(key)
        if value is None:
            flags: tuple[str, ...] = ()
            if -INDEX_LIMIT < low <= high < INDEX_LIMIT:
                flags = ("nuw", "nsw") if nonnegative and low >= 0 else ("nsw",)
            b = self.builder
            value = self.numbered[key] = (b.add if op == "add" else b.mul)(x, y, flags=flags)
        return value

    def _binary(self, e: te.Binary, x: ir.Value, y: ir.Value) -> ir.Value:
        if e.op in ("floordiv", "floormod") and self._nonnegative_by_positive(e):
            # an index: both sides known non-negative, so floor is truncation (no sign fix-up)
            return self.builder.udiv(x, y) if e.op == "floordiv" else self.builder.urem(x, y)
        return binary(self, e.op, x, y, e.a.dtype, flags=self.no_wrap(e))

    def _nonnegative_by_positive(self, e: te.Binary) -> bool:
        """Whether `e.a` is never negative and `e.b` a positive constant, on signed
        integers, by the bounds the enclosing loops give (te/arith.py)."""
        if not (isinstance(e.b, te.Const) and e.b.value > 0 and te.is_signed(e.dtype)):
            return False
        known = bounds(e.a, self.extents)
        return known is not None and known[0] >= 0

    def inline(self, expand: Callable[[te.PrimExpr], te.PrimExpr], x: ir.Value) -> ir.Value:
        """`expand(v)`, an expression of one float32 variable (te/mathfuncs.py), emitted
        with v = x, in exact IEEE steps (its error bound assumes no FMA contraction)."""
        var = te.Var("v", "float32")
        body = expand(var)
        self._inlined.append(body)
        self.vars[id(var)] = x
        contract, self.contract = self.contract, False
        try:
            return self.expr(body)
        finally:
            self.contract = contract

    def select(self, e: te.Select) -> ir.Value:
        known = condition_decided(self, e.cond)  # a guard the loops' bounds decide (decided.py)
        if known is not None:
            return self.expr(e.a if known else e.b)
        cond = self.expr(e.cond)
        if isinstance(cond, ir.Constant):  # an unrolled position picks its case (te/topi/winograd.py)
            return self.expr(e.a if cond.constant else e.b)
        if not (self.reads_memory(e.a) or self.reads_memory(e.b)):
            x, y = self.expr(e.a), self.expr(e.b)
            return self.builder.select(cond, x, y)
        b = self.builder
        then_bb = self.fn.append_basic_block("select.then")
        else_bb = self.fn.append_basic_block("select.else")
        merge_bb = self.fn.append_basic_block("select.end")
        b.cbranch(cond, then_bb, else_bb)
        arms = []
        for block, side in ((then_bb, e.a), (else_bb, e.b)):
            with self.region():
                b.position_at_end(block)
                value = self.expr(side)
                arms.append((value, b.block))
                b.branch(merge_bb)
        b.position_at_end(merge_bb)
        phi = b.phi(reg_type(e.dtype))
        for value, block in arms:
            phi.add_incoming(value, block)
        return phi

    def reads_memory(self, e: te.PrimExpr) -> bool:
        return self.emitted.reads_memory(e)

    def value_key(self, v: ir.Value) -> Any:
        """What identifies an operand's value: a constant by its type and value, else the
        instruction or argument itself."""
        if isinstance(v, ir.Constant):
            c = v.constant
            return "const", self.printer.type(v.type), tuple(c) if isinstance(c, list) else c
        return id(v)


_INDEX_MASK = (1 << 64) - 1  # an index constant's bits (i64), as scalar.constant wraps them


class _Region:
    """`_Emitter.region`'s block (a class, not a generator, as `_At`: some 34,000 regions
    over ResNet-50's kernels)."""

    __slots__ = ("em", "rebinds", "stores", "numbered", "entered")

    def __init__(self, em: _Emitter, rebinds: te.Var | None, stores: bool) -> None:
        self.em, self.rebinds, self.stores = em, rebinds, stores

    def __enter__(self) -> None:
        em = self.em
        self.numbered = em.numbered
        if self.rebinds is None:
            em.numbered = dict(self.numbered)
        try:
            self.entered = em.emitted.enter(self.stores)
        except BaseException:
            em.numbered = self.numbered
            raise

    def __exit__(self, kind, err, trace) -> bool:
        try:
            self.em.emitted.leave(self.entered, self.rebinds, self.stores)
        finally:
            self.em.numbered = self.numbered
        return False


class _At:
    """`_Emitter.at`'s block (a class, not a generator: entered for every statement and
    most expressions, some 50,000 times for ResNet-50's kernels)."""

    __slots__ = ("em", "loc", "saved")

    def __init__(self, em: _Emitter, loc: Any) -> None:
        self.em, self.loc = em, loc

    def __enter__(self) -> None:
        em, loc = self.em, self.loc
        self.saved = em.where, em.span, em.builder.debug_metadata
        if loc is not None:
            em.where = em.debug.place(loc) or em.where
            em.span = loc
            em.builder.debug_metadata = em.debug.location(em.where, em.scope)

    def __exit__(self, kind, err, trace) -> bool:
        em = self.em
        if isinstance(err, LoweringError) and err.span is None:
            err.span = em.span
        em.where, em.span, em.builder.debug_metadata = self.saved
        return False


def _vector_pieces(extent: int) -> list[int]:
    """The loops a vectorized loop of `extent` is emitted as (or its vectors, as vector
    code: lanes.py): one loop when the extent is a power of two or beyond MAX_VECTOR_PIECES lanes (the vectoriser picks its width and
    handles the remainder), else one per power of two in its binary expansion, largest
    first (12 lanes: 8 then 4), each exactly one vector.  Given a width that does not
    divide the trip count, LLVM makes a short vector loop with a remainder, which keeps a
    register tile's accumulators in memory (a 12-lane NCHW12c tile: xmm loops of 3
    iterations, a load, FMA and store each)."""
    if extent & (extent - 1) == 0 or extent > MAX_VECTOR_PIECES:
        return [extent]
    return [1 << k for k in range(extent.bit_length() - 1, -1, -1) if extent >> k & 1]


class _LoopPlans:
    """How each loop of a PrimFunc is emitted, worked out once per loop (an unrolled loop
    emits the loops in its body once per iteration): the `llvm.loop.vectorize` width of a
    vectorized loop the loop vectoriser can take, its lane plan when it is vector code
    instead (lanes.py), and whether a statement runs vector code."""

    def __init__(self) -> None:
        self._width: dict[int, int | None] = {}
        self._lanes: dict[int, LanePlan | None] = {}
        self._encloses: dict[int, bool] = {}
        self._divisors: dict[int, tuple[int, ...]] = {}

    def divisors(self, s: For) -> tuple[int, ...]:
        """The constants a serial or parallel loop carries its counter's quotients and
        remainders by (carried.py)."""
        if id(s) not in self._divisors:
            self._divisors[id(s)] = carried.divisors(
                s, lambda st: st.extent > 1 and st.kind == "serial"
                and any(isinstance(x, For) and x.kind == "unrolled" for x in walk(st.body)),
                lambda body: _walk_exprs([e for st in walk(body) for e in _stmt_exprs(st)]), _walk_exprs)
        return self._divisors[id(s)]

    def width(self, s: For) -> int | None:
        if id(s) not in self._width:
            self._width[id(s)] = s.extent if s.kind == "vectorized" and _vectorizable(s) else None
        return self._width[id(s)]

    def lanes(self, s: For) -> LanePlan | None:
        if id(s) not in self._lanes:
            self._lanes[id(s)] = lane_plan(s) if self.width(s) is not None else None
        return self._lanes[id(s)]

    def encloses_lanes(self, s: Stmt) -> bool:
        key = id(s)
        if key not in self._encloses:
            if isinstance(s, For):
                found = self.lanes(s) is not None or self.encloses_lanes(s.body)
            elif isinstance(s, Seq):
                found = any(self.encloses_lanes(x) for x in s.stmts)
            elif isinstance(s, Allocate):
                found = self.encloses_lanes(s.body)
            elif isinstance(s, IfThenElse):
                found = self.encloses_lanes(s.then_case) or (
                    s.else_case is not None and self.encloses_lanes(s.else_case))
            else:
                found = False
            self._encloses[key] = found
        return self._encloses[key]


def num_threads_global(module: ir.Module) -> ir.GlobalVariable:
    g = module.globals.get(NUM_THREADS_GLOBAL)
    if g is None:
        g = ir.GlobalVariable(module, I32, NUM_THREADS_GLOBAL)
        g.linkage = "linkonce_odr"  # modules linked together share one
        g.initializer = ir.Constant(I32, 0)
        g.align = 4
        g.type = PTR
    return g


def _calls_math(s: For) -> bool:
    """Whether the body of `s` calls a math function the code generator expands inline
    (exp, tanh, erf, sigmoid, fast_*: te/mathfuncs.py), a long chain of dependent steps."""
    return any(isinstance(e, te.Call) and e.name in INLINED
               for e in _walk_exprs([e for st in walk(s.body) for e in _stmt_exprs(st)]))


def _vectorizable(s: For) -> bool:
    """Whether the loop vectoriser can be asked to vectorise `s` without failing:
    straight-line stores (unrolled loops are straight lines) at indices that move with the
    loop variable, a written buffer read only at an index written in the same iteration,
    no libm call or integer power loop."""
    stmts = list(walk(s.body))
    if any(isinstance(st, Allocate) or isinstance(st, For) and st.kind != "unrolled" for st in stmts):
        return False
    stores = [st for st in stmts if isinstance(st, Store)]
    if not all(any(v is s.var for v in _walk_exprs([st.index])) for st in stores):
        return False
    written: dict[int, list[te.PrimExpr]] = {}
    for st in stores:
        written.setdefault(id(st.buffer), []).append(st.index)
    for e in _walk_exprs([e for st in stmts for e in _stmt_exprs(st)]):
        if isinstance(e, te.Call) and calls_libm(e.name, e.args[0].dtype):
            return False
        if isinstance(e, te.Binary) and e.op == "pow" and not te.is_float(e.dtype):
            return False
        # reading a written buffer only where this iteration writes (acc[i] = acc[i] + x)
        if isinstance(e, te.BufferLoad) and id(e.buffer) in written and \
                not any(same_expr(e.index, index) for index in written[id(e.buffer)]):
            return False
    return True


def _stmt_exprs(s: Stmt) -> tuple[te.PrimExpr, ...]:
    if isinstance(s, Store):
        return (s.index, s.value)
    if isinstance(s, Prefetch):
        return (s.index,)
    if isinstance(s, IfThenElse):
        return (s.cond,)
    return ()


def _walk_exprs(roots: list[te.PrimExpr]) -> Iterator[te.PrimExpr]:
    """Every node under `roots`, each once."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(te.children(e))


def _free_refs(s: Stmt) -> tuple[list[te.Buffer], list[te.Var]]:
    """The buffers and variables `s` uses but does not bind."""
    stmts = list(walk(s))
    bound = {id(st.var) for st in stmts if isinstance(st, For)}
    bound |= {id(st.buffer) for st in stmts if isinstance(st, Allocate)}
    buffers: dict[int, te.Buffer] = {id(st.buffer): st.buffer for st in stmts if isinstance(st, Store)}
    variables: dict[int, te.Var] = {}
    for e in _walk_exprs([e for st in stmts for e in _stmt_exprs(st)]):
        if isinstance(e, te.BufferLoad):
            buffers.setdefault(id(e.buffer), e.buffer)
        elif isinstance(e, (te.Var, te.IterVar)):
            variables.setdefault(id(e), e)
    return ([b for k, b in buffers.items() if k not in bound],
            [v for k, v in variables.items() if k not in bound])


def _accumulates(s: Store) -> bool:
    """`buf[i] = buf[i] + ...` on floats: a reduction's update.  Its float arithmetic is
    marked `contract`, so LLVM fuses a*b+c into one FMA (TVM allows FP contraction too);
    other stores keep exact IEEE steps, which index arithmetic in floats (resize
    coordinates) relies on."""
    v = s.value
    return (te.is_float(s.buffer.dtype) and isinstance(v, te.Binary) and v.op == "add"
            and any(isinstance(x, te.BufferLoad) and x.buffer is s.buffer for x in (v.a, v.b)))
