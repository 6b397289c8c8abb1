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
- frequency: "cpu MHz" of /proc/cpuinfo, the current clock (turbo may run above it);
  where it cannot be read, 2.5 GHz is assumed and the derivation says so.
- cores: the threads the kernels run on, at most the CPUs of the machine.

It is an upper bound no real kernel reaches (loads, stores and loop overhead share the
cycles); a `--peak GFLOPS` given by the user replaces it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import llvmlite.binding as llvm

# LLVM host CPU name -> (FMA datapath bits, FMA units), where the ISA width misleads
FMA_DATAPATH = {
    "znver4": (256, 2), "znver3": (256, 2), "znver2": (256, 2), "znver1": (128, 2),
}
ASSUMED_GHZ = 2.5


@dataclass(frozen=True)
class Peak:
    gflops: float
    derivation: str


def machine_peak(threads: int, *, cpuinfo: str = "/proc/cpuinfo") -> Peak:

    cpu = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features()
    widest = 512 if features.get("avx512f") else 256 if features.get("avx") else 128
    has_fma = bool(features.get("fma"))
    bits, units = FMA_DATAPATH.get(cpu, (widest, 2))
    why_units = f"{units} FMA units ({cpu}: {bits}-bit FMA pipes)" if cpu in FMA_DATAPATH else \
        f"{units} FMA units (assumed), {bits}-bit ({'AVX-512' if bits == 512 else 'AVX' if bits == 256 else 'SSE'})"
    lanes = bits // 32
    ghz, where = _frequency(cpuinfo)
    cores = max(1, min(threads, os.cpu_count() or 1))
    per_cycle = units * lanes * (2 if has_fma else 1)
    gflops = cores * ghz * per_cycle
    derivation = (f"{cores} core{'s' if cores != 1 else ''} × {ghz:.2f} GHz ({where}) × {why_units} × "
                  f"{lanes} float32 lanes × {2 if has_fma else 1} FLOP/{'FMA' if has_fma else 'op'} "
                  f"= {gflops:.0f} GFLOP/s (an estimate)")
    return Peak(gflops, derivation)


def given_peak(gflops: float) -> Peak:
    return Peak(gflops, f"{gflops:g} GFLOP/s (given with --peak)")


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
