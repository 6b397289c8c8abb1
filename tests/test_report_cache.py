"""The editor's build reports on disk (server/slow/report_cache.py): a model opened again,
unchanged, is answered from the report an earlier worker made, without building; anything
that decides the report (text, URI, weights, the code) makes another key; a damaged entry
is built again; `relaylens cache` shows and clears the reports."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from relaylens.compiler.lower.cache_keys import source_digest
from relaylens.compiler.lower.disk_cache import REPORTS, DiskCache
from relaylens.server.slow import frames, report_cache
from relaylens.server.slow.report import BuildReport, ReportDiagnostic, unpack

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 10, 10), float32], %w: Tensor[(8, 8, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  add(%1, 1f)
}
"""


def _worker_build(directory: Path, text: str, uri: str, version: int = 1, weights: str | None = None):
    """(the kinds of the messages a new worker sent for one build, its report)."""
    env = {**os.environ, "RELAYLENS_CACHE_DIR": str(directory)}
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    kinds = []
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("build", 1, uri, version, text, weights))
        while (message := frames.read(proc.stdout))[0] != "done":
            kinds.append(message[0])
        return kinds, message[2]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def _reports(directory: Path) -> list[Path]:
    return sorted((directory / REPORTS).glob("*.kernel"))


def test_a_model_opened_again_is_answered_from_its_report(tmp_path) -> None:
    kinds, first = _worker_build(tmp_path, MODEL, "file:///w/a.relay")
    assert "progress" in kinds and first.functions and len(_reports(tmp_path)) == 1
    kernels = sorted(tmp_path.glob("*.kernel"))
    kinds, again = _worker_build(tmp_path, MODEL, "file:///w/a.relay", version=7)
    assert kinds == ["started"]  # no pass, no kernel: nothing built
    assert again.version == 7 and again.uri == first.uri and again.text == MODEL
    assert again.kept and not first.kept
    assert [f.name for f in again.functions] == [f.name for f in first.functions]
    assert unpack(again.optimized_ir) == unpack(first.optimized_ir)
    assert [(e.range, e.layers) for e in again.exprs] == [(e.range, e.layers) for e in first.exprs]
    assert sorted(tmp_path.glob("*.kernel")) == kernels and len(_reports(tmp_path)) == 1


def test_another_text_or_uri_is_built(tmp_path) -> None:
    _worker_build(tmp_path, MODEL, "file:///w/a.relay")
    edited = MODEL.replace("add(%1, 1f)", "add(%1, 2f)")
    kinds, report = _worker_build(tmp_path, edited, "file:///w/a.relay")
    assert "progress" in kinds and "2f" in report.text
    kinds, _ = _worker_build(tmp_path, MODEL, "file:///w/b.relay")
    assert "progress" in kinds  # the name is in the LLVM IR's debug information
    assert len(_reports(tmp_path)) == 3


def test_a_damaged_report_is_built_again(tmp_path) -> None:
    _worker_build(tmp_path, MODEL, "file:///w/a.relay")
    [entry] = _reports(tmp_path)
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    kinds, report = _worker_build(tmp_path, MODEL, "file:///w/a.relay")
    assert "progress" in kinds and report.functions
    assert len(_reports(tmp_path)) == 1 and _reports(tmp_path)[0].stat().st_size > 100


def test_the_key_follows_the_text_uri_weights_and_code(tmp_path) -> None:
    key = report_cache.report_key("file:///a.relay", MODEL, None)
    assert key == report_cache.report_key("file:///a.relay", MODEL, None)
    assert key != report_cache.report_key("file:///b.relay", MODEL, None)
    assert key != report_cache.report_key("file:///a.relay", MODEL + " ", None)
    assert report_cache.report_key("file:///a.relay", MODEL, None, byoc=object()) is None
    weights = tmp_path / "a.npz"
    missing = report_cache.report_key("file:///a.relay", MODEL, str(weights))
    assert missing != key
    np.savez(weights, w=np.zeros((8, 8, 3, 3), "float32"))
    written = report_cache.report_key("file:///a.relay", MODEL, str(weights))
    assert written not in (key, missing)
    os.utime(weights, ns=(0, 10**9))
    assert report_cache.report_key("file:///a.relay", MODEL, str(weights)) != written
    root = tmp_path / "pkg"
    (root / "compiler").mkdir(parents=True)
    (root / "compiler" / "a.py").write_text("x = 1\n")
    before = source_digest(root, report_cache.REPORT_SOURCES[:1])
    (root / "compiler" / "a.py").write_text("x = 2\n")
    assert source_digest(root, report_cache.REPORT_SOURCES[:1]) != before


