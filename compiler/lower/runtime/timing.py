"""Timing every kernel call of a run, for the profiler (compiler/profile/).

    timed = TimedEntry(executable, jit)        # AOT: the entry with a clock around each call
    value, times = timed.run(x)                 # times[k] = (start, end) ns of plan step k

    value, calls = timed_interpret(executable, x)   # @main with control flow: the interpreter
    # calls = [KernelTime(kernel, func, start, end), ...] in call order

`TimedEntry` is a second AOT entry (aot.py's `entry_module` with a probe), named
`ENTRY_TIMED`, that reads CLOCK_MONOTONIC through `clock_gettime` (libc, resolved by the
JIT in the process; the vDSO makes it ~20-40 ns) just before and just after each kernel
call, and stores the two readings, in nanoseconds, in a buffer of 2 × steps int64s passed
as its sixth argument.  The pointer loads between calls are outside the timed region, so
the sum of kernel times is a little less than the run (the profiler reports both).  No
Python runs between kernels: small kernels are timed as they run in production.

In interpreter mode (a @main with control flow has no entry) each compiled kernel is timed
around its native call only, after its arguments are converted; that time includes the
ctypes call (about a microsecond), which the profiler states.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from llvmlite import ir

from ...interpreter import Interpreter
from ...ir.expr import Function
from .aot import ENTRY, entry_module
from .executable import Executable, _KernelCall

ENTRY_TIMED = ENTRY + "_timed"
CLOCK_MONOTONIC = 1  # Linux's clockid_t

_I32, _I64 = ir.IntType(32), ir.IntType(64)
_TIMESPEC = ir.LiteralStructType([_I64, _I64])
_VOIDP = ctypes.c_void_p


class ClockProbe:
    """aot.EntryProbe: `times[2k]` and `times[2k + 1]` get the monotonic clock, in ns,
    before and after the call of step k."""

    params = [_I64.as_pointer()]

    def start(self, builder: ir.IRBuilder, args: list[ir.Argument]) -> None:
        module = builder.module
        self.times = args[0]
        self.times.name = "times"
        self.times.add_attribute("noalias")
        clock = ir.FunctionType(_I32, [_I32, _TIMESPEC.as_pointer()])
        self.clock = module.globals.get("clock_gettime") or ir.Function(module, clock, "clock_gettime")
        self.spec = builder.alloca(_TIMESPEC, name="now")

    def _stamp(self, builder: ir.IRBuilder, slot: int) -> None:
        builder.call(self.clock, [ir.Constant(_I32, CLOCK_MONOTONIC), self.spec])
        zero = ir.Constant(_I32, 0)
        seconds = builder.load(builder.gep(self.spec, [zero, zero], inbounds=True))
        nanos = builder.load(builder.gep(self.spec, [zero, ir.Constant(_I32, 1)], inbounds=True))
        ns = builder.add(builder.mul(seconds, ir.Constant(_I64, 1_000_000_000)), nanos)
        builder.store(ns, builder.gep(self.times, [ir.Constant(_I64, slot)], inbounds=True))

    def before(self, builder: ir.IRBuilder, k: int) -> None:
        self._stamp(builder, 2 * k)

    def after(self, builder: ir.IRBuilder, k: int) -> None:
        self._stamp(builder, 2 * k + 1)


class TimedEntry:
    """The timed AOT entry of an executable in AOT mode, compiled once by `jit` (the
    build's, `Lowered.jit`, which keeps its machine code alive)."""

    def __init__(self, executable: Executable, jit) -> None:
        if executable.plan is None:
            raise ValueError(f"@main runs in the interpreter ({executable.why_interpreted}): "
                             "use timed_interpret")
        self.executable = executable
        self.steps = len(executable.plan.steps)
        self.ir = str(entry_module(executable.plan, ENTRY_TIMED, probe=ClockProbe()))
        self._engine = jit.load(jit.optimize(self.ir))
        address = jit.address(ENTRY_TIMED)
        self._entry = ctypes.CFUNCTYPE(None, *[_VOIDP] * 6)(address)
        self._times = np.zeros((max(self.steps, 1), 2), dtype=np.int64)

    def run(self, *args: Any) -> tuple[Any, np.ndarray]:
        """@main's value, and (steps, 2) int64 start and end times in ns (CLOCK_MONOTONIC,
        the clock of Python's time.monotonic_ns) of each plan step."""
        self._times[...] = 0
        value = self.executable.run_entry(self._entry, args, self._times.ctypes.data)
        return value, self._times[: self.steps].copy()


@dataclass(frozen=True)
class KernelTime:
    kernel: str  # the fused function's global name
    func: Function  # the primitive function called (its own spans)
    start: int  # ns, time.monotonic_ns's clock
    end: int


def timed_interpret(executable: Executable, *args: Any) -> tuple[Any, list[KernelTime]]:
    """Run @main in the interpreter with compiled kernels, each native call timed."""
    calls: list[KernelTime] = []
    kernels = {}
    for func, name in executable._kernel_names.items():
        kernel = _KernelCall(executable.lowered.functions[name])
        kernel.call = _timed(kernel.call, name, func, calls)
        kernels[func] = kernel
    value = Interpreter(executable.module, kernels=kernels).call("main", list(args))
    return value, calls


def _timed(native, name: str, func: Function, calls: list[KernelTime]):
    clock = time.monotonic_ns

    def call(*pointers: int) -> None:
        start = clock()
        native(*pointers)
        calls.append(KernelTime(name, func, start, clock()))

    return call
