"""From a built module to machine code: lower every fused function, then @main.

    lowered = lower_build(build_result, cache=cache, progress=print)
    lowered.functions["tvmgen_default_fused_nn_conv2d_add_nn_relu"].schedule.record
    lowered.llvm_ir, lowered.optimized_ir            # the whole module, as text
    lowered.executable.run(x, w, b)                  # see executable.py

Per fused function (each name once): `compose` (compute rules) → `default_schedule`
(recorded) → loop nest → LLVM IR with debug locations → O3 → machine code in its own
engine.  A function that cannot be lowered becomes a diagnostic at the Relay expression
at fault (an op without a compute rule, a `?` shape, a dtype), and the rest still lowers;
there is then no executable.

The cache (`LoweringCache`) holds lowered functions keyed by the structural hash of the
primitive function (TVM's compile-engine cache): rebuilding after an edit re-lowers only
the functions whose structure changed.  A hit whose name or source position differs (a
line inserted above it, a layer before it renamed) is re-pointed, not re-lowered: its
LLVM texts get the new name and debug locations (`_relocated`), its machine code is the
same and is called by address.  Within one build, structurally equal functions are
lowered once (a build without a cache gets one of its own).

Behind it, the disk cache (`disk`, disk_cache.py) keeps each kernel's LLVM texts, the
number of its schedule's steps and its object code across processes; its schedule text
(every step's loop nest printed: about 40% of lowering a ResNet-50 kernel) only once a
build whose caller reads every text made it (`schedule_texts`: `relaylens build --emit
schedule`, `-o`).  Otherwise a text is made when read (`LoweredFunction.schedule_text`,
or `schedule_text(module, name)` from a built module alone: the editor's schedule view).  A kernel found
there is composed (its constants and signature are needed) but not scheduled, generated,
optimised or compiled: its object code is loaded, and its texts are re-pointed as above,
from the kernel name, source file and node locations the entry recorded.  A build read
from the disk cache's kept builds (passes_cache.py) brings its kernels' compositions,
which are not composed again (`Lowered.compositions`: what the next such build reads).  An entry
written by a build without machine code (the editor's) gets its object code the first
time a build needs it.

The kernels neither cache holds are lowered several at once, in forked child processes
(parallel.py; RELAYLENS_COMPILE_JOBS, default the CPUs), the largest first (`_size`): each
child sends back what the disk cache keeps of its kernel (object code written without an
engine: `JIT.optimize_to_object`), which is loaded here as a disk hit is.  Progress reports
each kernel as it is done, in the order they finish; `functions` keeps the build's order.
Meanwhile a thread of this process makes the executable (runtime/executable.py: the memory
plan, the entry's IR, O3 and machine code, the weights' aligned copies, 0.4-0.5 s of a
ResNet-50), which needs the kernels' names and constants, not their code: this process
would otherwise wait idle for the children, then make it after them.  The plan needs
one thing of each schedule too, whether the kernel's output may be written over an
input (schedule/in_place.py): the thread schedules the kernels that could claim it
itself, as their children do (ResNet-50: 5 of 29, 0.03 s).
"""

from __future__ import annotations

import dataclasses
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..diagnostics import Diagnostic, Severity
from ..lazy_modules import llvm  # LLVM loaded when first run: in the editor's worker, only in forked children
from ..ir.deferred import resolved
from ..ir.expr import Function, Var
from ..ir.functor import post_order
from ..ir.structural_equal import structural_equal
from ..ir.structural_hash import structural_hash
from ..transform.fused_names import name_primitive_functions
from .codegen import llvm as codegen
from .codegen.debuginfo import source_location
from .codegen.ir_text import module_text
from .codegen.llvm_map import refile, relocate
from .cache_keys import cache_key
from .disk_cache import DiskCache, Entry
from .parallel import call_forked, compile_jobs, map_forked
from .errors import LoweringError
from .runtime.executable import make_executable
from .runtime.jit import JIT
from .schedule.defaults import default_schedule
from .schedule.in_place import may_claim
from .schedule.loopnest import PrimFunc
from .schedule.primitives import Schedule
from .te import expr as te
from .te.compose import Composed, compose

