"""The JIT: optimise generated LLVM IR for the host and run it on numpy arrays.

    jit = JIT()
    optimized = jit.optimize(str(codegen.llvm.generate(funcs, "model.relay")))
    jit.load(optimized)
    add = jit.kernel(funcs[0])          # a Kernel: add(x, y) -> output array
    out = add(x, y)

Optimisation is LLVM's O3 pipeline (new pass manager) for the host CPU and its features
(`target.OPTIONS`; `target.target_id()` names the target, for the on-disk kernel cache).  Each `load`
makes one MCJIT engine (`load_keeping_object` also returns the object code MCJIT made,
and `load_object` loads such object code again without compiling anything); the JIT
keeps every engine alive until it is dropped itself (a long-running process frees
machine code by dropping the JIT), and a `Kernel` keeps its JIT alive.  `optimize_and_load`
does both on one parsed module (the lowering pipeline's way: the optimised text printed
for the record, not parsed again).  Parallel loops
run on libgomp's thread team, `num_threads` wide (RELAYLENS_NUM_THREADS, else the number
of CPUs), through the module's `relaylens_num_threads` global, which `load` (and
`load_object`) sets.

At 2 threads or more an inference is one OpenMP region (codegen/team.py): the AOT entry
opens it, its kernels' parallel loops run in it as jobs, and its threads wait for the next
job inside it, polling with a PAUSE and a sched_yield every 64 polls, sleeping only after
about 1 ms without one; `load` points each module's `relaylens_team_slot` at `_TEAM_SLOT`.
So the spin that carries a thread from one kernel's loop to the next is bounded by the
inference, not by a count decided per process, and the calling thread never waits for a
thread that has not joined a loop (it takes that thread's pieces, codegen/shares.py).
While the region lasts the team's other threads may not run on the calling thread's CPU
(codegen/team_cpus.py; `team_cpus`, RELAYLENS_TEAM_CPUS=any to leave them anywhere):
traced, Linux had woken libgomp's worker on the caller's CPU, behind it, in most
inferences.  Each call after a 0.1 s pause, kept off against anywhere alternated in one
process (30 pairs, load 3.6-5.0 from other work, `bench/after_pause.py`'s models): the
GPT-2 block 0.71x, back to back 0.79x; MobileNet v2 0.84x and 0.76x.
Measured on 2 shared cores (load 10-14 from other work, `bench/run.py --models
mobilenet,gpt2,resnet50 --runs 20` at 2 threads, paired ratio against onnxruntime, this
and the previous commit alternated, 3 processes each): with our and onnxruntime's threads
at real-time priority (as on idle cores), libgomp passive as the load average made it,
MobileNet v2 1.26-1.30x -> 0.78-0.80x, the GPT-2 block 0.94-0.97x -> 0.80-0.82x,
ResNet-50 0.98-1.00x -> 0.83x (medians alike); with GOMP_SPINCOUNT=2000 set, 0.81-0.82x
-> 0.79-0.86x, 0.82x -> 0.81-0.86x, 0.83-0.85x -> 0.83-0.84x (the spin then covered the
gaps: at this load no virtual CPU is idle long enough to wake slowly).  Counted under
strace, MobileNet v2 after 0.1 s pauses slept on a futex 110 times an inference before
and 2 now.  At ordinary priority under that load, a small model (two 64x256 dense layers
and a softmax) 0.31-0.33 -> 0.25-0.28 ms an inference back to back and 0.33-0.35 ->
0.31-0.34 after a pause, its CPU time 0.115-0.118 -> 0.099-0.103 ms; the same with
GOMP_SPINCOUNT=2000 (a process that loaded libgomp on an idle machine, which then got
busy) 1.39-1.50 -> 0.51-0.62 ms, with 30,000 15.3-15.4 -> 4.2 ms.

How libgomp's threads wait between two inferences (and between the loops of a kernel
called on its own, or of the interpreter's kernels) is decided once, as libgomp loads
(`GOMP_SPINCOUNT`, set by `spin_count` unless the environment sets it or
`OMP_WAIT_POLICY`): when the 1-minute load average leaves a core to spare they spin
SPIN_COUNT times and then sleep, else they sleep at once (a passive wait).  What follows
was measured before the team, when every parallel loop was a region of its own.

libgomp's own default spins up to 300,000 times at every barrier, and on a machine busier
than its cores a spinning thread spends the time slice that the thread it waits for
needs.  Measured on 2 shared cores at load 8-9, `bench/run.py` at 2 threads, onnxruntime
beside in the same run: MobileNet v2 1,012 ms spinning against 70 ms passive (onnxruntime
62-82 ms), the GPT-2 block 691 against 98 ms (onnxruntime 102-230 ms); `GOMP_SPINCOUNT=10000`
141 ms.  A passive wait costs a futex wake-up per parallel loop instead (two threads took
10-30 us longer than their work at load 5-7: the schedules fork only for work worth it,
schedule/conv_tile_end.py, and the threads that run take the pieces of one that wakes
late, codegen/shares.py), and MobileNet v2 opens about 45 regions an inference.  A spin
of 2,000 (about 60 us: a spin is a load and a PAUSE, 28-32 ns on this AMD EPYC) covers
the gap between one kernel's region and the next and the wait for the other thread at a
region's end, so most regions start and end without a wake-up.  Measured with
bench/run.py's paired ratio (ours ÷ onnxruntime, each call after a 0.1 s pause), passive
against a spin of 2,000 alternated in one run, 3 processes each, with our and
onnxruntime's threads at real-time priority (as on a machine with idle cores; it was at
load 7-8 from other work): MobileNet v2 1.17-1.21x → 1.02-1.05x, the GPT-2 block
0.95-1.02x → 0.94-0.97x, the CPU time the same (MobileNet 21.8-22.1 ms an inference
against 20.9-23.4).  At ordinary priority under that load the spins time out (the other
thread is descheduled): MobileNet v2 0.54-0.58x → 0.76-0.86x, its CPU time 15.7-15.9 →
22.6-23.4 ms (the GPT-2 block 0.46-0.69x → 0.53-0.57x, two processes each), hence no
spin when the load leaves no core to spare.  Tried and not taken: 30,000 spins (about 1
ms).  A thread that slept through a pause of 0.1 s (a request finding the machine idle)
wakes slowly at every region of the next inference, which a spin long enough to carry it
from one kernel's region to the next avoids (h-layers found it): idle machine (load 1.0;
each spin count in its own process, 25 inferences after each pause, medians, two
rounds), the GPT-2 block at 2 threads after a 0.1 s pause 29.3 / 30.1 ms with 2,000
spins, 17.2 / 15.9 with 30,000; MobileNet v2 17.6 / 18.0 and 12.3 / 8.8; back to back
the same.  But the spin count is decided once, from a load average that trails the
load: a process that started just before the machine got busy (a test suite starting
beside it) then spun 1 ms at every barrier while the thread it waited for was
descheduled, a small model's inference at 2 threads 2.1-8.1 ms with 30,000 against
0.67-0.92 with 2,000 and 0.32-0.41 passive (four rounds, load 3).
`OMP_WAIT_POLICY=ACTIVE` in the environment spins without bound, `OMP_WAIT_POLICY=PASSIVE`
not at all.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import sys
import tempfile
import threading
from typing import Any

import llvmlite.ir as ir
import numpy as np

from ...lazy_modules import llvm  # LLVM loaded when first run: in the editor's worker, never
from ...host import host
from ...support import aligned_empty
from ..codegen.ir_text import module_text
from ..codegen.llvm import BUFFER_ALIGN, NUM_THREADS_GLOBAL, generate
from ..codegen.team import SLOT_WORDS, TEAM_SLOT_GLOBAL
from ..codegen.team_cpus import CPU_SET_WORDS, SLOT_CPUS, SLOT_MASTER, SLOT_WORTH, WORTH_NS
from ..errors import LoweringError
from ..schedule.loopnest import PrimFunc
from .target import OPTIONS

_ready = False
_STDERR = threading.Lock()  # one optimiser run at a time redirects file descriptor 2
_TEAM_SLOT = (ctypes.c_void_p * SLOT_WORDS)()  # the running inference's team, its thread, the trace (codegen/team.py)
_ALLOWED_CPUS = (ctypes.c_uint64 * CPU_SET_WORDS)()  # the CPUs the process may run on (codegen/team_cpus.py)
SPIN_COUNT = 2000  # libgomp's spins (a PAUSE and a load, ~30 ns here) before a waiting thread sleeps


def _initialize() -> None:
    """Targets, libgomp and libgcc_s, once per process.  libgcc_s holds the routines LLVM
    calls for what the CPU has no instruction for (`__truncdfhf2`, a double rounded to
    float16, without AVX512-FP16): unless something else loaded it into the process first,
    such a call would jump to address 0."""
    global _ready
    if _ready:
        return
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(spin_count())  # read once, as libgomp loads (module doc)
    team_cpus(_team_cpus_wanted())
    for name, soname, why in (("gomp", "libgomp.so.1", "install libgomp1 to run parallel loops"),
                              ("gcc_s", "libgcc_s.so.1", "install libgcc-s1 to run float16 code")):
        _load_library(name, soname, why)
    _ready = True


def _load_library(name: str, soname: str, why: str) -> None:
    """The library by its usual soname, which the dynamic loader finds on the system's
    paths; else where ctypes finds `name` (which runs `ldconfig -p` in a child process,
    10-20 ms: every process that loads a kernel paid it twice)."""
    try:
        llvm.load_library_permanently(soname)
        return
    except RuntimeError:
        path = ctypes.util.find_library(name) or soname
    try:
        llvm.load_library_permanently(path)
    except RuntimeError as err:
        raise LoweringError(f"the runtime library {path} cannot be loaded: {err}; {why}") from None


def _team_cpus_wanted() -> bool:
    """RELAYLENS_TEAM_CPUS=any leaves the team's threads wherever Linux puts them (for
    comparison); by default they keep off the calling thread's CPU (codegen/team_cpus.py)."""
    return os.environ.get("RELAYLENS_TEAM_CPUS", "").strip().lower() != "any"


