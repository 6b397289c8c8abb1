"""Glue left unoptimised (codegen/glue.py): a parallel loop's trampoline is `optnone`, and
so is a kernel's function whose loops are all parallel; a function with a loop of its own
and every body function stay optimised, and the kernels compute what they did."""

from __future__ import annotations

import re

import numpy as np
import pytest

from relaylens.compiler.lower.codegen.glue import only_hands_on
from relaylens.compiler.lower.codegen.llvm import generate
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.te import expr as te


def _doubling(name: str, n: int, kinds: tuple[str, ...]) -> ln.PrimFunc:
    """`y[i] = 2 * x[i]` over `len(kinds)` loops one after another (each over all of `x`,
    of the kind given), so that each kind of loop holds the kernel's work once."""
    x, y = te.Buffer("x", (n,), "float32"), te.Buffer("y", (n,), "float32")
    loops = []
    for k, kind in enumerate(kinds):
        i = te.Var(f"i{k}")
        loops.append(ln.For(i, n, ln.Store(y, i, te.BufferLoad(x, i, "float32") * te.const(2.0, "float32")), kind))
    return ln.PrimFunc(name, (x, y), ln.seq(*loops))


def _attributes(text: str) -> dict[str, str]:
    """Each function's name and the attributes after its parameters."""
    return {m.group(1): m.group(2) for m in re.finditer(r'^define [^@]*@"([^"]+)"\(.*\)(.*)$', text, re.M)}


def test_a_trampoline_and_an_entry_of_parallel_loops_only_are_optnone():
    text = str(generate([_doubling("k", 64, ("parallel", "parallel"))], "t.relay"))
    attrs = _attributes(text)
    assert "optnone" in attrs["k"] and "noinline" in attrs["k"]
    assert all("optnone" in attrs[f"k.par{n}"] for n in (0, 1)), attrs
    assert not any("optnone" in a for name, a in attrs.items() if name.endswith(".body")), attrs


@pytest.mark.parametrize("kind", ["serial", "vectorized"])
def test_an_entry_with_a_loop_of_its_own_stays_optimised(kind):
    attrs = _attributes(str(generate([_doubling("k", 64, ("parallel", kind))], "t.relay")))
    assert "optnone" not in attrs["k"]
    assert "optnone" in attrs["k.par0"]


def test_only_hands_on():
    assert only_hands_on(_doubling("k", 8, ("parallel",)).body)
    assert not only_hands_on(_doubling("k", 8, ("parallel", "serial")).body)
    assert not only_hands_on(_doubling("k", 8, ("serial",)).body)  # no parallel loop: nothing outlined
    x = te.Buffer("x", (1,), "float32")
    assert not only_hands_on(ln.Store(x, te.const(0, te.INDEX), te.const(1.0, "float32")))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_kernels_with_unoptimised_glue_compute_the_same(threads):
    jit = JIT(num_threads=threads)
    n = 1000
    kinds = [("parallel",), ("parallel", "serial"), ("parallel", "parallel")]
    kernels = jit.compile([_doubling(f"k{j}", n, k) for j, k in enumerate(kinds)], "t.relay")
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    for j in range(len(kinds)):
        np.testing.assert_array_equal(kernels[f"k{j}"](x), x * np.float32(2.0))