def test_a_report_with_errors_is_not_kept(tmp_path) -> None:
    disk = DiskCache(tmp_path)
    report = BuildReport("file:///a.relay", 1, MODEL)
    failed = replace(report, diagnostics=[ReportDiagnostic("internal error", 1, None, "worker")])
    report_cache.store(disk, "k1", failed)
    assert report_cache.load(disk, "k1", 2) is None
    report_cache.store(disk, "k2", report)
    assert report_cache.load(disk, "k2", 2).version == 2
    assert report_cache.load(None, "k2", 2) is None and report_cache.load(disk, None, 2) is None


HIT_WITHOUT_COMPILER = """
import io, sys
from relaylens.server.slow import frames, preload, worker
preload.Preload.run = lambda self, waiting: None  # nothing loaded while idle
inp = io.BytesIO(frames.encode(("build", 1, {uri!r}, 3, {text!r}, None)))
out = io.BytesIO()
worker.serve(inp, out)
out.seek(0)
kinds = []
while (message := frames.read(out)) is not None:
    kinds.append(message[0])
print(kinds)
print(sorted(m for m in ("relaylens.compiler.lower.pipeline", "relaylens.compiler.parser",
                         "relaylens.server.slow.reporting", "numpy") if m in sys.modules))
"""


def test_a_kept_report_is_sent_before_the_compiler_is_loaded(tmp_path) -> None:
    _worker_build(tmp_path, MODEL, "file:///w/a.relay")
    script = HIT_WITHOUT_COMPILER.format(uri="file:///w/a.relay", text=MODEL)
    env = {**os.environ, "RELAYLENS_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    kinds, loaded = done.stdout.strip().splitlines()
    assert kinds == "['ready', 'started', 'done']"
    assert loaded == "[]"


def test_preload_imports_in_order_and_stops_when_a_message_waits() -> None:
    from relaylens.server.slow.preload import MODULES, Preload

    names = ("colorsys", "netrc", "wave")
    assert not any(name in sys.modules for name in names)
    preload = Preload(names)
    preload.run(iter([False, True]).__next__)  # a message comes after the first import
    assert "colorsys" in sys.modules and "netrc" not in sys.modules and not preload.done
    preload.run(lambda: False)
    assert preload.done and all(name in sys.modules for name in names)
    assert MODULES[-1].endswith("server.slow.reporting")


def test_report_error_severity_is_the_compilers() -> None:
    from relaylens.compiler.diagnostics import Severity
    from relaylens.server.slow.report import ERROR

    assert ERROR == int(Severity.ERROR)


@contextlib.contextmanager
def _answered_from_report(directory: Path):
    """A new worker that answered version 4 of MODEL from the report an earlier worker
    kept (so with no compiler loaded): (its process, that report)."""
    _worker_build(directory, MODEL, "file:///w/a.relay")
    env = {**os.environ, "RELAYLENS_CACHE_DIR": str(directory)}
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("build", 1, "file:///w/a.relay", 4, MODEL, None))
        while (message := frames.read(proc.stdout))[0] != "done":
            assert message[0] != "progress"
        assert message[2].kept
        yield proc, message[2]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_a_graph_of_a_build_answered_from_its_report_runs_the_passes(tmp_path) -> None:
    with _answered_from_report(tmp_path) as (proc, _):
        frames.write(proc.stdin, ("graph", 2, "file:///w/a.relay", 4, "FuseOps"))
        answer = frames.read(proc.stdout)
        assert answer[:2] == ("graph", 2) and answer[3] is None
        assert answer[2].pass_name == "FuseOps" and answer[2].offsets
        frames.write(proc.stdin, ("graph", 3, "file:///w/a.relay", 5, "FuseOps"))
        assert "keeps no build of version 5" in frames.read(proc.stdout)[3]


def test_a_schedule_of_a_build_answered_from_its_report_is_made_when_asked(tmp_path) -> None:
    """A report kept on disk has each kernel's number of steps, not its text: a worker that
    answered from it with no compiler loaded makes a schedule text when a view asks (the
    passes run again), the very text a build's kernel gives."""
    from relaylens.compiler.driver import compile

    with _answered_from_report(tmp_path) as (proc, kept):
        conv = next(f for f in kept.functions if "conv2d" in f.name)
        frames.write(proc.stdin, ("schedule", 2, "file:///w/a.relay", 4, conv.name))
        answer = frames.read(proc.stdout)
        assert answer[:2] == ("schedule", 2) and answer[3] is None
        built = compile(MODEL, "file:///w/a.relay", stop_after="llvm").lowered.functions[conv.name]
        assert unpack(answer[2]) == built.schedule_text and conv.schedule_steps == built.schedule_steps > 1
