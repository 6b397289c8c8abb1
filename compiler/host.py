"""The host as LLVM sees it: its triple, CPU name and features, and LLVM's version; what
the schedules (vector width), the x86 layout pass, the code generator (triple), the JIT
and every on-disk cache key (lower/runtime/target.py) are made for.

    host().triple, host().cpu, host().features, host().llvm_version, host().has("avx2")

Read from llvmlite's binding, which loads LLVM: a 178 MB library whose static
initialisers alone make a process ~95 MB larger.  A process that only generates LLVM IR
and runs LLVM in forked children (the language server's build worker) calls
`from_a_child()` first: then the facts come from a short-lived child process, started at
once and read when first needed, and this process never loads LLVM for them.  Either way
they are read once per process and kept (forked children inherit them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from .lazy_modules import llvm, loaded

# what the child prints: the facts as JSON, in the order of Host's fields
_CHILD = ("import json, llvmlite.binding as llvm\n"
          "print(json.dumps([llvm.get_process_triple(), llvm.get_host_cpu_name(),"
          " llvm.get_host_cpu_features().flatten(), list(llvm.llvm_version_info)]))\n")
_CHILD_SECONDS = 60.0


@dataclass(frozen=True)
class Host:
    triple: str  # x86_64-unknown-linux-gnu
    cpu: str  # znver3
    features: str  # LLVM's flattened feature string: "+avx2,+fma,-avx512f,..."
    llvm_version: tuple[int, ...]

    def has(self, *features: str) -> bool:
        """Whether every one of `features` (LLVM's names, "avx512f") is on."""
        on = {f[1:] for f in self.features.split(",") if f.startswith("+")}
        return all(f in on for f in features)


_known: list[Host] = []  # the facts, once read
_child: list[subprocess.Popen] = []  # the child from_a_child() started


def host() -> Host:
    """The host's facts: from llvmlite's binding in this process, or from the child process
    `from_a_child()` started."""
    if not _known:
        found = _from(_child.pop()) if _child else None
        _known.append(found or _here())
    return _known[0]


def from_a_child() -> None:
    """Read the facts in a child process rather than load LLVM here: the child starts now,
    so that it runs while this process goes on importing; `host()` waits for its answer."""
    if _child or _known or loaded(llvm):
        return
    try:
        _child.append(subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    except OSError:
        return  # read here when asked


def _here() -> Host:
    return Host(llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
                tuple(llvm.llvm_version_info))


def _from(child: subprocess.Popen) -> Host | None:
    """The facts as the child read them, or None when it could not (then they are read here)."""
    try:
        out, _ = child.communicate(timeout=_CHILD_SECONDS)
        triple, cpu, features, version = json.loads(out)
        return Host(str(triple), str(cpu), str(features), tuple(int(v) for v in version))
    except (OSError, subprocess.SubprocessError, ValueError, TypeError):
        child.kill()
        print("relaylens: the host's facts from a child failed; LLVM loaded here", file=sys.stderr)
        return None