def team_cpus(keep_off_caller: bool, worth_ns: int = WORTH_NS) -> None:
    """Whether an inference's team keeps its other threads off the calling thread's CPU
    (codegen/team_cpus.py), process-wide: the slot's CPU set is the CPUs this process
    may run on when it may run on more than one, else null (nothing restricted); and
    from what length (ns) of the last team inference."""
    _TEAM_SLOT[SLOT_WORTH] = worth_ns
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (OSError, AttributeError):  # not Linux
        allowed = []
    allowed = [c for c in allowed if c < 64 * CPU_SET_WORDS]
    for k in range(CPU_SET_WORDS):
        _ALLOWED_CPUS[k] = sum(1 << (c % 64) for c in allowed if c // 64 == k)
    on = keep_off_caller and len(allowed) > 1
    _TEAM_SLOT[SLOT_CPUS] = ctypes.addressof(_ALLOWED_CPUS) if on else None


def _forget_team_threads() -> None:
    """In a forked child: the slot's thread ids name the parent's libgomp threads, and the
    child's calling thread has the parent's pthread_self, so drop the ids' master (the
    child's first team records its own)."""
    _TEAM_SLOT[SLOT_MASTER] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_team_threads)


def spin_count() -> int:
    """How long libgomp's threads spin before they sleep, decided as libgomp loads (module
    doc): SPIN_COUNT when the 1-minute load average is below the CPUs this process may run
    on (a core to spare), else 0 (a passive wait); 0 when the load is unknown."""
    try:
        load = os.getloadavg()[0]
        cpus = len(os.sched_getaffinity(0))
    except (OSError, AttributeError):  # no load average, or no affinity (not Linux)
        return 0
    return SPIN_COUNT if load < cpus else 0