SOURCE = "lower"
TEXT = "schedule_text"  # the blob of a kernel's schedule text: only from a build that read them all (`schedule_texts`)


@dataclass
class LoweredFunction:
    """One fused function, lowered: every stage kept for the editor and `build -o`.

    A kernel read from the disk cache or lowered in a child process has no schedule in
    memory: `schedule` and `prim` make it again on first use (the default schedule is a
    pure function of `composed`), while `schedule_steps` reads the count the cache kept, so
    that a build's report (the editor's lens "schedule (N steps)") schedules nothing again.
    `schedule_text` is made when read, never by a build, unless its caller reads every
    kernel's (`lower_build(schedule_texts=True)`: the child that lowered it made it, or
    the disk cache kept it from such a build).  Its LLVM texts (`llvm_ir`, `optimized_ir`)
    are `texts`, or what makes them when first read: a kernel read from the disk cache
    decompresses, renames and re-points its texts only then (a build that runs the
    model never reads them: GPT-2's 19 kernels 9 ms)."""

    name: str
    func: Function  # the primitive Relay function
    composed: Composed
    texts: tuple[str, str] | Callable[[], tuple[str, str]] = field(repr=False)  # its own module, unoptimised; optimised
    address: int = 0  # of its machine code
    engine: Any = field(default=None, repr=False)  # keeps the machine code alive
    scheduled: tuple[Schedule, PrimFunc] | None = field(default=None, repr=False)
    steps: int | None = field(default=None, repr=False)  # the schedule's steps, as the disk cache kept them
    made_text: str | None = field(default=None, repr=False)  # its schedule text, made already (`schedule_texts`)
    writes_over: int | None = None  # the input its output may be written over (schedule/in_place.py)

    @property
    def llvm_ir(self) -> str:
        return self._texts()[0]

    @property
    def optimized_ir(self) -> str:
        return self._texts()[1]

    def _texts(self) -> tuple[str, str]:
        if callable(self.texts):
            self.texts = self.texts()
        return self.texts

    @property
    def constants(self) -> list[np.ndarray]:
        return [resolved(data) for _, data in self.composed.constants]  # a deferred one computed now

    @property
    def schedule(self) -> Schedule:
        return self._scheduled()[0]

    @property
    def prim(self) -> PrimFunc:
        return self._scheduled()[1]

    @property
    def schedule_text(self) -> str:
        """Every step of the schedule with the loop nest after it (`Schedule.record_text`),
        made now (scheduling again first if this process did not) unless made already."""
        return self.made_text if self.made_text is not None else self.schedule.record_text()

    @property
    def schedule_steps(self) -> int:
        return self.steps if self.scheduled is None and self.steps is not None else len(self.schedule.record)

    def _scheduled(self) -> tuple[Schedule, PrimFunc]:
        if self.scheduled is None:
            self.scheduled = _schedule(self.composed, self.name, self.func)
        return self.scheduled


class LoweringCache:
    """Lowered functions by structural hash, verified by structural equality (with types),
    so a hash collision never reuses the wrong kernel."""

    def __init__(self) -> None:
        self._entries: dict[int, list[LoweredFunction]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, name: str, func: Function, structural: int | None = None) -> LoweredFunction | None:
        """`structural`: `func`'s structural hash, when the caller has it already."""
        for entry in self._entries.get(structural_hash(func) if structural is None else structural, ()):
            if structural_equal(entry.func, func, types=True):
                self.hits += 1
                return entry if entry.func is func and entry.name == name else _relocated(entry, func, name)
        self.misses += 1
        return None

    def put(self, lowered: LoweredFunction, structural: int | None = None) -> None:
        """Newest first: a kernel given machine code later is found before its LLVM-only self."""
        structural = structural_hash(lowered.func) if structural is None else structural
        self._entries.setdefault(structural, []).insert(0, lowered)


