"""LLVM code generation: loop-nest `PrimFunc`s → an `llvmlite.ir.Module` with debug info.

Each PrimFunc becomes `void name(ptr noalias align 64 p0, ..., ptr noalias align 64 out0)`
with external linkage; the runtime passes 64-byte aligned, row-major, contiguous buffers.
Loop kinds:

* serial: a bottom-tested loop with a phi counter;
* vectorized: the same loop carrying `llvm.loop.vectorize.enable`/`width` (and
  `unroll.disable`) metadata, which the O3 pipeline's loop vectoriser honours; a body the
  vectoriser cannot handle (inner loops, libm calls, a buffer read where another
  iteration writes it)
  gets no metadata, because a forced vectorisation that fails prints LLVM warnings;
* unrolled: the body once per iteration, with the loop variable a constant;
* parallel: the loop is outlined into an internal body function (buffers as `noalias`
  parameters, then the outer loop variables it uses, then its chunk `[begin, end)`) and
  a trampoline `void (ptr data)` that unpacks a struct of captured values, splits the
  range among the OpenMP team (`omp_get_thread_num`/`omp_get_num_threads`) and calls the
  body; the caller runs the trampoline through libgomp's `GOMP_parallel`.  The team size
  comes from the module global `relaylens_num_threads` (0: the OpenMP default), which
  the JIT sets.  A parallel loop inside a parallel region runs serially.

Local buffers (`Allocate`) live on the stack (an alloca in the entry block) up to
`SMALL_ALLOCA_BYTES`, else on the heap (`aligned_alloc`/`free` around the body).
`select` evaluates only the side taken when a side reads memory (branches and a phi).
Integer division and remainder never trap: a zero divisor acts as 1 and `MIN / -1` wraps,
as the numpy reference does.

Debug info: one DICompileUnit and DIFile (the Relay source), a DISubprogram per LLVM
function at its PrimFunc's line, and a DILocation on every instruction at the Relay
line/column of the statement or expression that produced it (`source_location`).
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Callable, Iterator

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ...ir.span import Span
from ..errors import LoweringError
from ..schedule.loopnest import Allocate, For, IfThenElse, PrimFunc, Seq, Stmt, Store, walk
from ..te import expr as te

SMALL_ALLOCA_BYTES = 4096
BUFFER_ALIGN = 64
NUM_THREADS_GLOBAL = "relaylens_num_threads"

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

# float intrinsics that LLVM has (lowered to libm calls or instructions where needed)
# (the loop vectoriser widens these; the backend calls libm per lane where needed)
_LLVM_MATH = {"exp": "exp", "log": "log", "log2": "log2", "log10": "log10", "sqrt": "sqrt",
              "sin": "sin", "cos": "cos", "tan": "tan", "atan": "atan", "tanh": "tanh",
              "floor": "floor", "ceil": "ceil", "round": "round", "trunc": "trunc", "abs": "fabs"}
# float functions called in libm (single precision: name + "f"); loops calling them
# do not vectorise
_LIBM = ("erf",)


def source_location(loc: Any) -> tuple[int, int] | None:
    """The Relay (line, column) of a span: a `Span`'s own, or the first document range
    among a `SequentialSpan`'s origins; None when there is none (no span, layers only)."""
    if loc is None:
        return None
    for one in loc.origins():
        if isinstance(one, Span) and one.source is not None:
            return one.line, one.col
    return None


def generate(funcs: list[PrimFunc], source_name: str, module_name: str = "relaylens") -> ir.Module:
    """One LLVM module holding a function per PrimFunc (named as the PrimFunc), with debug
    info pointing into the Relay file `source_name`."""
    module = ir.Module(module_name)
    module.triple = llvm.get_process_triple()
    debug = _Debug(module, source_name)
    for func in funcs:
        _generate_function(module, debug, func)
    return module


def entry_debug(module: ir.Module, fn: ir.Function, source_name: str) -> Callable[[Any], ir.DIValue]:
    """Debug info for a function built elsewhere (the AOT entry): the module's compile
    unit and file, a DISubprogram for `fn`, and a function from a span to the DILocation
    of its Relay line and column (line 0 for a span without a source location)."""
    debug = _Debug(module, source_name)
    scope = debug.subprogram(fn, 0, local=False)
    return lambda span: debug.location(source_location(span) or (0, 0), scope)


