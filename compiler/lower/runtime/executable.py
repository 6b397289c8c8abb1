"""Running compiled code: @main through the AOT entry, or through the interpreter.

A @main that is a dataflow graph (every model a frontend produces) gets a static plan
(plan.py) and an LLVM entry function (aot.py): one native call per inference, the fused
kernels called on planned buffers in one workspace, their parallel loops on OpenMP
threads.  A @main with control flow runs in the reference interpreter with every call of
a fused function dispatched to its compiled kernel (`mode == "interpreter"`), so the
compiled kernels run for every program, and the reason no plan exists is kept.

    exe.run(x, w)        # numpy arrays, one per @main parameter (tuples for tuple params)
    -> a numpy array, or a tuple for a tuple result (the interpreter's value shapes)
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from ...interpreter import Interpreter
from ...ir.deferred import resolved
from ...ir.expr import Function
from ...ir.types import TupleType
from ...support import ALIGN, aligned_copy, aligned_empty
from ...transform.fused_names import name_primitive_functions
from ..codegen.debuginfo import entry_debug
from ..cache_keys import entry_key
from ..disk_cache import ENTRIES, Entry
from ..errors import LoweringError
from .aot import ENTRY, entry_calls, entry_module, kernel_order
from .input_staging import InputStaging
from .output_buffers import OutputBuffers, address_table
from .plan import NotDataflow, Plan, plan_main

_VOIDP = ctypes.c_void_p


class Executable:
    """`constants`: each kernel's lifted constants by kernel name, when the executable is
    made before its kernels are lowered (pipeline.py makes it while forked children lower
    them: it needs their names and constants, not their code); None: `lowered`'s kernels'.
    `writes_over` alike: each kernel's input its output may be written over (schedule/in_place.py),
    for the plan.
    The kernels' addresses are read from `lowered.functions` at the first run.  `names`:
    each primitive function's kernel name as the build gave it (None: named here)."""

    def __init__(self, module, lowered, jit, machine_code: bool = True,
                 constants: dict[str, list[np.ndarray]] | None = None,
                 names: dict[Function, str] | None = None, disk=None,
                 writes_over: dict[str, int | None] | None = None) -> None:
        self.module = module
        self.machine_code = machine_code  # False: planned and written as LLVM IR, not runnable
        self.lowered = lowered
        self.plan: Plan | None = None
        self.why_interpreted: str | None = None
        self._entry_ir: str | None = None
        self._entry_optimized_ir: str | None = None
        self._jit = jit
        if constants is None:
            constants = {name: fn.constants for name, fn in lowered.functions.items()}
        if writes_over is None:
            writes_over = {name: fn.writes_over for name, fn in lowered.functions.items()}
        self.writes_over = writes_over
        self._kernel_names = _all_fused(module, constants, names)
        self._fixed_arguments = None  # the entry's last arguments, made at the first run (`_tables`)
        constants = {func: constants[name] for func, name in self._kernel_names.items()}
        over = {func: writes_over[name] for func, name in self._kernel_names.items()
                if writes_over.get(name) is not None}
        try:
            self.plan = plan_main(module["main"], self._kernel_names, constants, dict(module.functions), over)
        except NotDataflow as why:
            self.why_interpreted = str(why)
        if self.plan is not None:
            self._prepare_entry(jit, disk)

    @property
    def entry_ir(self) -> str | None:
        """The entry's LLVM IR (None in interpreter mode), made on first use: a build whose
        entry's machine code the disk cache holds never makes it (`_entry_code`)."""
        if self._entry_ir is None and self.plan is not None:
            self._entry_ir = str(entry_module(self.plan, debug=_entry_debug(self.lowered.source_name)))
        return self._entry_ir

    @property
    def entry_optimized_ir(self) -> str | None:
        """The entry after O3, made on first use: a build that stops at LLVM IR asks for it
        only to link module.opt.ll (pipeline.py, in a forked child when it can)."""
        if self._entry_optimized_ir is None and self.entry_ir is not None:
            self._entry_optimized_ir = self._jit.optimize(self.entry_ir)
        return self._entry_optimized_ir

    @property
    def mode(self) -> str:
        return "aot" if self.plan is not None else "interpreter"

    # --- AOT --------------------------------------------------------------------------
    def _prepare_entry(self, jit, disk) -> None:
        plan = self.plan
        if not self.machine_code:
            return
        self._entry_engine = self._entry_code(jit, disk)
        address = jit.address(ENTRY)
        self._entry = ctypes.CFUNCTYPE(None, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP)(address)
        self._input_dtypes = [np.dtype(dtype) for _, _, dtype in plan.inputs]
        self._staging = InputStaging([(shape, d) for (_, shape, _), d in zip(plan.inputs, self._input_dtypes)])
        self._constants = [_as_buffer(resolved(c)) for c in plan.constants]  # deferred weights computed now
        self._const_table = _pointers(self._constants)
        self._workspace = aligned_empty((max(plan.workspace, 1),), "uint8")
        self._outputs = OutputBuffers([(b.shape, b.dtype) for b in plan.outputs])

    def _entry_code(self, jit, disk):
        """The entry's machine code: from the disk cache (its part entries/) when it holds the
        code of an entry made of the same calls (`aot.entry_calls`; a model built before:
        no IR made, no O3, no code generation), else compiled and kept there."""
        disk = disk.part(ENTRIES) if disk is not None else None
        key = entry_key(entry_calls(self.plan), self.lowered.source_name) if disk is not None else None
        stored = disk.get(key) if key is not None else None
        if stored is not None and "object" in stored.blobs:
            try:
                return jit.load_object(stored.blobs["object"], {ENTRY: ENTRY})
            except LoweringError:
                disk.corrupt += 1  # intact on disk but not loadable: compiled again, written over
        if key is None:
            return jit.load(self.entry_optimized_ir)
        engine, obj = jit.load_keeping_object(self.entry_optimized_ir)
        disk.put(key, Entry({"name": ENTRY}, {"object": obj}))
        return engine

    @property
    def _tables(self) -> tuple[int, int, int]:
        """The entry's last three arguments, the same every run: the addresses of the
        constants' table, the workspace and the kernels' table (their addresses in the
        plan's order, `kernel_order`, read at the first run)."""
        if self._fixed_arguments is None:
            order = kernel_order(self.plan)
            self._kernel_table = address_table([self.lowered.functions[n].address for n in order])
            self._fixed_arguments = (ctypes.addressof(self._const_table), self._workspace.ctypes.data,
                                     ctypes.addressof(self._kernel_table))
        return self._fixed_arguments

    def run(self, *args: Any) -> Any:
        if not self.machine_code:
            raise LoweringError("this build stopped at LLVM IR (machine_code=False): it cannot run")
        if self.plan is None:
            return self._interpret(args)
        return self.run_entry(self._entry, args)

    def run_entry(self, entry, args: Sequence[Any], *extra: int) -> Any:
        """Run @main through `entry`, the AOT entry or a variant of it (timing.py's, whose
        `extra` parameters, addresses, follow the kernel table), on `args` as `run` takes them."""
        plan = self.plan
        flat = _flatten_args(args)
        if len(flat) != len(plan.inputs):
            raise LoweringError(f"@main takes {len(plan.inputs)} tensors, given {len(flat)}")
        staged = self._staging.take()
        try:
            inputs, addresses = [], []
            for k, (value, (name, shape, dtype)) in enumerate(zip(flat, plan.inputs)):
                a = np.asarray(value)
                if a.shape != shape or a.dtype != self._input_dtypes[k]:
                    raise LoweringError(f"input %{name}: expected Tensor[{shape}, {dtype}], "
                                        f"given Tensor[{a.shape}, {a.dtype}]")
                a, address = self._staging.place(staged, k, a)
                inputs.append(a)
                addresses.append(address)
            outputs, output_table = self._outputs.take()
            input_table = address_table(addresses)  # alive for the call
            entry(ctypes.addressof(input_table), ctypes.addressof(output_table), *self._tables, *extra)
            for k, b in enumerate(plan.outputs):  # outputs that are inputs, constants or repeated
                if b.ref.kind == "input":
                    outputs[k][...] = inputs[b.ref.index]
                elif b.ref.kind == "const":
                    outputs[k][...] = self._constants[b.ref.index]
                elif b.ref.kind == "output" and b.ref.index != k:
                    outputs[k][...] = outputs[b.ref.index]
        finally:
            self._staging.give_back(staged)
        self._outputs.keep(outputs, output_table)
        return _unflatten(outputs, plan.result_type)

    # --- interpreter with compiled kernels ------------------------------------------
    def _interpret(self, args: Sequence[Any]) -> Any:
        return Interpreter(self.module, kernels=self.kernel_calls()).call("main", list(args))

    def kernel_calls(self) -> dict[Function, "_KernelCall"]:
        """Each fused function of the module with its compiled kernel as a Python callable
        (`kernel(*relay_values) -> value`, `.name` its symbol): for the interpreter to call
        the kernels one by one, as `_interpret` does and the numerics tools (NaN tracing,
        bisection against the reference) do with an observer."""
        return {func: _KernelCall(self.lowered.functions[name]) for func, name in self._kernel_names.items()}


