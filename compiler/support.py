"""Small helpers shared by the compiler's stages."""

from __future__ import annotations

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
