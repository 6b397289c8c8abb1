"""Compiled code that needs libgcc's routines (a double rounded to float16 is a call to
`__truncdfhf2` on CPUs without AVX512-FP16) runs in a fresh process, where nothing else
has loaded libgcc_s: the JIT loads it itself (lower/runtime/jit.py).  Before, the call
jumped to address 0 unless an earlier test happened to load the library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 4), float64], %y: Tensor[(3, 4), float16]) {
  (cast(%x, dtype="float16"), cast(%y, dtype="float64"), cast(cast(%x, dtype="float32"), dtype="float16"))
}
"""


@pytest.mark.parametrize("mode", ["--check", "--interp"])
def test_float16_casts_run_compiled_in_a_fresh_process(tmp_path: Path, mode: str):
    path = tmp_path / "half.relay"
    path.write_text(TEXT)
    relaylens = Path(sys.executable).with_name("relaylens")
    result = subprocess.run([str(relaylens), "run", str(path), mode], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "DIFFERS" not in result.stderr