@dataclass
class Lowered:
    functions: dict[str, LoweredFunction]
    diagnostics: list[Diagnostic]
    executable: Any = None  # executable.Executable when everything lowered
    source_name: str = "<input>"
    jit: Any = field(default=None, repr=False)  # owns the machine code of the entry
    isolated: bool = False  # LLVM's work runs in forked children (lower_build's machine_code=False)
    compositions: dict[Function, Composed] = field(default_factory=dict)  # what this build composed, or reused

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def llvm_ir(self) -> str:
        """The whole module (every kernel, then the entry), unoptimised."""
        return self._module(False)

    @property
    def optimized_ir(self) -> str:
        return self._module(True)

    def texts(self) -> tuple[str, str]:
        """(llvm_ir, optimized_ir) at once: when `isolated`, made in one forked child, which
        loads LLVM once for both (a process that has not loaded LLVM, as the editor's build
        worker, has each child load it: 0.1-0.3 s)."""
        if not self.isolated:
            return self.llvm_ir, self.optimized_ir
        return call_forked(lambda _: (self._linked(False), self._linked(True)), None)

    def _module(self, optimized: bool) -> str:
        """The module linked (and the entry optimised, for `optimized`): in a forked child
        when `isolated`, so that LLVM's parser, linker and optimiser stay out of this process."""
        return call_forked(self._linked, optimized) if self.isolated else self._linked(optimized)

    def _linked(self, optimized: bool) -> str:
        return _link([f.optimized_ir if optimized else f.llvm_ir for f in self.functions.values()]
                     + self._entry_texts(optimized))

    def _entry_texts(self, optimized: bool) -> list[str]:
        exe = self.executable
        if exe is None or exe.entry_ir is None:
            return []
        return [exe.entry_optimized_ir if optimized else exe.entry_ir]

    def function_of(self, func: Function) -> LoweredFunction | None:
        return next((f for f in self.functions.values() if f.func is func), None)


def lower_build(result, *, cache: LoweringCache | None = None, jit=None,
                progress: Callable[[str], None] | None = None, machine_code: bool = True,
                disk: DiskCache | None = None, options: dict[str, Any] | None = None,
                schedule_texts: bool = False) -> Lowered:
    """Lower every fused function of a successful build, then plan and compile @main.

    `machine_code=False` stops at the optimised LLVM IR: what the editor shows (the
    language server's build worker), without the memory and time of machine code.  Such
    a build cannot run; its kernels and cache entries have no address.  It keeps LLVM out
    of this process when children are allowed (`compile_jobs() > 1`): every kernel not
    cached is lowered in a child, even one alone, and the module texts are linked (and
    the entry optimised) in a child as they are asked for (`Lowered.isolated`), so a
    long-running process (the editor's build worker) never maps LLVM's optimiser, linker
    or code generator for it (parallel.py), and the JIT it is given stays unused.

    `disk` is the persistent cache behind `cache` (disk_cache.py), `options` the build's options that
    key it (the driver's opt_level and PassContext config).  Structurally equal
    functions are lowered once per build even without a `cache`.  `schedule_texts`: the
    caller will read every kernel's schedule text (`relaylens build --emit schedule`,
    `-o`), so the children that lower kernels make theirs, in parallel, as they go, and
    those of kernels found in a cache without theirs are made in children too and kept
    in the disk cache (`_make_texts`)."""
    jit = jit or JIT()
    cache = cache if cache is not None else LoweringCache()
    source_name = result.name
    lowered = Lowered({}, [], source_name=source_name, jit=jit,
                      isolated=not machine_code and compile_jobs() > 1)
    found: dict[str, LoweredFunction] = {}
    pending: list[_Job] = []  # neither cache has them: lowered below, several at once
    for func, name in result.fused_names.items():
        if name in found or any(job.name == name for job in pending):
            continue
        try:
            structural = structural_hash(func)  # once: each cache below keys by it
            entry = cache.get(name, func, structural)
            if entry is not None and machine_code and entry.engine is None:
                entry = _with_machine_code(entry, jit)  # cached by a build that stopped at LLVM IR
                cache.put(entry, structural)
            if entry is None:
                composed = lowered.compositions[func] = result.compositions.get(func) or compose(func)
                entry, job = _from_disk_or_job(func, name, source_name, jit, machine_code, disk, options, structural,
                                               composed)
                if job is not None:
                    pending.append(job)
                    continue
                cache.put(entry, structural)
            found[name] = entry
            if progress is not None:
                progress(name)
        except LoweringError as err:
            lowered.diagnostics.append(_diagnostic(name, func, err))
    early: list[Future] = []  # the executable, made in a thread while forked children lower the kernels

    def children_started() -> None:
        if machine_code and lowered.ok and result.module is not None:
            constants = {**{name: [data for _, data in fn.composed.constants] for name, fn in found.items()},
                         **{job.name: [data for _, data in job.composed.constants] for job in pending}}
            # deferred values (ir/deferred.py) among them: computed by the executable's thread, not here
            claims = {name: fn.writes_over for name, fn in found.items()}
            early.append(_in_thread(_early_executable, result, lowered, jit, constants, claims, pending, disk))

    for job, entry in _lower_jobs(pending, source_name, jit, machine_code, disk, progress, schedule_texts,
                                  lowered.isolated, children_started):
        if isinstance(entry, LoweringError):
            lowered.diagnostics.append(_diagnostic(job.name, job.func, entry))
            continue
        cache.put(entry, job.structural)
        found[job.name] = entry
    made = _outcome(early[0]) if early else None  # the thread joined before any other fork (_make_texts)
    if schedule_texts:
        _make_texts([f for f in found.values() if f.made_text is None], disk, options)
    lowered.functions = {name: found[name] for name in dict.fromkeys(result.fused_names.values()) if name in found}
    if lowered.ok and result.module is not None:
        try:
            exe = made if early else make_executable(result, lowered, jit, machine_code, disk=disk)
            if isinstance(exe, BaseException):
                raise exe
            if early and exe is not None and exe.writes_over != {n: f.writes_over for n, f in lowered.functions.items()}:
                exe = make_executable(result, lowered, jit, machine_code, disk=disk)  # a claim foreseen wrongly
            lowered.executable = exe
        except LoweringError as err:
            lowered.diagnostics.append(Diagnostic(err.message, err.span, Severity.ERROR, source=SOURCE))
    return lowered