@contextlib.contextmanager
def _quiet_missed_vectorization():
    """LLVM writes "loop not vectorized" to the process's stderr for a loop our schedule
    asked to vectorise that O3 could not (tiny or guarded tiles): expected, and not the
    user's concern.  Capture file descriptor 2 while the optimiser runs and pass every
    other line through.  One thread of the process at a time (`_STDERR`): file descriptor 2
    is the process's, whichever JIT optimises."""
    with _STDERR:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no real stderr (embedded): nothing to filter
            yield
            return
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                captured.seek(0)
                for line in captured.read().decode(errors="replace").splitlines(keepends=True):
                    if "loop not vectorized" not in line:
                        sys.stderr.write(line)


def default_num_threads() -> int:
    """RELAYLENS_NUM_THREADS if set (a positive integer), else the number of CPUs."""
    text = os.environ.get("RELAYLENS_NUM_THREADS", "").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"RELAYLENS_NUM_THREADS must be a positive integer, not {text!r}")
        return value
    return os.cpu_count() or 1


def _address(a: np.ndarray) -> int | None:
    """The address of `a`'s data when it is C-contiguous and 64-byte aligned, else None.
    A writeable array's through `ctypes.c_char.from_buffer` (which refuses one that is not
    contiguous, or empty), a read-only one's through `ctypes.data`."""
    if a.flags.writeable and a.size:
        try:
            address = ctypes.addressof(ctypes.c_char.from_buffer(a))
        except (TypeError, ValueError, BufferError):
            return None
    elif a.flags.c_contiguous:
        address = a.ctypes.data
    else:
        return None
    return address if address % BUFFER_ALIGN == 0 else None


