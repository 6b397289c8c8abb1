"""Whether a kernel's output may take the memory of one of its inputs: the claim a
convolution's schedule makes for the memory planner (runtime/plan.py), as onnxruntime's
NCHWc Conv with Sum writes its result over the Sum's input.

ResNet-50's bottleneck ends (1x1 convolution, bias, residual add, relu, one kernel)
read the residual once, at the position they store.  Written over it, the residual's
lines are in cache (and owned) when the store comes, and a stream of the output's size
leaves the memory traffic.  Measured in the model (ResNet-50 at 1 thread, the two
builds' timed entries alternated, 3 process pairs of each, 12 rounds, each kernel's
least of 3 calls a round, median of the paired ratios; load 3.8-6.8): its 16
bottleneck ends 0.886x the time summed (64 -> 256 at 56x56 0.88-0.91, 128 -> 512 at
28x28 0.94-0.98, 256 -> 1024 at 14x14 0.91-0.96, 512 -> 2048 at 7x7 0.92-1.00), the
whole inference 0.98x CPU time (quartiles 0.94-1.02); the workspace 11.0 -> 7.8 MB.
Again at load 4.7-5.4: the ends 0.932x, the whole 0.981x, the other kernels 0.999x.
Beside onnxruntime's nodes (bench/layers.py, 4 runs of each build in turns, load 2-6.7,
medians of the runs' ratios): layer1's ends 1.10-1.17x -> 1.02-1.04x, layer2.0's 1.04x
-> 1.03x, layer3's 0.97-1.02x -> 0.93-0.95x, layer4.0's 1.00x -> 0.93x.  Tried: without
the residual's read prefetch where it is written over (conv_prefetch.py: the output's
PREFETCHW asks for the same line), 1.004x the time on the ends (0.99-1.03; 3 process
pairs, 10 rounds, load 1.9-2.3): not taken.

The claim (`Schedule.writes_over`, the input's index among the kernel's parameters)
holds when every element of that input is read only by the statement that stores the
same element of the output, before it stores it, and that element is stored once: the
input is read only by the epilogue (the kernel's one output), each time at the
epilogue's own position, and the schedule's tiles never store a position twice
(`tiles_overlap` False).  The planner then gives the output the input's memory when
the input is a temporary the kernel reads last (plan.py).  conv.py's tile whose columns
do not divide the row (its last tile computed over columns the one before computed)
claims nothing: today the loop-nest builder guards the epilogue's store there, so each
element is still stored once (1x1 64 -> 256 and 3x3 8 -> 8 at 13x13 came out right in
place), but that is the builder's choice, not the schedule's, and no bottleneck end of
ResNet-50 or MobileNet v2 takes that tile.

LLVM's `noalias` on the kernel's parameters (codegen/llvm.py) stays on the aliased
pair.  Formally a location read through one pointer and written through another breaks
the promise; what the optimiser does with it is to reorder memory accesses through the
two pointers across each other.  The only pairs whose order matters here are a load of
input[i] and the store of output[i] at the same i, and that store's value is computed
from that load (the data dependence orders them whatever alias facts LLVM holds); no
element is loaded from the output, and none of the input is loaded after its own store.
tests/test_in_place.py runs each claimed kernel with the two on one buffer against
numpy, for every bottleneck-end shape of ResNet-50 and MobileNet v2.

A row group (row_reduce.py: softmax computed a group of rows at a time) claims its input
too (`claim_rows_over`): each stage of the group reads the input only at the rows of the
group's iteration, and the output's stores of those rows come last in it, after every
read of them; iterations (parallel ones too) cover distinct rows.  The attention's
scores, shifted and masked, are a temporary only the softmax reads: written over, the
softmax's stores meet lines it has just read, and the workspace is smaller by them.
Measured (1 thread, CPU time, the kernel alone, alternated in one process, Zen 5, load
11): 0.98x the time with the output over its input.
"""

from __future__ import annotations

from ..te import expr as te
from .primitives import Schedule, Stage


