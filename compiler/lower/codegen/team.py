"""The inference's team: one OpenMP region per call of the AOT entry, its threads kept
awake from the entry's first kernel to its last.

Without it every parallel loop of every kernel is a libgomp region of its own (llvm.py),
and between two regions libgomp's threads wait in its dock, spinning GOMP_SPINCOUNT times
(runtime/jit.py: 2,000, about 60 us, decided once per process) and then sleeping on a
futex.  After an idle pause (a request finding the machine idle) the sleeping virtual CPU
wakes slowly, at every region of the next inference.  Here the entry (aot.py) opens one
region for the whole call, `threads` wide, and its threads wait for the kernels' loops
inside it, so the spin is bounded by the inference and not by a global count:

* thread 0, the calling thread, runs the entry's steps (`main`); each kernel's parallel
  loop (`parallel_call`, in the kernel's module) finds the team through the module global
  `relaylens_team_slot` (the JIT points it at one process-wide slot, which holds the team
  of the inference running, or null) and hands its trampoline to the team's `dispatch`
  instead of calling GOMP_parallel;
* `dispatch` publishes the loop as a job (a generation number in the word `open`), runs
  its own share, then closes the job and waits only for the threads that joined it:
  a thread not yet awake or descheduled does not hold the calling thread up, whose
  trampoline takes the pieces it left (shares.py);
* the other threads poll `open` (a PAUSE a poll), join each job by a compare-and-swap
  while it is open, and run the trampoline as their team id; every YIELD_EVERY polls
  without a job they call sched_yield (another thread wanting their CPU gets it, an idle
  CPU returns at once) and after SLEEP_AFTER polls (about 1 ms: a long serial kernel)
  they sleep on `open` (futex) until the next job wakes them;
* after the last step thread 0 sets `stop` and publishes a last generation; the region
  ends at libgomp's barrier, and between two calls libgomp's threads wait in its dock
  as before;
* while thread 0's steps run the other threads may not run on its CPU (team_cpus.py:
  Linux put the woken worker there, behind thread 0, in most inferences; then a wait
  for them neither side fills with sched_yield, and one that lasts pulls them onto
  thread 0's CPU), and each thread's part can be traced (team_trace.py, a test and
  benchmark hook: a load and a branch per trace point when off).

Measured: see runtime/jit.py's module doc.  One inference at a time takes the team: the
slot's first two words are the team's state (claimed by compare-and-swap) and the thread
that owns it (pthread_self), then the trace buffer and team_cpus.py's words; a second entry called meanwhile from another thread runs as
before, region by region.  A kernel's loop reads the owner word first and uses the team
only when it is its own thread, so a kernel called from another thread while an
inference runs opens its own region and never reads the state, which lives in the
owner's frame and is gone once that inference returns.  At 1 thread (`threads` <= 1) the
entry calls its steps directly, as before.

The team's state lives in the entry's frame, TEAM_WORDS i64s on 64-byte lines:
line 0 written by thread 0 (dispatch, job fn, data, team, stop, gen, main, its data), line 1 the
trace buffer or null and team_cpus.py's words (written by thread 0), line 2 `open` (i32: the
generation << 8, CLOSED, the count of threads that joined) and `sleepers` (i32), line 3
`finished` (i64: the joined threads done with the job) and `left` (those that saw `stop`).
"""

from __future__ import annotations

import llvmlite.ir as ir

from . import team_cpus, team_trace as trace_
from .scalar import I1, I32, I64, PTR, VOID, declare

TEAM_SLOT_GLOBAL = "relaylens_team_slot"
YIELD_EVERY = 64  # polls of `open` between two sched_yield calls (a poll: a load and a PAUSE, ~30 ns)
SLEEP_AFTER = 1 << 15  # polls without a job before a thread sleeps on the futex (about 1 ms)
CLOSED = 0x80  # `open`'s bit: the job takes no more threads
JOINED = 0x7F  # `open`'s bits: how many threads joined (a team of up to 128)
TEAM_WORDS = 32

