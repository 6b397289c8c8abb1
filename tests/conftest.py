"""Shared fixtures for the parser tests.

    CORPUS            the real-world corpus: ../shared/corpus/relay beside the checkout, or
                      $RELAYLENS_CORPUS
    corpus_dir        fixture: CORPUS, or a skip saying where it was looked for
    corpus_file(n)    CORPUS / n, or a skip; `needs_corpus` marks a test that reads CORPUS
    corpus_names()    parameters for the corpus's .relay files (one skipped param when absent)

Without the corpus, tests that need it skip with the reason (a plain clone passes); with
CI=true a missing corpus stops the run instead, since CI always has it beside the clone.
    parse_ok(text)    the IRModule of a text that must parse with no error diagnostics
    parse_expr_ok(t)  @main's body, for a file holding one bare expression
    errors(text)      [(line, col, message)] of the error diagnostics, in source order
    avx2              fixture: conv_chunks.py's and conv.py's tiles sized for AVX2 on any host

Every build the tests make keeps its kernels in a temporary directory of the session
($RELAYLENS_CACHE_DIR), never in the user's cache.
With $PYTHONDONTWRITEBYTECODE set, the processes the tests start keep their bytecode in
another such directory ($PYTHONPYCACHEPREFIX) rather than compiling the sources each time.

The helpers are fixtures that return plain functions (session-scoped, so hypothesis tests
may take them too).  Warnings never fail `parse_ok`: a missing version header and a global
the file does not define are warnings by design.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from relaylens.compiler.parser import parse

CORPUS = Path(os.environ.get("RELAYLENS_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus" / "relay")
NO_CORPUS = f"the shared corpus is not at {CORPUS} (put shared/ beside the checkout or set RELAYLENS_CORPUS)"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=NO_CORPUS)


def corpus_file(name: str) -> Path:
    """The corpus file `name`; skips the calling test when the corpus is absent."""
    if not CORPUS.is_dir():
        pytest.skip(NO_CORPUS)
    return CORPUS / name


def corpus_names(pattern: str = "*.relay") -> list:
    """Names of the corpus files matching `pattern`, as parameters; one skipped parameter
    saying why when the corpus is absent (rather than pytest's bare "empty parameter set")."""
    if not CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=NO_CORPUS))]
    return sorted(p.name for p in CORPUS.glob(pattern))


def pytest_sessionstart(session) -> None:
    if os.environ.get("CI") == "true" and not CORPUS.is_dir():
        raise pytest.UsageError(f"CI=true and {NO_CORPUS}")
MEMORY_LIMIT = 8 << 30


def pytest_configure(config) -> None:
    """Cap the test process's memory: a runaway (a failing hypothesis test keeps every
    failing example alive) must fail as MemoryError, not take the machine down."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft > MEMORY_LIMIT:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, hard))
    except (ImportError, ValueError, OSError):  # not on every platform
        pass
    _private_kernel_cache()
    _private_bytecode_cache()


def pytest_collection_modifyitems(config, items) -> None:
    """On pytest-xdist's workers (`make test` runs two, a file to a worker, in the order
    given here: --no-loadscope-reorder), the files with a test marked `slow` go first and
    then the others, the files with more tests first: the long ones start early and the
    two workers end together, rather than one running the VS Code tests alone at the end.
    The order is the same on every worker (xdist requires it); a run without xdist keeps
    pytest's order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    tests: dict[Path, int] = {}
    slow: set[Path] = set()
    for item in items:
        tests[item.path] = tests.get(item.path, 0) + 1
        if item.get_closest_marker("slow") is not None:
            slow.add(item.path)
    items.sort(key=lambda item: (item.path not in slow, -tests[item.path]))  # stable


def _private_kernel_cache() -> None:
    """Builds in tests (the CLI in process, servers and workers they start) use a kernel
    cache of their own, never the user's ~/.cache/relaylens: $RELAYLENS_CACHE_DIR set to a
    temporary directory for the session and every process it starts, removed at exit."""
    import atexit
    import shutil
    import tempfile

    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("RELAYLENS_CACHE_DIR"):
        return  # a worker of pytest-xdist: the directory its controller made, shared
    directory = tempfile.mkdtemp(prefix="relaylens-test-kernels-")
    os.environ["RELAYLENS_CACHE_DIR"] = directory
    atexit.register(shutil.rmtree, directory, ignore_errors=True)


def _private_bytecode_cache() -> None:
    """With $PYTHONDONTWRITEBYTECODE set, every process the tests start (the console script,
    servers, build workers) would compile the package's sources again before it
    does anything, about 0.7 s of CPU each.  Their bytecode goes to a temporary directory
    of the session instead ($PYTHONPYCACHEPREFIX), removed at exit: still nothing is
    written beside the sources.  A prefix already set is left alone."""
    import atexit
    import shutil
    import tempfile

    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    directory = tempfile.mkdtemp(prefix="relaylens-test-pycache-")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = directory
    atexit.register(shutil.rmtree, directory, ignore_errors=True)


def _describe(diagnostics) -> str:
    return "\n".join(f"  {d.location()}: {d.severity.name.lower()}: {d.message}" for d in diagnostics)


def _parse_ok(text: str, name: str = "test.relay"):
    result = parse(text, name)
    bad = [d for d in result.diagnostics if d.is_error]
    assert not bad, f"unexpected errors parsing {text!r}:\n{_describe(bad)}"
    return result.module


def _parse_expr_ok(text: str, name: str = "test.relay"):
    module = _parse_ok(text, name)
    assert "main" in module, f"no @main read from the expression {text!r}"
    return module["main"].body


def _errors(text: str, name: str = "test.relay") -> list[tuple[int, int, str]]:
    result = parse(text, name)
    found = []
    for d in result.diagnostics:
        if d.is_error:
            _, line, col = d.location()
            found.append((line, col, d.message))
    return found


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(NO_CORPUS)
    return CORPUS


@pytest.fixture(scope="session")
def parse_ok():
    return _parse_ok


@pytest.fixture(scope="session")
def parse_expr_ok():
    return _parse_expr_ok


@pytest.fixture(scope="session")
def errors():
    return _errors


@pytest.fixture
def avx2(monkeypatch):
    """The schedules sized for AVX2 on any host: conv_chunks.py's and conv.py's tiles."""
    from relaylens.compiler.lower.schedule import conv, conv_chunks
    from relaylens.compiler.lower.schedule.vector_unit import AVX2

    monkeypatch.setattr(conv_chunks, "host_unit", lambda: AVX2)
    monkeypatch.setattr(conv, "host_unit", lambda: AVX2)
