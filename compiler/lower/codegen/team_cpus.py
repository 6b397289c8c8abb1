"""Where the team's threads run: for the length of an inference, off the calling thread's CPU.

Linux wakes a thread on the CPU its waker runs on when it judges the thread's own CPU
busy, and this host (2 virtual CPUs under KVM) did so for libgomp's worker at nearly
every inference: traced (runtime/team_trace.py) at load 2.5, the GPT-2 block's worker
woke on thread 0's CPU in 14 of 20 inferences after a 0.1 s pause and 18 of 20 back to
back, there waited behind thread 0 for its time slice (arriving 1.5-8.7 ms into a 4-12 ms
inference) and joined 2 of its 24 jobs: two threads of one team on one CPU only take
turns.  After an idle pause of 0.1 s the same happened with nothing else running (the
worker's CPU idle; docs/performance.md, the goals section: the 2-thread GPT-2 block took
its 1-thread time), though Linux moves a thread from a busy CPU to an idle one within a
tick or two once it sees it runnable there.

So thread 0, before it opens the region, restricts each thread of its previous team to
the CPUs this process may run on (SLOT_CPUS, a cpu_set_t the JIT fills) less its own, and
after the region gives them all of them again: the futex wake-up then puts the worker on
another CPU, idle or shared with another process, and thread 0 keeps its own, taking the
pieces the worker has not (shares.py).  Nothing is restricted when no other CPU is
allowed.  A worker is named by its kernel thread id, which it records on arrival in the
slot (SLOT_TIDS, team ids 1 .. TIDS); thread 0 records itself as their master
(SLOT_MASTER) when its region ends, and uses the ids only when it is that master:
libgomp keeps a pool of threads per calling thread and gives a team of the same size
the same threads in the same order.  A forked child forgets the master (the JIT's
at-fork hook: it would name the parent's threads); a calling thread that exited and a
new one given its pthread_self would use its exited pool's ids once (a call that fails,
unless the kernel gave such an id to another thread meanwhile).  The two system calls per worker (sched_setaffinity:
1-2.5 us each, measured in C; 3-4 us an inference in all, traced) are made only when the
last team inference lasted SLOT_WORTH ns or more (SLOT_LAST, from CLOCK_MONOTONIC;
the JIT sets SLOT_WORTH to WORTH_NS, 1 ms, where they cost under 0.4%): a small
model's inference of 80 us back to back took 82 us with them against 79 without, and
its worker woke on thread 0's CPU in 2 of 300 calls anyway.

Kept off thread 0's CPU, a thread shares its own with whatever else runs there, and on a
loaded machine it may be waiting for it when thread 0 waits for it (traced at load 5,
MobileNet v2 back to back: thread 0 waited 0.2-5 ms at the end of some regions for the
worker to leave).  So: thread 0 gives the others every allowed CPU back as soon as its
steps are done (`release_early`), before it waits for them to leave; a wait for them
that lasts RESCUE_END_NS at the end, or RESCUE_JOB_NS for a joined thread's last pieces,
pulls them onto thread 0's own CPU (`pull_here`), where they run when it yields; and
neither side calls sched_yield while kept apart (a yield would hand the CPU to another
process for a time slice, not to the team: team.py).  At load 5.0-5.3, kept off against
anywhere alternated in one process: MobileNet v2 back to back 0.96-1.00x (1.07x before
these three), the GPT-2 block after 0.1 s 0.76-0.83x (0.80x); the end's wait, median
227 us -> 68 us.  Not measured apart, each of the three.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .scalar import I1, I32, I64, PTR, declare
from .team_trace import put

SLOT_CPUS, SLOT_WORTH, SLOT_MASTER, SLOT_LAST, SLOT_TIDS = 3, 4, 5, 6, 7  # the process-wide slot's words (team.py)
TIDS = 7  # team ids 1 .. TIDS have their kernel thread id recorded
WORTH_NS = 1_000_000  # SLOT_WORTH's default: the last team inference's length (ns) from which restricting pays
STATE_TIDS_OK, STATE_MASK, STATE_RESCUED, STATE_KEPT, STATE_CPU = 9, 10, 11, 12, 13  # the team state's words
# (team.py, line 1): the recorded ids are the team's; the CPU set for the inference; pulled; kept off; thread 0's CPU + 1
RESCUE_JOB_NS = 300_000  # thread 0's wait for a joined thread, and for the others to leave at the end,
RESCUE_END_NS = 30_000  # from which it pulls them onto its own CPU (`pull_here`)
CPU_SET_WORDS = 16  # a cpu_set_t: 1024 CPUs, 128 bytes
SYS_SCHED_SETAFFINITY, SYS_GETTID = 203, 186  # x86-64 Linux


def keep_off_caller(b: ir.IRBuilder, slot: ir.Value, threads: ir.Value, me: ir.Value) -> ir.Value:
    """Restrict the recorded threads of `me`'s previous team (of at most `threads`) to
    the allowed CPUs but the one `b` runs on (module doc), when the last team inference
    lasted SLOT_WORTH ns or more; an i64: that CPU + 1 if it did, else 0."""
    module = b.module
    fn = b.function
    cpus = b.load(_slot_word(b, slot, SLOT_CPUS), typ=PTR, name="cpus")
    master = b.load(_slot_word(b, slot, SLOT_MASTER), typ=I64, name="master")
    last = b.load(_slot_word(b, slot, SLOT_LAST), typ=I64, name="last.ns")
    usable = b.and_(b.icmp_unsigned("!=", cpus, ir.Constant(PTR, None)), b.icmp_unsigned("==", master, me))
    usable = b.and_(usable, b.icmp_signed(">=", last, b.load(_slot_word(b, slot, SLOT_WORTH), typ=I64)))
    before = b.block
    restrict = fn.append_basic_block("cpus.restrict")
    done = fn.append_basic_block("cpus.done")
    b.cbranch(usable, restrict, done)

    b.position_at_end(restrict)
    mask = _entry_alloca(fn, ir.ArrayType(I64, CPU_SET_WORDS), "cpus.others")
    memcpy = module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
    b.call(memcpy, [mask, cpus, ir.Constant(I64, CPU_SET_WORDS * 8), ir.Constant(I1, 0)])
    cpu = b.zext(b.call(declare(module, "sched_getcpu", I32, []), []), I64)
    index = b.lshr(cpu, ir.Constant(I64, 6))
    index = b.select(b.icmp_unsigned("<", index, ir.Constant(I64, CPU_SET_WORDS)), index, ir.Constant(I64, 0))
    bit = b.shl(ir.Constant(I64, 1), b.and_(cpu, ir.Constant(I64, 63)))
    cell = b.gep(mask, [index], inbounds=True, source_etype=I64)
    put(b, b.and_(b.load(cell, typ=I64), b.not_(bit)), cell)
    others = ir.Constant(I64, 0)
    for k in range(CPU_SET_WORDS):
        others = b.or_(others, b.load(b.gep(mask, [ir.Constant(I64, k)], inbounds=True, source_etype=I64), typ=I64))
    restricting = b.icmp_unsigned("!=", others, ir.Constant(I64, 0))
    with b.if_then(restricting):
        _set_all(b, slot, threads, mask)
    kept_off = b.select(restricting, b.add(cpu, ir.Constant(I64, 1)), ir.Constant(I64, 0))
    restricted = b.block
    b.branch(done)

    b.position_at_end(done)
    result = b.phi(I64, name="cpus.kept.off")
    result.add_incoming(ir.Constant(I64, 0), before)
    result.add_incoming(kept_off, restricted)
    return result, mask


def plan(b: ir.IRBuilder, state: ir.Value, slot: ir.Value, me: ir.Value, kept_off: ir.Value,
         others: ir.Value) -> None:
    """The team state's words `pull_here` and `spread_again` read: whether the recorded
    ids are this team's, and the CPU set its threads have for the inference."""
    cpus = b.load(_slot_word(b, slot, SLOT_CPUS), typ=PTR)
    master = b.load(_slot_word(b, slot, SLOT_MASTER), typ=I64)
    ok = b.and_(b.icmp_unsigned("!=", cpus, ir.Constant(PTR, None)), b.icmp_unsigned("==", master, me))
    put(b, b.zext(ok, I64), _slot_word(b, state, STATE_TIDS_OK))
    kept = b.icmp_unsigned("!=", kept_off, ir.Constant(I64, 0))
    put(b, b.ptrtoint(b.select(kept, others, cpus), I64), _slot_word(b, state, STATE_MASK))
    put(b, b.zext(kept, I64), _slot_word(b, state, STATE_KEPT))
    put(b, kept_off, _slot_word(b, state, STATE_CPU))


