"""A strided convolution's padded input made a tile at a time, inside the tile that reads
it (conv_chunks.py's square tile a row, on a 32-register unit), instead of a padded copy
of the whole input before the convolution.

A blocked convolution reads its input through `T_pad` (te/topi/conv_blocked.py), which
conv.py otherwise computes whole before the tiles: for ResNet-50's stride-2 3x3 of 128
channels at 56x56 a copy of 1.7 MB (beyond this machine's 1 MiB L2), read back once per
group of 4 filter blocks.  In a sampled profile in the model (perf, cpu-clock, 1 thread,
AVX-512 Zen 5) that copy held 3.8-4.7% of the kernel's samples (its loads of an input the
kernel before left beyond L2), the tiles' reduction loop 93% (about 96% of the FMA
units' peak), storing and reloading the sums between chunks 2%.  Here each tile of
conv_chunks.py's SQUARE columns of a row computes, for its chunk's input block, the padded window it
reads, (kernel height) x ((SQUARE - 1) x stride + kernel width) positions of 16 lanes:
3 x 9 vectors (1.7 KB, in L1) for a 3x3 at stride 2, the copy's selects now on 27
vectors a tile, its loads overlapping the FMA-bound reduction of the tile before.  The
tile stays a row (`flat` False): over rows flattened the region of a tile is not one row
and the bound inference took the buffer's rows whole (5 x 57 vectors a tile).  Each sum
adds the same terms in the same order (outputs bit-identical).

Measured in the model (1 thread; four builds in one process, A B B A, their inferences
rotated 16 rounds, each kernel's least of 3 calls a round, median of the paired ratios;
load 12-14 from other work): ResNet-50's layer2.0 stride-2 3x3 0.957 and 0.973 (the two
pairs 0.965/0.955 and 0.973/0.964); the rest of the model unchanged (median 1.00).  In
two processes (the base's and this build's workers alternated, 30 rounds, each kernel's
least of 3 calls; load 13) 0.984 and, the processes' roles swapped, 0.997, where the
unchanged Winograd kernels moved by 0.89-0.96 between the two processes: at that load a
few percent either way is where each process's buffers lie.  conv_prefetch.py's window
prefetch asked for the padded copy's lines 4 tiles ahead; with no such copy it asks for
nothing here (asking for the input's lines instead: below).
Tried and not kept, the same way: the padded rows of a band of output rows made per band
(compute_at the convolution's outermost loop, the band's groups and chunks inside, 1 to
4 rows a band) 1.00 with the next band's input asked for a tile ahead or a chunk ahead
1.00-1.02; the window of a chunk made per chunk 1.00 (flattened, whole rows); the input
lines of the tile 4 tiles on asked for (PREFETCHT1, at each tile or each filter row) on
top of this 1.014 and 1.020; the tile a row without the per-tile window 0.99 (noise).

The window's columns are unrolled (h-near): each of its rows is then a row check, the
first column's check, and the row's vectors loaded and stored with no loop between them
(a 9-iteration loop with a compare and a branch a vector before).  Where the time of
this kernel goes (ResNet-50's layer2.0 3x3, called alone on one thread, the variants'
LLVM IR loaded in one process and called in turns, 20-40 rounds, median of the paired
ratios; load 4-6): the reduction runs at the FMA units' peak (the kernel without the
window's loads and stores, its sums wrong, took 0.945-0.957 of the time, 98% of a
measured peak of 8.6 G FMAs of 16 lanes a second); the window's 27 loads and 27 stores
a tile cost about a cycle each, not hidden behind the FMAs of the tile before; its loads
hitting L1 (the input lines made to repeat) 0.984-0.986.  Unrolled: 0.975-0.987 (its
rows too: 0.994); at load 13, 0.985-0.995.  In the model beside onnxruntime's node
(bench/layers.py, 1 thread, 30 runs, the two builds in turns, 6 runs each, load 6-13):
the kernel's median 918 -> 910 us, its ratio 1.01-1.02x -> 0.98-1.01x.  Tried, not
kept (alone, the same way, against this kernel before the unroll): the next tile's
window lines asked for a tile ahead (PREFETCHT0 1.039, PREFETCHT1 1.028,
with the unroll 0.990 against 0.982, 2 tiles ahead 1.002); the broadcasts reading the
input itself, no window (the borders wrong, so a bound): 1.098, with the next tile's
lines asked for 1.118; the window made once a row of tiles (3 x 57 vectors) 1.059, once
a chunk 1.019; the bands of rows outside the block groups (each band's input read by
both groups from L2) 1.000; 2 and 1 rows a buffer 0.992 and 1.010; the chunks innermost
(the sums in registers across the reduction, no buffer; 288 KiB of filters a tile from
L2) 1.075; the 4 filter blocks' weights 1 KiB apart in L1's sets (a hand-edited kernel,
as a bound) 0.976-0.986, not on top of the unroll.
Tried, not kept (h-near3): the input block's 16 channels a loop (conv_rolled.py's idea)
and the wider tiles that might allow.  The unrolled 4 x 4 does not spill: its inner loop
(a filter column) is 256 FMAs, 128 loads (64 broadcasts, 64 weight vectors), no stack
access.  Rolled, a step is 16 FMAs, 4 broadcasts, 4 weight loads, no stack access.  Alone
(this kernel with a residual, the variants lowered in one process and called in turns,
40 rounds, each one's least of 3 calls, median of the paired ratios; load 0.8-0.9):
4 x 4 rolled 1.001-1.003 (ob and xi swapped: 1.006); 5 x 4 rolled or not 1.007 (a tail
of 3); 6 x 4 rolled 1.020 (no stack access in the step's loop; a tail of 4; swapped
1.022); 7 x 4 rolled 1.094-1.098 (28 accumulators and 7 broadcasts: 5 sums stored and
reloaded a step, 10 stack accesses per 28 FMAs), unrolled about 1.15.  In the model
(bench/layers.py --model resnet50 --runs 30, 1 thread, base then 4 x 4 rolled, 3 pairs,
load 0.5-1.2): 870.0 / 877.6 / 860.0 µs (1.02x, 1.02x, 1.01x onnxruntime's node) against
872.9 / 871.7 / 861.3 µs (1.02x, 1.03x, 1.02x); outputs bit-identical.
"""

