"""Running a check or a build in a child process whose address space is capped, so that a
regression of the size budgets fails a test (MemoryError, a non-zero exit) instead of
eating the machine.  The child prints its diagnostics as JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

LIMIT = 1 << 30  # 1 GiB of address space: a build of a small text needs about 600 MB

_PRELUDE = """
import json, sys
from relaylens.compiler.check import check_text
from relaylens.compiler.build import build_text

def report(diagnostics):
    for d in diagnostics:
        loc = d.location()
        print(json.dumps({"severity": d.severity.name.lower(), "message": d.message,
                          "line": loc[1] if loc else None, "col": loc[2] if loc else None}))

text = sys.stdin.read()
"""


def _cap() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_capped(script: str, text: str) -> list[dict]:
    """Run `script` (after a prelude binding `text`, `check_text`, `build_text`, `report`)
    with the address space capped; its reported diagnostics.  Fails on a crash."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(script)], input=text,
                          capture_output=True, text=True, timeout=300, preexec_fn=_cap, env=env)
    assert proc.returncode == 0, f"the child failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def check_capped(text: str) -> list[dict]:
    """The diagnostics of `check_text(text)` in a capped child."""
    return run_capped("report(check_text(text, 'test.relay').diagnostics)", text)


def build_capped(text: str) -> list[dict]:
    """The diagnostics of `build_text(text)` in a capped child; the child also prints the
    built module, as the CLI's --emit relay does, so printing is within the cap too."""
    return run_capped("""
        from relaylens.compiler.printer import print_module
        result = build_text(text, 'test.relay')
        if result.module is not None:
            print_module(result.module)
        report(result.diagnostics)
        """, text)