def kept(b: ir.IRBuilder, state: ir.Value) -> ir.Value:
    """i1: the team's other threads are kept off thread 0's CPU for this inference."""
    return b.icmp_unsigned("!=", b.load(_slot_word(b, state, STATE_KEPT), typ=I64), ir.Constant(I64, 0))


def beside_caller(b: ir.IRBuilder, state: ir.Value) -> ir.Value:
    """i1, on a thread other than 0: it may be on thread 0's CPU (nothing kept it off, or
    thread 0 pulled it there, or it runs there now), so a yield may let thread 0 run."""
    here = b.zext(b.call(declare(b.module, "sched_getcpu", I32, []), []), I64)
    caller = b.load(_slot_word(b, state, STATE_CPU), typ=I64)
    pulled = b.icmp_unsigned("!=", b.load(_slot_word(b, state, STATE_RESCUED), typ=I64), ir.Constant(I64, 0))
    return b.or_(b.or_(b.not_(kept(b, state)), pulled), b.icmp_unsigned("==", b.add(here, ir.Constant(I64, 1)), caller))


def release_early(b: ir.IRBuilder, slot: ir.Value, threads: ir.Value, state: ir.Value) -> None:
    """When thread 0's steps are done: every allowed CPU again for the threads it kept off
    its own, before it waits for them to leave the region (one descheduled elsewhere may
    then run on thread 0's CPU, which Linux gives it once thread 0 blocks)."""
    kept = b.icmp_unsigned("!=", b.load(_slot_word(b, state, STATE_KEPT), typ=I64), ir.Constant(I64, 0))
    with b.if_then(kept):
        _set_all(b, slot, threads, b.load(_slot_word(b, slot, SLOT_CPUS), typ=PTR))


