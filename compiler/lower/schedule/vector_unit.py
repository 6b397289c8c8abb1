"""The host's vector unit, as the default schedules size their register tiles.

    host_unit() -> VectorUnit(lanes, registers)

`lanes` is float32 lanes of one vector register, `registers` how many vector registers
the code may name: 16 lanes and 32 registers with AVX-512 (F and BW, the check of the
x86 layout choice, transform/x86_conv2d_layout.py `host_simd_lanes`), 8 and 16 with
AVX2, 4 and 16 otherwise.  `accumulators` is how many of them a register tile may keep
as running sums; the rest hold the operands of a step (weight vectors, broadcasts, the
loads of a lane-split product).  With 32 registers that is 20 (measured: a 4 x 7 tile of
a 3x3 convolution, 28, ran 1.5-2.7x slower than 2 x 7 at 7x7 and 14x14); with 16, 12.

RelayLens compiles for the host, so the unit is asked of LLVM once per process; the
kernel cache keys on the host's features (runtime/target.py `target_id`), so a schedule
sized for one unit is never reused on another.  Tests pass a unit explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...host import host


@dataclass(frozen=True)
class VectorUnit:
    lanes: int  # float32 lanes of one vector register
    registers: int  # vector registers the code may name

    @property
    def accumulators(self) -> int:
        """Running sums a register tile may keep (see the module doc)."""
        return 20 if self.registers >= 32 else 12

    @property
    def vector_bytes(self) -> int:
        return 4 * self.lanes

    def tile_fits(self, cols: int, vectors: int, per_block: int) -> bool:
        """Whether a register tile of a blocked convolution, `cols` output columns x
        `vectors` blocks of `per_block` registers, keeps its accumulators within
        `accumulators` and, with a step's `cols` broadcasts and one block of weights beside
        them, within the registers.  Beyond that LLVM moves accumulators to the stack and
        back inside the reduction loop (the filters are loaded into a register, not folded
        into the FMA, and the broadcasts of a step are all live at once): on AVX2, 1x1
        convolutions of 8-lane blocks (1 thread, in one run) 4 x 3 against 2 x 6, 16 -> 96
        channels at 112x112 0.90 against 0.53 ms, 24 -> 144 at 56x56 0.50 against 0.26,
        32 -> 192 at 28x28 0.23 against 0.11; 6 x 2 against 4 x 2, 32 -> 16 at 112x112
        0.32 against 0.17 ms; blocks of 12 lanes (two registers), 3 x 2 against 2 x 2,
        144 -> 24 at 56x56 0.77 against 0.48 ms; blocks of 16 lanes, 3 x 2 against 2 x 2,
        1.2-1.35x slower (conv_chunks.py), 64 -> 128 at 14x14 0.082 against 0.036 ms."""
        accumulators = cols * vectors * per_block
        return accumulators <= self.accumulators and (cols + 1) * per_block + accumulators <= self.registers

    def registers_for(self, lanes: int) -> int:
        """Registers one vector of `lanes` float32 takes: one per whole register, and for
        the rest one per power of two in it (the code generator's vector pieces: 12 lanes
        are a vector of 8 and one of 4)."""
        whole, rest = divmod(lanes, self.lanes)
        return whole + bin(rest).count("1")

AVX512 = VectorUnit(16, 32)
AVX2 = VectorUnit(8, 16)
SSE = VectorUnit(4, 16)


@lru_cache(maxsize=1)
def host_unit() -> VectorUnit:
    """The host's vector unit (see the module doc)."""
    try:
        facts = host()
    except Exception:  # noqa: BLE001 -- no LLVM host query: the narrowest unit
        return SSE
    if facts.has("avx512f", "avx512bw"):
        return AVX512
    return AVX2 if facts.has("avx2") else SSE
