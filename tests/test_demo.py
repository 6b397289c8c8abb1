"""`make demo`: its model and input are what examples/make_model.py writes, the whole recipe
runs (import, build, compiled run checked against the interpreter and onnxruntime, explain
down to the LLVM function), and examples/demo.py's comparison can fail."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_assets_are_what_make_model_writes(tmp_path):
    make_model = _load("make_model")
    assert make_model.build_model().SerializeToString() == (EXAMPLES / "small_cnn.onnx").read_bytes()
    np.testing.assert_array_equal(make_model.digit(), np.load(EXAMPLES / "digit.npy"))
    assert (EXAMPLES / "small_cnn.onnx").stat().st_size < 300_000


def test_compare_reports_a_wrong_output(tmp_path, capsys):
    demo = _load("demo")
    model, digit = EXAMPLES / "small_cnn.onnx", EXAMPLES / "digit.npy"
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    logits = session.run(None, {"input": np.load(digit)})[0]
    np.savez(tmp_path / "right.npz", output=logits)
    np.savez(tmp_path / "wrong.npz", output=logits + 1e-3)
    assert demo.compare(str(model), str(digit), str(tmp_path / "right.npz")) == 0
    assert demo.compare(str(model), str(digit), str(tmp_path / "wrong.npz")) == 1
    assert "DIFFERS" in capsys.readouterr().out


@pytest.mark.slow
def test_make_demo_runs_end_to_end(tmp_path):
    """The Makefile's recipe itself, with this environment as the venv (the stamp that
    would reinstall it is taken as up to date) and the artefacts in tmp_path."""
    venv = Path(sys.prefix)
    if shutil.which("make") is None or not (venv / "bin" / "relaylens").exists():
        pytest.skip("needs make and the relaylens script in this environment")
    done = subprocess.run(["make", "--no-print-directory", "-o", f"{venv}/.installed-stamp", "demo",
                           f"VENV={venv}", f"DEMO={tmp_path}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    check = re.search(r"check output: max abs error (\S+),.*", out)
    assert check and float(check.group(1)) < 1e-5 and "DIFFERS" not in check.group(0)
    ort = re.search(r"compiled vs onnxruntime: max abs error (\S+),", out)
    assert ort and float(ort.group(1)) < 1e-5
    explained = out[out.index("bin/relaylens explain "):]  # make echoes the command, then its output
    assert "frontend layer: /conv2/Conv" in explained
    assert re.search(r"small_cnn\.relay:\d+:\d+: nn\.conv2d\(", explained)
    m = re.search(r"  LLVM function: @(\S+), module\.ll lines (\d+)-(\d+)", explained)
    assert m and m.group(1).startswith("tvmgen_default_fused_nn_contrib_conv2d_NCHWc_")
    module_ll = (tmp_path / "module.ll").read_text().splitlines()
    assert module_ll[int(m.group(2)) - 1].startswith(f"define void @{m.group(1)}(")
    assert "frontend layers compiled into it: /conv2/Conv, /bn2/BatchNormalization, /relu2/Relu" in explained
    with np.load(tmp_path / "logits.npz") as result:
        assert result["output"].shape == (1, 10)