def pull_here(b: ir.IRBuilder, slot: ir.Value, threads: ir.Value, state: ir.Value) -> None:
    """Restrict the team's recorded threads to the CPU `b` runs on: thread 0 has waited
    RESCUE_*_NS for one of them, which is then most likely waiting for a CPU elsewhere
    (module doc); here it runs when thread 0 yields or blocks."""
    ok = b.icmp_unsigned("!=", b.load(_slot_word(b, state, STATE_TIDS_OK), typ=I64), ir.Constant(I64, 0))
    with b.if_then(ok):
        mask = _entry_alloca(b.function, ir.ArrayType(I64, CPU_SET_WORDS), "cpus.here")
        for k in range(CPU_SET_WORDS):
            put(b, ir.Constant(I64, 0), b.gep(mask, [ir.Constant(I64, k)], inbounds=True, source_etype=I64))
        cpu = b.zext(b.call(declare(b.module, "sched_getcpu", I32, []), []), I64)
        index = b.lshr(cpu, ir.Constant(I64, 6))
        index = b.select(b.icmp_unsigned("<", index, ir.Constant(I64, CPU_SET_WORDS)), index, ir.Constant(I64, 0))
        put(b, b.shl(ir.Constant(I64, 1), b.and_(cpu, ir.Constant(I64, 63))),
            b.gep(mask, [index], inbounds=True, source_etype=I64))
        _set_all(b, slot, threads, mask)
        put(b, ir.Constant(I64, 1), _slot_word(b, state, STATE_RESCUED))


