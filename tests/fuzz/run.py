"""Run a fuzz target out of process, bounded in time and memory, and read its figures.

    python tests/fuzz/run.py TARGET [--seconds N] [--runs N] [--keep]
    result = run("parse", seconds=25)     # FuzzRun: executed, coverage, features, findings
    replay("passes", path)                # one input, under the same limits

The fuzzer (fuzz.py) runs in a child process with RLIMIT_AS and libFuzzer's own limits
(-timeout per input, -rss_limit_mb, -max_total_time), and the child is killed if it
outlives its time by WALL_SLACK: a crash, a hang or a runaway is a finding in the
report, never a dead test run.  New inputs go to a scratch folder; the kept corpus
(corpus/TARGET) is read, not written, unless --keep merges the new coverage into it
(libFuzzer -merge=1, which keeps only inputs that add coverage).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = ("parse", "check", "recheck", "passes", "lsp")
MEMORY_LIMIT = 4 << 30  # address space of the fuzzer process
RSS_LIMIT_MB = 2048  # libFuzzer's own limit: an input that needs more is an "oom" finding
INPUT_SECONDS = 20  # one input taking longer is a "timeout" finding
WALL_SLACK = 120  # start-up and the replay of the corpus before fuzzing starts


@dataclass
class FuzzRun:
    target: str
    returncode: int
    log: str
    findings: list[Path] = field(default_factory=list)  # crash-*, timeout-*, oom-* inputs
    killed: bool = False  # outlived its time and was killed (a hang outside any input)

    def _last(self, pattern: str) -> int:
        found = re.findall(pattern, self.log)
        return int(found[-1]) if found else 0

    @property
    def executed(self) -> int:
        return self._last(r"stat::number_of_executed_units: (\d+)") or self._last(r"^#(\d+)\s")

    @property
    def coverage(self) -> int:
        """libFuzzer's `cov:`: code edges (Python branches) reached by the corpus."""
        return self._last(r"cov: (\d+)")

    @property
    def features(self) -> int:
        """libFuzzer's `ft:`: coverage features (edges with hit counts, comparisons)."""
        return self._last(r"ft: (\d+)")

    @property
    def peak_rss_mb(self) -> int:
        """libFuzzer's peak resident size of the run, in MB (-print_final_stats)."""
        return self._last(r"stat::peak_rss_mb:\s+(\d+)")

    @property
    def seed_coverage(self) -> int:
        """`cov:` once the kept corpus was read, before any fuzzing."""
        found = re.findall(r"INITED cov: (\d+)", self.log)
        return int(found[0]) if found else 0

    @property
    def known_met(self) -> list[str]:
        """The kept crashes this run ran into again (and skipped): fuzz.py says so once each."""
        return re.findall(r"met a known crash again \(skipped\): (.*)", self.log)

    @property
    def finished(self) -> bool:
        """libFuzzer printed its final statistics (-print_final_stats): the run ended as
        libFuzzer ends one, not by a signal or an `_exit` that left no input behind."""
        return "stat::number_of_executed_units:" in self.log

    @property
    def failed(self) -> bool:
        """A finding, a hang outside any input, or a fuzzer that died without saying why."""
        return bool(self.findings) or self.killed or self.returncode != 0 or not self.finished

    def summary(self) -> str:
        found = ", ".join(p.name for p in self.findings) or "none"
        known = f", known crashes met again: {'; '.join(self.known_met)}" if self.known_met else ""
        ended = "" if self.returncode == 0 else f", exit status {self.returncode}"
        ended += "" if self.finished else " (ended without its final statistics)"
        return (f"{self.target}: {self.executed} inputs, cov {self.seed_coverage} -> {self.coverage}, "
                f"ft {self.features}, findings: {found}{known}{ended}{' (killed)' if self.killed else ''}")

    def excerpt(self, lines: int = 40) -> str:
        """The end of the log: the exception or the reason libFuzzer stopped."""
        keep = [ln for ln in self.log.splitlines() if not ln.startswith(("#", "INFO:", "MS:", "stat::"))]
        return "\n".join(keep[-lines:])


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.nice(5)


def command(target: str, *flags: str) -> list[str]:
    return [sys.executable, str(HERE / "fuzz.py"), target, *flags]


def run(target: str, seconds: int, *, runs: int | None = None, work: Path | None = None,
        keep: bool = False, rss_limit_mb: int = RSS_LIMIT_MB) -> FuzzRun:
    """Fuzz `target` for `seconds` (or `runs` inputs, whichever ends first)."""
    kept = HERE / "corpus" / target
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{target}-") as scratch:
        work = work or Path(scratch)
        (work / "corpus").mkdir(parents=True, exist_ok=True)
        flags = [f"-max_total_time={seconds}", f"-timeout={INPUT_SECONDS}", f"-rss_limit_mb={rss_limit_mb}",
                 f"-artifact_prefix={work}/", "-print_final_stats=1"]
        if runs is not None:
            flags.append(f"-runs={runs}")
        result = _run(target, [*flags, str(work / "corpus"), str(kept)], seconds + WALL_SLACK)
        result.findings = sorted(p for p in work.glob("*") if p.name.startswith(("crash-", "timeout-", "oom-", "slow-unit-")))
        if keep and not result.findings:
            merged = _run(target, ["-merge=1", f"-timeout={INPUT_SECONDS}", str(kept), str(work / "corpus")], 600)
            result.log += merged.log
        if result.findings and work == Path(scratch):  # keep them: the scratch folder goes
            saved = Path(tempfile.mkdtemp(prefix=f"fuzz-{target}-findings-"))
            result.findings = [Path(p.rename(saved / p.name)) for p in result.findings]
        return result


def replay(target: str, path: Path, seconds: int = INPUT_SECONDS) -> FuzzRun:
    """Run `target` on the one input `path`, with the fuzzer's limits and `seconds` for it."""
    return _run(target, [f"-timeout={seconds}", f"-rss_limit_mb={RSS_LIMIT_MB}", str(path)], seconds + WALL_SLACK)


def _run(target: str, flags: list[str], wall: float) -> FuzzRun:
    proc = subprocess.Popen(command(target, *flags), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=_limits, start_new_session=True, cwd=HERE.parents[1])
    killed = False
    try:
        out, _ = proc.communicate(timeout=wall)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        killed = True
    return FuzzRun(target, proc.returncode, out.decode("utf-8", "replace"), killed=killed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=TARGETS)
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--keep", action="store_true", help="merge new coverage into corpus/TARGET")
    args = parser.parse_args()
    result = run(args.target, args.seconds, runs=args.runs, keep=args.keep)
    print(result.summary())
    for path in result.findings:
        print(f"finding: {path}\n  reproduce: {' '.join(command(args.target, str(path)))}")
    if result.failed:
        print(result.excerpt())
        sys.exit(1)


if __name__ == "__main__":
    main()
