"""Small helpers shared by the compiler's stages."""

from __future__ import annotations

import ctypes
import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """Parsing and printing allocate millions of small objects and free them by reference
    counting; the cycle collector would only walk them (and the IR) again and again, which
    doubles the time on large files.  It is switched off inside and back on after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def release_memory(collect: bool = True) -> None:
    """Hand memory that was freed back to the system: glibc's malloc keeps freed pages
    (tens of MB after a build or a large parse) until told otherwise (`malloc_trim`).
    `collect`: run the cycle collector first (what a worker can afford after a job; the
    language server's event loop cannot, on a large module).  Elsewhere than glibc, only
    the collector runs."""
    if collect:
        gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
