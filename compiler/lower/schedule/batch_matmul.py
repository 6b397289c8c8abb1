"""Schedule of `nn.batch_matmul` with b read along its rows (transpose_b false, as the ONNX
frontend makes attention's two products): a (B, M, K) times b (B, K, N).

defaults.py's register tile (4 rows x 16 lanes: 8 accumulators on AVX2) keeps too few
FMA chains in flight for the FMA's latency (4 cycles, 2 a cycle: 8 chains at best, no
slack).  This one is MLAS's SGEMM tile: `rows` rows x one vector width of columns (16
float32: two AVX2 registers), rows = the accumulators the host's tile may keep (12 on
AVX2, vector_unit.py) over the registers a row takes, at most ROWS_MAX: 6 x 2 on AVX2.
Per step of k the tile broadcasts `rows` scalars of a and loads the columns' vectors of
b for rows * 2 FMAs.

A product that is an output (no epilogue: both of attention's products in the GPT-2 block
and BERT, whose transposes are not fused into them) stores its tiles into the output,
a tile's rows against every column strip in turn.  A strip is STRIP_REGISTERS vectors
wide (16 columns on AVX2, 32 with AVX-512, where 16 are one register and the tile kept 6
FMA chains, fewer than the FMA units' two a cycle for 4 cycles need): the values product
12x128x128 by 12x128x64 on Zen 5, 133 -> 102 us (1 thread, alone, alternated in one
process, load 12; 4 rows of 64 columns 99 us):

    for batch                     parallel when the work is large and the batches at least
                                  PARALLEL_BATCHES (else i.outer: the threads share each
                                  batch's tiles, the remainder tile run after them)
     for i.outer                  the tiles' rows (the last rows a remainder tile)
      for j.outer                 the column strips
       T_batch_matmul             k.outer: k.inner (UNROLL_STEPS, unrolled),
                                  i.inner (rows, unrolled), j (the strip, vectorized): FMA,
                                  summed in registers (cache_accumulator at k.outer)

(LLVM drops the zeros stored into the output before the sums and loaded back, the
parameters being `noalias`.)

An einsum of the same form (`_roles`: attention's values `bhqk,bkhd->bqhd`, whose batch
axes b and h lie on either side of the rows q) takes the same tile, its batch axes fused
into one loop; defaults.py's tile had taken 4 heads by 16 of d, a broadcast and a load
for each FMA.  So do attention's scores `bqhd,bkhd->bhqk`, whose keys te/topi/einsum.py
copies with k last.  bench/onnx_ops.py's `einsum` (12 heads of 128 x 64, 1 thread,
`relaylens profile`, load 3-4): values 412 -> 100-110 us (61 -> 229-251 GFLOP/s; onnxruntime's
Einsum node 153-160), scores 354-362 -> 116 with the copy (onnxruntime 373-393).  The tile's rows of a (6 x 64 floats for attention: 1.5
KiB) stay in L1 while b's batch passes, and the output is written a whole row after
another.  The strips outside the rows instead (b's strip, 4 KiB, kept while a's batch
passed once per strip, 8 times; the output written a column strip at a time, 128 lines
512 B apart) measured the same alone (the kernel called again on the same buffers: the
rows outside 0.98 its time) but not in the model, where its inputs come from the
transposes before it and its output goes to the divide by sqrt(64) after it.  Inside the
whole inference (the two builds' timed entries alternated in one process, each layer's
call a pair, medians), rows outside the strips ÷ strips outside the rows:

    BERT, 1 thread, 24 rounds, load 6.0    scores 0.75 (379 against 507 us), values 0.94,
                                           the divide 0.91, scores + divide 0.76
      again, 20 rounds, load 7.2           0.80, 0.92, 0.96, 0.81
      two builds of each, 16 rounds,       ÷ the faster base build: 0.80-0.84, 0.96-0.97,
      load 6.0 (the base's two 0.94 apart) 0.95, 0.81-0.85
    BERT, 2 threads, 20 rounds, load 5.6   0.74, 0.91, 0.94, 0.77
    GPT-2 block, 1 thread, 30 rounds       scores 0.80, values 0.98 (and 0.77, 1.01)

so the scores gain 16-25% and the rest is within the spread of identical builds.
bench/layers.py (BERT, 1 thread, 30 runs, base and this in turns, four rounds, load
4-7): scores + divide beside onnxruntime's FusedMatMul 1.17x, 1.06x, 1.25x, 1.04x
before, 0.85x, 0.94x, 0.80x, 0.90x after; 252 -> 276 of 276 kernels at or below 1.0x
(264 in the most loaded round).  The whole inference in the same in-process runs: BERT
0.97-1.00, GPT-2 0.99-1.00.  Cold inputs or a cold output alone (the kernel alone,
rotating 12 copies of either) did not show it (0.98x and 1.07x): it is how the two
orders meet the caches their neighbours leave.

With an epilogue, the product is computed at the epilogue's loop over a column strip's
rows, a chunk of them at a time (the largest divisor of M whose chunk x 16 floats fit
STACK_BYTES: its buffer on the stack, not malloc'ed and freed each time as a larger one
is; no model of bench/ has such a product since their transposes stopped being fused
into it, and its order was not measured in a model):

    for batch, j.outer            fused, parallel when the work is large
     for i.outer                  the chunks
      T_batch_matmul.local        the tile's loops as above, over the chunk's rows
      i.inner, j.inner (vectorized): the epilogue

so a strip of b (K x 16: 4-8 KiB for attention) stays in L1 while every row passes.
Measured (1 thread, CPU time, builds alternated in one run, 11 rounds, load 3.4-4.8),
÷ defaults.py's tile: 12x128x64 by 12x64x128 (scores) 0.97, 12x128x128 by 12x128x64
(values) 0.80; the same schedule with 4 rows (8 accumulators) 1.06 and 0.91.  In the
models (with dense_pack's unrolled steps, bench/run.py's paired ratio to onnxruntime,
two runs each, load 5-6): GPT-2 block 0.94, 0.96 -> 0.91, 0.81; BERT 0.94, 0.97 -> 0.86,
0.84.  The chunks (64 rows for attention, instead of the 128 rows' 8 KiB malloc'ed per
strip): ÷ defaults.py's tile, values 0.92 -> 0.86, scores 1.04 -> 1.03 (11 rounds, load
7-10).

The output's own tiles, against the copy through the chunk's buffer (a store, a load and
a store per element, which a C model of the loop nest put at 15% of the scores' time and
9% of the values'), 1 thread, CPU time: 0.84 (scores) and 0.96 (values) its time (builds
alternated in one run, 15 rounds, load 6-7); in one process on the same buffers (21
rounds, load 6.5-7.3) 0.86 and 0.94, and beside onnxruntime's MatMul node 1.00 -> 0.88
and 0.90 -> 0.85.  Tried, without a gain beyond the spread of identical builds (+-3% in
one process, 3-7% across processes; alternated in one run, 7-21 rounds, load 4-7), as
ratios of the time (scores / values): packing b's strip contiguous at the chunk (TVM's
`cache_read`, added for it and not kept), against L1 set conflicts of b's rows 256-512 B
apart, 1.08 / 1.13, and 1.04 / 1.11 with 96 rows (no remainder tile): the copy costs more
than the conflicts (in a C model, even a's rows kept in L1 gained only 3-8%); the chunks
outside the strips (a's rows reused from L1) 0.95-1.00 / 0.98-1.00; 8 unrolled steps
0.96-1.10 / 0.98-1.07; 64-row chunks in the output's nest (two remainder tiles of 4 rows
for one of 2) 1.00 / 0.98.  (All measured on the kernel alone, which missed what the
order of the output's loops does in the model, above.)
"""