def claim_output_over(sch: Schedule, epilogue: Stage, tiles_overlap: bool) -> None:
    """Set `sch.writes_over` to the input the output may be written over (see the module
    doc), when `epilogue` is the kernel's one output and its tiles do not overlap."""
    if tiles_overlap or len(sch.outputs) != 1 or not sch.is_output(epilogue):
        return
    out = epilogue.tensor
    for k, t in enumerate(sch.inputs):
        if (tuple(t.shape) == tuple(out.shape) and t.dtype == out.dtype
                and _read_only_in_place(sch, epilogue, t)):
            sch.writes_over = k
            return


def claim_rows_over(sch: Schedule, out: Stage, group: list[Stage]) -> None:
    """Set `sch.writes_over` for a row group (see the module doc): `out` the one output,
    `group` every stage kept, each reading an input of the output's shape and dtype only
    at its own rows (the leading indices its own leading axes)."""
    if len(sch.outputs) != 1 or not sch.is_output(out):
        return
    o = out.tensor
    for k, t in enumerate(sch.inputs):
        if tuple(t.shape) != tuple(o.shape) or t.dtype != o.dtype:
            continue
        loads = [(s, ld) for s in group for ld in te.nodes(sch.effective_body(s))
                 if isinstance(ld, te.Load) and ld.tensor is t]
        if loads and all(_at_own_row(ld, s.tensor.op.axes, o.ndim) for s, ld in loads):
            sch.writes_over = k
            return


def _at_own_row(ld: te.Load, axes, ndim: int) -> bool:
    """Whether `ld` reads at the reader's own leading (row) indices: its first ndim - 1."""
    lead = ndim - 1
    return len(ld.indices) == ndim and len(axes) >= lead and all(i is a for i, a in zip(ld.indices[:lead], axes))


def may_claim(outputs: list[te.Tensor], inputs: list[te.Tensor]) -> bool:
    """Whether a schedule of these computes could make the claim: some input of the one
    output's shape and dtype that every compute reading it reads at the compute's own
    position, of that shape.  Cheap (no schedule): pipeline.py asks it before scheduling
    a kernel only for its claim.  ResNet-50: 5 of its 29 kernels pass (the 4 bottleneck
    ends and the classifier, whose bias has the output's shape), against 14 with an input
    of the output's type (a 1x1 or Winograd convolution keeping the shape reads its input
    at other positions): 0.03 s of CPU to find the claims instead of 0.13 s."""
    if len(outputs) != 1:
        return False
    out = outputs[0]
    found = {id(t): t for t in inputs if tuple(t.shape) == tuple(out.shape) and t.dtype == out.dtype}
    rows = {id(t): t for t in found.values()}  # read only at the readers' own rows (a row group's claim)
    for c in te.post_order(outputs):
        if c.op is None or not (found or rows):
            continue
        for ld in (n for n in te.nodes(c.op.body) if isinstance(n, te.Load) and id(n.tensor) in rows):
            if tuple(c.shape) != tuple(out.shape) or not _at_own_position(ld, c.op.axes):
                found.pop(id(ld.tensor), None)
            if tuple(c.shape[:out.ndim - 1]) != tuple(out.shape[:-1]) or not _at_own_row(ld, c.op.axes, out.ndim):
                del rows[id(ld.tensor)]
    return bool(found or rows)


def _at_own_position(ld: te.Load, axes) -> bool:
    return len(ld.indices) == len(axes) and all(
        i is a or (isinstance(i, te.Const) and i.value == 0 and a.extent == 1) for i, a in zip(ld.indices, axes))


def _read_only_in_place(sch: Schedule, epilogue: Stage, t: te.Tensor) -> bool:
    """Whether `t` is read by `epilogue` alone (inlined stages substituted), each time at
    the epilogue's own position."""
    axes = epilogue.tensor.op.axes
    read = False
    for stage in sch.stages:
        if stage.inlined:
            continue
        for ld in (n for n in te.nodes(sch.effective_body(stage)) if isinstance(n, te.Load)):
            if ld.tensor is not t:
                continue
            if stage is not epilogue or not _at_own_position(ld, axes):
                return False
            read = True
    return read
