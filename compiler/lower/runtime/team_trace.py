"""What the threads of an inference's team did (codegen/team_trace.py), read from Python:
a hook for tests and benchmarks, not for the editor.

    with team_trace() as trace:
        executable.run(x)
        record = trace.read()      # the last inference's record, times in ns from its entry
        record.threads[1].joined   # jobs thread 1 took

While the `with` lasts the process-wide slot's trace word points at a buffer of this
process, so every inference on a team (of any JIT of the process) writes its record
there; one tracer at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass
from typing import Iterator

from ..codegen import team_trace as layout
from ..codegen.team import SLOT_TRACE
from . import jit


@dataclass(frozen=True)
class ThreadRecord:
    """One team thread other than the caller: times in ns from the entry (None: never)."""

    arrive: int | None
    first_job: int | None
    joined: int
    sleeps: int
    yields: int
    busy: int
    cpu_arrive: int
    cpu_first_job: int | None
    tid: int  # its kernel thread id


@dataclass(frozen=True)
class TeamRecord:
    """One inference on the team: thread 0's times in ns from the entry, its jobs, the ns
    it waited for joined threads, its CPU at the start and end of its steps, and the
    other threads' records (by team id; threads that never arrived are left out), and the
    CPU thread 0 kept them off (codegen/team_cpus.py; None: it restricted none), and how
    often it pulled them onto its own CPU after waiting long for them."""

    main_start: int
    main_end: int
    exit: int
    jobs: int
    waited: int
    cpu_start: int
    cpu_end: int
    threads: dict[int, ThreadRecord]
    kept_off: int | None
    rescues: int


class TeamTrace:
    def __init__(self, buffer: ctypes.Array) -> None:
        self._buffer = buffer

    def read(self) -> TeamRecord | None:
        """The last traced inference's record, or None if none ran on a team."""
        w = list(self._buffer)
        entry = w[layout.ENTRY]
        if not entry:
            return None
        at = lambda t: t - entry if t else None  # noqa: E731
        threads = {}
        for tid in range(1, layout.ROWS):
            r = w[tid * layout.ROW:(tid + 1) * layout.ROW]
            if r[layout.ARRIVE]:
                threads[tid] = ThreadRecord(
                    at(r[layout.ARRIVE]), at(r[layout.FIRST_JOB]), r[layout.JOINED], r[layout.SLEEPS],
                    r[layout.YIELDS], r[layout.BUSY], r[layout.CPU_ARRIVE],
                    r[layout.CPU_FIRST_JOB] if r[layout.FIRST_JOB] else None, r[layout.TID])
        return TeamRecord(at(w[layout.MAIN_START]), at(w[layout.MAIN_END]), at(w[layout.EXIT]), w[layout.JOBS],
                          w[layout.WAITED], w[layout.CPU_START], w[layout.CPU_END], threads,
                          w[layout.KEPT_OFF] - 1 if w[layout.KEPT_OFF] else None, w[layout.RESCUES])


@contextlib.contextmanager
def team_trace() -> Iterator[TeamTrace]:
    """Record what every inference's team does while the `with` lasts (module doc)."""
    if jit._TEAM_SLOT[SLOT_TRACE]:
        raise RuntimeError("the team is traced already")
    buffer = (ctypes.c_int64 * layout.WORDS)()
    jit._TEAM_SLOT[SLOT_TRACE] = ctypes.addressof(buffer)
    try:
        yield TeamTrace(buffer)
    finally:
        jit._TEAM_SLOT[SLOT_TRACE] = None
