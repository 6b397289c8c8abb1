"""Unmap the clean pages of the libraries a process has mapped but is not running:
`drop_clean_mappings()`, what the build worker calls after its imports and after each job.

Why: loading llvmlite runs LLVM's ~700 static initialisers, scattered over its 80 MB of
code, and a recent kernel maps a whole large page-cache folio on each fault, so the
worker's resident size took 95 MB of libllvmlite.so from 1,040 page faults that touched a
few MB (and as much again after each build, for LLVM's parser, linker and printer).  Those
pages are clean and backed by the file: unmapping them loses nothing (they stay in the page
cache, reclaimable), and the next use maps them again from there (a minor fault).

What is unmapped (`madvise(MADV_DONTNEED)`): every mapping of a file that is not writable
and holds no anonymous page (`Anonymous: 0` in /proc/self/smaps), so no page it holds
differs from the file; a private mapping's copied-on-write pages (relocations of a RELRO
segment, a debugger's breakpoint) would be lost, and such a mapping is left alone.  Only
mappings with at least `min_kb` resident are touched.  Linux only; elsewhere (no
/proc/self/smaps, no madvise) it does nothing and returns [].

Reading smaps costs 10-50 ms, so the worker asks `Trim` instead: it looks at the
file-backed resident size first (/proc/self/statm, microseconds) and drops only when that
grew by `GROW_KB` since its last drop, which a build (LLVM's parser, linker, printer) does
and an answer from what is kept (a graph, a hover's numerics) mostly does not.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
from dataclasses import dataclass

MADV_DONTNEED = 4
MIN_KB = 1024  # mappings with less resident are not worth a system call
GROW_KB = 2 * MIN_KB  # file-backed growth since the last drop that is worth reading smaps for


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    perms: str
    path: str
    rss_kb: int = 0
    anonymous_kb: int = 0

    @property
    def clean_file(self) -> bool:
        """Backed by a file, never written through, no copied page: safe to unmap."""
        return self.path.startswith("/") and "w" not in self.perms and self.anonymous_kb == 0 \
            and not self.path.endswith(" (deleted)")


def mappings(smaps: str = "/proc/self/smaps") -> list[Mapping]:
    """The process's mappings with their resident and anonymous sizes (kB)."""
    found: list[Mapping] = []
    head: list[str] | None = None
    fields: dict[str, int] = {}

    def flush() -> None:
        if head is not None:
            start, end = (int(x, 16) for x in head[0].split("-"))
            path = " ".join(head[5:]) if len(head) > 5 else ""
            found.append(Mapping(start, end, head[1], path, fields.get("Rss", 0), fields.get("Anonymous", 0)))

    with open(smaps) as f:
        for line in f:
            first = line.split(None, 1)[0]
            if first.endswith(":"):
                if first in ("Rss:", "Anonymous:"):
                    fields[first[:-1]] = int(line.split()[1])
                continue
            flush()
            head, fields = line.split(), {}
    flush()
    return found


def _madvise():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


def drop_clean_mappings(min_kb: int = MIN_KB) -> list[Mapping]:
    """Unmap the resident pages of every clean file mapping with at least `min_kb` resident
    (see the module's docstring); the mappings dropped, as they were before."""
    try:
        found = mappings()
        madvise = _madvise()
    except (OSError, AttributeError, ValueError):  # not Linux, or no madvise
        return []
    dropped = []
    for m in found:
        if m.clean_file and m.rss_kb >= min_kb and madvise(m.start, m.end - m.start, MADV_DONTNEED) == 0:
            dropped.append(m)
    return dropped


def file_resident_kb(statm: str = "/proc/self/statm") -> int | None:
    """The process's resident pages backed by a file or shared memory (statm's third field,
    RssFile + RssShmem), in kB; None where there is no such file."""
    try:
        with open(statm) as f:
            shared_pages = int(f.read().split()[2])
    except (OSError, IndexError, ValueError):
        return None
    return shared_pages * (mmap.PAGESIZE // 1024)


class Trim:
    """`drop_clean_mappings()` when the file-backed resident size grew by `grow_kb` since the
    last drop (the module's docstring says why); returns what it dropped, [] when it did not
    look."""

    def __init__(self, grow_kb: int = GROW_KB, resident=file_resident_kb, drop=drop_clean_mappings) -> None:
        self.grow_kb = grow_kb
        self._resident = resident
        self._drop = drop
        self._after_last: int | None = None  # file-backed kB right after the last drop

    def __call__(self) -> list[Mapping]:
        now = self._resident()
        if now is not None and self._after_last is not None and now - self._after_last < self.grow_kb:
            return []
        dropped = self._drop()
        self._after_last = self._resident()
        return dropped