# i64 indices into the state
DISPATCH, FN, DATA, TEAM, STOP, GEN, MAIN, MAIN_DATA = range(8)
STATE_TRACE = 8  # line 1: the trace buffer (team_trace.py) or null, for the whole inference
SLOT_TEAM, SLOT_OWNER, SLOT_TRACE = 0, 1, 2  # the process-wide slot's words: the running team's state, its
# thread, the trace buffer (null unless traced); then team_cpus.py's
SLOT_WORDS = team_cpus.SLOT_TIDS + team_cpus.TIDS
OPEN_WORD = 16  # an i32 at byte 128 ...
SLEEPERS_I32 = 33  # ... and the i32 beside it (byte 132)
FINISHED = 24  # byte 192
LEFT = 25  # beside it: the threads other than 0 that saw `stop` and left the worker

SYS_FUTEX = 202  # x86-64 Linux
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129

_DISPATCH_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, I32])  # (team, trampoline, data, team size)
_JOB_TYPE = ir.FunctionType(VOID, [PTR])


def team_slot_global(module: ir.Module) -> ir.GlobalVariable:
    """The module's pointer to the process-wide slot of the running inference's team, two
    words (SLOT_TEAM, SLOT_OWNER; null until the JIT sets it; modules linked together
    share one)."""
    g = module.globals.get(TEAM_SLOT_GLOBAL)
    if g is None:
        g = ir.GlobalVariable(module, PTR, TEAM_SLOT_GLOBAL)
        g.linkage = "linkonce_odr"
        g.initializer = ir.Constant(PTR, None)
        g.align = 8
    return g


def parallel_call(b: ir.IRBuilder, module: ir.Module, trampoline: ir.Value, data: ir.Value, team: ir.Value) -> None:
    """At `b`: run `trampoline(data)` on `team` (i32) threads: through the team's
    `dispatch` when an inference's team is running, else through GOMP_parallel."""
    fn = b.function
    slot = b.load(team_slot_global(module), typ=PTR, name="team.slot")
    has_slot = fn.append_basic_block("team.slot.set")
    on_team = fn.append_basic_block("team.dispatch")
    alone = fn.append_basic_block("team.gomp")
    done = fn.append_basic_block("team.done")
    b.cbranch(b.icmp_unsigned("!=", slot, ir.Constant(PTR, None)), has_slot, alone)
    b.position_at_end(has_slot)
    owner = b.load_atomic(_word(b, slot, SLOT_OWNER), "monotonic", 8, name="team.owner", typ=I64)
    b.cbranch(b.icmp_unsigned("==", owner, _self(b, module)), on_team, alone)  # (module doc)
    b.position_at_end(on_team)
    state = b.load_atomic(_word(b, slot, SLOT_TEAM), "monotonic", 8, name="team", typ=PTR)  # its own store
    dispatch = ir.instructions.LoadInstr(b.block, state, name="team.dispatch.fn", typ=_DISPATCH_TYPE.as_pointer())
    b._insert(dispatch)  # llvmlite's own load (lines.py's has no function type to call through)
    b.call(dispatch, [state, trampoline, data, team])
    b.branch(done)
    b.position_at_end(alone)
    _gomp_parallel(b, module, trampoline, data, team)
    b.branch(done)
    b.position_at_end(done)


def _gomp_parallel(b: ir.IRBuilder, module: ir.Module, fn: ir.Value, data: ir.Value, team: ir.Value) -> None:
    b.call(declare(module, "GOMP_parallel", VOID, [PTR, PTR, I32, I32]), [fn, data, team, ir.Constant(I32, 0)])


