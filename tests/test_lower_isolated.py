"""A build that stops at LLVM IR (the editor's) keeps LLVM's work out of the process that
asks for it (pipeline.lower_build, parallel.call_forked): every kernel, even one alone,
is lowered in a forked child, and the module texts are linked (the entry optimised) in one;
the JIT it is given makes no target machine.  Checked structurally: calls to LLVM's parser
and optimiser are recorded per process, and a child's records stay in the child."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.lazy_modules import llvm  # what the compiler calls LLVM through
from relaylens.compiler.lower.parallel import ENV, call_forked, map_forked
from relaylens.compiler.lower import pipeline
from relaylens.compiler.lower.pipeline import LoweringCache
from relaylens.compiler.lower.runtime.aot import ENTRY
from relaylens.compiler.lower.runtime.jit import JIT

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")

MNIST = Path(__file__).resolve().parents[1] / "examples" / "mnist.relay"
PARENT = os.getpid()


def _die_in_a_child(x: int) -> int:
    if os.getpid() != PARENT:
        os._exit(3)
    return x + 1


def test_call_forked_computes_in_a_child_or_here_when_the_child_fails():
    assert call_forked(lambda _: os.getpid(), None) != PARENT
    assert call_forked(lambda n: "x" * n, 3_000_000) == "x" * 3_000_000
    assert call_forked(_die_in_a_child, 1) == 2  # the child died: computed here
    assert list(map_forked(os.getpid, [], 1, isolate=True)) == []


def test_a_jit_makes_its_target_machine_on_first_use():
    jit = JIT()
    assert "target_machine" not in vars(jit)
    assert "ret i32" in jit.optimize("define i32 @f(i32 %x) {\n  ret i32 %x\n}\n")
    assert "target_machine" in vars(jit)


@pytest.fixture
def llvm_calls(monkeypatch):
    """The pids that called LLVM's parser or its optimiser, as this process sees them."""
    seen: list[int] = []
    for name in ("parse_assembly", "create_pass_builder"):
        real = getattr(llvm, name)

        def recording(*args, real=real, **kwargs):
            seen.append(os.getpid())
            return real(*args, **kwargs)

        monkeypatch.setattr(llvm, name, recording)
    return seen


def test_an_editor_build_calls_no_llvm_here(monkeypatch, llvm_calls):
    monkeypatch.setenv(ENV, "2")
    cache = LoweringCache()
    text = MNIST.read_text()
    lowered = compile(text, str(MNIST), stop_after="llvm", cache=cache).lowered
    module, optimized = lowered.llvm_ir, lowered.optimized_ir
    children: list = []
    monkeypatch.setattr(pipeline, "call_forked", lambda fn, item: children.append(1) or call_forked(fn, item))
    assert lowered.texts() == (module, optimized) and len(children) == 1  # both texts from one child
    # an edit that changes one kernel: the one kernel left to lower goes to a child too
    edited = text.replace("nn.relu(%", "sigmoid(%", 1)
    assert edited != text
    again = compile(edited, str(MNIST), stop_after="llvm", cache=cache).lowered
    assert cache.misses > cache.hits > 0
    assert again.optimized_ir != optimized
    assert llvm_calls == []
    assert lowered.jit is not None and "target_machine" not in vars(lowered.jit)
    # the texts are what the same build makes with LLVM here (children off): which records it
    monkeypatch.setenv(ENV, "1")
    here = compile(text, str(MNIST), stop_after="llvm").lowered
    assert (here.llvm_ir, here.optimized_ir) == (module, optimized)
    assert set(llvm_calls) == {PARENT}
    assert f"@{ENTRY}(" in optimized and all(f"@{name}(" in optimized for name in lowered.functions)