from __future__ import annotations

from ..te import expr as te
from .conv_window_inside import read_inside
from .primitives import Schedule, Stage
from .stage import Axis
from .vector_unit import VectorUnit

READ_INSIDE = True  # the tiles whose window lies inside the input read it in place (conv_window_inside.py)
MIN_STRIDE = 2  # the windows of neighbouring tiles overlap by one column at most from here


def _window_read(conv: Stage) -> te.Load | None:
    """The 5-D load of the blocked input (N, B, H, W, lanes) whose column index reads the
    output's column axis (the data of a blocked convolution)."""
    x = conv.tensor.op.axes[3]
    for ld in te.nodes(conv.tensor.op.body.source):
        if isinstance(ld, te.Load) and ld.tensor.ndim == 5 and any(n is x for n in te.nodes(ld.indices[3])):
            return ld
    return None


def column_stride(conv: Stage) -> int:
    """The stride of `conv`'s window along the columns, from the widths of its input and
    output and the filter's width (the reduction axis the input's column index reads): 1
    when the output has a single column."""
    ld = _window_read(conv)
    ow = conv.tensor.shape[3]
    if ld is None or ow < 2:
        return 1
    widths = [iv.extent for iv in conv.tensor.op.body.axes if any(n is iv for n in te.nodes(ld.indices[3]))]
    kw = widths[0] if widths else 1
    return (ld.tensor.shape[3] - kw) // (ow - 1)


def wants_tile_pad(conv: Stage, unit: VectorUnit, square: int) -> bool:
    """Whether `conv` (N, B, OH, OW, lanes), on `unit`, takes the square tile (`square`
    columns x `square` blocks) a row with its padded window made in the tile (module doc):
    a 32-register unit, input and output blocks of its lanes, output blocks and a row that
    `square` divides, a filter wider than one column at a stride of at least MIN_STRIDE,
    read through a computed (padded) input."""
    _, blocks, _, ow, lanes = conv.tensor.shape
    ld = _window_read(conv)
    if unit.registers < 32 or lanes != unit.lanes or blocks % square or ow % square or ld is None:
        return False
    if ld.tensor.shape[4] != unit.lanes:  # an input of a few lanes (the stem's 3): not measured
        return False
    return ld.tensor.op is not None and bool(conv.reduce_axes) and column_stride(conv) >= MIN_STRIDE


def pad_at_tile(sch: Schedule, conv: Stage, at: Axis) -> Stage | None:
    """Compute the padded input `conv` reads (a copy the schedule computes, not inlined,
    computed nowhere else yet) at `conv`'s tile loop `at`: the window that tile reads,
    its columns unrolled, its lanes vectorized.  The stage so scheduled, or None when
    `conv` reads no such copy."""
    ld = _window_read(conv)
    if ld is None or ld.tensor.op is None:
        return None
    pad = sch[ld.tensor]
    if pad.inlined or pad.is_reduction or pad.attach is not None:
        return None
    sch.vectorize(pad.tensor, pad.axes[-1])
    sch.unroll(pad.tensor, pad.axes[3])  # the window's columns, no loop between their vectors (module doc)
    sch.compute_at(pad.tensor, conv.tensor, at)
    if READ_INSIDE:
        sch.rewrite(read_inside, f"{pad.name} read in place where its window lies inside its input "
                                 f"(conv_window_inside.py)")
    return pad