def _early_executable(result, lowered: Lowered, jit, constants: dict[str, list[np.ndarray]],
                      claims: dict[str, int | None], pending: list[_Job], disk: DiskCache | None):
    """The executable made while forked children lower the `pending` kernels: their claims
    to write the output over an input (schedule/in_place.py), which the memory plan needs,
    from their schedules, made here (a pure function of the composition, as the children's;
    only a kernel that could claim it is scheduled).  A claim foreseen wrongly here makes
    `lower_build` plan again: `may_claim` reads the computes before any is inlined, so a
    claim through computes inlined into each other could pass it by."""
    for job in pending:
        claims[job.name] = _writes_over(job.composed, job.name)
    return make_executable(result, lowered, jit, True, constants, disk, claims)


def _writes_over(composed: Composed, name: str) -> int | None:
    """The schedule's claim (schedule/in_place.py) for `composed`, scheduled only when it
    could make one (`may_claim`)."""
    if not may_claim(composed.outputs, composed.placeholders):
        return None
    return default_schedule(composed.outputs, composed.placeholders, name).writes_over


def _in_thread(fn: Callable[..., Any], *args: Any) -> Future:
    """`fn(*args)` started in a thread of its own, which ends with it."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="relaylens-lower")
    try:
        return pool.submit(fn, *args)
    finally:
        pool.shutdown(wait=False)


def _outcome(future: Future) -> Any:
    """What the future's call returned, or the exception it raised."""
    try:
        return future.result()
    except BaseException as err:  # noqa: BLE001 - raised again where the result is used
        return err


def lower_function(func: Function, name: str, source_name: str, jit, machine_code: bool = True) -> LoweredFunction:
    """One primitive function through every stage to machine code (or to optimised LLVM IR)."""
    return _lower(func, name, source_name, jit, machine_code, compose(func))[0]


