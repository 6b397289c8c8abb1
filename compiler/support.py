"""Small helpers shared by the compiler's stages."""

from __future__ import annotations

import ctypes
import gc
import math
from contextlib import contextmanager
from typing import Any, Iterator

from .lazy_modules import numpy as np

ALIGN = 64  # bytes: what compiled kernels' parameters promise (`align 64`, codegen/llvm.py)


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


def aligned_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised C-contiguous array whose data is ALIGN-byte aligned."""
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    raw = np.empty(size + ALIGN, dtype=np.uint8)
    start = -raw.__array_interface__["data"][0] % ALIGN
    return raw[start:start + size].view(dtype).reshape(shape)


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous, ALIGN-byte aligned copy of `a`."""
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


def contiguous(a: np.ndarray) -> np.ndarray:
    """`a` itself when C-contiguous, else an aligned copy (`aligned_copy`).  What the
    build folds into constants (a weight transposed into its layout) is copied once here,
    aligned, where numpy's copy would land 16 bytes past a page and the executable would
    copy it again to align it: ResNet-50's cold build copied 91 constants, 132 MB, 0.15
    CPU s."""
    return a if a.flags.c_contiguous else aligned_copy(a)
