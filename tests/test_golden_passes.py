"""Every golden pass case under tests/passes/ (format: tests/passes/README.md), run by
tests/golden.py; a case with `// XFAIL: reason` is expected to fail (strictly)."""

from __future__ import annotations

import pytest

from golden import CASES, case_files, check_case, load_case


def _param(path):
    reason = load_case(path).xfail
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(path, id=str(path.relative_to(CASES).with_suffix("")), marks=marks)


@pytest.mark.parametrize("path", [_param(p) for p in case_files()])
def test_case(path):
    check_case(path)