from __future__ import annotations

from ..te import expr as te
from .primitives import Schedule, Stage
from .stage import Axis
from .vector_unit import host_unit

ROWS_MAX = 6  # rows of the register tile
STRIP_REGISTERS = 2  # vector registers of a column strip (the product as an output; module doc)
UNROLL_STEPS = 4  # reduction steps a tile's loop body makes
PARALLEL_MIN = 16384  # elements times reduction length, as defaults.py
PARALLEL_BATCHES = 8  # fewer batches leave threads idle (3 on 2 threads: one waits a batch)
STACK_BYTES = 4096  # codegen/llvm.py's SMALL_ALLOCA_BYTES: a larger local buffer is malloc'ed each time


def schedules_batch_matmul(stage: Stage, lanes: int) -> bool:
    """Whether this schedule takes `stage`: a batch_matmul whose b is read along the
    columns j, N a multiple of `lanes`; or an einsum of the same form (`_roles`)."""
    return _roles(stage, lanes) is not None


def _roles(stage: Stage, lanes: int) -> tuple[list[int], int, int] | None:
    """The positions among `stage`'s data axes of (the batch axes, i, j) when it is a
    product this schedule takes, else None.  A batch_matmul is (b, i, j).  An einsum
    (te/topi/einsum.py) is one when it sums one label k of two operands, its last axis j
    (a multiple of `lanes`) is the last index of one operand (b) and read by no other, and
    exactly one other axis i is read by the other operand (a) and not by b: attention's
    values product `bhqk,bkhd->bqhd` (batch b and h, i = q, j = d, k summed)."""
    tag = stage.tensor.op.tag
    if tag not in ("nn.batch_matmul", "einsum") or len(stage.reduce_axes) != 1:
        return None
    axes = list(stage.tensor.op.axes)
    if len(axes) < 3 or axes[-1].extent % lanes:
        return None
    j = axes[-1]
    loads = [n for n in te.nodes(stage.body) if isinstance(n, te.Load)]
    if tag == "nn.batch_matmul":
        return ([0], 1, 2) if len(axes) == 3 and any(ld.indices[-1] is j for ld in loads) else None
    along_j = [ld for ld in loads if ld.indices and ld.indices[-1] is j]
    if len(loads) != 2 or len(along_j) != 1:
        return None
    b = along_j[0]
    a = loads[1] if loads[0] is b else loads[0]
    (k,) = stage.tensor.op.body.axes
    if _reads(a, j) or not _reads(a, k) or not _reads(b, k):
        return None
    rows = [n for n, x in enumerate(axes[:-1]) if _reads(a, x) and not _reads(b, x)]
    if len(rows) != 1:
        return None
    return [n for n in range(len(axes) - 1) if n != rows[0]], rows[0], len(axes) - 1