def schedule_text(module, name: str) -> str:
    """The schedule text of the fused function `name` of a built `module` (the last
    snapshot's), made now: what `LoweredFunction.schedule_text` of its build gives.
    KeyError when no primitive function of `module` has that name; LoweringError when it
    does not compose or schedule."""
    func = next((f for f, n in name_primitive_functions(module).items() if n == name), None)
    if func is None:
        raise KeyError(name)
    return _schedule(compose(func), name, func)[0].record_text()


def _lower(func: Function, name: str, source_name: str, jit, machine_code: bool,
           composed: Composed, load: bool = True) -> tuple[LoweredFunction, bytes]:
    """`lower_function` from its composition; with the object code of its machine code.
    Without `load` the code is not loaded here (no engine, no address): a worker sends
    the object code to the parent, which loads it."""
    schedule, prim = _schedule(composed, name, func)
    text = module_text(codegen.generate([prim], source_name))
    over = schedule.writes_over
    if not machine_code:
        return LoweredFunction(name, func, composed, (text, jit.optimize(text)), scheduled=(schedule, prim),
                               writes_over=over), b""
    if not load:
        optimized, obj = jit.optimize_to_object(text)
        return LoweredFunction(name, func, composed, (text, optimized), scheduled=(schedule, prim),
                               writes_over=over), obj
    optimized, engine, obj = jit.optimize_and_load(text)
    fn = LoweredFunction(name, func, composed, (text, optimized), engine=engine, scheduled=(schedule, prim),
                         writes_over=over)
    fn.address = jit.address(name)
    return fn, obj


def _schedule(composed: Composed, name: str, func: Function) -> tuple[Schedule, PrimFunc]:
    schedule = default_schedule(composed.outputs, composed.placeholders, name)
    prim = schedule.lower()
    prim.span = prim.span or func.span
    return schedule, prim


def _with_machine_code(entry: LoweredFunction, jit) -> LoweredFunction:
    """A kernel lowered to optimised LLVM IR only, with machine code made from that IR."""
    engine = jit.load(entry.optimized_ir)
    return dataclasses.replace(entry, engine=engine, address=jit.address(entry.name))


# --- the disk cache -------------------------------------------------------------------


@dataclass
class _Job:
    """A kernel to lower: in neither cache.  `key` is its disk-cache key (None without one)."""

    func: Function
    name: str
    composed: Composed
    key: str | None
    structural: int  # func's structural hash


def _from_disk_or_job(func: Function, name: str, source_name: str, jit, machine_code: bool,
                      disk: DiskCache | None, options: dict[str, Any] | None, structural: int,
                      composed: Composed) -> tuple[LoweredFunction | None, _Job | None]:
    """`func` (`composed`) from the disk cache if it holds it (machine code loaded, not
    compiled; debug information re-pointed at `func`'s lines), else the job of lowering it."""
    if disk is None:
        return None, _Job(func, name, composed, None, structural)
    key = cache_key(structural, _signature(composed), options or {})
    stored = disk.get(key)
    if stored is not None:
        try:
            return _from_disk(stored, func, name, source_name, composed, jit, machine_code, disk, key), None
        except (LoweringError, KeyError, TypeError, ValueError, UnicodeDecodeError):
            disk.corrupt += 1  # intact on disk but not usable here: lowered again, written over
    return None, _Job(func, name, composed, key, structural)


