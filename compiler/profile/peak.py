"""The machine's float32 peak, an estimate stated with how it was derived.

    peak = machine_peak(threads=2)
    peak.gflops        # 332.3
    peak.derivation    # "2 cores × 2.60 GHz × 2 FMA units × 16 float32 lanes (512-bit) × 2 FLOP/FMA ..."

peak = cores × frequency × FMA units × float32 lanes × 2 (an FMA is two FLOPs).

- lanes: the width of the FMA datapath.  For the CPUs named in `FMA_DATAPATH` (LLVM's
  host CPU name) it is known; AMD's Zen 4, for one, accepts AVX-512 but executes it on
  two 256-bit FMA pipes.  Otherwise it is the widest vector ISA the host reports (AVX-512
  512 bits, AVX/AVX2 256, else SSE 128) and two FMA units (every x86 server core since
  Haswell has two; one without FMA counts a multiply and an add as two units of one FLOP).
- frequency: measured on x86-64 (`measured_ghz`): a JIT-compiled chain of dependent 64-bit
  `imul`s, 3 cycles each on every x86 core since Nehalem and Zen, timed a few times (the
  fastest wins, so a descheduled trial does not count): the clock the kernels really run
  at, turbo included.  Under a hypervisor, /proc/cpuinfo's "cpu MHz" is the nominal clock
  (2.6 GHz on the machine of docs/profile.md, which runs at 3.7), so it is only the
  fallback; where neither is available, 2.5 GHz is assumed and the derivation says so.
- cores: the threads the kernels run on, at most the CPUs of the machine.

It is an upper bound no real kernel reaches (loads, stores and loop overhead share the
cycles); a `--peak GFLOPS` given by the user replaces it.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..lower.runtime.jit import JIT

# LLVM host CPU name -> (FMA datapath bits, FMA units), where the ISA width misleads
FMA_DATAPATH = {
    "znver4": (256, 2), "znver3": (256, 2), "znver2": (256, 2), "znver1": (128, 2),
}
ASSUMED_GHZ = 2.5
IMUL_CYCLES = 3  # latency of a 64-bit imul, x86 since Nehalem (Intel) and Zen (AMD)
CHAIN, ITERATIONS, TRIALS = 32, 20_000, 7
_measured: list[float] = []  # once per process


@dataclass(frozen=True)
class Peak:
    gflops: float
    derivation: str


def machine_peak(threads: int, *, cpuinfo: str = "/proc/cpuinfo", measure: bool = True) -> Peak:

    cpu = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features()
    widest = 512 if features.get("avx512f") else 256 if features.get("avx") else 128
    has_fma = bool(features.get("fma"))
    bits, units = FMA_DATAPATH.get(cpu, (widest, 2))
    why_units = f"{units} FMA units ({cpu}: {bits}-bit FMA pipes)" if cpu in FMA_DATAPATH else \
        f"{units} FMA units (assumed), {bits}-bit ({'AVX-512' if bits == 512 else 'AVX' if bits == 256 else 'SSE'})"
    lanes = bits // 32
    ghz = measured_ghz() if measure else None
    ghz, where = (ghz, f"measured: dependent imul chain, {IMUL_CYCLES} cycles each") if ghz else _frequency(cpuinfo)
    cores = max(1, min(threads, os.cpu_count() or 1))
    per_cycle = units * lanes * (2 if has_fma else 1)
    gflops = cores * ghz * per_cycle
    derivation = (f"{cores} core{'s' if cores != 1 else ''} × {ghz:.2f} GHz ({where}) × {why_units} × "
                  f"{lanes} float32 lanes × {2 if has_fma else 1} FLOP/{'FMA' if has_fma else 'op'} "
                  f"= {gflops:.0f} GFLOP/s (an estimate)")
    return Peak(gflops, derivation)


def given_peak(gflops: float) -> Peak:
    return Peak(gflops, f"{gflops:g} GFLOP/s (given with --peak)")


def measured_ghz() -> float | None:
    """The clock a core runs at now, in GHz, from a timed chain of dependent `imul`s; None
    off x86-64 or if the chain cannot be compiled."""
    if _measured:
        return _measured[0] or None
    ghz = 0.0
    if llvm.get_process_triple().startswith("x86_64"):
        try:
            ghz = _time_imul_chain()
        except Exception:  # noqa: BLE001 -- an estimate: fall back to /proc/cpuinfo
            ghz = 0.0
    _measured.append(ghz)
    return ghz or None


def _time_imul_chain() -> float:
    llvm.initialize_native_asmparser()  # inline assembly needs it (idempotent)
    i64 = ir.IntType(64)
    module = ir.Module(name="relaylens_clock")
    fn = ir.Function(module, ir.FunctionType(i64, [i64, i64]), "relaylens_imul_chain")
    count, seed = fn.args
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    builder = ir.IRBuilder(entry)
    builder.branch(loop)
    builder.position_at_end(loop)
    i, x = builder.phi(i64), builder.phi(i64)
    chain = ir.InlineAsm(ir.FunctionType(i64, [i64]), f".rept {CHAIN}\nimulq $0, $0\n.endr", "=r,0")
    y = builder.call(chain, [x])
    j = builder.add(i, ir.Constant(i64, 1))
    i.add_incoming(ir.Constant(i64, 0), entry)
    i.add_incoming(j, loop)
    x.add_incoming(seed, entry)
    x.add_incoming(y, loop)
    builder.cbranch(builder.icmp_signed("<", j, count), loop, done)
    builder.position_at_end(done)
    builder.ret(y)
    jit = JIT(1)
    jit.load(jit.optimize(str(module)))
    run = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(jit.address(fn.name))
    best = 0.0
    for _ in range(TRIALS):
        start = time.perf_counter_ns()
        run(ITERATIONS, 3)
        best = max(best, ITERATIONS * CHAIN * IMUL_CYCLES / (time.perf_counter_ns() - start))
    return best


def _frequency(cpuinfo: str) -> tuple[float, str]:
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "cpu MHz":
                    return float(value) / 1000, "cpu MHz in /proc/cpuinfo"
    except (OSError, ValueError):
        pass
    return ASSUMED_GHZ, "assumed: no cpu MHz in /proc/cpuinfo"
