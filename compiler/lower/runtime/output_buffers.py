"""@main's output buffers, kept from one run for the next once the caller has let go of them.

A new buffer's pages are mapped in by the first stores into it, inside the kernel that
writes the output, and for a large one that costs more than the kernel: numpy asks Linux
for huge pages for arrays of 4 MB and more (madvise), and on this machine, its memory
fragmented by other work, each fault may wait for compaction.  Corpus model 084
returns 1x256x128x128 floats (16.7 MB): its last kernel, a layout_transform, took 27-37
ms a run (1 thread), 518 page faults, of which its stores take 3; the profiler charged
41% of the run to it.  onnxruntime's outputs come from an arena that keeps its memory.

So a run's outputs are kept here and the next run writes into them again, each one only
when nothing outside holds it or any view of it: the array returned, and the buffer
under it (`base`), referenced by this pool alone (CPython's reference counts).  A caller
that keeps a result, or a slice of it, gets a new buffer the next time; one that drops
it saves the faults.  The outputs of the last KEPT runs are kept (a loop `y = run(x)`
still holds the last one while the next runs); calls from several threads each take a
kept set or make their own.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

from ...support import aligned_empty

KEPT = 2  # the runs whose outputs are kept


class OutputBuffers:
    """Buffers for outputs of the given shapes and dtypes, taken for a run and kept after it,
    each set with the table of its addresses that the entry takes (made once a set: reading
    an array's address costs about a microsecond, a tenth of a small model's run)."""

    def __init__(self, specs: list[tuple[tuple[int, ...], str]]) -> None:
        self._specs = specs
        self._kept: list[tuple[list[np.ndarray], ctypes.Array]] = []  # the last KEPT runs', newest last
        self._lock = threading.Lock()

    def take(self) -> tuple[list[np.ndarray], ctypes.Array]:
        """A kept run's outputs when no one else holds any of them, else new buffers; and
        their addresses' table."""
        with self._lock:
            kept, self._kept = self._kept, []
        taken = None
        while kept:
            outputs, table = kept.pop(0)
            if taken is None and all(_unheld(outputs, k) for k in range(len(outputs))):
                taken = outputs, table
            else:
                with self._lock:
                    self._kept.append((outputs, table))
        if taken is not None:
            return taken
        outputs = [aligned_empty(shape, dtype) for shape, dtype in self._specs]
        return outputs, address_table([a.ctypes.data for a in outputs])

    def keep(self, outputs: list[np.ndarray], table: ctypes.Array) -> None:
        """The outputs of a run, as `take` gave them, for a later one (the caller gets them too)."""
        with self._lock:
            self._kept = (self._kept + [(list(outputs), table)])[-KEPT:]


def address_table(addresses: list[int]) -> ctypes.Array:
    """A C array of pointers, as the entry takes its inputs, outputs and constants."""
    return (ctypes.c_void_p * max(len(addresses), 1))(*addresses)


def _unheld(outputs: list[np.ndarray], k: int) -> bool:
    """Whether outputs[k] and the buffer under it are held by `outputs` alone (counted with
    getrefcount's own argument)."""
    a = outputs[k]
    return sys.getrefcount(a) <= 3 and (a.base is None or sys.getrefcount(a.base) <= 2)
