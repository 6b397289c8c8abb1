"""The target machine code is made for, and what `JIT.optimize` asks of LLVM: together
with the compiler's version they decide a kernel's machine code, so both are part of
every on-disk cache key (lower/disk_cache.py, server/slow/report_cache.py).

Apart from jit.py so that a cache lookup needs neither the JIT, numpy nor the code
generator (the build worker answers a model built before with that much loaded), nor
LLVM itself: the host's facts come from compiler/host.py, which the worker reads in a
child process.
"""

from __future__ import annotations

from ...host import host

# What `optimize` asks of LLVM.  Tried: the code generator without loop strength reduction
# (`-disable-lsr`): ResNet-50's 29 kernels 3.32 -> 1.98 CPU s of machine code (LSR was 1.0 s
# of it, 0.17 s in one 1x1 convolution), but the model ran 3-7% slower at 1 thread (median
# of 3 alternated processes each, load 5-7); `-lsr-complexity-limit=1000` saved nothing.
OPTIONS = {"speed_level": 3, "loop_vectorization": True, "slp_vectorization": True, "loop_unrolling": True}


def target_id() -> str:
    """The target machine code is made for: triple, CPU, its features, LLVM's version."""
    facts = host()
    return " ".join([facts.triple, facts.cpu, facts.features, "llvm-" + ".".join(map(str, facts.llvm_version))])