def team_run(module: ir.Module) -> ir.Function:
    """`void relaylens.team.run(ptr main, ptr main_data, ptr slot, i32 threads)`, internal
    to `module` (the entry's): `main(main_data)` on thread 0 of a region of `threads`
    holding the team (module doc); `main(main_data)` alone when the slot is taken."""
    existing = module.globals.get("relaylens.team.run")
    if existing is not None:
        return existing
    dispatch = _dispatch(module)
    region = _region(module, _worker(module))
    fn = _internal(module, "relaylens.team.run", VOID, [PTR, PTR, PTR, I32])
    main, main_data, slot, threads = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    state = b.alloca(ir.ArrayType(I64, TEAM_WORDS), name="team")
    state.align = 64
    for k in range(TEAM_WORDS):
        _store(b, ir.Constant(I64, 0), _word(b, state, k))
    _store(b, dispatch, _word(b, state, DISPATCH))
    _store(b, main, _word(b, state, MAIN))
    _store(b, main_data, _word(b, state, MAIN_DATA))
    _store(b, ir.Constant(I32, CLOSED), _word(b, state, OPEN_WORD))  # generation 0: no job
    taken = b.cmpxchg(_word(b, slot, SLOT_TEAM), ir.Constant(PTR, None), state, "seq_cst", "seq_cst", name="claim")
    ours = b.extract_value(taken, 1)
    owner = _word(b, slot, SLOT_OWNER)
    with b.if_else(ours) as (then, otherwise):
        with then:
            me = _self(b, module)
            _store_atomic(b, me, owner, "monotonic", 8)
            trace = b.load(_word(b, slot, SLOT_TRACE), typ=PTR, name="trace")
            _store(b, trace, _word(b, state, STATE_TRACE))
            with trace_.traced(b, trace):
                memset = module.declare_intrinsic("llvm.memset", [PTR, I64])
                b.call(memset, [trace, ir.Constant(ir.IntType(8), 0), ir.Constant(I64, trace_.WORDS * 8),
                                ir.Constant(I1, 0)])
                trace_.put(b, trace_.now(b), trace_.word(b, trace, trace_.ENTRY))
            start = trace_.now(b)
            kept_off, others = team_cpus.keep_off_caller(b, slot, threads, me)
            team_cpus.plan(b, state, slot, me, kept_off, others)
            _gomp_parallel(b, module, region, state, threads)
            team_cpus.release(b, slot, threads, kept_off, me, b.sub(trace_.now(b), start), state)
            with trace_.traced(b, trace):
                trace_.put(b, trace_.now(b), trace_.word(b, trace, trace_.EXIT))
                trace_.put(b, kept_off, trace_.word(b, trace, trace_.KEPT_OFF))
            _store_atomic(b, ir.Constant(I64, 0), owner, "monotonic", 8)
            _store_atomic(b, ir.Constant(PTR, None), _word(b, slot, SLOT_TEAM), "seq_cst", 8)
        with otherwise:
            _call_pointer(b, main, [main_data], _JOB_TYPE)
    b.ret_void()
    return fn


def _dispatch(module: ir.Module) -> ir.Function:
    """`dispatch(team, trampoline, data, n)`: a kernel's parallel loop as a job of the team
    (module doc), called on the thread that owns the team."""
    fn = _internal(module, "relaylens.team.dispatch", VOID, [PTR, PTR, PTR, I32])
    state, job, data, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    alone = fn.append_basic_block("alone")
    publish = fn.append_basic_block("publish")
    b.cbranch(b.icmp_signed("<=", n, ir.Constant(I32, 1)), alone, publish)
    b.position_at_end(alone)
    _call_pointer(b, job, [data], _JOB_TYPE)
    b.ret_void()

    b.position_at_end(publish)
    gen = b.add(b.load(_word(b, state, GEN), typ=I64), ir.Constant(I64, 1), name="gen")
    _store(b, gen, _word(b, state, GEN))
    _store_atomic(b, b.ptrtoint(job, I64), _word(b, state, FN), "monotonic", 8)
    _store_atomic(b, b.ptrtoint(data, I64), _word(b, state, DATA), "monotonic", 8)
    _store_atomic(b, b.sext(n, I64), _word(b, state, TEAM), "monotonic", 8)
    _store_atomic(b, ir.Constant(I64, 0), _word(b, state, FINISHED), "monotonic", 8)
    _publish(b, module, state, b.shl(b.trunc(gen, I32), ir.Constant(I32, 8)))
    _call_pointer(b, job, [data], _JOB_TYPE)
    closed = b.atomic_rmw("or", _word(b, state, OPEN_WORD), ir.Constant(I32, CLOSED), "acq_rel", name="closed")
    joined = b.zext(b.and_(closed, ir.Constant(I32, JOINED)), I64, name="joined")
    trace = b.load(_word(b, state, STATE_TRACE), typ=PTR, name="trace")
    with trace_.traced(b, trace):
        trace_.add(b, trace_.word(b, trace, trace_.JOBS), ir.Constant(I64, 1))
        trace_.add(b, trace_.word(b, trace, trace_.WAITED), b.neg(trace_.now(b)))
    slot = b.load(team_slot_global(module), typ=PTR, name="slot")
    _wait_until(b, lambda: b.icmp_unsigned(
        "==", b.load_atomic(_word(b, state, FINISHED), "acquire", 8, typ=I64), joined),
        rescue=(team_cpus.RESCUE_JOB_NS, lambda: _rescue(b, slot, n, state, trace),
                lambda: team_cpus.spread_again(b, slot, n, state), state))
    with trace_.traced(b, trace):
        trace_.add(b, trace_.word(b, trace, trace_.WAITED), trace_.now(b))
    b.ret_void()
    return fn


