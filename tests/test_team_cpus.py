"""Where the inference's team runs (codegen/team_cpus.py) and what its trace records
(codegen/team_trace.py, runtime/team_trace.py): read through the trace hook, not timed.

From its second inference on, a calling thread keeps the team's other threads off the CPU
it runs on while its steps last, so the worker arrives and works elsewhere, and gets
every allowed CPU back after them (or is pulled onto the calling thread's CPU when that
waits long for it: then it may run there)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.runtime import jit as jit_module
from relaylens.compiler.lower.runtime.team_trace import team_trace
from test_inference_team import MODEL  # two dense layers and a softmax: parallel loops on the team

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to keep a thread off one")


@pytest.fixture(scope="module")
def run():
    jit = jit_module.JIT(num_threads=2)
    exe = compile(MODEL, "team_cpus.relay", jit=jit, disk_cache=None).executable
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    h = np.maximum(x @ w.T, 0) @ w.T
    want = np.exp(h - h.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)

    def once():
        np.testing.assert_allclose(exe.run(x, w), want, rtol=1e-4, atol=1e-6)

    yield once
    jit_module.team_cpus(True)  # the defaults again


def test_the_worker_runs_off_the_callers_cpu_and_gets_every_cpu_back(run):
    allowed = os.sched_getaffinity(0)
    jit_module.team_cpus(True, worth_ns=0)  # this model's inference is shorter than WORTH_NS
    run()  # the workers record their thread ids
    checked = 0
    with team_trace() as trace:
        for _ in range(20):
            run()
            record = trace.read()
            assert record.kept_off is not None, record
            for thread in record.threads.values():
                if thread.arrive < record.main_end and not record.rescues:  # (then free, or pulled onto it)
                    assert thread.cpu_arrive != record.kept_off, record
                    assert thread.cpu_first_job in (None, *(allowed - {record.kept_off})), record
                    checked += 1
                assert os.sched_getaffinity(thread.tid) == allowed  # released after the region
    assert checked  # a worker that arrives only after thread 0's steps, 20 times in a row: not seen
    assert list(jit_module._TEAM_SLOT)[:3] == [None, None, None]


def test_not_after_a_short_inference(run):
    """By default only an inference after one of WORTH_NS or more restricts the team:
    this model's inference takes well under a millisecond, the worth a huge one."""
    jit_module.team_cpus(True, worth_ns=10**12)
    with team_trace() as trace:
        for _ in range(3):
            run()
            assert trace.read().kept_off is None
    jit_module.team_cpus(True, worth_ns=0)
    run()
    with team_trace() as trace:
        run()
        assert trace.read().kept_off is not None


def test_any_cpu_when_switched_off(run):
    jit_module.team_cpus(False, worth_ns=0)
    with team_trace() as trace:
        for _ in range(3):
            run()
            assert trace.read().kept_off is None


def test_the_trace_records_the_jobs_and_who_took_them(run):
    """Thread 0 publishes each parallel loop as a job; the record's times are ordered and
    a thread that joined jobs spent time in them."""
    with team_trace() as trace:
        run()
        record = trace.read()
    assert record.jobs >= 3  # two dense layers and the softmax, each a parallel loop at least
    assert 0 <= record.main_start <= record.main_end <= record.exit
    for thread in record.threads.values():
        assert 0 <= thread.joined <= record.jobs and thread.tid > 0
        assert (thread.first_job is None) == (thread.joined == 0)
        assert thread.busy >= 0 and (thread.joined == 0 or thread.busy > 0)
    with pytest.raises(RuntimeError):
        with team_trace(), team_trace():
            pass


def test_no_record_at_one_thread():
    """At 1 thread the entry runs its steps directly: no team, nothing recorded."""
    jit = jit_module.JIT(num_threads=1)
    exe = compile(MODEL, "one_thread.relay", jit=jit, disk_cache=None).executable
    x = np.ones((64, 256), np.float32)
    w = np.full((256, 256), 1 / 256, np.float32)
    with team_trace() as trace:
        exe.run(x, w)
        assert trace.read() is None


def test_a_forked_child_forgets_the_parents_threads(run):
    """The slot's thread ids are the parent's libgomp threads: a forked child drops their
    master, so its first inference restricts nothing (and its own threads record theirs)."""
    from relaylens.compiler.lower.codegen.team_cpus import SLOT_MASTER

    run()
    assert jit_module._TEAM_SLOT[SLOT_MASTER]
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # no pytest in here: report through the pipe, leave at once
        os.close(read)
        os.write(write, b"1" if jit_module._TEAM_SLOT[SLOT_MASTER] is None else b"0")
        os._exit(0)
    os.close(write)
    said = os.read(read, 1)
    os.close(read)
    os.waitpid(child, 0)
    assert said == b"1"