def spread_again(b: ir.IRBuilder, slot: ir.Value, threads: ir.Value, state: ir.Value) -> None:
    """After `pull_here` and the wait: the threads get the inference's CPU set back."""
    ok = b.icmp_unsigned("!=", b.load(_slot_word(b, state, STATE_TIDS_OK), typ=I64), ir.Constant(I64, 0))
    with b.if_then(ok):
        _set_all(b, slot, threads, b.inttoptr(b.load(_slot_word(b, state, STATE_MASK), typ=I64), PTR))


def release(b: ir.IRBuilder, slot: ir.Value, threads: ir.Value, kept_off: ir.Value, me: ir.Value,
            length: ir.Value, state: ir.Value) -> None:
    """After the region: give the threads pulled by `pull_here` every allowed CPU again
    (`release_early` did so for those `keep_off_caller` restricted), record `me` as the
    master of the ids its workers recorded and `length` (ns) as the last team inference's."""
    rescued = b.icmp_unsigned("!=", b.load(_slot_word(b, state, STATE_RESCUED), typ=I64), ir.Constant(I64, 0))
    with b.if_then(rescued):
        _set_all(b, slot, threads, b.load(_slot_word(b, slot, SLOT_CPUS), typ=PTR))
    put(b, me, _slot_word(b, slot, SLOT_MASTER))
    put(b, length, _slot_word(b, slot, SLOT_LAST))


def record_thread(b: ir.IRBuilder, slot: ir.Value, tid: ir.Value) -> None:
    """On a worker's arrival: its kernel thread id in the slot, for team ids 1 .. TIDS."""
    recorded = b.and_(b.icmp_signed(">=", tid, ir.Constant(I32, 1)), b.icmp_signed("<=", tid, ir.Constant(I32, TIDS)))
    with b.if_then(recorded):
        own = thread_id(b)
        where = b.add(b.sext(tid, I64), ir.Constant(I64, SLOT_TIDS - 1))
        put(b, own, b.gep(slot, [where], inbounds=True, source_etype=I64))


def thread_id(b: ir.IRBuilder) -> ir.Value:
    """The calling thread's kernel id (i64, gettid)."""
    return _syscall(b, SYS_GETTID, [])


def _set_all(b: ir.IRBuilder, slot: ir.Value, threads: ir.Value, mask: ir.Value) -> None:
    """sched_setaffinity(`mask`) for each recorded id of team ids 1 .. min(threads - 1, TIDS)."""
    for k in range(1, TIDS + 1):
        tid = b.load(_slot_word(b, slot, SLOT_TIDS + k - 1), typ=I64)
        wanted = b.and_(b.icmp_signed(">", threads, ir.Constant(I32, k)), b.icmp_unsigned("!=", tid, ir.Constant(I64, 0)))
        with b.if_then(wanted):
            _syscall(b, SYS_SCHED_SETAFFINITY, [tid, ir.Constant(I64, CPU_SET_WORDS * 8), b.ptrtoint(mask, I64)])


def _syscall(b: ir.IRBuilder, number: int, args: list[ir.Value]) -> ir.Value:
    syscall = b.module.globals.get("syscall")
    if syscall is None:
        syscall = ir.Function(b.module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
    return b.call(syscall, [ir.Constant(I64, number), *args])


def _slot_word(b: ir.IRBuilder, slot: ir.Value, k: int) -> ir.Value:
    return b.gep(slot, [ir.Constant(I64, k)], inbounds=True, source_etype=I64)


def _entry_alloca(fn: ir.Function, typ: ir.Type, name: str) -> ir.Value:
    """An alloca at the top of `fn`'s entry block (a static one, not one per pass)."""
    b = ir.IRBuilder(fn.entry_basic_block)
    b.position_at_start(fn.entry_basic_block)
    return b.alloca(typ, name=name)
