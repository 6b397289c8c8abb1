"""The execution plan of @main after fusion: which kernel runs when, on which buffers.

@main of a built module is a dataflow graph of calls to primitive functions, tuples,
projections, constants and `let`s.  The plan lists the kernel calls in evaluation order,
each argument and result a `Ref` to memory:

    Ref("input", k)     the k-th tensor parameter of @main (tuple parameters flattened)
    Ref("const", k)     the k-th constant of @main (`constants[k]`)
    Ref("temp", off)    `off` bytes into the workspace: static memory planning, where a
                        buffer is reused once its last reader has run (first fit, 64-byte
                        aligned, as TVM's graph memory planner)
    Ref("output", k)    the k-th output of @main (tuple results flattened): the kernel that
                        computes an output writes it in place

A kernel of reshapes alone (FuseOps marks it `relay.reshape_only`) is not called: its
result is a view, a Buffer of the new shape on its argument's memory (`Plan.views`), as
TVM's graph executor makes such a function a `__nop` on shared storage.  Its argument
then stays live until the view's last reader has run.  A view that is an output of @main
stays a kernel call (the output is written in place).  Measured: GPT-2's softmax result
copied to (12, 128, 128), 0.06-0.09 ms of a 33 ms block on 1 thread, now no call.

A kernel whose schedule claims it (schedule/in_place.py: its output may be written over
input k, each element of which it reads only to store the same element of the output)
writes its output over that argument's memory when the argument is a temporary of the
workspace that this kernel reads last (itself or through a view), once among its
arguments, of the output's size and dtype, and not a view (`_assign_offsets`), as onnxruntime's
NCHWc Conv with Sum writes over the Sum's input.  ResNet-50's bottleneck ends so write
over their residual.  No tool reads a temporary after the run (the numerics tools call
kernels from the interpreter on fresh outputs, the profiler times the whole entry).

`Plan.graph_json()` writes the same plan in the format of TVM's graph executor (nodes,
arg_nodes, heads, storage ids), for `relaylens build -o`.

A @main with control flow (if, match, closures, references, calls of other global
functions) has no static plan: `NotDataflow` says why, and the runtime runs it with the
interpreter calling the compiled kernels instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir.deferred import Deferred
from ...ir.expr import Call, Constant, Function, GlobalVar, Let, Op, Tuple, TupleGetItem, Var
from ...ir.functor import children, post_order
from ...ir.types import TensorType, TupleType, Type

ALIGN = 64


class NotDataflow(Exception):
    """@main cannot be planned statically; the message says what is in the way."""


@dataclass(frozen=True)
class Ref:
    kind: str  # input | const | temp | output
    index: int  # position, or byte offset for temp


@dataclass
class Buffer:
    shape: tuple[int, ...]
    dtype: str
    ref: Ref

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class Step:
    kernel: str  # the fused function's global name
    func: Function
    args: list[Buffer]  # flattened parameters, then the function's own constants
    outs: list[Buffer]
    span: Any = None  # the call in @main


@dataclass
class Plan:
    inputs: list[tuple[str, tuple[int, ...], str]]  # name, shape, dtype per flattened param
    constants: list[np.ndarray | Deferred]  # a deferred weight (ir/deferred.py) computed by its reader
    steps: list[Step]
    outputs: list[Buffer]  # where each output lives (an output ref, or an input/const to copy)
    workspace: int = 0  # bytes
    result_type: Type | None = None
    output_names: list[str] = field(default_factory=list)
    views: list[tuple[Buffer, Buffer]] = field(default_factory=list)  # (view, what it reshapes)

    def graph_json(self) -> str:
        return json.dumps(_graph(self), indent=1)


def plan_main(main: Function, kernel_names: dict[Function, str],
              kernel_constants: dict[Function, list[np.ndarray]],
              externals: dict[GlobalVar, Function] | None = None,
              writes_over: dict[Function, int] | None = None) -> Plan:
    """Plan @main, whose primitive functions are named by `kernel_names`; each kernel also
    takes its own lifted constants (`kernel_constants`), which the plan appends as
    `const` arguments.  `externals` are the global functions a call may name instead of a
    function literal (PartitionGraph's `@tvmgen_default_<target>_main_0`), each a kernel.
    `writes_over`: the kernels whose output may take the memory of their argument k (see
    the module doc)."""
    externals = {gv: f for gv, f in (externals or {}).items() if f in kernel_names}

    def kernel_of(callee) -> Function | None:
        if isinstance(callee, GlobalVar):
            return externals.get(callee)
        return callee if isinstance(callee, Function) and callee in kernel_names else None
    inputs: list[tuple[str, tuple[int, ...], str]] = []
    values: dict[Any, Any] = {}
    for param in main.params:
        values[param] = _flatten_params(_typed(param), param.name, inputs)
    constants: list[np.ndarray] = []
    const_index: dict[int, int] = {}
    steps: list[Step] = []
    temps: list[Buffer] = []

    def constant(data: np.ndarray | Deferred) -> Buffer:
        key = id(data)  # a deferred value (ir/deferred.py) stays one: the executable computes it
        if key not in const_index:
            const_index[key] = len(constants)
            constants.append(data if isinstance(data, Deferred) else np.ascontiguousarray(data))
        return Buffer(tuple(data.shape), str(data.dtype), Ref("const", const_index[key]))

    def visit(node) -> None:
        if isinstance(node, Var):
            raise NotDataflow(f"%{node.name} is not a parameter of @main")
        if isinstance(node, Function):
            raise NotDataflow("@main contains a function value (a closure)")
        if isinstance(node, Constant):
            if not node.known:
                raise NotDataflow(f"the constant {node.meta or 'folded from unknown constants'} has no value")
            values[node] = constant(node.raw if isinstance(node.raw, Deferred) else np.asarray(node.data))
        elif isinstance(node, Tuple):
            values[node] = tuple(values[f] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            values[node] = values[node.tuple_value][node.index]
        elif isinstance(node, Let):
            raise NotDataflow("a let inside an expression")  # chains are walked by evaluate()
        elif isinstance(node, Call) and kernel_of(node.op) is not None:
            kernel = kernel_of(node.op)
            args: list[Buffer] = []
            for a in node.args:
                args.extend(_leaves(values[a]))
            args.extend(constant(c) for c in kernel_constants.get(kernel, ()))
            ty = _typed(node)
            outs = [Buffer(shape, dtype, Ref("temp", -1)) for shape, dtype in _leaf_types(ty)]
            temps.extend(outs)
            values[node] = tuple(outs) if isinstance(ty, TupleType) else outs[0]
            steps.append(Step(kernel_names[kernel], kernel, args, outs, node.span))
        else:
            what = type(node).__name__
            if isinstance(node, Call):
                what = "a call of " + (f"@{node.op.name}" if hasattr(node.op, "name") else "a function value")
            raise NotDataflow(f"@main contains {what}; only calls of fused functions, tuples and "
                              "constants can be planned")

    def evaluate(expr) -> Any:
        while isinstance(expr, Let):  # let %x = value; body  (a chain, walked without recursion)
            values[expr.var] = evaluate(expr.value)
            expr = expr.body
        for node in post_order(expr, _outside_kernels):
            if node not in values and not isinstance(node, Op) and kernel_of(node) is None:
                visit(node)
        if expr not in values:  # a fused function itself as a value (`let %f = fn(...)`), not a call of it
            raise NotDataflow("@main binds a fused function to a name")
        return values[expr]

    result = evaluate(main.body)
    outputs = list(_leaves(result))
    steps, views = _reshape_views(steps, outputs)
    _place_outputs(outputs, temps)
    workspace = _assign_offsets(steps, outputs, views, writes_over or {})
    for view, source in views:  # in order: a view of a view takes its source's place
        view.ref = source.ref
    return Plan(inputs, constants, steps, outputs, workspace, _typed(main.body),
                _output_names(_typed(main.body)), views)


def _reshape_views(steps: list[Step], outputs: list[Buffer]) -> tuple[list[Step], list[tuple[Buffer, Buffer]]]:
    """The steps without the calls of reshape-only kernels whose one result is not an
    output of @main, and (result, argument) of each call left out: the result is a view
    (see the module doc)."""
    out_ids = {id(b) for b in outputs}
    kept, views = [], []
    for step in steps:
        attrs = step.func.attrs
        if (attrs is not None and int(attrs.get("relay.reshape_only", 0) or 0) and len(step.args) == 1
                and len(step.outs) == 1 and id(step.outs[0]) not in out_ids
                and step.outs[0].dtype == step.args[0].dtype and step.outs[0].nbytes == step.args[0].nbytes):
            views.append((step.outs[0], step.args[0]))
            continue
        kept.append(step)
    return kept, views


def _outside_kernels(node) -> tuple:
    """Children in evaluation order, not entering functions or lets."""
    if isinstance(node, (Function, Let)):
        return ()
    if isinstance(node, Call):
        return (*node.args, node.op)
    return children(node)


def _typed(expr) -> Type:
    ty = getattr(expr, "ty", None) or getattr(expr, "type_annotation", None)
    if ty is None:
        raise NotDataflow("@main is not typed")
    return ty


def _leaf_types(ty: Type) -> list[tuple[tuple[int, ...], str]]:
    if isinstance(ty, TupleType):
        return [leaf for f in ty.fields for leaf in _leaf_types(f)]
    if not isinstance(ty, TensorType) or not ty.is_static:
        raise NotDataflow(f"a value of type {ty} cannot be planned (static tensors only)")
    return [(tuple(int(d) for d in ty.shape), ty.dtype)]


def _flatten_params(ty: Type, name: str, into: list) -> Any:
    if isinstance(ty, TupleType):
        return tuple(_flatten_params(f, f"{name}.{k}", into) for k, f in enumerate(ty.fields))
    (shape, dtype), = _leaf_types(ty)
    into.append((name, shape, dtype))
    return Buffer(shape, dtype, Ref("input", len(into) - 1))


def _leaves(value: Any) -> list[Buffer]:
    if isinstance(value, tuple):
        return [b for v in value for b in _leaves(v)]
    return [value]


def _output_names(ty: Type, prefix: str = "output") -> list[str]:
    if isinstance(ty, TupleType):
        return [n for k, f in enumerate(ty.fields) for n in _output_names(f, f"{prefix}.{k}")]
    return [prefix]


def _place_outputs(outputs: list[Buffer], temps: list[Buffer]) -> None:
    """A kernel result that is an output of @main is written in place, once; the same
    result returned twice, or an input or constant returned, is copied by the runtime."""
    placed: set[int] = set()
    for k, buf in enumerate(outputs):
        if buf.ref.kind == "temp" and id(buf) not in placed:
            placed.add(id(buf))
            buf.ref = Ref("output", k)


def _assign_offsets(steps: list[Step], outputs: list[Buffer], views: list[tuple[Buffer, Buffer]] = (),
                    writes_over: dict[Function, int] | None = None) -> int:
    """Workspace offsets for the temporaries: live from their kernel to their last reader
    (a reader of a view reads the buffer under it); a kernel's output written over an
    argument (`_written_over`) takes that argument's place."""
    root: dict[int, Buffer] = {}
    for view, source in views:
        root[id(view)] = root.get(id(source), source)
    last_use: dict[int, int] = {}
    for k, step in enumerate(steps):
        for b in step.args:
            last_use[id(root.get(id(b), b))] = k
    for b in outputs:  # a copied output stays live to the end
        last_use[id(b)] = len(steps)
    free: list[tuple[int, int]] = []  # (offset, size) blocks, sorted by offset
    top = 0
    live: list[tuple[int, Buffer]] = []
    for k, step in enumerate(steps):
        over = _written_over(step, k, (writes_over or {}).get(step.func), root, last_use)
        if over is not None:  # the output takes the argument's block, which stays live for it
            step.outs[0].ref = over.ref
            live = [(last_use.get(id(step.outs[0]), k), step.outs[0]) if b is over else (end, b) for end, b in live]
        for b in step.outs:
            if b.ref.kind != "temp" or b.ref.index >= 0:
                continue
            size = -(-max(b.nbytes, 1) // ALIGN) * ALIGN
            spot = next((i for i, (_, s) in enumerate(free) if s >= size), None)
            if spot is None:
                offset, top = top, top + size
            else:
                offset, s = free.pop(spot)
                if s > size:
                    free.insert(spot, (offset + size, s - size))
            b.ref = Ref("temp", offset)
            live.append((last_use.get(id(b), k), b))
        still = []
        for end, b in live:
            if end <= k:
                size = -(-max(b.nbytes, 1) // ALIGN) * ALIGN
                free.append((b.ref.index, size))
            else:
                still.append((end, b))
        live = still
        free = _coalesce(free)
    return top


def _written_over(step: Step, k: int, arg: int | None, root: dict[int, Buffer],
                  last_use: dict[int, int]) -> Buffer | None:
    """The argument of step `k` its one output is written over: the one its kernel claims
    (`arg`), when it is a temporary read last here (by the buffer or a view of it), not a
    view, no other argument on its memory, of the output's size and dtype (see the module
    doc)."""
    if arg is None or len(step.outs) != 1 or arg >= len(step.args):
        return None
    out, b = step.outs[0], step.args[arg]
    if (out.ref.kind != "temp" or b.ref.kind != "temp" or id(b) in root
            or last_use.get(id(b)) != k or out.dtype != b.dtype or out.nbytes != b.nbytes):
        return None
    if sum(root.get(id(a), a) is b for a in step.args) != 1:
        return None
    return b


def _coalesce(blocks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for off, size in sorted(blocks):
        if merged and merged[-1][0] + merged[-1][1] == off:
            merged[-1] = (merged[-1][0], merged[-1][1] + size)
        else:
            merged.append((off, size))
    return merged


def _graph(plan: Plan) -> dict:
    """TVM's graph executor JSON for the plan."""
    nodes: list[dict] = []
    entry: dict[int, list[int]] = {}
    shapes: list[list[int]] = []
    dtypes: list[str] = []
    storage: list[int] = []
    storage_ids: dict[Ref, int] = {}

    source = {id(view): src for view, src in plan.views}

    def add_entry(buf: Buffer) -> list[int]:
        if id(buf) not in entry and id(buf) in source:  # a view: a __nop node on its source's storage
            inputs = [add_entry(source[id(buf)])]
            entry[id(buf)] = [len(nodes), 0, 0]
            nodes.append({"op": "tvm_op", "name": "__nop", "inputs": inputs,
                          "attrs": {"func_name": "__nop", "num_inputs": "1", "num_outputs": "1",
                                    "flatten_data": "0"}})
            shapes.append(list(buf.shape)); dtypes.append(buf.dtype); storage.append(storage_of(buf))
        if id(buf) not in entry:
            raise KeyError("buffer used before it is produced")
        return entry[id(buf)]

    def storage_of(buf: Buffer) -> int:
        return storage_ids.setdefault(buf.ref, len(storage_ids))

    arg_nodes = []
    input_buffers: dict[Ref, Buffer] = {}
    for step in plan.steps:
        for b in step.args:
            if b.ref.kind in ("input", "const"):
                input_buffers.setdefault(b.ref, b)
    for ref, buf in sorted(input_buffers.items(), key=lambda kv: (kv[0].kind != "input", kv[0].index)):
        name = plan.inputs[ref.index][0] if ref.kind == "input" else f"p{ref.index}"
        arg_nodes.append(len(nodes))
        entry[id(buf)] = [len(nodes), 0, 0]
        nodes.append({"op": "null", "name": name, "inputs": []})
        shapes.append(list(buf.shape)); dtypes.append(buf.dtype); storage.append(storage_of(buf))
        for step in plan.steps:  # every Buffer object for this ref is the same entry
            for b in step.args:
                if b.ref == ref:
                    entry[id(b)] = entry[id(buf)]
    for step in plan.steps:
        inputs = [add_entry(b) for b in step.args]
        index = len(nodes)
        nodes.append({"op": "tvm_op", "name": step.kernel, "inputs": inputs,
                      "attrs": {"func_name": step.kernel, "num_inputs": str(len(step.args)),
                                "num_outputs": str(len(step.outs)), "flatten_data": "0"}})
        for k, b in enumerate(step.outs):
            entry[id(b)] = [index, k, 0]
            shapes.append(list(b.shape)); dtypes.append(b.dtype); storage.append(storage_of(b))
    heads = [entry[id(b)] for b in plan.outputs if id(b) in entry]
    node_row_ptr, count = [0], 0
    for node in nodes:
        count += int(node.get("attrs", {}).get("num_outputs", 1))
        node_row_ptr.append(count)
    return {"nodes": nodes, "arg_nodes": arg_nodes, "heads": heads, "node_row_ptr": node_row_ptr,
            "attrs": {"dltype": ["list_str", dtypes], "shape": ["list_shape", shapes],
                      "storage_id": ["list_int", storage]}}