def _reads(load: te.Load, var: te.IterVar) -> bool:
    return any(n is var for index in load.indices for n in te.nodes(index))


def schedule_batch_matmul(sch: Schedule, stage: Stage, epilogue: Stage | None, lanes: int) -> None:
    """The product `stage` computed at `epilogue`'s (batch, column strip) loop, or without
    an epilogue (the product is an output) its tiles stored into the output (module doc)."""
    t = stage.tensor
    at_batch, at_i, at_j = _roles(stage, lanes)
    batch, i, j = [stage.axes[n] for n in at_batch], stage.axes[at_i], stage.axes[at_j]
    unit = host_unit()
    if epilogue is None:
        strip = lanes * max(1, STRIP_REGISTERS // unit.registers_for(lanes))  # a strip of two registers
        lanes = strip if j.extent % strip == 0 else lanes
        rows = max(1, min(ROWS_MAX, unit.accumulators // unit.registers_for(lanes), i.extent))
        jo, j = sch.split(t, j, lanes)
        sch.reorder(t, *batch, jo, i, j)
        io = _tile(sch, stage, i, j, rows, tail=i.extent % rows != 0)
        sch.reorder(t, io, jo)
        if _work(t) >= PARALLEL_MIN:
            b = sch.fuse(t, *batch) if len(batch) > 1 else batch[0]
            sch.parallel(t, b if b.extent >= PARALLEL_BATCHES else io)
        return
    rows_per_buffer = max(1, STACK_BYTES // (lanes * max(1, te.bits(t.dtype) // 8)))
    chunk = max(d for d in range(1, min(i.extent, rows_per_buffer) + 1) if i.extent % d == 0)
    rows = max(1, min(ROWS_MAX, unit.accumulators // unit.registers_for(lanes), chunk))
    _tile(sch, stage, i, j, rows, tail=chunk % rows != 0)
    e = epilogue.tensor
    eb, ei, ej = [epilogue.axes[n] for n in at_batch], epilogue.axes[at_i], epilogue.axes[at_j]
    jo, ji = sch.split(e, ej, lanes)
    eio, eii = sch.split(e, ei, chunk)
    sch.reorder(e, *eb, jo, eio, eii, ji)
    sch.vectorize(e, ji)
    loop = sch.fuse(e, *eb, jo)
    if loop.extent > 1 and _work(t) >= PARALLEL_MIN:
        sch.parallel(e, loop)
    sch.compute_at(t, e, eio)


def _tile(sch: Schedule, stage: Stage, i: Axis, j: Axis, rows: int, tail: bool) -> Axis:
    """The register tile: `rows` rows of i x the vector j, summed over k in registers;
    returns the loop over the tiles (i.outer)."""
    t = stage.tensor
    (k,) = stage.reduce_axes
    io, ii = sch.split(t, i, rows, tail=tail)
    if k.extent % UNROLL_STEPS == 0:
        ko, ki = sch.split(t, k, UNROLL_STEPS)
        sch.reorder(t, io, ko, ki, ii, j)
        sch.unroll(t, ki)
    else:
        ko = k
        sch.reorder(t, io, ko, ii, j)
    sch.unroll(t, ii)
    sch.vectorize(t, j)
    sch.cache_accumulator(t, ko)
    return io


def _work(t: te.Tensor) -> int:
    """Elements times reduction length."""
    work = 1
    for axis in (*t.op.axes, *t.op.body.axes):
        work *= axis.extent
    return work