def _lower_jobs(jobs: list[_Job], source_name: str, jit, machine_code: bool, disk: DiskCache | None,
                progress: Callable[[str], None] | None, texts: bool = False, isolate: bool = False,
                started: Callable[[], None] | None = None):
    """(job, its LoweredFunction or the LoweringError that stopped it), as each finishes.

    Two or more jobs (one too, with `isolate`) are lowered in forked workers (parallel.py),
    each returning what the disk cache keeps of its kernel, loaded here as a disk hit is
    (no renaming, nothing moved: the same name and source).  A job a worker could not
    lower is lowered again here, so its error (or a bug's traceback) surfaces in this
    process.  With `texts` a worker sends its kernel's schedule text too (TEXT), which the
    disk cache then keeps.  `started` is called once the workers are forked and busy (not
    without workers: map_forked's)."""

    def in_worker(job: _Job) -> Entry | None:
        try:
            fn, obj = _lower(job.func, job.name, source_name, jit, machine_code, job.composed, load=False)
            stored = _disk_entry(fn, obj)
            if texts:
                stored.blobs[TEXT] = fn.schedule_text.encode()
            return stored
        except Exception:  # reported by the parent, which lowers this one again
            return None

    workers = compile_jobs() if len(jobs) > 1 else 1
    forked = workers > 1 or isolate
    if workers > 1:
        jobs = sorted(jobs, key=_size, reverse=True)  # the largest first (`_size`), equal ones in build order
    results = map_forked(in_worker, jobs, workers, isolate, started) if forked else ((i, None) for i in range(len(jobs)))
    for index, stored in results:
        job = jobs[index]
        try:
            if stored is None:
                fn, obj = _lower(job.func, job.name, source_name, jit, machine_code, job.composed)
                stored = _disk_entry(fn, obj) if disk is not None and job.key is not None else None
            else:
                fn = _from_disk(stored, job.func, job.name, source_name, job.composed, jit, machine_code, disk,
                                job.key)
        except LoweringError as err:
            yield job, err
            continue
        if disk is not None and job.key is not None and stored is not None:
            disk.put(job.key, stored)
        if progress is not None:
            progress(job.name)
        yield job, fn


def _size(job: _Job) -> int:
    """How much lowering a job is likely to take: the expression nodes of its computes.
    The workers take jobs in order, each its next as it finishes one, so a large job taken
    last leaves the other worker idle until it ends: ResNet-50's Winograd kernels (1,392
    and 392 nodes against 9-72 for the others) took 0.2-0.9 CPU s each of a build's 8,
    the fourth of them the 26th of 29 jobs, which one worker was still lowering 0.3 s
    after the other had finished."""
    return sum(len(te.nodes(t.op.body)) for t in te.post_order(job.composed.outputs) if t.op is not None)


def _make_texts(fns: list[LoweredFunction], disk: DiskCache | None, options: dict[str, Any] | None) -> None:
    """Give kernels found in a cache their schedule texts, made several at once in forked
    children (parallel.py), for a caller that reads them all; each is added to the
    kernel's disk-cache entry (under the entry's kernel name), so the next such build
    reads it."""

    def text(fn: LoweredFunction) -> str | None:
        try:
            return fn.schedule_text
        except Exception:  # made again when read, in this process, where the error surfaces
            return None

    for index, made in map_forked(text, fns, compile_jobs()):
        fn = fns[index]
        fn.made_text = made
        key = cache_key(structural_hash(fn.func), _signature(fn.composed), options or {}) if disk is not None else None
        stored = disk.get(key) if key is not None and made is not None else None
        if stored is not None:
            named = _named(made, fn.name, stored.meta["name"]).encode()
            disk.put(key, Entry(stored.meta, {**stored.blobs, TEXT: named}))


def _diagnostic(name: str, func: Function, err: LoweringError) -> Diagnostic:
    return Diagnostic(f"{name}: {err.message}", err.span or func.span, Severity.ERROR, source=SOURCE)


def _signature(composed: Composed) -> list:
    """The kernel's parameters and results, as the key and the runtime see them (two
    structurally equal functions may share a constant in one and not in the other)."""
    return [[[list(t.shape), str(t.dtype)] for t in group]
            for group in (composed.inputs, [t for t, _ in composed.constants], composed.outputs)]


def _locations(func: Function) -> list:
    """The Relay (line, column) of every node of `func`, in the order structural equality pairs them."""
    return [source_location(node.span) for node in post_order(func)]


def _disk_entry(fn: LoweredFunction, obj: bytes) -> Entry:
    """What the disk cache keeps of `fn` (and a worker sends back): its LLVM texts, object
    code, schedule's number of steps and the input its output may be written over
    (schedule/in_place.py, for the memory plan); not its schedule text (TEXT: made when read)."""
    meta = {"name": fn.name, "locations": _locations(fn.func), "steps": fn.schedule_steps,
            "writes_over": fn.writes_over}
    blobs = {"llvm_ir": fn.llvm_ir.encode(), "optimized_ir": fn.optimized_ir.encode()}
    if obj:
        blobs["object"] = obj
    return Entry(meta, blobs)


