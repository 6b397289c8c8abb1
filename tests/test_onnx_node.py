"""The ONNX backend node tests: every case whose ops the frontend supports is imported and
run twice, with the reference interpreter and as compiled code (relay.build's passes,
lowering, the JIT'd executable), and both are compared with the outputs stored beside it
(tests/onnx_node_cases.py generates the cases offline and runs one).

Both paths stay: the interpreter run checks the op library's numpy semantics (the
reference that `relaylens run --check` trusts) against ONNX, the compiled run checks the
kernels; a few cases pass on one path only (onnx_node_cases.INTERPRETER_FAILURES and
COMPILED_FAILURES say why).  The compiled cases share a JIT and a LoweringCache in batches
(onnx_node_cases.SharedCompiler), so a kernel that several cases need is compiled once per
batch: about 45 s for the ~1,150 cases, the interpreter runs 4 s.

Floats compare with rtol 1e-5 (float16: 2e-3, two units in the last place, since every op
rounds to float16 while the reference computes expanded functions in float32), and
atol from the case (1e-7 by default); onnx_node_cases.LOOSER and COMPILED_LOOSER list the
few cases that need more, and why.  The cases that fail for a known reason are listed
strictly: one that starts to pass must leave the list.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("onnx")

from onnx_node_cases import (  # noqa: E402
    COMPILED_FAILURES,
    SharedCompiler,
    expected_failure,
    run_case,
    supported_cases,
)

CASES = supported_cases()


def _param(case, compiled: bool):
    reason = expected_failure(case.name, compiled)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.fixture(scope="module")
def compiler():
    return SharedCompiler()


@pytest.mark.parametrize("case", [_param(c, compiled=False) for c in CASES])
def test_node_case(case):
    problem = run_case(case)
    assert problem is None, problem


@pytest.mark.parametrize("case", [_param(c, compiled=True) for c in CASES])
def test_node_case_compiled(case, compiler):
    jit, cache = compiler.take()
    problem = run_case(case, compiled=True, jit=jit, cache=cache)
    assert problem is None, problem


def test_enough_cases_are_selected():
    """At most one case in 25 expected to fail, on either path: a share, not a count, since
    every op added brings its cases, the ones it cannot run among them (3-D GridSample,
    blocked quantization)."""
    assert len(CASES) > 1000
    for compiled in (False, True):
        failing = [c.name for c in CASES if expected_failure(c.name, compiled)]
        assert len(failing) * 25 <= len(CASES), failing


def test_compiled_only_failures_are_dynamic_shapes(compiler):
    """The cases listed in COMPILED_FAILURES stop at the lowering, at a shape it cannot know."""
    listed = [c for c in CASES if any(re.fullmatch(p, c.name) for p in COMPILED_FAILURES)]
    assert len(listed) == 12
    for case in listed:
        jit, cache = compiler.take()
        problem = run_case(case, compiled=True, jit=jit, cache=cache)
        assert problem.startswith("lower: ") and ("unknown (?) dimensions" in problem
                                                  or "no lowering for operator dyn." in problem), problem
