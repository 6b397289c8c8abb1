"""Aligned buffers @main's inputs are copied into when the caller's arrays are not aligned.

The kernels read their parameters as `align 64` (AVX-512 loads fault on less), and numpy
places the arrays it makes 16 bytes past a 64-byte line: every input a user passes (20 of
20 random arrays of five shapes, from 64 B to 600 KB) needed an aligned copy, a new
buffer a run (2 µs of allocation for a small one, the page faults of a fresh mapping for
a large one).  The copies go instead into buffers made once and used again: a run takes a
set (one buffer per input, made when first needed), copies into it, and gives it back
when the entry has returned; runs from several threads each take a set of their own.
An input's staging buffer is only read by the kernels: the entry writes its outputs and
intermediates elsewhere (runtime/plan.py), and an output that is an input is copied out
of it before the set is given back.
"""

from __future__ import annotations

import numpy as np

from ...support import ALIGN, aligned_empty


class InputStaging:
    def __init__(self, specs: list[tuple[tuple[int, ...], np.dtype]]) -> None:
        self._specs = specs
        self._free: list[list[tuple[np.ndarray, int] | None]] = []  # list.pop/append: atomic

    def take(self) -> list[tuple[np.ndarray, int] | None]:
        """A set of buffers (None where none was needed yet), for one run."""
        try:
            return self._free.pop()
        except IndexError:
            return [None] * len(self._specs)

    def give_back(self, staged: list[tuple[np.ndarray, int] | None]) -> None:
        self._free.append(staged)

    def place(self, staged: list[tuple[np.ndarray, int] | None], k: int, a: np.ndarray) -> tuple[np.ndarray, int]:
        """Input `k`, `a` (of the right shape and dtype), as an aligned C-contiguous array
        and its address: `a` itself when it is one, else copied into the set's buffer."""
        address = a.ctypes.data
        if address % ALIGN == 0 and a.flags.c_contiguous:
            return a, address
        kept = staged[k]
        if kept is None:
            buffer = aligned_empty(*self._specs[k])
            kept = staged[k] = (buffer, buffer.ctypes.data)
        np.copyto(kept[0], a)
        return kept
