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
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent / "fuzz"
sys.path[:0] = [str(FUZZ)]

from findings import crash_inputs  # noqa: E402
from run import TARGETS, command, run  # noqa: E402

SHORT_SECONDS = 25
LONG_SECONDS = int(os.environ.get("RELAYLENS_FUZZ_SECONDS", "600"))
# "TARGET/file" -> why it still fails (the reproducer: `python tests/fuzz/fuzz.py TARGET PATH`)
KNOWN_CRASHES: dict[str, str] = {}


def target(name: str):
    return importlib.import_module(f"target_{name}")


def kept(folder: str) -> list[tuple[str, Path]]:
    return [(t, p) for t in TARGETS for p in sorted((FUZZ / folder / t).glob("*")) if p.is_file()]


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
    target(name).check(path.read_bytes())


def test_known_crashes_are_kept():
    for key in KNOWN_CRASHES:
        assert (FUZZ / "crashes" / key).is_file(), f"KNOWN_CRASHES names {key}, which is not kept"


def _fuzz(name: str, seconds: int) -> None:
    pytest.importorskip("atheris")
    result = run(name, seconds)
    print(result.summary())
    if result.findings or result.killed or result.returncode != 0:
        where = "\n".join(f"  {p}\n  reproduce: {' '.join(command(name, str(p)))}" for p in result.findings)
        pytest.fail(f"{result.summary()}\n{where}\n{result.excerpt()}", pytrace=False)
    seeds = len(list((FUZZ / "corpus" / name).glob("*")))
    assert result.executed > seeds and result.coverage > 0, f"{result.summary()}: nothing fuzzed\n{result.excerpt()}"


@pytest.mark.parametrize("name", TARGETS)
def test_short_fuzz_run(name):
    _fuzz(name, SHORT_SECONDS)


@pytest.mark.fuzz
@pytest.mark.parametrize("name", TARGETS)
def test_long_fuzz_run(name):
    _fuzz(name, LONG_SECONDS)
