"""From a built module to machine code: lower every fused function, then @main.

    lowered = lower_build(build_result, cache=cache, progress=print)
    lowered.functions["tvmgen_default_fused_nn_conv2d_add_nn_relu"].schedule.record
    lowered.llvm_ir, lowered.optimized_ir            # the whole module, as text
    lowered.executable.run(x, w, b)                  # see executable.py

Per fused function (each name once): `compose` (compute rules) → `default_schedule`
(recorded) → loop nest → LLVM IR with debug locations → O3 → machine code in its own
engine.  A function that cannot be lowered becomes a diagnostic at the Relay expression
at fault (an op without a compute rule, a `?` shape, a dtype), and the rest still lowers;
there is then no executable.

The cache (`LoweringCache`) holds lowered functions keyed by the structural hash of the
primitive function (TVM's compile-engine cache): rebuilding after an edit re-lowers only
the functions whose structure changed.  A hit whose name or source position differs (a
line inserted above it, a layer before it renamed) is re-pointed, not re-lowered: its
LLVM texts get the new name and debug locations (`_relocated`), its machine code is the
same and is called by address.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import llvmlite.binding as llvm
import numpy as np

from ..diagnostics import Diagnostic, Severity
from ..ir.expr import Function
from ..ir.functor import post_order
from ..ir.structural_equal import structural_equal
from ..ir.structural_hash import structural_hash
from .codegen import llvm as codegen
from .codegen.debuginfo import source_location
from .codegen.llvm_map import relocate
from .errors import LoweringError
from .runtime.executable import make_executable
from .runtime.jit import JIT
from .schedule.defaults import default_schedule
from .schedule.loopnest import PrimFunc
from .schedule.primitives import Schedule
from .te.compose import Composed, compose

SOURCE = "lower"


@dataclass
class LoweredFunction:
    """One fused function, lowered: every stage kept for the editor and `build -o`."""

    name: str
    func: Function  # the primitive Relay function
    composed: Composed
    schedule: Schedule
    prim: PrimFunc
    llvm_ir: str  # its own module, unoptimised
    optimized_ir: str
    address: int = 0  # of its machine code
    engine: Any = field(default=None, repr=False)  # keeps the machine code alive

    @property
    def constants(self) -> list[np.ndarray]:
        return [data for _, data in self.composed.constants]


class LoweringCache:
    """Lowered functions by structural hash, verified by structural equality (with types),
    so a hash collision never reuses the wrong kernel."""

    def __init__(self) -> None:
        self._entries: dict[int, list[LoweredFunction]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, name: str, func: Function) -> LoweredFunction | None:
        for entry in self._entries.get(structural_hash(func), ()):
            if structural_equal(entry.func, func, types=True):
                self.hits += 1
                return entry if entry.func is func and entry.name == name else _relocated(entry, func, name)
        self.misses += 1
        return None

    def put(self, lowered: LoweredFunction) -> None:
        self._entries.setdefault(structural_hash(lowered.func), []).append(lowered)


@dataclass
class Lowered:
    functions: dict[str, LoweredFunction]
    diagnostics: list[Diagnostic]
    executable: Any = None  # executable.Executable when everything lowered
    source_name: str = "<input>"
    jit: Any = field(default=None, repr=False)  # owns the machine code of the entry

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def llvm_ir(self) -> str:
        """The whole module (every kernel, then the entry), unoptimised."""
        return _link([f.llvm_ir for f in self.functions.values()] + self._entry_texts(optimized=False))

    @property
    def optimized_ir(self) -> str:
        return _link([f.optimized_ir for f in self.functions.values()] + self._entry_texts(optimized=True))

    def _entry_texts(self, optimized: bool) -> list[str]:
        exe = self.executable
        if exe is None or exe.entry_ir is None:
            return []
        return [exe.entry_optimized_ir if optimized else exe.entry_ir]

    def function_of(self, func: Function) -> LoweredFunction | None:
        return next((f for f in self.functions.values() if f.func is func), None)


def lower_build(result, *, cache: LoweringCache | None = None, jit=None,
                progress: Callable[[str], None] | None = None, machine_code: bool = True) -> Lowered:
    """Lower every fused function of a successful build, then plan and compile @main.

    `machine_code=False` stops at the optimised LLVM IR: what the editor shows (the
    language server's build worker), without the memory and time of machine code.  Such
    a build cannot run; its kernels and cache entries have no address."""
    jit = jit or JIT()
    source_name = result.name
    lowered = Lowered({}, [], source_name=source_name, jit=jit)
    seen: set[str] = set()
    for func, name in result.fused_names.items():
        if name in seen:
            continue
        seen.add(name)
        if progress is not None:
            progress(name)
        try:
            entry = cache.get(name, func) if cache is not None else None
            if entry is not None and machine_code and entry.engine is None:
                entry = None  # cached by a build that stopped at LLVM IR
            if entry is None:
                entry = lower_function(func, name, source_name, jit, machine_code)
                if cache is not None:
                    cache.put(entry)
            lowered.functions[name] = entry
        except LoweringError as err:
            lowered.diagnostics.append(Diagnostic(f"{name}: {err.message}", err.span or func.span,
                                                  Severity.ERROR, source=SOURCE))
    if lowered.ok and result.module is not None:
        try:
            lowered.executable = make_executable(result, lowered, jit, machine_code)
        except LoweringError as err:
            lowered.diagnostics.append(Diagnostic(err.message, err.span, Severity.ERROR, source=SOURCE))
    return lowered


def lower_function(func: Function, name: str, source_name: str, jit, machine_code: bool = True) -> LoweredFunction:
    """One primitive function through every stage to machine code (or to optimised LLVM IR)."""
    composed = compose(func)
    schedule = default_schedule(composed.outputs, composed.placeholders, name)
    prim = schedule.lower()
    prim.span = prim.span or func.span
    text = str(codegen.generate([prim], source_name))
    optimized = jit.optimize(text)
    if not machine_code:
        return LoweredFunction(name, func, composed, schedule, prim, text, optimized)
    engine = jit.load(optimized)
    return LoweredFunction(name, func, composed, schedule, prim, text, optimized,
                           jit.address(name), engine)


def _relocated(entry: LoweredFunction, func: Function, name: str) -> LoweredFunction:
    """`entry` for a structurally equal `func` elsewhere in the source, under `name`: the
    same machine code; LLVM texts renamed and their debug information moved to `func`'s
    expressions (paired in evaluation order, as structural equality pairs them)."""
    moved: dict[tuple[int, int], tuple[int, int]] = {}
    for old, new in zip(post_order(entry.func), post_order(func)):
        a, b = source_location(old.span), source_location(new.span)
        if a is not None and b is not None:
            moved.setdefault(a, b)
    renamed = [text.replace(f'@{entry.name}', f'@{name}').replace(f'"{entry.name}', f'"{name}')
               for text in (entry.llvm_ir, entry.optimized_ir)]
    llvm_ir, optimized_ir = relocate(renamed, moved)
    return dataclasses.replace(entry, name=name, func=func, llvm_ir=llvm_ir, optimized_ir=optimized_ir)


def _link(texts: list[str]) -> str:
    """Several module texts as one module (LLVM's linker: declarations meet definitions)."""
    if not texts:
        return ""
    first = llvm.parse_assembly(texts[0])
    for text in texts[1:]:
        first.link_in(llvm.parse_assembly(text))
    return str(first)