def _from_disk(stored: Entry, func: Function, name: str, source_name: str, composed: Composed, jit,
               machine_code: bool, disk: DiskCache, key: str) -> LoweredFunction:
    meta, blobs = stored.meta, stored.blobs
    old = meta["name"]
    locations = [tuple(x) if x else None for x in meta["locations"]]
    if "llvm_ir" not in blobs or "optimized_ir" not in blobs:
        raise KeyError("llvm_ir")

    def texts() -> tuple[str, str]:  # when first read (LoweredFunction)
        renamed = [_renamed(blobs[k].decode(), old, name) for k in ("llvm_ir", "optimized_ir")]
        directory, filename = os.path.split(source_name)
        renamed = [refile(t, filename or source_name, directory or ".") for t in renamed]
        llvm_ir, optimized_ir = _moved(renamed, locations, func)
        return llvm_ir, optimized_ir

    kept = blobs.get(TEXT)  # only once a build that read every text made it (`_make_texts`)
    fn = LoweredFunction(name, func, composed, texts, steps=int(meta["steps"]),
                         made_text=_named(kept.decode(), old, name) if kept is not None else None,
                         writes_over=meta["writes_over"])
    if not machine_code:
        return fn
    if "object" in blobs:
        fn.engine = jit.load_object(blobs["object"], {name: old})
    else:  # written by a build that stopped at LLVM IR: compile its IR, and keep the code
        fn.engine, obj = jit.load_keeping_object(fn.optimized_ir)
        disk.put(key, Entry(meta, {**blobs, "object": obj}))
    fn.address = jit.address(name)
    return fn


def _relocated(entry: LoweredFunction, func: Function, name: str) -> LoweredFunction:
    """`entry` for a structurally equal `func` elsewhere in the source, under `name`: the
    same machine code; LLVM texts renamed and their debug information moved to `func`'s
    expressions (paired in evaluation order, as structural equality pairs them)."""
    renamed = [_renamed(text, entry.name, name) for text in (entry.llvm_ir, entry.optimized_ir)]
    llvm_ir, optimized_ir = _moved(renamed, _locations(entry.func), func)
    made = _named(entry.made_text, entry.name, name) if entry.made_text is not None else None
    return dataclasses.replace(entry, name=name, func=func, texts=(llvm_ir, optimized_ir), made_text=made)


def _renamed(text: str, old: str, new: str) -> str:
    return text if old == new else text.replace(f'@{old}', f'@{new}').replace(f'"{old}', f'"{new}')


def _named(schedule_text: str, old: str, new: str) -> str:
    """A schedule's text (it names its function) for the function renamed `old` → `new`."""
    return schedule_text if old == new else re.sub(rf"\b{re.escape(old)}\b", new, schedule_text)


def _moved(texts: list[str], old_locations: list, func: Function) -> list[str]:
    """`texts` with the debug locations of the nodes at `old_locations` moved to `func`'s."""
    moved: dict[tuple[int, int], tuple[int, int]] = {}
    for a, node in zip(old_locations, post_order(func)):
        b = source_location(node.span)
        if a is not None and b is not None and not isinstance(node, Var):
            moved.setdefault(a, b)  # (a parameter emits no location, and may have shared a call's)
    if all(a == b for a, b in moved.items()):  # nothing moved (the same file built again)
        return texts
    return relocate(texts, moved)


def _link(texts: list[str]) -> str:
    """Several module texts as one module (LLVM's linker: declarations meet definitions).

    In a context of its own, freed with the module: what LLVM uniques in a context (types,
    constants, debug metadata) lives as long as the context, so in the global one it
    would stay for the life of the process (tens of MB a model, in the editor's worker)."""
    if not texts:
        return ""
    context = llvm.create_context()
    first = llvm.parse_assembly(texts[0], context=context)
    for text in texts[1:]:
        first.link_in(llvm.parse_assembly(text, context=context))
    return str(first)