def _one_thread_at_a_time(method):
    """`method` holding its JIT's lock: LLVM's global context, into which engines' modules
    are parsed, is not safe across threads, and a build makes its entry's code in a thread
    while the kernels the forked children made are loaded here (pipeline.py)."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


class JIT:
    """Host target machine, O3 optimisation, MCJIT engines; one thread in LLVM at a time
    (`_one_thread_at_a_time`)."""

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = num_threads or default_num_threads()
        self._lock = threading.RLock()
        # each engine, the names it answers for, and their symbols where they differ
        self._engines: list[tuple[llvm.ExecutionEngine, set[str], dict[str, str]]] = []
        self._shared: tuple[llvm.ExecutionEngine, set[str], dict[str, str], set[str]] | None = None  # `load_object`'s

    @functools.cached_property
    @_one_thread_at_a_time
    def target_machine(self) -> llvm.TargetMachine:
        """The host's, made on first use, with LLVM's native target (`_initialize`): a JIT
        never asked to parse, optimise or load anything (a build that stops at LLVM IR with
        its LLVM work in forked children, pipeline.py) maps none of LLVM's code generator."""
        _initialize()
        return self._target_machine()

    @staticmethod
    def _target_machine() -> llvm.TargetMachine:
        target = llvm.Target.from_default_triple()
        return target.create_target_machine(cpu=host().cpu,
                                            features=host().features, opt=3, jit=True)

    @_one_thread_at_a_time
    def parse(self, text: str | ir.Module, context: llvm.ContextRef | None = None) -> llvm.ModuleRef:
        """The module parsed and verified, for the host triple and data layout; in
        `context` (None: LLVM's global context, which a module given to an engine needs:
        the engine outlives the Python objects)."""
        try:
            mod = llvm.parse_assembly(module_text(text) if isinstance(text, ir.Module) else str(text),
                                      context=context)
            mod.verify()
        except RuntimeError as err:
            raise LoweringError(f"LLVM rejected the generated IR: {str(err).strip()}") from None
        mod.triple = self.target_machine.triple
        mod.data_layout = str(self.target_machine.target_data)
        return mod

    @_one_thread_at_a_time
    def optimize(self, text: str | ir.Module) -> str:
        """The O3-optimised text of a module (verified first).  Parsed in a context of its
        own, freed with the module (pipeline.py `_link` says why)."""
        mod = self.parse(text, llvm.create_context())
        self.run_o3(mod)
        return str(mod)

    @_one_thread_at_a_time
    def run_o3(self, mod: llvm.ModuleRef) -> None:
        """Optimise a parsed module in place: LLVM's O3 pipeline with `OPTIONS`."""
        options = llvm.create_pipeline_tuning_options(speed_level=OPTIONS["speed_level"])
        options.loop_vectorization = OPTIONS["loop_vectorization"]
        options.slp_vectorization = OPTIONS["slp_vectorization"]
        options.loop_unrolling = OPTIONS["loop_unrolling"]
        builder = llvm.create_pass_builder(self.target_machine, options)
        with _quiet_missed_vectorization():
            builder.getModulePassManager().run(mod, builder)

    @_one_thread_at_a_time
    def optimize_and_load(self, text: str | ir.Module) -> tuple[str, llvm.ExecutionEngine, bytes]:
        """`optimize` then `load_keeping_object` on one parsed module: the optimised text,
        the engine and its object code, without parsing the optimised text again (a
        parse and verification per kernel, 2-3% of a cold ResNet-50 build)."""
        mod = self.parse(text)
        self.run_o3(mod)
        optimized = str(mod)
        return (optimized, *self.load_module(mod))

    @_one_thread_at_a_time
    def optimize_to_object(self, text: str | ir.Module) -> tuple[str, bytes]:
        """`optimize_and_load` without the engine: the optimised text and the object code,
        for a process that only sends them on (a forked worker, pipeline.py).  The target
        machine writes the very bytes MCJIT makes (every one of ResNet-50's 29 kernels),
        without an engine's set-up, relocations and symbol look-ups: an engine cost 4-6 ms
        a kernel beyond its code generation.  Parsed in a context of its own (`optimize`)."""
        mod = self.parse(text, llvm.create_context())
        self.run_o3(mod)
        return str(mod), self.target_machine.emit_object(mod)

    def load(self, text: str | ir.Module) -> llvm.ExecutionEngine:
        """Compile a (usually optimised) module to machine code in a new engine (which
        the JIT keeps alive; returned for callers that hold their code's engine)."""
        return self.load_keeping_object(text)[0]

    @_one_thread_at_a_time
    def load_keeping_object(self, text: str | ir.Module) -> tuple[llvm.ExecutionEngine, bytes]:
        """`load`, and the object code MCJIT made for the module (what `load_object` takes)."""
        return self.load_module(self.parse(text))

    @_one_thread_at_a_time
    def load_module(self, mod: llvm.ModuleRef) -> tuple[llvm.ExecutionEngine, bytes]:
        """`load_keeping_object` of a module parsed in LLVM's global context (the engine
        takes it over)."""
        defined = {f.name for f in mod.functions if not f.is_declaration}
        has_threads = any(g.name in (NUM_THREADS_GLOBAL, TEAM_SLOT_GLOBAL) for g in mod.global_variables)
        engine = llvm.create_mcjit_compiler(mod, self._target_machine())
        objects: list[bytes] = []
        engine.set_object_cache(notify_func=lambda _module, data: objects.append(bytes(data)))
        engine.finalize_object()
        self._finish(engine, defined, has_threads)
        return engine, objects[0] if objects else b""

    @_one_thread_at_a_time
    def load_object(self, data: bytes, names: dict[str, str]) -> llvm.ExecutionEngine:
        """Object code made by `load_keeping_object` (of this target), loaded without
        compiling: `names` maps each name `address` will be asked for to its symbol in
        the object (a kernel cached under another name).  A symbol the object lacks raises
        `LoweringError`.  Damaged object code may crash LLVM: the caller checks it first
        (the disk cache's checksum).

        Objects share one engine while their symbols differ (a model built before loads
        all its kernels so: an engine of its own costs an object 4 ms, its own target
        machine, memory and libgomp's symbols looked up again; added to a shared one,
        0.5 ms).  An object defining a symbol the shared engine has goes to a new shared
        engine: MCJIT would let the newer definition shadow the older without a word.
        The number-of-threads global is weak, so the objects of an engine share one."""
        symbols = set(names.values())
        if self._shared is None or symbols & self._shared[3]:
            self._shared = (llvm.create_mcjit_compiler(self.parse(""), self._target_machine()), set(), {}, set())
        engine, defined, renamed, taken = self._shared
        try:
            engine.add_object_file(llvm.ObjectFileRef.from_data(data))
            engine.finalize_object()
        except RuntimeError as err:
            self._shared = None  # an engine a load failed in takes no more objects
            raise LoweringError(f"unreadable object code: {str(err).strip()}") from None
        for symbol in symbols:
            if not engine.get_function_address(symbol):
                raise LoweringError(f"the object code defines no {symbol}")
        taken |= symbols
        defined |= set(names)
        for name, symbol in names.items():
            if name == symbol:
                renamed.pop(name, None)
            else:
                renamed[name] = symbol
        self._engines = [e for e in self._engines if e[0] is not engine]  # the latest load wins: at the end
        self._finish(engine, defined, True, renamed)
        return engine

    def _finish(self, engine: llvm.ExecutionEngine, defined: set[str], has_threads: bool,
                symbols: dict[str, str] | None = None) -> None:
        if has_threads:  # the globals a module's parallel loops and entry read (set again in a shared engine)
            address = engine.get_global_value_address(NUM_THREADS_GLOBAL)
            if address:
                ctypes.c_int32.from_address(address).value = self.num_threads
            address = engine.get_global_value_address(TEAM_SLOT_GLOBAL)
            if address:
                ctypes.c_void_p.from_address(address).value = ctypes.addressof(_TEAM_SLOT)
        self._engines.append((engine, defined, symbols or {}))

    @_one_thread_at_a_time
    def address(self, name: str) -> int:
        """The machine-code address of a loaded function (the latest load wins)."""
        for engine, defined, symbols in reversed(self._engines):
            if name in defined:
                return engine.get_function_address(symbols.get(name, name))
        raise KeyError(f"no loaded function named {name}")

    def kernel(self, func: PrimFunc) -> Kernel:
        """A callable for a loaded PrimFunc."""
        return Kernel(self, func, self.address(func.name))

    def compile(self, funcs: list[PrimFunc], source_name: str) -> dict[str, Kernel]:
        """Generate, optimise and load `funcs`; their kernels by name."""
        self.load(self.optimize(generate(funcs, source_name)))
        return {f.name: self.kernel(f) for f in funcs}