class _KernelCall:
    """A fused kernel called from the interpreter with its Relay values."""

    def __init__(self, fn) -> None:
        self.fn = fn
        self.name = fn.name
        self.call = ctypes.CFUNCTYPE(None, *[_VOIDP] * len(fn.prim.params))(fn.address)
        self.constants = [_as_buffer(c) for c in fn.constants]

    def __call__(self, *args: Any) -> Any:
        prim = self.fn.prim
        inputs = [_as_buffer(np.asarray(a)) for a in _flatten_args(args)] + self.constants
        outputs = [aligned_empty(b.shape, b.dtype) for b in prim.outputs]
        self.call(*[a.ctypes.data for a in inputs + outputs])
        return outputs[0] if len(outputs) == 1 and not _returns_tuple(self.fn.func) else tuple(outputs)


def make_executable(result, lowered, jit, machine_code: bool = True,
                    constants: dict[str, list[np.ndarray]] | None = None, disk=None,
                    writes_over: dict[str, int | None] | None = None) -> Executable | None:
    """The executable of a lowered module (or of one being lowered: `constants`, see
    `Executable`); None for a module without @main.  Its kernels' names are the build's
    (`result.fused_names`), not hashed again.  `disk`: the kernel cache, which keeps the
    entry's machine code too."""
    if "main" not in result.module:
        return None
    return Executable(result.module, lowered, jit, machine_code, constants, result.fused_names or None, disk,
                      writes_over)


