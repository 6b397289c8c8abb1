"""The ONNX backend node tests: every case whose ops the frontend supports is imported, run
with the reference interpreter and compared with the outputs stored beside it
(tests/onnx_node_cases.py generates the cases offline and runs one).

Floats compare with rtol 1e-5 (float16: 2e-3, two units in the last place, since every op
rounds to float16 while the reference computes expanded functions in float32), and
atol from the case (1e-7 by default).  The cases that fail for a known reason are listed
in onnx_node_cases.EXPECTED_FAILURES (shared with the coverage report), strictly: one that
starts to pass must leave the list.
"""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")

from onnx_node_cases import expected_failure, looser_rtol, run_case, supported_cases  # noqa: E402

CASES = supported_cases()


def _param(case):
    reason = expected_failure(case.name)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_node_case(case):
    problem = run_case(case, looser_rtol(case.name))
    assert problem is None, problem


def test_enough_cases_are_selected():
    assert len(CASES) > 1000
    failing = [c.name for c in CASES if expected_failure(c.name)]
    assert len(failing) < 40, failing