def _region(module: ir.Module, worker: ir.Function) -> ir.Function:
    """The region's function: thread 0 runs `main` then stops the team; the others work."""
    fn = _internal(module, "relaylens.team.region", VOID, [PTR])
    (state,) = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tid = b.call(declare(module, "omp_get_thread_num", I32, []), [], name="tid")
    with b.if_else(b.icmp_signed("==", tid, ir.Constant(I32, 0))) as (first, other):
        with first:
            main = b.load(_word(b, state, MAIN), typ=PTR)
            trace = b.load(_word(b, state, STATE_TRACE), typ=PTR, name="trace")
            with trace_.traced(b, trace):
                trace_.put(b, trace_.now(b), trace_.word(b, trace, trace_.MAIN_START))
                trace_.put(b, trace_.cpu(b), trace_.word(b, trace, trace_.CPU_START))
            _call_pointer(b, main, [b.load(_word(b, state, MAIN_DATA), typ=PTR)], _JOB_TYPE)
            with trace_.traced(b, trace):
                trace_.put(b, trace_.now(b), trace_.word(b, trace, trace_.MAIN_END))
                trace_.put(b, trace_.cpu(b), trace_.word(b, trace, trace_.CPU_END))
            size = b.call(declare(module, "omp_get_num_threads", I32, []), [], name="size")
            others = b.sext(b.sub(size, ir.Constant(I32, 1)), I64)
            slot = b.load(team_slot_global(module), typ=PTR, name="slot")
            team_cpus.release_early(b, slot, size, state)
            _store_atomic(b, ir.Constant(I64, 1), _word(b, state, STOP), "monotonic", 8)
            gen = b.add(b.load(_word(b, state, GEN), typ=I64), ir.Constant(I64, 1))
            _publish(b, module, state, b.or_(b.shl(b.trunc(gen, I32), ir.Constant(I32, 8)),
                                             ir.Constant(I32, CLOSED)))
            _wait_until(b, lambda: b.icmp_unsigned(
                "==", b.load_atomic(_word(b, state, LEFT), "acquire", 8, typ=I64), others),
                rescue=(team_cpus.RESCUE_END_NS, lambda: _rescue(b, slot, size, state, trace), None, state))
        with other:
            b.call(worker, [state, tid])
    b.ret_void()
    return fn


