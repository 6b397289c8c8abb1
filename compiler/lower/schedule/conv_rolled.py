"""Register tiles whose step over the channels of one input block stays a loop (rolled).

conv_tile_end.py `unroll_block_channels` unrolls a tile's reduction over the 16 channels
of an input block (LLVM unrolls it: codegen/unrolled_by_llvm.py), so 16 steps of the tile
lie in one basic block.  With 14-16 accumulators LLVM's scheduler then hoists the
broadcasts of later steps ahead of their FMAs and, out of registers, keeps them on the
stack: MobileNet v2's 144 -> 24 + residual at 56x56 with 8 columns of a 24-lane block (16
accumulators, 8 broadcasts, 2 weight vectors: 26 registers) had 88 stack accesses in each
loop of 16 channels (256 FMAs), which is why conv.py's `wide_block_tile` took 4 columns
(8 accumulators: two FMA ports of about 4 cycles' latency have nothing else to do).  Left
a loop of one step per channel (an add, a compare and a branch beside its 16 FMAs) the
same tile has no stack access: the step's 8 broadcasts are made and spent inside it.
So are MobileNet v2's projections to 32 channels (2 blocks of 16) at 28x28 given 7 columns
x 2 blocks (14 accumulators), where conv.py's unrolled 7 x 2 spilled and `two_block_tile`
had taken 4 x 2 (8 accumulators).

Measured in the model (bench/layers.py --model mobilenet --runs 30, 1 thread, beside
onnxruntime's node; the base and this build in turns, 3 runs each, medians of the runs'
µs and of their ratios; load 2-5 from other work): 144 -> 24 + residual at 56x56 (features.3)
127.3 -> 111.1 µs, 1.05x -> 0.91x; 96 -> 24 (features.2) 85.1 -> 75.7 µs; 192 -> 32 +
residual at 28x28 (features.5, 6) 45.0 and 44.0 -> 39.6 and 39.1 µs, 1.00-1.01x ->
0.88-0.89x; 144 -> 32 (features.4) 33.6 -> 30.3 µs.  Tried: 4 columns of 24 lanes rolled
127.0 -> 124.8 µs (the accumulators, not the loop, are the gain); 14 columns of 24 lanes
rolled 111.2 µs (as 8); 14 x 2 rolled spilled (26 stack accesses a step).  Every tile
rolled: the chunked 7x7 kernels 1.02-1.14x slower (their loops over chunks and rows
around it), so only these two.  Each sum adds its terms in the order the unrolled tile
did.
"""

from __future__ import annotations

from .vector_unit import VectorUnit

PAIR_COLS = 7  # columns of the rolled tile of 2 blocks (`pair_tile`)


def pair_tile(width: int, blocks: int, lanes: int, unit: VectorUnit) -> bool:
    """Whether a 1x1 convolution of 2 blocks of the unit's lanes on a 32-register unit,
    on a row PAIR_COLS divides and is wider than (28: MobileNet v2's projections to 32
    channels), takes PAIR_COLS columns x 2 blocks, rolled (module doc); conv.py's
    `two_block_tile` (4 x 2) otherwise."""
    return (unit.registers >= 32 and lanes == unit.lanes and blocks == 2
            and width % PAIR_COLS == 0 and width > PAIR_COLS)


def rolls_block_channels(width: int, blocks: int, lanes: int, unit: VectorUnit, pointwise: bool) -> bool:
    """Whether conv.py's tile of a convolution of `blocks` blocks of `lanes` on a row of
    `width` keeps its step over an input block's channels a loop (module doc): a block
    wider than the unit's registers on a 32-register unit (`wide_block_tile`), or a 1x1's
    `pair_tile`."""
    if unit.registers < 32:
        return False
    return lanes > unit.lanes or (pointwise and pair_tile(width, blocks, lanes, unit))
