"""Run one fuzz target under atheris (libFuzzer), coverage-guided.

    python tests/fuzz/fuzz.py TARGET [libFuzzer flags] [corpus dirs]
    TARGET: parse | check | recheck | passes | lsp   (the module target_TARGET.py)

Each target module gives `check(data)` (raises when a property fails), `INSTRUMENT` (the
packages whose coverage guides the fuzzer), `MAX_LEN` (the default -max_len) and
optionally `DICT` (a libFuzzer dictionary beside it) and `mutate`/`crossover` (a
structure-aware mutator).  An input whose failure has the signature of a kept crash
input (crashes/TARGET/, findings.py) is skipped, so a run finds new bugs, not the known
ones.  Use run.py, not this file, to run a fuzzer with limits on time and memory.
"""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the targets, and tests/ (test_parser_fuzz)

from findings import known_signatures, signature  # noqa: E402
from run import TARGETS  # noqa: E402

TARGET_VARIABLE = "RELAYLENS_FUZZ_TARGET"


def main(argv: list[str]) -> None:
    _own_peak()
    if len(argv) >= 2 and argv[1] in TARGETS:
        name = argv.pop(1)
        # libFuzzer runs itself again for -merge and -minimize_crash, with argv less the
        # target (which it would take for an input): the child finds it here
        os.environ[TARGET_VARIABLE] = name
    elif os.environ.get(TARGET_VARIABLE) in TARGETS:
        name = os.environ[TARGET_VARIABLE]
    else:
        sys.exit(f"usage: {argv[0]} {{{'|'.join(TARGETS)}}} [libFuzzer flags] [corpus dirs]")
    with atheris.instrument_imports(include=list(_instrumented(name))):
        target = importlib.import_module(f"target_{name}")
    known = known_signatures(name, target.check)
    if known:
        print(f"skipping the known crashes of {name}: {sorted(known)}", file=sys.stderr)

    met: set[str] = set()

    def one_input(data: bytes) -> None:
        try:
            target.check(data)
        except Exception as exc:
            found = signature(exc)
            if found not in known:
                raise
            if found not in met:
                met.add(found)
                print(f"met a known crash again (skipped): {found}", file=sys.stderr)

    options = {}
    if getattr(target, "mutate", None):
        options["custom_mutator"] = target.mutate
    if getattr(target, "crossover", None):
        options["custom_crossover"] = target.crossover
    if not any(a.startswith("-max_len=") for a in argv):
        argv.append(f"-max_len={target.MAX_LEN}")
    if getattr(target, "DICT", None) and not any(a.startswith("-dict=") for a in argv):
        argv.append(f"-dict={HERE / target.DICT}")
    # libFuzzer re-runs argv[0] through the shell for -merge and -minimize_crash: make it
    # this interpreter on this file (the file is not executable on its own)
    argv[0] = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).resolve()))}"
    atheris.Setup(argv, one_input, **options)
    atheris.Fuzz()


def _own_peak() -> None:
    """Go on in a forked child, and exit as it does, so libFuzzer measures this run alone.

    libFuzzer's -rss_limit_mb reads the process's peak resident size (getrusage), and
    Linux carries a process's peak across exec into the program it starts: a fuzzer
    started by a test worker that had grown to 3 GB called its first input out of memory.
    A forked child's peak starts from its own pages.
    """
    child = os.fork()
    if child == 0:
        return
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    sys.exit(code if code >= 0 else 128 - code)


def _instrumented(name: str) -> tuple[str, ...]:
    """INSTRUMENT of the target, read without importing it (the import must be instrumented)."""
    import ast

    tree = ast.parse((HERE / f"target_{name}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "INSTRUMENT" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ("relaylens",)


if __name__ == "__main__":
    main(sys.argv)