def _worker(module: ir.Module) -> ir.Function:
    """A thread other than 0: join each open job, run it, until `stop` (module doc)."""
    fn = _internal(module, "relaylens.team.worker", VOID, [PTR, I32])
    state, tid = fn.args
    entry = fn.append_basic_block("entry")
    poll = fn.append_basic_block("poll")
    new = fn.append_basic_block("job.new")
    open_ = fn.append_basic_block("job.open")
    join = fn.append_basic_block("job.join")
    run = fn.append_basic_block("job.run")
    idle = fn.append_basic_block("idle")
    yield_ = fn.append_basic_block("idle.yield")
    wait_more = fn.append_basic_block("idle.check")
    sleep = fn.append_basic_block("idle.sleep")
    stop = fn.append_basic_block("stop")
    b = ir.IRBuilder(entry)
    open_word = _word(b, state, OPEN_WORD)
    recorded = b.icmp_signed("<", tid, ir.Constant(I32, trace_.ROWS))
    trace = b.select(recorded, b.load(_word(b, state, STATE_TRACE), typ=PTR), ir.Constant(PTR, None), name="trace")
    with trace_.traced(b, trace):
        trace_.put(b, trace_.now(b), trace_.row_word(b, trace, tid, trace_.ARRIVE))
        trace_.put(b, trace_.cpu(b), trace_.row_word(b, trace, tid, trace_.CPU_ARRIVE))
    slot = b.load(team_slot_global(module), typ=PTR, name="slot")
    team_cpus.record_thread(b, slot, tid)
    with trace_.traced(b, trace):
        trace_.put(b, team_cpus.thread_id(b), trace_.row_word(b, trace, tid, trace_.TID))
    started = b.block
    b.branch(poll)

    b.position_at_end(poll)
    seen = b.phi(I32, name="seen")
    polls = b.phi(I32, name="polls")
    word = b.load_atomic(open_word, "acquire", 4, name="open", typ=I32)
    gen = b.lshr(word, ir.Constant(I32, 8), name="gen")
    b.cbranch(b.icmp_unsigned("!=", gen, seen), new, idle)

    b.position_at_end(new)
    stopped = b.load_atomic(_word(b, state, STOP), "monotonic", 8, typ=I64)
    b.cbranch(b.icmp_unsigned("!=", stopped, ir.Constant(I64, 0)), stop, open_)

    b.position_at_end(open_)
    team = b.load_atomic(_word(b, state, TEAM), "monotonic", 8, typ=I64)
    member = b.icmp_signed("<", b.sext(tid, I64), team)
    is_open = b.icmp_unsigned("==", b.and_(word, ir.Constant(I32, CLOSED)), ir.Constant(I32, 0))
    b.cbranch(b.and_(member, is_open), join, poll)  # closed, or not for us: seen

    b.position_at_end(join)
    joined = b.extract_value(b.cmpxchg(open_word, word, b.add(word, ir.Constant(I32, 1)), "acq_rel", "monotonic"), 1)
    b.cbranch(joined, run, poll)  # lost the race (another thread joined, or it closed): look again

    b.position_at_end(run)
    job = b.inttoptr(b.load_atomic(_word(b, state, FN), "monotonic", 8, typ=I64), PTR)
    data = b.inttoptr(b.load_atomic(_word(b, state, DATA), "monotonic", 8, typ=I64), PTR)
    with trace_.traced(b, trace):
        _trace_join(b, trace, tid)
    _call_pointer(b, job, [data], _JOB_TYPE)
    with trace_.traced(b, trace):
        trace_.add(b, trace_.row_word(b, trace, tid, trace_.BUSY), trace_.now(b))
    b.atomic_rmw("add", _word(b, state, FINISHED), ir.Constant(I64, 1), "release")
    ran = b.block
    b.branch(poll)

    b.position_at_end(idle)
    _pause(b, module)
    counted = b.add(polls, ir.Constant(I32, 1), name="polls.next")
    b.cbranch(b.icmp_unsigned("==", b.and_(counted, ir.Constant(I32, YIELD_EVERY - 1)), ir.Constant(I32, 0)),
              yield_, poll)

    b.position_at_end(yield_)
    with b.if_then(team_cpus.beside_caller(b, state)):  # (else another process's, not thread 0's, CPU)
        b.call(declare(module, "sched_yield", I32, []), [])
        with trace_.traced(b, trace):
            trace_.add(b, trace_.row_word(b, trace, tid, trace_.YIELDS), ir.Constant(I64, 1))
    b.cbranch(b.icmp_unsigned(">=", counted, ir.Constant(I32, SLEEP_AFTER)), sleep, wait_more)
    b.position_at_end(wait_more)
    b.branch(poll)

    b.position_at_end(sleep)
    sleepers = _word(b, state, SLEEPERS_I32, I32)
    b.atomic_rmw("add", sleepers, ir.Constant(I32, 1), "seq_cst")
    again = b.load_atomic(open_word, "seq_cst", 4, typ=I32)
    with b.if_then(b.icmp_unsigned("==", again, word)):
        with trace_.traced(b, trace):
            trace_.add(b, trace_.row_word(b, trace, tid, trace_.SLEEPS), ir.Constant(I64, 1))
        _futex(b, module, open_word, FUTEX_WAIT_PRIVATE, again)
    b.atomic_rmw("sub", sleepers, ir.Constant(I32, 1), "seq_cst")
    after_sleep = b.block
    b.branch(poll)

    b.position_at_end(stop)
    b.atomic_rmw("add", _word(b, state, LEFT), ir.Constant(I64, 1), "release")
    b.ret_void()

    zero = ir.Constant(I32, 0)
    seen.add_incoming(zero, started)
    polls.add_incoming(zero, started)
    seen.add_incoming(gen, open_)
    polls.add_incoming(zero, open_)
    seen.add_incoming(seen, join)
    polls.add_incoming(zero, join)
    seen.add_incoming(gen, ran)
    polls.add_incoming(zero, ran)
    seen.add_incoming(seen, idle)
    polls.add_incoming(counted, idle)
    seen.add_incoming(seen, wait_more)
    polls.add_incoming(counted, wait_more)
    seen.add_incoming(seen, after_sleep)
    polls.add_incoming(zero, after_sleep)
    return fn


