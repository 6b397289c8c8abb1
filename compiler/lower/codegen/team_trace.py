"""The team's trace (codegen/team.py): what each thread of an inference's team did, written
only when a trace buffer is set (runtime/team_trace.py, a test and benchmark hook).

The buffer is the process-wide slot's third word (SLOT_TRACE), null unless someone traces;
`team.run` copies it into the team's state (STATE_TRACE) and, when set, zeroes it, so it
holds the last inference's record.  With no buffer each trace point is a load of that
word and a branch: the worker's points sit outside its polling loop but for the yield
(once every YIELD_EVERY polls) and the futex sleep.

The record, WORDS i64s:
  ENTRY  .. EXIT      nanoseconds (CLOCK_MONOTONIC) at `team.run`'s entry and return,
  MAIN_START, MAIN_END  thread 0's steps in the region,
  JOBS                 the jobs thread 0 published, WAITED the ns it waited for joined threads,
  CPU_START, CPU_END   thread 0's CPU at MAIN_START and MAIN_END,
  KEPT_OFF             the CPU + 1 thread 0 kept the other threads off (team_cpus.py), else 0;
then a row of ROW words for each thread 1 .. ROWS - 1 (higher ids are not recorded):
  ARRIVE, FIRST_JOB    ns when it entered the team's worker and joined its first job,
  JOINED, SLEEPS, YIELDS  jobs joined, futex sleeps, sched_yield calls,
  BUSY                 ns inside jobs,
  CPU_ARRIVE, CPU_FIRST_JOB  its CPU at ARRIVE and FIRST_JOB,
  TID                  its kernel thread id;
then RESCUES, how often thread 0 pulled the others onto its own CPU (team_cpus.py).
"""

from __future__ import annotations

import llvmlite.ir as ir

from .scalar import I32, I64, PTR, declare

ENTRY, EXIT, MAIN_START, MAIN_END, JOBS, WAITED, CPU_START, CPU_END = range(8)
KEPT_OFF = 8  # the header's last word: the CPU (+ 1) thread 0 kept the others off (team_cpus.py), or 0
ROW = 9
ARRIVE, FIRST_JOB, JOINED, SLEEPS, YIELDS, BUSY, CPU_ARRIVE, CPU_FIRST_JOB, TID = range(ROW)
ROWS = 4  # thread 0's header (its first ROW words) and threads 1-3
RESCUES = ROW * ROWS  # after the rows: how often thread 0 pulled the others onto its CPU (team_cpus.py)
WORDS = RESCUES + 1
CLOCK_MONOTONIC = 1


def traced(b: ir.IRBuilder, trace: ir.Value):
    """`with traced(b, trace):` emits its body only for a set trace buffer."""
    return b.if_then(b.icmp_unsigned("!=", trace, ir.Constant(PTR, None)), likely=False)


def word(b: ir.IRBuilder, trace: ir.Value, k: ir.Value | int) -> ir.Value:
    index = ir.Constant(I64, k) if isinstance(k, int) else k
    return b.gep(trace, [index], inbounds=True, source_etype=I64)


def row_word(b: ir.IRBuilder, trace: ir.Value, tid: ir.Value, k: int) -> ir.Value:
    """Word `k` of thread `tid`'s row (i32 tid, 1 .. ROWS - 1)."""
    return word(b, trace, b.add(b.mul(b.sext(tid, I64), ir.Constant(I64, ROW)), ir.Constant(I64, k)))


def put(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value) -> None:
    store = ir.instructions.StoreInstr(b.block, value, ptr)
    store.align = None
    b._insert(store)


def add(b: ir.IRBuilder, ptr: ir.Value, value: ir.Value) -> None:
    put(b, b.add(b.load(ptr, typ=I64), value), ptr)


def now(b: ir.IRBuilder) -> ir.Value:
    """Nanoseconds on CLOCK_MONOTONIC (i64), through `relaylens.team.now`."""
    return b.call(_now_function(b.module), [])


def cpu(b: ir.IRBuilder) -> ir.Value:
    """The CPU the calling thread runs on (i64)."""
    return b.sext(b.call(declare(b.module, "sched_getcpu", I32, []), []), I64)


def _now_function(module: ir.Module) -> ir.Function:
    existing = module.globals.get("relaylens.team.now")
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(I64, []), "relaylens.team.now")
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    spec = b.alloca(ir.ArrayType(I64, 2), name="timespec")
    b.call(declare(module, "clock_gettime", I32, [I32, PTR]), [ir.Constant(I32, CLOCK_MONOTONIC), spec])
    seconds = b.load(b.gep(spec, [ir.Constant(I64, 0)], inbounds=True, source_etype=I64), typ=I64)
    nanoseconds = b.load(b.gep(spec, [ir.Constant(I64, 1)], inbounds=True, source_etype=I64), typ=I64)
    b.ret(b.add(b.mul(seconds, ir.Constant(I64, 1_000_000_000)), nanoseconds))
    return fn
