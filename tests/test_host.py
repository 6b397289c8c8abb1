"""compiler/host.py: the host's facts (triple, CPU, features, LLVM's version), read from
llvmlite in this process or, after `from_a_child()`, from a child process: the same facts,
with LLVM never loaded here."""

from __future__ import annotations

import json
import subprocess
import sys

from relaylens.compiler.host import Host

FACTS = ("import json, sys\n"
         "from relaylens.compiler import host\n"
         "{first}\n"
         "facts = host.host()\n"
         "print(json.dumps([facts.triple, facts.cpu, facts.features, list(facts.llvm_version),"
         " 'llvmlite.binding' in sys.modules]))\n")


def _facts(first: str) -> list:
    out = subprocess.run([sys.executable, "-c", FACTS.format(first=first)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_childs_facts_are_this_processs_and_llvm_stays_out() -> None:
    here = _facts("")
    child = _facts("host.from_a_child()")
    assert here[-1] is True and child[-1] is False  # llvmlite.binding loaded here, not there
    assert child[:-1] == here[:-1]
    assert here[0] and here[1] and "+" in here[2]


def test_a_process_that_loaded_llvm_starts_no_child() -> None:
    code = ("import llvmlite.binding\n"
            "from relaylens.compiler import host\n"
            "host.from_a_child()\n"
            "print(len(host._child), host.host().cpu == llvmlite.binding.get_host_cpu_name())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "True"]


def test_has_reads_the_feature_string() -> None:
    facts = Host("x86_64-unknown-linux-gnu", "znver3", "+avx2,+fma,-avx512f,+sse4.2", (22, 1, 0))
    assert facts.has("avx2") and facts.has("avx2", "fma") and facts.has()
    assert not facts.has("avx512f") and not facts.has("avx2", "avx512bw")


def test_a_child_that_fails_leaves_them_to_this_process() -> None:
    facts = _facts("host._CHILD = 'import sys; sys.exit(3)'\nhost.from_a_child()")
    assert facts[-1] is True and facts[:-1] == _facts("")[:-1]
