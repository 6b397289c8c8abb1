"""The corpus compiled: every clean corpus file is built, lowered to machine code and run
on random inputs against the reference interpreter (the same inputs and comparison as
test_pipeline_corpus's interpreter check).  What cannot lower must say why at a span.

The kernels go to the session's kernel cache on disk (conftest: $RELAYLENS_CACHE_DIR), keyed
as `relaylens run` keys them, and constants printed without their metadata are filled from
`run`'s default seed 0: the corpus models this file builds first (ResNet-50 is 005) are not
compiled again by test_numerics's `relaylens run --check` over the corpus, which reads them."""

from __future__ import annotations

import zlib

import pytest
from test_pipeline_corpus import FILES, assert_same, build_ok, checked, random_inputs, runnable_reason

from conftest import CORPUS
from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.parser.result import is_unknown_constants_warning
from relaylens.compiler.lower.disk_cache import environment_cache
from relaylens.compiler.lower.pipeline import lower_build
from relaylens.compiler.lower.runtime.jit import JIT

# Files whose fused functions cannot be lowered, by design, and the message that says so.
NOT_LOWERED = {
    "077.relay": "unknown (?) dimensions",
    "089.relay": "expected a tensor, found TypeVar",
    "132.relay": "unknown (?) dimensions",
    "134.relay": "unknown (?) dimensions",
    "136.relay": "its type is unknown",
}


# name -> the executor mode of the file's compiled build (None: no executable), recorded
# by the per-file test so that the summary test below does not lower the corpus again
MODES: dict[str, str | None] = {}


# what the driver keys a default build's kernels with (driver.compile: opt_level 3, no config)
OPTIONS = {"opt_level": 3, "config": {}}


@pytest.fixture(scope="module")
def jit():
    return JIT()


def lower(result, jit):
    return lower_build(result, jit=jit, disk=environment_cache(), options=OPTIONS)


def clean(name: str) -> bool:
    return not any(d.is_error for d in checked(name).diagnostics)


def printed_without_metadata(name: str) -> bool:
    return any(is_unknown_constants_warning(d) for d in checked(name).diagnostics)


def build_filled(name: str):
    """A file printed without its metadata, built with its constants filled from a seed
    (what `relaylens run` does, with its default seed); skips when a constant's type is unknown."""
    result = compile((CORPUS / name).read_text(), name, unknown_seed=0, stop_after="passes")
    errors = [d.message for d in result.diagnostics if d.is_error]
    if any("no value and no known type" in e for e in errors):
        pytest.skip("printed without its metadata, and nothing fixes the type of one of its constants")
    assert not errors, errors
    return result


@pytest.mark.parametrize("name", [n for n in FILES])
def test_corpus_file_compiles_and_matches_the_interpreter(name, jit):
    if not clean(name):
        pytest.skip("the file has errors")
    result = build_filled(name) if printed_without_metadata(name) else build_ok(name)
    lowered = lower(result, jit)
    if not printed_without_metadata(name):
        MODES[name] = lowered.executable.mode if lowered.executable is not None else None
    if name in NOT_LOWERED:
        assert not lowered.ok
        assert any(NOT_LOWERED[name] in d.message and d.span is not None for d in lowered.diagnostics), \
            [d.message for d in lowered.diagnostics]
        return
    assert lowered.ok, [d.message for d in lowered.diagnostics]
    mod = result.snapshots[0].module
    why = runnable_reason(mod)
    if why:
        pytest.skip(why)
    args = random_inputs(mod["main"].params, zlib.crc32(name.encode()))
    assert_same(lowered.executable.run(*args), interpret(mod, *args))


def test_the_corpus_runs_compiled_through_both_executors(jit):
    """Dataflow files run through the AOT entry, the others through the interpreter calling
    the kernels; both kinds are present in the corpus.  A file the per-file test lowered
    in this session is not lowered again (MODES); run alone, this test lowers them all."""
    modes = {}
    for name in FILES:
        if clean(name) and name not in NOT_LOWERED and not printed_without_metadata(name):
            if name not in MODES:
                lowered = lower(build_ok(name), jit)
                MODES[name] = lowered.executable.mode if lowered.executable is not None else None
            if MODES[name] is not None:
                modes.setdefault(MODES[name], []).append(name)
    assert len(modes.get("aot", ())) >= 15 and len(modes.get("interpreter", ())) >= 15, modes
