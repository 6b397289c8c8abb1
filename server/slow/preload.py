"""The compiler imported a piece at a time while the build worker has nothing to do.

The worker says it is ready with only the framing, the report types and the kernel
cache loaded, so a model built before is answered from its report on disk
(report_cache.py) at once.  The rest of the compiler (1-1.5 s of imports) loads while the
worker waits for work: `Preload.run(waiting)` imports the groups of MODULES in order,
each in a few hundred ms at most, and stops as soon as `waiting()` says a message came;
the next idle moment goes on where it stopped.  A job that needs a module not loaded yet
imports it itself, as Python does, so preloading only moves the cost to an idle moment.
"""

from __future__ import annotations

import importlib
from typing import Callable

PACKAGE = __name__.rsplit(".", 3)[0]  # relaylens

# In import order, heaviest dependencies first; each a few hundred ms at most.
MODULES = ("numpy", "lark",  # not llvmlite.binding: LLVM runs in forked children (worker.py)
           f"{PACKAGE}.compiler.ir", f"{PACKAGE}.compiler.ops", f"{PACKAGE}.compiler.interpreter",
           f"{PACKAGE}.compiler.lower.te.topi", f"{PACKAGE}.compiler.lower.schedule.defaults",
           f"{PACKAGE}.compiler.lower.runtime.executable", f"{PACKAGE}.compiler.lower.pipeline",
           f"{PACKAGE}.compiler.parser", f"{PACKAGE}.compiler.typing", f"{PACKAGE}.compiler.check",
           f"{PACKAGE}.compiler.build", f"{PACKAGE}.compiler.driver", f"{PACKAGE}.server.slow.reporting")


class Preload:
    """Imports MODULES (or `modules`) in order across idle moments."""

    def __init__(self, modules: tuple[str, ...] = MODULES) -> None:
        self._left = list(modules)

    @property
    def done(self) -> bool:
        return not self._left

    def run(self, waiting: Callable[[], bool]) -> None:
        """Import the next modules until all are loaded or `waiting()` is true."""
        while self._left and not waiting():
            importlib.import_module(self._left.pop(0))
