"""The AOT entry function: @main as straight-line LLVM code calling the fused kernels.

    void tvmgen_default___tvm_main__(ptr inputs, ptr outputs, ptr constants, ptr workspace,
                                     ptr kernels)

`inputs`, `outputs` and `constants` are arrays of buffer pointers (in plan order);
`workspace` is one block of `Plan.workspace` bytes holding every temporary at its planned
offset; `kernels` the addresses of the fused functions (in `kernel_order(plan)`).  Each
step of the plan becomes one call `kernel(args..., outs...)`, with a debug location at the
call of the fused function in the Relay source, so the entry's lines too map back to
@main.  Kernels are called through their addresses, so each kernel's machine code lives
in its own engine and survives a rebuild that did not change it (the compile cache).  This is TVM's AOT executor in miniature: no graph interpreted at run
time, no allocation per inference.

The entry itself only chooses how to run its steps (`ENTRY.steps`, internal): at more
than one thread (the module's `relaylens_num_threads`, which the JIT sets, at most
MAX_TEAM) on the inference's team, one OpenMP region for the whole call
(codegen/team.py), else directly.

A `probe` (timing.py's clock, for the profiler) adds parameters after `kernels` and code
before and after each kernel call; the entry without one is unchanged.
"""

from __future__ import annotations

from typing import Protocol

from llvmlite import ir

from ..codegen.debuginfo import source_location
from ..codegen.llvm import num_threads_global
from ..codegen.scalar import PTR
from ..codegen.shares import MAX_TEAM
from ..codegen.team import team_run, team_slot_global
from .plan import Plan

ENTRY = "tvmgen_default___tvm_main__"

_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)


class EntryProbe(Protocol):
    """Code around every kernel call of the entry (step `k` of the plan)."""

    params: list[ir.Type]  # extra parameters of the entry, after `kernels`

    def start(self, builder: ir.IRBuilder, args: list[ir.Argument]) -> None: ...
    def before(self, builder: ir.IRBuilder, k: int) -> None: ...
    def after(self, builder: ir.IRBuilder, k: int) -> None: ...


Call = tuple[str, list[tuple[str, int]], "tuple[int, int] | None"]  # kernel, (kind, index) per buffer, Relay line:col


def entry_calls(plan: Plan) -> list[Call]:
    """What the entry is made of, and all of it: per step of the plan, the kernel, where
    each of its buffers is (table and index, or workspace offset), and the Relay (line,
    column) of its call.  `entry_module` reads the plan through these alone, so they key
    the entry's machine code (executable.py) without the entry being generated: making
    and printing a GPT-2 block's entry took 12-18 ms of a build read from the cache."""
    return [(step.kernel, [(b.ref.kind, b.ref.index) for b in step.args + step.outs], source_location(step.span))
            for step in plan.steps]


def entry_module(plan: Plan, name: str = ENTRY, debug=None, probe: EntryProbe | None = None) -> ir.Module:
    """The LLVM module holding the entry function and declarations of the kernels, made
    from `entry_calls(plan)`.  `debug(module, function) -> callable((line, column) | None)
    -> DILocation`, when given, attaches debug information (the code generator provides it)."""
    calls = entry_calls(plan)
    module = ir.Module(name="relaylens_main")
    extra = probe.params if probe is not None else []
    fnty = ir.FunctionType(ir.VoidType(), [_I8P.as_pointer()] * 3 + [_I8P, _I8P.as_pointer()] + extra)
    fn = ir.Function(module, fnty, f"{name}.steps")
    fn.linkage = "internal"
    _entry_on_team(module, fnty, name, fn)
    inputs, outputs, constants, workspace, table = fn.args[:5]
    for arg, label in zip(fn.args, ("inputs", "outputs", "constants", "workspace", "kernels")):
        arg.name = label
        arg.add_attribute("noalias")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    location = debug(module, fn) if debug is not None else None
    if probe is not None:
        probe.start(builder, list(fn.args[5:]))

    tables = {"input": inputs, "output": outputs, "const": constants}
    order = {kernel: k for k, kernel in enumerate(dict.fromkeys(kernel for kernel, _, _ in calls))}
    for k, (kernel, buffers, where) in enumerate(calls):
        if location is not None:
            builder.debug_metadata = location(where)
        ptrs = [_pointer(builder, kind, index, tables, workspace) for kind, index in buffers]
        kernel_type = ir.FunctionType(ir.VoidType(), [_I8P] * len(ptrs))
        slot = builder.gep(table, [ir.Constant(_I64, order[kernel])], inbounds=True)
        address = builder.bitcast(builder.load(slot), kernel_type.as_pointer(), name=kernel)
        if probe is not None:
            probe.before(builder, k)
        builder.call(address, ptrs)
        if probe is not None:
            probe.after(builder, k)
    builder.ret_void()
    return module


def _entry_on_team(module: ir.Module, fnty: ir.FunctionType, name: str, steps: ir.Function) -> None:
    """`name`, the entry itself: `steps` with the same arguments, on the inference's team
    (codegen/team.py) when the JIT's number of threads is above 1, else called directly.
    The arguments go to the team's thread 0 through a struct in the entry's frame, which
    `name.packed` unpacks."""
    fields = ir.LiteralStructType(fnty.args)
    packed = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), f"{name}.packed")
    packed.linkage = "internal"
    b = ir.IRBuilder(packed.append_basic_block("entry"))
    b.call(steps, [b.load(b.gep(packed.args[0], [ir.Constant(_I32, 0), ir.Constant(_I32, k)], inbounds=True,
                                 source_etype=fields), typ=t) for k, t in enumerate(fnty.args)])
    b.ret_void()

    fn = ir.Function(module, fnty, name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    threads = b.load(num_threads_global(module), typ=_I32)
    limit = ir.Constant(_I32, MAX_TEAM)  # the most a kernel's loop asks for (codegen/shares.py)
    threads = b.select(b.icmp_signed(">", threads, limit), limit, threads)
    slot = b.load(team_slot_global(module), typ=PTR)
    team = b.and_(b.icmp_signed(">", threads, ir.Constant(_I32, 1)), b.icmp_unsigned("!=", slot, ir.Constant(PTR, None)))
    with b.if_else(team) as (on_team, alone):
        with on_team:
            data = b.alloca(fields, name="arguments")
            for k, arg in enumerate(fn.args):
                b.store(arg, _field(b, data, k))
            b.call(team_run(module), [packed, data, slot, threads])
        with alone:
            b.call(steps, list(fn.args))
    b.ret_void()


def _field(b: ir.IRBuilder, data: ir.Value, k: int) -> ir.Value:
    return b.gep(data, [ir.Constant(_I32, 0), ir.Constant(_I32, k)], inbounds=True)


def kernel_order(plan: Plan) -> list[str]:
    """The kernels the entry calls, each once, in first-call order: the `kernels` table."""
    return list(dict.fromkeys(step.kernel for step in plan.steps))


def _pointer(builder: ir.IRBuilder, kind: str, index: int, tables: dict, workspace) -> ir.Value:
    if kind == "temp":
        return builder.gep(workspace, [ir.Constant(_I64, index)], inbounds=True)
    slot = builder.gep(tables[kind], [ir.Constant(_I64, index)], inbounds=True)
    return builder.load(slot)