# --------------------------------------------------------------------------- types


def reg_type(dtype: str) -> ir.Type:
    """The LLVM type of a value of `dtype` in registers (bool is i1)."""
    if dtype == "float16":
        return ir.HalfType()
    if dtype == "float32":
        return ir.FloatType()
    if dtype == "float64":
        return ir.DoubleType()
    if dtype in te.INTS or dtype in te.UINTS:
        return ir.IntType(te.bits(dtype))
    raise LoweringError(f"LLVM code generation: unsupported dtype {dtype}")


def mem_type(dtype: str) -> ir.Type:
    """The LLVM type of an element of `dtype` in memory (bool is i8)."""
    return I8 if dtype == "bool" else reg_type(dtype)


def _elem_bytes(dtype: str) -> int:
    return 1 if dtype == "bool" else te.bits(dtype) // 8


def constant(value: Any, dtype: str) -> ir.Constant:
    typ = reg_type(dtype)
    if te.is_float(dtype):
        return ir.Constant(typ, float(value))
    if dtype == "bool":
        return ir.Constant(I1, 1 if value else 0)
    n = te.bits(dtype)
    v = int(value) & ((1 << n) - 1)
    return ir.Constant(typ, v - (1 << n) if v >= 1 << (n - 1) else v)


# --------------------------------------------------------------------------- debug info


class _Debug:
    """The module's debug metadata: compile unit, file, subprograms, locations."""

    def __init__(self, module: ir.Module, source_name: str) -> None:
        self.module = module
        directory, filename = os.path.split(source_name)
        self.file = module.add_debug_info("DIFile", {"filename": filename or source_name,
                                                     "directory": directory or "."})
        self.cu = module.add_debug_info("DICompileUnit", {
            "language": ir.DIToken("DW_LANG_C"), "file": self.file, "producer": "relaylens",
            "isOptimized": True, "runtimeVersion": 0, "emissionKind": ir.DIToken("FullDebug"),
        }, is_distinct=True)
        module.add_named_metadata("llvm.dbg.cu", self.cu)
        flags = module.add_named_metadata("llvm.module.flags")
        flags.add(module.add_metadata([ir.Constant(I32, 2), "Debug Info Version", ir.Constant(I32, 3)]))
        flags.add(module.add_metadata([ir.Constant(I32, 7), "Dwarf Version", ir.Constant(I32, 4)]))
        self.subroutine = module.add_debug_info("DISubroutineType", {"types": module.add_metadata([None])})
        self._locations: dict[tuple[tuple[int, int], str], ir.DIValue] = {}

    def subprogram(self, fn: ir.Function, line: int, local: bool) -> ir.DIValue:
        flags = "DISPFlagDefinition | DISPFlagOptimized" + (" | DISPFlagLocalToUnit" if local else "")
        sp = self.module.add_debug_info("DISubprogram", {
            "name": fn.name, "scope": self.file, "file": self.file, "line": line,
            "type": self.subroutine, "scopeLine": line, "spFlags": ir.DIToken(flags),
            "unit": self.cu,
        }, is_distinct=True)
        fn.set_metadata("dbg", sp)
        return sp

    def location(self, where: tuple[int, int], scope: ir.DIValue) -> ir.DIValue:
        key = (where, scope.name)
        loc = self._locations.get(key)
        if loc is None:
            loc = self._locations[key] = self.module.add_debug_info(
                "DILocation", {"line": where[0], "column": where[1], "scope": scope})
        return loc


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


def _declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


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


def _generate_function(module: ir.Module, debug: _Debug, func: PrimFunc) -> None:
    if module.globals.get(func.name) is not None:
        raise LoweringError(f"LLVM code generation: two functions named {func.name}")
    fn = _buffer_function(module, func.name, list(func.params), [], internal=False)
    where = source_location(func.span) or (0, 0)
    em = _Emitter(module, debug, fn, debug.subprogram(fn, where[0], local=False), where,
                  func.name, itertools.count(), in_parallel=False)
    em.buffers = {id(b): a for b, a in zip(func.params, fn.args)}
    em.stmt(func.body, where)
    em.finish()