def _all_fused(module, kernels, names: dict[Function, str] | None = None) -> dict[Function, str]:
    """Every primitive function of the module (structurally equal ones share a kernel)
    with the name of its kernel (`names` when the build named them already), each of
    which `kernels` must name."""
    names = names if names is not None else name_primitive_functions(module)
    missing = sorted({n for n in names.values() if n not in kernels})
    if missing:
        raise LoweringError(f"no kernel for {', '.join(missing)}")
    return names


def _returns_tuple(func: Function) -> bool:
    return isinstance(getattr(func.body, "ty", None), TupleType)


def _entry_debug(source_name: str):
    return lambda module, fn: entry_debug(module, fn, source_name)


def _as_buffer(a: np.ndarray) -> np.ndarray:
    """`a` itself when the kernels can read it in place (C-contiguous, 64-byte aligned, as
    their `align 64` parameters promise), else an aligned copy: the weights of a kept
    build (passes_cache.py) and inputs numpy placed well are read where they are."""
    if a.flags.c_contiguous and a.ctypes.data % ALIGN == 0:
        return a
    return aligned_copy(a)


def _pointers(arrays: list[np.ndarray]):
    return address_table([a.ctypes.data for a in arrays])


def _flatten_args(args: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for a in args:
        flat.extend(_flatten_args(a) if isinstance(a, tuple) else (a,))
    return flat


def _unflatten(values: list[np.ndarray], ty) -> Any:
    """`values` in the tuples of `ty`.  (Not a nested function calling itself: that is a
    reference cycle, which kept the values alive until the cyclic collector ran, and with
    them the output buffers output_buffers.py counts as held.)"""
    return _unflattened(iter(values), ty)


def _unflattened(values, ty) -> Any:
    if isinstance(ty, TupleType):
        return tuple(_unflattened(values, f) for f in ty.fields)
    return next(values)
