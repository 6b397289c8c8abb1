"""Modules imported when first used: numpy and LLVM's binding, for the code the language
server runs.

The server parses and types documents with the operator library, the parser and the
printer, whose numpy is needed only to evaluate an operator's reference, decode a
constant or fold one: importing numpy at once made the server 15 MB larger for nothing
most sessions use.  Likewise `import llvmlite.binding` loads LLVM (a 178 MB library whose
static initialisers make a process ~95 MB larger), which the build worker never runs
itself: its builds stop at LLVM IR and run LLVM in forked children.

    from ..lazy_modules import numpy as np      # np.add, np.ndarray: numpy imported then

Each attribute is read from the real module once, when first asked for, and kept on the
stand-in, so that later reads cost what a module attribute's does.  A table built at
import that names a numpy function takes `deferred(np, "add")`, which reads it at its
first call.  Whether the real module is loaded yet is `loaded(np)`.

A build of a model built before needs LLVM all the same (its kernels' object code is
loaded by MCJIT, and their keys name the host LLVM reads), and loading it is 40-45 ms of
the 60-90 that build takes: `import llvmlite.binding` maps the 178 MB library (dlopen,
8-20 ms) and runs 48 modules declaring about 400 C functions to ctypes (the rest).
Tried: loading it on a thread while the main thread goes on.  Nothing overlaps: ctypes
holds the GIL through dlopen (CPython 3.11; a loop on the main thread ran at 5% of its
rate meanwhile), and the rest is Python.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any


class LazyModule(types.ModuleType):
    """A stand-in for the module `target`, imported at the first attribute read."""

    def __init__(self, target: str) -> None:
        super().__init__(f"{target} (imported when first used)")
        self.__dict__["_lazy_target"] = target

    def __getattr__(self, attr: str) -> Any:  # only for attributes not yet kept
        if attr.startswith("__") and attr.endswith("__") and attr not in ("__version__",):
            raise AttributeError(attr)  # copy, pickle and inspect probe dunders: not the module's
        value = getattr(importlib.import_module(self.__dict__["_lazy_target"]), attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_target']!r}>"


def loaded(module: LazyModule) -> bool:
    """Whether the module behind `module` has been imported (by anyone)."""
    return module.__dict__["_lazy_target"] in sys.modules


def deferred(module: LazyModule, attr: str) -> Callable:
    """`module.attr` called, with the module imported and the attribute read at the first call."""

    def call(*args, **kwargs):
        return getattr(module, attr)(*args, **kwargs)

    call.__name__ = call.__qualname__ = attr
    return call


numpy = LazyModule("numpy")
llvm = LazyModule("llvmlite.binding")
