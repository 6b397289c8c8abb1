"""The fuzzing suite (tests/fuzz/): replays, a short coverage-guided run, a long one.

- every kept corpus input (tests/fuzz/corpus/TARGET/) satisfies its target's properties,
  replayed in process, deterministically;
- every kept crash input (tests/fuzz/crashes/TARGET/) does too, except the known ones in
  KNOWN_CRASHES, which are strict xfails: fixing one makes its test pass, and so fail
  until it is taken off the list;
- each target fuzzed for SHORT_SECONDS out of process (tests/fuzz/run.py: RLIMIT_AS,
  libFuzzer's -timeout and -rss_limit_mb) finds nothing new and executes mutated inputs
  (more than its seeds);
- `-m fuzz` (make fuzz): the same for RELAYLENS_FUZZ_SECONDS (default 600) per target.

A finding fails the run test with the input's path, the exception and the command that
replays it; minimise it (`fuzz.py TARGET -minimize_crash=1 -runs=20000 INPUT`), keep it
under tests/fuzz/crashes/TARGET/ and list it here until it is fixed.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent / "fuzz"
sys.path[:0] = [str(FUZZ)]

from findings import crash_inputs, is_resource_finding  # noqa: E402
from run import TARGETS, FuzzRun, command, replay, run  # noqa: E402

SHORT_SECONDS = 12  # per target: a minute in all, inside make test
LONG_SECONDS = int(os.environ.get("RELAYLENS_FUZZ_SECONDS", "600"))
# "TARGET/file" -> why it still fails (the reproducer: `python tests/fuzz/fuzz.py TARGET PATH`)
KNOWN_CRASHES: dict[str, str] = {
}
REPLAY_SECONDS = 10  # a kept hang fails its replay after this long


def target(name: str):
    return importlib.import_module(f"target_{name}")


@pytest.mark.parametrize("name", TARGETS)
def test_kept_corpus_replays(name):
    seeds = sorted((FUZZ / "corpus" / name).glob("*"))
    assert len(seeds) >= 5, f"the kept corpus of {name} is (nearly) empty"
    check = target(name).check
    for path in seeds:
        try:
            check(path.read_bytes())
        except Exception as exc:
            raise AssertionError(f"{name} corpus input {path.name}: {type(exc).__name__}: {exc}") from exc


def _crash_params():
    params = []
    for name in TARGETS:
        for path in crash_inputs(name):
            key = f"{name}/{path.name}"
            marks = [pytest.mark.xfail(strict=True, reason=KNOWN_CRASHES[key])] if key in KNOWN_CRASHES else []
            params.append(pytest.param(name, path, id=key, marks=marks))
    return params or [pytest.param(None, None, id="none", marks=pytest.mark.skip(reason="no crash inputs kept"))]


@pytest.mark.parametrize(("name", "path"), _crash_params())
def test_crash_input_replays(name, path):
    """A crash input is replayed in process; a hang or a runaway (timeout-*, oom-*) out of
    process, under the fuzzer's limits with REPLAY_SECONDS for the input."""
    if not is_resource_finding(path):
        target(name).check(path.read_bytes())
        return
    pytest.importorskip("atheris")
    result = replay(name, path, seconds=REPLAY_SECONDS)
    assert result.returncode == 0 and not result.killed, f"{path.name}: {result.excerpt(10)}"


def test_known_crashes_are_kept():
    for key in KNOWN_CRASHES:
        assert (FUZZ / "crashes" / key).is_file(), f"KNOWN_CRASHES names {key}, which is not kept"


def _fuzz(name: str, seconds: int) -> None:
    pytest.importorskip("atheris")
    result = run(name, seconds)
    print(result.summary())
    if result.failed:
        where = "\n".join(f"  {p}\n  reproduce: {' '.join(command(name, str(p)))}" for p in result.findings)
        pytest.fail(f"{result.summary()}\n{where}\n{result.excerpt()}", pytrace=False)
    seeds = len(list((FUZZ / "corpus" / name).glob("*")))
    assert result.executed > seeds and result.coverage > 0, f"{result.summary()}: nothing fuzzed\n{result.excerpt()}"


def test_a_fuzzer_that_dies_without_its_statistics_is_a_failed_run():
    """A run that ended before its time with no finding and no final statistics (a fuzzer
    killed by a signal or left by `_exit`) is reported, by run.py's command line too: a
    600 s `passes` run here printed "0 inputs ... findings: none" and exited 0."""
    log = "#2\tINITED cov: 10 ft: 20 corp: 2/1Kb\n#40\tNEW    cov: 12 ft: 25 corp: 3/1Kb\n"
    for returncode in (0, 137):
        died = FuzzRun("passes", returncode, log)
        assert died.failed and "ended without its final statistics" in died.summary(), returncode
    done = FuzzRun("passes", 0, log + "Done 40 runs in 2 second(s)\nstat::number_of_executed_units: 40\n")
    assert not done.failed and done.executed == 40, done.summary()


@pytest.mark.parametrize("name", TARGETS)
def test_short_fuzz_run(name):
    _fuzz(name, SHORT_SECONDS)