def _trace_join(b: ir.IRBuilder, trace: ir.Value, tid: ir.Value) -> None:
    """A joined job in `tid`'s row (team_trace.py): the first one's time and CPU, the count,
    and the job's start taken from BUSY (its end adds to it)."""
    first = trace_.row_word(b, trace, tid, trace_.FIRST_JOB)
    with b.if_then(b.icmp_unsigned("==", b.load(first, typ=I64), ir.Constant(I64, 0))):
        trace_.put(b, trace_.now(b), first)
        trace_.put(b, trace_.cpu(b), trace_.row_word(b, trace, tid, trace_.CPU_FIRST_JOB))
    trace_.add(b, trace_.row_word(b, trace, tid, trace_.JOINED), ir.Constant(I64, 1))
    trace_.add(b, trace_.row_word(b, trace, tid, trace_.BUSY), b.neg(trace_.now(b)))


def _publish(b: ir.IRBuilder, module: ir.Module, state: ir.Value, word: ir.Value) -> None:
    """Store `open` (sequentially consistent) and wake the threads sleeping on it."""
    open_word = _word(b, state, OPEN_WORD)
    _store_atomic(b, word, open_word, "seq_cst", 4)
    sleepers = b.load_atomic(_word(b, state, SLEEPERS_I32, I32), "seq_cst", 4, typ=I32)
    with b.if_then(b.icmp_unsigned("!=", sleepers, ir.Constant(I32, 0))):
        _futex(b, module, open_word, FUTEX_WAKE_PRIVATE, ir.Constant(I32, 0x7FFFFFFF))