class Kernel:
    """A compiled PrimFunc called with numpy arrays: `kernel(*inputs, out=None)` returns
    the output (a tuple for several).  Inputs must have the parameter's shape and dtype;
    ones that are not C-contiguous and 64-byte aligned are copied.  Given outputs (`out`)
    must match exactly and be contiguous, aligned and writeable.

    A call checks each array and takes its address once (`_address`): the checks against
    dtypes and shapes made when the kernel was, and the address of a writeable array
    through `ctypes.c_char.from_buffer` (which also checks that it is C-contiguous),
    half the time of `ndarray.ctypes.data`, which was taken twice, beside a dtype made from
    its name, per array and call.  Measured (1 thread, CPU time, alternated with the base
    in one run, 30 pairs, load 8): a call of softmax's kernel over 1x12x128x128 0.914x its
    time, of attention's two batch_matmuls 0.924x and 0.947x (the kernels alone 1.00x)."""

    def __init__(self, jit: JIT, func: PrimFunc, address: int) -> None:
        self.jit = jit  # keeps the engines alive
        self.func = func
        self._cfunc = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(func.params))(address)
        self._inputs = [(np.dtype(b.dtype), tuple(b.shape)) for b in func.inputs]
        self._outputs = [(np.dtype(b.dtype), tuple(b.shape)) for b in func.outputs]

    @property
    def name(self) -> str:
        return self.func.name

    def _check(self, array: Any, buffer: Any, expected: tuple[np.dtype, tuple[int, ...]], role: str) -> np.ndarray:
        a = array if type(array) is np.ndarray else np.asarray(array)
        dtype, shape = expected
        if a.dtype != dtype:
            raise ValueError(f"{self.name}: {role} {buffer.name} must be {buffer.dtype}, not {a.dtype}")
        if a.shape != shape:
            raise ValueError(f"{self.name}: {role} {buffer.name} must have shape {shape}, not {a.shape}")
        return a

    def __call__(self, *inputs: Any, out: Any = None) -> np.ndarray | tuple[np.ndarray, ...]:
        func = self.func
        if len(inputs) != len(func.inputs):
            raise ValueError(f"{self.name} takes {len(func.inputs)} inputs, got {len(inputs)}")
        arrays, addresses = [], []
        for value, buf, expected in zip(inputs, func.inputs, self._inputs):
            a = self._check(value, buf, expected, "input")
            address = _address(a)
            if address is None:
                a = aligned_empty(a.shape, a.dtype)
                a[...] = value
                address = _address(a)
            arrays.append(a)  # copies kept alive through the call
            addresses.append(address)
        if out is None:
            outputs = [aligned_empty(shape, dtype) for dtype, shape in self._outputs]
        else:
            outputs = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(outputs) != len(func.outputs):
                raise ValueError(f"{self.name} has {len(func.outputs)} outputs, got {len(outputs)}")
        for a, buf, expected in zip(outputs, func.outputs, self._outputs):
            address = None
            if out is not None:
                self._check(a, buf, expected, "output")
                if isinstance(a, np.ndarray) and a.flags.writeable:
                    address = _address(a)
                if address is None:
                    raise ValueError(f"{self.name}: output {buf.name} must be a writeable C-contiguous array "
                                     f"aligned to {BUFFER_ALIGN} bytes (see aligned_empty)")
            else:
                address = _address(a)
            addresses.append(address)
        self._cfunc(*addresses)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)