class _Emitter:
    """Emits statements and expressions into one LLVM function."""

    def __init__(self, module: ir.Module, debug: _Debug, fn: ir.Function, scope: ir.DIValue,
                 where: tuple[int, int], root: str, counter: Iterator[int], in_parallel: bool) -> None:
        self.module, self.debug, self.fn, self.scope = module, debug, fn, scope
        self.where = where  # the function's own location, for code without a loc
        self.root, self.counter, self.in_parallel = root, counter, in_parallel
        self.entry = fn.append_basic_block("entry")  # allocas only; branches to `body` at finish
        self.allocas = ir.IRBuilder(self.entry)
        self.allocas.debug_metadata = debug.location(where, scope)
        self.builder = ir.IRBuilder(fn.append_basic_block("body"))
        self.buffers: dict[int, ir.Value] = {}
        self.vars: dict[int, ir.Value] = {}
        self.memo: dict[int, ir.Value] = {}
        self._reads: dict[int, bool] = {}
        self.contract = False  # emitting an accumulation: float mul/add may fuse into FMAs
        self.at(where)

    def at(self, where: tuple[int, int]) -> None:
        self.builder.debug_metadata = self.debug.location(where, self.scope)

    def finish(self) -> None:
        self.at(self.where)
        self.builder.ret_void()
        self.allocas.branch(self.fn.blocks[1])

    def entry_alloca(self, typ: ir.Type, count: int, name: str) -> ir.Value:
        """An alloca in the entry block (not inside any loop)."""
        slot = self.allocas.alloca(typ, size=ir.Constant(I64, count) if count != 1 else None, name=name)
        slot.align = BUFFER_ALIGN
        slot.type = PTR  # opaque, like every pointer here
        return slot

    # ------------------------------------------------------------------ statements

    def stmt(self, s: Stmt, where: tuple[int, int]) -> None:
        where = source_location(s.loc) or where
        self.memo = {}
        if isinstance(s, Seq):
            for one in s.stmts:
                self.stmt(one, where)
        elif isinstance(s, Store):
            self.store(s, where)
        elif isinstance(s, For):
            self.for_(s, where)
        elif isinstance(s, IfThenElse):
            self.if_(s, where)
        elif isinstance(s, Allocate):
            self.allocate(s, where)
        else:
            raise LoweringError(f"LLVM code generation: unknown statement {type(s).__name__}")

    def store(self, s: Store, where: tuple[int, int]) -> None:
        if s.value.dtype != s.buffer.dtype:
            raise LoweringError(f"LLVM code generation: storing {s.value.dtype} into {s.buffer.name} "
                                f"of {s.buffer.dtype}")
        index = self.expr(s.index, where)
        self.contract = _accumulates(s)
        try:
            value = self.expr(s.value, where)
        finally:
            self.contract = False
        self.at(where)
        if s.buffer.dtype == "bool":
            value = self.builder.zext(value, I8)
        self.builder.store(value, self.address(s.buffer, index), align=_elem_bytes(s.buffer.dtype))

    def address(self, buffer: te.Buffer, index: ir.Value) -> ir.Value:
        ptr = self.buffers.get(id(buffer))
        if ptr is None:
            raise LoweringError(f"LLVM code generation: buffer {buffer.name} is not a parameter or allocated")
        if index.type != I64:
            index = self.builder.sext(index, I64)
        return self.builder.gep(ptr, [index], inbounds=True, source_etype=mem_type(buffer.dtype))

    def if_(self, s: IfThenElse, where: tuple[int, int]) -> None:
        cond = self.expr(s.cond, where)
        self.at(where)
        if s.else_case is None:
            with self.builder.if_then(cond):
                self.stmt(s.then_case, where)
        else:
            with self.builder.if_else(cond) as (then, otherwise):
                with then:
                    self.stmt(s.then_case, where)
                with otherwise:
                    self.stmt(s.else_case, where)
        self.at(where)

    def allocate(self, s: Allocate, where: tuple[int, int]) -> None:
        buf = s.buffer
        nbytes = buf.size * _elem_bytes(buf.dtype)
        if nbytes <= SMALL_ALLOCA_BYTES:
            self.buffers[id(buf)] = self.entry_alloca(mem_type(buf.dtype), max(buf.size, 1), buf.name)
            self.stmt(s.body, where)
            return
        self.at(where)
        alloc = _declare(self.module, "aligned_alloc", PTR, [I64, I64])
        size = -(-nbytes // BUFFER_ALIGN) * BUFFER_ALIGN
        self.buffers[id(buf)] = ptr = self.builder.call(alloc, [ir.Constant(I64, BUFFER_ALIGN), ir.Constant(I64, size)],
                                                        name=buf.name)
        self.stmt(s.body, where)
        self.at(where)
        self.builder.call(_declare(self.module, "free", VOID, [PTR]), [ptr])

    def for_(self, s: For, where: tuple[int, int]) -> None:
        if s.extent <= 0:
            return
        if s.kind == "parallel" and not self.in_parallel and s.extent > 1:
            self.parallel(s, where)
        elif s.kind == "unrolled" or s.extent == 1:
            for k in range(s.extent):
                self.vars[id(s.var)] = ir.Constant(I64, k)
                self.stmt(s.body, where)
        else:
            width = s.extent if s.kind == "vectorized" and _vectorizable(s) else None
            self.loop(s.var, ir.Constant(I64, 0), ir.Constant(I64, s.extent), lambda: self.stmt(s.body, where),
                      where, vectorize=width)
        self.vars.pop(id(s.var), None)

    def loop(self, var: te.Var, begin: ir.Value, end: ir.Value, body: Callable[[], None],
             where: tuple[int, int], vectorize: int | None = None) -> None:
        """`for var in [begin, end): body()` as a bottom-tested loop; the range may be empty
        unless both bounds are constants."""
        b = self.builder
        self.at(where)
        header = self.fn.append_basic_block(f"{var.name}.loop")
        exit_ = self.fn.append_basic_block(f"{var.name}.exit")
        pre = b.block
        if isinstance(begin, ir.Constant) and isinstance(end, ir.Constant):
            b.branch(header)
        else:
            b.cbranch(b.icmp_signed("<", begin, end), header, exit_)
        b.position_at_end(header)
        counter = b.phi(I64, name=var.name)
        self.vars[id(var)] = counter
        body()
        self.at(where)
        latch = b.block
        following = b.add(counter, ir.Constant(I64, 1), name=f"{var.name}.next")
        back = b.cbranch(b.icmp_signed("<", following, end), header, exit_)
        if vectorize is not None:
            # no unrolling first: the full unroller would otherwise scalarise the loop
            # before the vectoriser sees it
            props = [self.module.add_metadata(["llvm.loop.vectorize.enable", ir.Constant(I1, 1)]),
                     self.module.add_metadata(["llvm.loop.unroll.disable"])]
            if vectorize & (vectorize - 1) == 0 and vectorize <= 64:
                props.append(self.module.add_metadata(["llvm.loop.vectorize.width", ir.Constant(I32, vectorize)]))
            back.set_metadata("llvm.loop", _LoopID(self.module, props))
        counter.add_incoming(begin, pre)
        counter.add_incoming(following, latch)
        b.position_at_end(exit_)

    def parallel(self, s: For, where: tuple[int, int]) -> None:
        """Outline `s` and run it on the OpenMP team through GOMP_parallel."""
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
        inner = _Emitter(self.module, self.debug, body_fn, self.debug.subprogram(body_fn, where[0], local=True),
                         where, self.root, self.counter, in_parallel=True)
        inner.buffers = {id(b): a for b, a in zip(buffers, body_fn.args)}
        inner.vars = {id(v): a for v, a in zip(free_vars, body_fn.args[len(buffers):])}
        inner.loop(s.var, body_fn.args[-2], body_fn.args[-1], lambda: inner.stmt(s.body, where), where)
        inner.finish()

        fields = [PTR] * len(buffers) + [reg_type(v.dtype) for v in free_vars]
        struct = ir.LiteralStructType(fields)
        trampoline = ir.Function(self.module, ir.FunctionType(VOID, [PTR]), name)
        trampoline.linkage = "internal"
        trampoline.attributes.add("nounwind")
        trampoline.args[0].name = "data"
        tr = _Emitter(self.module, self.debug, trampoline, self.debug.subprogram(trampoline, where[0], local=True),
                      where, self.root, self.counter, in_parallel=True)
        tb = tr.builder
        captured = [tb.load(tb.gep(trampoline.args[0], [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                                   source_etype=struct), typ=t) for k, t in enumerate(fields)]
        tid = tb.sext(tb.call(_declare(self.module, "omp_get_thread_num", I32, []), []), I64)
        team = tb.sext(tb.call(_declare(self.module, "omp_get_num_threads", I32, []), []), I64)
        extent = ir.Constant(I64, s.extent)
        chunk = tb.sdiv(tb.add(extent, tb.sub(team, ir.Constant(I64, 1))), team, name="chunk")
        begin = _umin(tb, tb.mul(tid, chunk), extent)
        end = _umin(tb, tb.add(begin, chunk), extent)
        tb.call(body_fn, [*captured, begin, end])
        tr.finish()

        b = self.builder
        self.at(where)
        data = self.entry_alloca(struct, 1, f"{name}.data")
        values = [self.buffers[id(x)] for x in buffers] + [self.vars[id(v)] for v in free_vars]
        for k, value in enumerate(values):
            b.store(value, b.gep(data, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True, source_etype=struct))
        wanted = b.load(_num_threads_global(self.module), typ=I32)
        limit = ir.Constant(I32, min(s.extent, 2**31 - 1))
        team_size = b.select(b.icmp_signed(">", wanted, limit), limit, wanted)
        gomp = _declare(self.module, "GOMP_parallel", VOID, [PTR, PTR, I32, I32])
        b.call(gomp, [trampoline, data, team_size, ir.Constant(I32, 0)])

    # ------------------------------------------------------------------ expressions

    def expr(self, e: te.PrimExpr, where: tuple[int, int]) -> ir.Value:
        key = id(e)
        value = self.memo.get(key)
        if value is None:
            value = self.memo[key] = self._expr(e, source_location(e.loc) or where)
        return value

    def _expr(self, e: te.PrimExpr, where: tuple[int, int]) -> ir.Value:
        b = self.builder
        if isinstance(e, te.Const):
            return constant(e.value, e.dtype)
        if isinstance(e, (te.Var, te.IterVar)):
            value = self.vars.get(id(e))
            if value is None:
                raise LoweringError(f"LLVM code generation: unbound variable {e.name}")
            return value
        if isinstance(e, te.BufferLoad):
            index = self.expr(e.index, where)
            self.at(where)
            value = b.load(self.address(e.buffer, index), typ=mem_type(e.dtype), align=_elem_bytes(e.dtype),
                           name=e.buffer.name)
            return b.icmp_unsigned("!=", value, ir.Constant(I8, 0)) if e.dtype == "bool" else value
        if isinstance(e, te.Select):
            return self.select(e, where)
        if isinstance(e, te.Binary):
            x, y = self.expr(e.a, where), self.expr(e.b, where)
            self.at(where)
            return _binary(self, e.op, x, y, e.a.dtype)
        if isinstance(e, te.Cast):
            x = self.expr(e.value, where)
            self.at(where)
            return _cast(b, x, e.value.dtype, e.dtype)
        if isinstance(e, te.Call):
            args = [self.expr(a, where) for a in e.args]
            self.at(where)
            return _call(self, e.name, args, e.args[0].dtype, e.dtype)
        raise LoweringError(f"LLVM code generation: {type(e).__name__} must be lowered before code generation")

    def select(self, e: te.Select, where: tuple[int, int]) -> ir.Value:
        cond = self.expr(e.cond, where)
        if not (self.reads_memory(e.a) or self.reads_memory(e.b)):
            x, y = self.expr(e.a, where), self.expr(e.b, where)
            self.at(where)
            return self.builder.select(cond, x, y)
        b = self.builder
        self.at(where)
        then_bb = self.fn.append_basic_block("select.then")
        else_bb = self.fn.append_basic_block("select.else")
        merge_bb = self.fn.append_basic_block("select.end")
        b.cbranch(cond, then_bb, else_bb)
        saved = self.memo
        arms = []
        for block, side in ((then_bb, e.a), (else_bb, e.b)):
            self.memo = dict(saved)
            b.position_at_end(block)
            value = self.expr(side, where)
            arms.append((value, b.block))
            self.at(where)
            b.branch(merge_bb)
        self.memo = saved
        b.position_at_end(merge_bb)
        phi = b.phi(reg_type(e.dtype))
        for value, block in arms:
            phi.add_incoming(value, block)
        return phi

    def reads_memory(self, e: te.PrimExpr) -> bool:
        key = id(e)
        if key not in self._reads:
            self._reads[key] = isinstance(e, te.BufferLoad) or any(self.reads_memory(k) for k in te.children(e))
        return self._reads[key]


def _umin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def _num_threads_global(module: ir.Module) -> ir.GlobalVariable:
    g = module.globals.get(NUM_THREADS_GLOBAL)
    if g is None:
        g = ir.GlobalVariable(module, I32, NUM_THREADS_GLOBAL)
        g.linkage = "linkonce_odr"  # modules linked together share one
        g.initializer = ir.Constant(I32, 0)
        g.align = 4
        g.type = PTR
    return g


def _vectorizable(s: For) -> bool:
    """Whether the loop vectoriser can be asked to vectorise `s` without failing:
    straight-line stores at indices that move with the loop variable, a written buffer
    read only at an index written in the same iteration, no libm call or integer power
    loop."""
    stmts = list(walk(s.body))
    if any(isinstance(st, (For, Allocate)) for st in stmts):
        return False
    stores = [st for st in stmts if isinstance(st, Store)]
    if not all(any(v is s.var for v in _walk_exprs([st.index])) for st in stores):
        return False
    written: dict[int, list[te.PrimExpr]] = {}
    for st in stores:
        written.setdefault(id(st.buffer), []).append(st.index)
    for e in _walk_exprs([e for st in stmts for e in _stmt_exprs(st)]):
        if isinstance(e, te.Call) and e.name in _LIBM:
            return False
        if isinstance(e, te.Binary) and e.op == "pow" and not te.is_float(e.dtype):
            return False
        # reading a written buffer only where this iteration writes (acc[i] = acc[i] + x)
        if isinstance(e, te.BufferLoad) and id(e.buffer) in written and \
                not any(_same_expr(e.index, index) for index in written[id(e.buffer)]):
            return False
    return True


def _same_expr(a: te.PrimExpr, b: te.PrimExpr) -> bool:
    """Structural equality of two expressions (variables by identity)."""
    if a is b:
        return True
    if type(a) is not type(b) or a.dtype != b.dtype or isinstance(a, (te.Var, te.IterVar)):
        return False
    if isinstance(a, te.Const):
        return a.value == b.value
    if isinstance(a, te.Binary) and a.op != b.op or isinstance(a, te.Call) and a.name != b.name \
            or isinstance(a, te.BufferLoad) and a.buffer is not b.buffer:
        return False
    kids_a, kids_b = te.children(a), te.children(b)
    return len(kids_a) == len(kids_b) and all(_same_expr(x, y) for x, y in zip(kids_a, kids_b))


def _stmt_exprs(s: Stmt) -> tuple[te.PrimExpr, ...]:
    if isinstance(s, Store):
        return (s.index, s.value)
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


# --------------------------------------------------------------------------- scalar operations


def _intrinsic(module: ir.Module, name: str, typ: ir.Type, arity: int = 1) -> ir.Function:
    suffix = {"half": "f16", "float": "f32", "double": "f64"}.get(str(typ)) or str(typ)
    return _declare(module, f"llvm.{name}.{suffix}", typ, [typ] * arity)


def _binary(em: _Emitter, op: str, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """`x op y` for operands of `dtype` (comparisons give i1)."""
    b = em.builder
    if te.is_float(dtype):
        return _float_binary(em, op, x, y, dtype)
    signed = te.is_signed(dtype)
    if dtype == "bool":
        op = {"add": "or", "mul": "and", "sub": "xor"}.get(op, op)
    simple = {"add": b.add, "sub": b.sub, "mul": b.mul, "and": b.and_, "or": b.or_, "xor": b.xor}
    if op in simple:
        return simple[op](x, y)
    if op in te.COMPARISONS:
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[op]
        return (b.icmp_signed if signed else b.icmp_unsigned)(symbol, x, y)
    if op in ("min", "max"):
        cmp = (b.icmp_signed if signed else b.icmp_unsigned)("<" if op == "min" else ">", x, y)
        return b.select(cmp, x, y)
    if op in ("div", "floordiv", "floormod", "truncmod"):
        return _int_division(b, op, x, y, signed)
    if op in ("shl", "shr"):
        width = ir.Constant(x.type, x.type.width)
        too_far = b.icmp_unsigned(">=", y, width)
        if op == "shl":
            return b.select(too_far, ir.Constant(x.type, 0), b.shl(x, y))
        if signed:
            return b.ashr(x, b.select(too_far, ir.Constant(x.type, x.type.width - 1), y))
        return b.select(too_far, ir.Constant(x.type, 0), b.lshr(x, y))
    if op == "pow":
        return _int_pow(em, x, y, signed)
    raise LoweringError(f"LLVM code generation: binary op {op} on {dtype}")


CONTRACTED = {"add": lambda b: b.fadd, "sub": lambda b: b.fsub, "mul": lambda b: b.fmul}


def _accumulates(s: Store) -> bool:
    """`buf[i] = buf[i] + ...` on floats: a reduction's update.  Its float arithmetic is
    marked `contract`, so LLVM fuses a*b+c into one FMA (TVM allows FP contraction too);
    other stores keep exact IEEE steps, which index arithmetic in floats (resize
    coordinates) relies on."""
    v = s.value
    return (te.is_float(s.buffer.dtype) and isinstance(v, te.Binary) and v.op == "add"
            and any(isinstance(x, te.BufferLoad) and x.buffer is s.buffer for x in (v.a, v.b)))


def _float_binary(em: _Emitter, op: str, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    b = em.builder
    if op in CONTRACTED:
        return CONTRACTED[op](b)(x, y, flags=("contract",) if em.contract else ())
    simple = {"div": b.fdiv, "truncmod": b.frem}
    if op in simple:
        return simple[op](x, y)
    if op in te.COMPARISONS:
        if op == "ne":
            return b.fcmp_unordered("!=", x, y)
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=="}[op]
        return b.fcmp_ordered(symbol, x, y)
    if op in ("min", "max"):
        return b.call(_intrinsic(em.module, "minimum" if op == "min" else "maximum", x.type, 2), [x, y])
    if op == "pow":
        return b.call(_intrinsic(em.module, "pow", x.type, 2), [x, y])
    if op == "floordiv":
        return b.call(_intrinsic(em.module, "floor", x.type), [b.fdiv(x, y)])
    if op == "floormod":
        r = b.frem(x, y)
        zero = ir.Constant(x.type, 0.0)
        wrong_sign = b.and_(b.fcmp_ordered("!=", r, zero),
                            b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", y, zero)))
        return b.select(wrong_sign, b.fadd(r, y), r)
    raise LoweringError(f"LLVM code generation: binary op {op} on {dtype}")


def _int_division(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    """Truncating/floor division and remainders that never trap: divisor 0 acts as 1
    (quotient x, remainder 0); signed `x / -1` is the wrapped negation."""
    typ = x.type
    zero, one = ir.Constant(typ, 0), ir.Constant(typ, 1)
    if not signed:
        safe = b.select(b.icmp_unsigned("==", y, zero), one, y)
        return b.udiv(x, safe) if op in ("div", "floordiv") else b.urem(x, safe)
    minus_one = b.icmp_signed("==", y, ir.Constant(typ, -1))
    safe = b.select(b.or_(b.icmp_signed("==", y, zero), minus_one), one, y)
    q, r = b.sdiv(x, safe), b.srem(x, safe)
    if op in ("floordiv", "floormod"):
        adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, safe), zero))
        if op == "floordiv":
            q = b.select(adjust, b.sub(q, one), q)
        else:
            r = b.select(adjust, b.add(r, safe), r)
    if op in ("div", "floordiv"):
        return b.select(minus_one, b.sub(zero, x), q)
    return b.select(minus_one, zero, r)


def _int_pow(em: _Emitter, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    """x ** y by repeated squaring (wrapping); a negative exponent gives the truncated
    reciprocal (1 for x = 1, ±1 for x = -1, else 0)."""
    b, typ = em.builder, x.type
    zero, one = ir.Constant(typ, 0), ir.Constant(typ, 1)
    exponent = b.select(b.icmp_signed("<", y, zero), zero, y) if signed else y
    pre = b.block
    header = em.fn.append_basic_block("pow.loop")
    done = em.fn.append_basic_block("pow.end")
    b.branch(header)
    b.position_at_end(header)
    result, base, e = b.phi(typ), b.phi(typ), b.phi(typ)
    odd = b.icmp_unsigned("!=", b.and_(e, one), zero)
    result2 = b.select(odd, b.mul(result, base), result)
    base2 = b.mul(base, base)
    e2 = b.lshr(e, one)
    b.cbranch(b.icmp_unsigned("!=", e2, zero), header, done)
    for phi, start, step in ((result, one, result2), (base, x, base2), (e, exponent, e2)):
        phi.add_incoming(start, pre)
        phi.add_incoming(step, header)
    b.position_at_end(done)
    # e = 0 runs the loop once with an even exponent: result stays 1
    value = result2
    if signed:
        is_one = b.icmp_signed("==", x, one)
        is_minus_one = b.icmp_signed("==", x, ir.Constant(typ, -1))
        odd_y = b.icmp_unsigned("!=", b.and_(y, one), zero)
        reciprocal = b.select(is_one, one, b.select(is_minus_one, b.select(odd_y, ir.Constant(typ, -1), one), zero))
        value = b.select(b.icmp_signed("<", y, zero), reciprocal, value)
    return value


def _cast(b: ir.IRBuilder, x: ir.Value, src: str, dst: str) -> ir.Value:
    if src == dst:
        return x
    to = reg_type(dst)
    if dst == "bool":
        if te.is_float(src):
            return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if te.is_float(src) and te.is_float(dst):
        return b.fpext(x, to) if te.bits(dst) > te.bits(src) else b.fptrunc(x, to)
    if te.is_float(src):
        return b.fptosi(x, to) if te.is_signed(dst) else b.fptoui(x, to)
    if te.is_float(dst):
        return b.sitofp(x, to) if te.is_signed(src) else b.uitofp(x, to)
    if to.width < x.type.width:
        return b.trunc(x, to)
    if to.width > x.type.width:
        return b.sext(x, to) if te.is_signed(src) else b.zext(x, to)
    return x


def _call(em: _Emitter, name: str, args: list[ir.Value], src: str, dtype: str) -> ir.Value:
    """A math intrinsic on an argument of dtype `src`, giving `dtype`."""
    b, x = em.builder, args[0]
    if name == "not":
        return b.not_(x)
    if name == "neg":
        return b.fneg(x) if te.is_float(src) else b.sub(ir.Constant(x.type, 0), x)
    if name in ("isnan", "isinf", "isfinite"):
        if not te.is_float(src):
            return ir.Constant(I1, 1 if name == "isfinite" else 0)
        if name == "isnan":
            return b.fcmp_unordered("uno", x, x)
        magnitude = b.call(_intrinsic(em.module, "fabs", x.type), [x])
        inf = ir.Constant(x.type, float("inf"))
        return b.fcmp_ordered("==" if name == "isinf" else "!=", magnitude, inf)
    if not te.is_float(src):
        if name in ("floor", "ceil", "round", "trunc") or (name == "abs" and not te.is_signed(src)):
            return x
        if name == "abs":
            return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.sub(ir.Constant(x.type, 0), x), x)
        # a float function of an integer: computed in float64
        return _cast(b, _call(em, name, [_cast(b, x, src, "float64")], "float64", "float64"), "float64", dtype)
    if name in _LLVM_MATH:
        return b.call(_intrinsic(em.module, _LLVM_MATH[name], x.type), [x])
    if name == "rsqrt":
        return b.fdiv(ir.Constant(x.type, 1.0), b.call(_intrinsic(em.module, "sqrt", x.type), [x]))
    if name == "sigmoid":
        e = b.call(_intrinsic(em.module, "exp", x.type), [b.fneg(x)])
        return b.fdiv(ir.Constant(x.type, 1.0), b.fadd(ir.Constant(x.type, 1.0), e))
    if name in _LIBM:
        if src == "float64":
            return b.call(_declare(em.module, name, x.type, [x.type]), [x])
        f32 = ir.FloatType()
        wide = x if src == "float32" else b.fpext(x, f32)
        y = b.call(_declare(em.module, name + "f", f32, [f32]), [wide])
        return y if src == "float32" else b.fptrunc(y, x.type)
    raise LoweringError(f"LLVM code generation: intrinsic {name} on {src}")