def _wait_until(b: ir.IRBuilder, condition, rescue=None) -> None:
    """Poll `condition()` (emitted in the loop) with a PAUSE between polls and a
    sched_yield every YIELD_EVERY (a joined thread descheduled mid-job).  `rescue`,
    (ns, pull, after, state): once the wait has lasted ns (the clock read at each yield
    from the first), emit `pull()`, and `after()` (if not None) once the condition holds;
    no yield while the team's state says its other threads are kept off this CPU, unless
    pulled here."""
    fn = b.function
    before = b.block
    loop = fn.append_basic_block("wait")
    pause = fn.append_basic_block("wait.pause")
    give = fn.append_basic_block("wait.yield")
    done = fn.append_basic_block("wait.done")
    b.branch(loop)
    b.position_at_end(loop)
    polls = b.phi(I32, name="polls")
    since = b.phi(I64, name="since")
    pulled = b.phi(I1, name="pulled")
    b.cbranch(condition(), done, pause)
    b.position_at_end(pause)
    _pause(b, b.module)
    counted = b.add(polls, ir.Constant(I32, 1))
    b.cbranch(b.icmp_unsigned("==", b.and_(counted, ir.Constant(I32, YIELD_EVERY - 1)), ir.Constant(I32, 0)),
              give, loop)
    b.position_at_end(give)
    if rescue is None:
        b.call(declare(b.module, "sched_yield", I32, []), [])
    else:  # the others kept off this CPU: a yield would give it to another process, not to them
        with b.if_then(b.or_(pulled, b.not_(team_cpus.kept(b, rescue[3])))):
            b.call(declare(b.module, "sched_yield", I32, []), [])
    zero = ir.Constant(I64, 0)
    started = since
    if rescue is not None:
        after_ns, pull, after, _ = rescue
        now = trace_.now(b)
        started = b.select(b.icmp_unsigned("==", since, zero), now, since)
        late = b.and_(b.not_(pulled), b.icmp_signed(">=", b.sub(now, started), ir.Constant(I64, after_ns)))
        pull_block = fn.append_basic_block("wait.pull")
        gave = b.block
        b.cbranch(late, pull_block, loop)
        b.position_at_end(pull_block)
        pull()
        pulled_end = b.block
        b.branch(loop)
    else:
        gave = b.block
        b.branch(loop)
    polls.add_incoming(ir.Constant(I32, 0), before)
    polls.add_incoming(counted, pause)
    polls.add_incoming(counted, gave)
    since.add_incoming(zero, before)
    since.add_incoming(since, pause)
    since.add_incoming(started, gave)
    pulled.add_incoming(ir.Constant(I1, 0), before)
    pulled.add_incoming(pulled, pause)
    pulled.add_incoming(pulled, gave)
    if rescue is not None:
        polls.add_incoming(counted, pulled_end)
        since.add_incoming(started, pulled_end)
        pulled.add_incoming(ir.Constant(I1, 1), pulled_end)
    b.position_at_end(done)
    if rescue is not None and after is not None:
        with b.if_then(pulled):
            after()


def _rescue(b: ir.IRBuilder, slot: ir.Value, threads: ir.Value, state: ir.Value, trace: ir.Value) -> None:
    """team_cpus.pull_here, counted in the trace."""
    team_cpus.pull_here(b, slot, threads, state)
    with trace_.traced(b, trace):
        trace_.add(b, trace_.word(b, trace, trace_.RESCUES), ir.Constant(I64, 1))


def _futex(b: ir.IRBuilder, module: ir.Module, address: ir.Value, op: int, value: ir.Value) -> None:
    syscall = module.globals.get("syscall")
    if syscall is None:
        syscall = ir.Function(module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
    b.call(syscall, [ir.Constant(I64, SYS_FUTEX), address, ir.Constant(I64, op), b.zext(value, I64),
                     ir.Constant(PTR, None)])


def _pause(b: ir.IRBuilder, module: ir.Module) -> None:
    pause = module.globals.get("llvm.x86.sse2.pause")
    if pause is None:
        pause = ir.Function(module, ir.FunctionType(VOID, []), "llvm.x86.sse2.pause")
    b.call(pause, [])


def _call_pointer(b: ir.IRBuilder, fn: ir.Value, args: list[ir.Value], ftype: ir.FunctionType) -> None:
    typed = ir.instructions.CastInstr(b.block, "bitcast", fn, ftype.as_pointer())  # a no-op that carries
    b._insert(typed)  # the type to call through (`b.bitcast` returns an opaque pointer itself)
    b.call(typed, args)


def _self(b: ir.IRBuilder, module: ir.Module) -> ir.Value:
    return b.call(declare(module, "pthread_self", I64, []), [], name="self")


def _word(b: ir.IRBuilder, state: ir.Value, k: int, typ: ir.Type = I64) -> ir.Value:
    return b.gep(state, [ir.Constant(I64, k)], inbounds=True, source_etype=typ)


def _store(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value) -> None:
    """A store without `b.store`'s check of the pointer's element type (the state's words
    are addressed through opaque pointers)."""
    store = ir.instructions.StoreInstr(b.block, value, ptr)
    store.align = None
    b._insert(store)


def _store_atomic(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, ordering: str, align: int) -> None:
    b._insert(ir.instructions.StoreAtomicInstr(b.block, value, ptr, ordering, align))


def _internal(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(ret, args), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    return fn