def test_the_fuzzer_measures_its_own_memory_not_its_parents():
    """libFuzzer's -rss_limit_mb reads getrusage's peak, which Linux carries across exec:
    started by a test worker that had grown to 3 GB, every target's first input was "out of
    memory" (fuzz.py now fuzzes in a forked child)."""
    pytest.importorskip("atheris")
    script = ("import sys, numpy as np\n"
              "sys.path[:0] = [sys.argv[1]]\n"
              "from run import run\n"
              "held = np.ones(600 << 17)  # 630 MB, touched\n"
              "result = run('parse', 3, rss_limit_mb=400)\n"
              "print(result.returncode, result.peak_rss_mb, result.summary())\n")
    out = subprocess.run([sys.executable, "-c", script, str(FUZZ)], capture_output=True, text=True, timeout=300)
    returncode, peak, summary = out.stdout.split(" ", 2)
    assert (returncode, "findings: none" in summary) == ("0", True), out.stdout + out.stderr
    assert 0 < int(peak) < 400, out.stdout


@pytest.mark.fuzz
@pytest.mark.parametrize("name", TARGETS)
def test_long_fuzz_run(name):
    _fuzz(name, LONG_SECONDS)


# ---- the harnesses can fail: each property, broken on purpose, is reported -------------
def test_frames_oracle():
    from lsp_frames import frame, split_frames

    one, two = frame({"id": 1}), frame(b"xyz")
    assert split_frames(one + two) == ([b'{"id": 1}', b"xyz"], b"")
    assert split_frames(b"Content-Type: a/b\r\n" + two) == ([b"xyz"], b"")
    assert split_frames(one + two[:-1]) == ([b'{"id": 1}'], two[:-1])  # a body cut short
    for bad in (b"Content-Length: 0\r\n\r\n", b"Content-Length:3\r\n\r\nxyz", b"content-length: 3\r\n\r\nxyz",
                b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nxyz", b"Content-Length: 3\n\nxyz", b"\r\n" + two):
        assert split_frames(bad) == ([], bad), bad


def test_lsp_target_reports_an_exception_a_handler_guard_logged(monkeypatch):
    from lsp_frames import frame

    from relaylens.server.analysis import Analyses

    def broken(*args, **kwargs):
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(Analyses, "for_request", broken)
    hover = frame({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": "file:///fuzz/probe.relay"}, "position": {"line": 1, "character": 8}}})
    with pytest.raises(RuntimeError, match="broken on purpose") as info:
        target("lsp").check(hover)
    from findings import signature

    assert signature(info.value).startswith("RuntimeError in server/"), signature(info.value)


def test_lsp_target_reports_a_server_that_stops_answering(monkeypatch):
    import target_lsp
    from findings import InvariantBroken

    monkeypatch.setattr(target_lsp, "PROBE_SECONDS", 0.05)
    monkeypatch.setattr(target_lsp, "PROBE", target_lsp.frame({"jsonrpc": "2.0", "method": "initialized"}))
    with pytest.raises(InvariantBroken, match="no answer to a good request"):
        target_lsp.check(b"")
    target_lsp.check(target_lsp.frame({"jsonrpc": "2.0", "method": "exit"}))  # asked to stop: no answer due


def test_passes_target_reports_a_failing_pass(monkeypatch):
    import relaylens.compiler.transform.passes.fold_constant as fold
    from findings import signature

    seed = (FUZZ / "corpus" / "passes" / "op-add.relay").read_bytes()
    target("passes").check(seed)

    def broken(self, *args, **kwargs):
        raise ZeroDivisionError("broken on purpose")

    monkeypatch.setattr(fold.FoldConstant, "transform_function", broken)
    with pytest.raises(ZeroDivisionError) as info:
        target("passes").check(seed)
    assert signature(info.value).startswith("ZeroDivisionError in compiler/"), signature(info.value)


def test_recheck_target_reports_a_result_unlike_a_whole_check(monkeypatch):
    import target_recheck
    from findings import InvariantBroken

    from relaylens.compiler.check import check_text

    seed = next(p for p in sorted((FUZZ / "corpus" / "recheck").glob("*")) if p.name.endswith("-space"))
    target_recheck.check(seed.read_bytes())
    monkeypatch.setattr(target_recheck, "recheck", lambda previous, text: (check_text(text + " ", "x.relay"), None))
    with pytest.raises(InvariantBroken, match="differ from a whole check"):
        target_recheck.check(seed.read_bytes())


def test_relay_mutator_tokens_are_lossless_and_crossover_is_deterministic():
    from relay_mutator import _tokens, crossover_text

    seeds = sorted((FUZZ / "corpus" / "check").glob("*"))[:20]
    for path in seeds:
        text = path.read_text()
        assert "".join(_tokens(text)) == text, path.name
    a, b = seeds[0].read_bytes(), seeds[1].read_bytes()
    assert crossover_text(a, b, 4096, 7) == crossover_text(a, b, 4096, 7)
    assert len(crossover_text(a, b, 100, 7)) <= 100
