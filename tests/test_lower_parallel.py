"""Kernels lowered in forked children (lower/parallel.py): the same results as in order,
children that die or are left behind cost nothing, and a build is the same either way."""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.parallel import ENV, compile_jobs, map_forked
from relaylens.compiler.lower.pipeline import TEXT as TEXT_BLOB

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not os.path.isdir("/proc"), reason="no os.fork or /proc here")

PARENT = os.getpid()


def square_or_die(x: int) -> int:
    if x == 3 and os.getpid() != PARENT:
        os._exit(7)  # a child dying on one item: the parent computes it
    return x * x


def test_every_item_once_whatever_the_order():
    assert sorted(map_forked(square_or_die, list(range(12)), 2)) == [(i, i * i) for i in range(12)]
    assert list(map_forked(square_or_die, [5], 2)) == [(0, 25)]  # one item: no children


def test_large_answers_come_back_whole():
    out = dict(map_forked(lambda n: bytes(range(256)) * n, [1, 40_000, 3], 2))
    assert out[1] == bytes(range(256)) * 40_000


def test_a_reader_blocked_on_stdin_does_not_stop_the_children(monkeypatch):
    """The build worker has a thread reading stdin; a child that closed sys.stdin (as a
    multiprocessing pool's do) would wait for that thread's lock forever."""
    read, write = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read, "r"))
    reader = threading.Thread(target=lambda: sys.stdin.buffer.read(), daemon=True)
    reader.start()
    try:
        assert sorted(map_forked(square_or_die, list(range(6)), 2)) == [(i, i * i) for i in range(6)]
    finally:
        os.close(write)


def test_children_left_behind_are_reaped():
    def slow(x: int) -> int:
        time.sleep(0.05 * x)
        return x

    before = children()
    results = map_forked(slow, list(range(8)), 2)
    next(results)
    assert len(children() - before) == 2
    results.close()  # the parent stops waiting (a cancelled build)
    assert children() == before  # none left, not even a zombie


def test_work_beside_the_children_starts_once_they_have_theirs():
    """`started` runs in the parent once both children are forked (a thread it starts
    cannot be copied into them) and never when there are none."""
    before, seen = children(), []
    started = lambda: seen.append(len(children() - before))  # noqa: E731
    assert sorted(map_forked(square_or_die, list(range(6)), 2, started=started)) == [(i, i * i) for i in range(6)]
    assert seen == [2]
    assert list(map_forked(square_or_die, [5], 2, started=started)) == [(0, 25)]
    assert seen == [2]


def test_a_child_gets_its_next_item_before_its_answer_is_taken(tmp_path):
    """The parent gives a child that answered its next item before handing the answer on,
    so the child works while the caller takes that answer (pipeline.py loads code)."""
    def mark(x: int) -> int:
        (tmp_path / f"started-{x}").touch()
        return x

    results = map_forked(mark, [0, 1, 2], 1, isolate=True)
    assert next(results) == (0, 0)
    deadline = time.monotonic() + 30  # the child's start is awaited, not timed
    while not (tmp_path / "started-1").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tmp_path / "started-1").exists()
    assert sorted(results) == [(1, 1), (2, 2)]


def children() -> set[int]:
    """The pids of this process's children (zombies included), from /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            found.add(int(entry))
    return found


def test_compile_jobs_reads_the_environment(monkeypatch):
    monkeypatch.setenv(ENV, "3")
    assert compile_jobs() == 3
    monkeypatch.setenv(ENV, "zero")
    assert compile_jobs() >= 1


TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 16, 16), float32], %w: Tensor[(8, 8, 3, 3), float32], %v: Tensor[(16, 512), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);
  %3 = reshape(%2, newshape=[1, 512]);
  %4 = tanh(%3);
  %5 = nn.dense(%4, %v);
  nn.softmax(%5)
}
"""


def test_a_build_is_the_same_in_children_and_in_order(monkeypatch):
    builds = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv(ENV, jobs)
        result = compile(TEXT, "m.relay")
        assert result.ok, [d.render() for d in result.diagnostics]
        builds[jobs] = result
    one, two = builds["1"].lowered, builds["2"].lowered
    assert list(one.functions) == list(two.functions) and len(one.functions) >= 3
    assert one.llvm_ir == two.llvm_ir and one.optimized_ir == two.optimized_ir
    for name in one.functions:
        assert one.functions[name].schedule_text == two.functions[name].schedule_text
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in ((1, 8, 16, 16), (8, 8, 3, 3), (16, 512))]
    np.testing.assert_array_equal(np.asarray(one.executable.run(*args)), np.asarray(two.executable.run(*args)))


def test_the_executable_is_made_while_the_children_lower_the_kernels(monkeypatch):
    """It needs the kernels' names and constants, not their code: with children it is
    made in a thread of the parent beside them, and runs their code once they are done;
    in order (one job) it is made after the kernels, as before."""
    from relaylens.compiler.lower import pipeline

    made = pipeline.make_executable
    where = []

    def recording(*args, **kwargs):
        where.append(threading.current_thread() is threading.main_thread())
        return made(*args, **kwargs)

    monkeypatch.setattr(pipeline, "make_executable", recording)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s).astype("float32") for s in ((1, 8, 16, 16), (8, 8, 3, 3), (16, 512))]
    outputs = []
    for jobs in ("2", "1"):
        monkeypatch.setenv(ENV, jobs)
        result = compile(TEXT, "m.relay")
        assert result.ok, [d.render() for d in result.diagnostics]
        outputs.append(np.asarray(result.lowered.executable.run(*args)))
    assert where == [False, True]
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_one_thread_at_a_time_in_llvm(monkeypatch):
    """While the thread makes the entry's code, the parent loads the children's kernels
    into the same JIT, both through LLVM's global context, which is not safe across
    threads: a JIT lets one thread in at a time."""
    from relaylens.compiler.lower.runtime import jit as jit_module

    inside, most = [0], [0]
    parse = jit_module.llvm.parse_assembly

    def slow_parse(*args, **kwargs):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        inside[0] -= 1
        return parse(*args, **kwargs)

    monkeypatch.setattr(jit_module.llvm, "parse_assembly", slow_parse)
    jit = jit_module.JIT(1)
    module = "define i32 @f() {\n  ret i32 1\n}\n"
    threads = [threading.Thread(target=jit.load, args=(module,)) for _ in range(2)]
    threads.append(threading.Thread(target=jit.load_object, args=(jit.load_keeping_object(module)[1], {"f": "f"})))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and inside[0] == 0


def test_a_failing_kernel_leaves_no_executable_from_the_thread(monkeypatch):
    """A kernel the children cannot lower is a diagnostic, and the executable the thread
    made beside them is dropped: a build with an error has none."""
    from relaylens.compiler.lower import pipeline

    lower = pipeline._lower

    def failing(func, name, *args):
        if "softmax" in name:
            raise pipeline.LoweringError("no code for this one")
        return lower(func, name, *args)

    monkeypatch.setattr(pipeline, "_lower", failing)
    monkeypatch.setenv(ENV, "2")
    result = compile(TEXT, "m.relay")
    assert not result.ok and any("no code for this one" in d.message for d in result.diagnostics)
    assert result.lowered.executable is None


def test_no_build_makes_a_schedule_text_until_one_is_read(monkeypatch, tmp_path):
    """Printing every step's loop nest was about 40% of lowering: no build makes it, in
    order or in children, to machine code or to LLVM IR, with the disk cache or without;
    the cache keeps the count of steps, not the text.  Read afterwards, each text is the
    one a build in order makes."""
    from relaylens.compiler.lower.disk_cache import SUFFIX, DiskCache
    from relaylens.compiler.lower.schedule.primitives import Schedule

    expected = {name: fn.schedule_text for name, fn in compile(TEXT, "m.relay").lowered.functions.items()}
    made = Schedule.record_text

    def refused(self):
        raise AssertionError(f"a build made the schedule text of {self.name}")

    monkeypatch.setattr(Schedule, "record_text", refused)  # inherited by forked children
    builds = []
    for jobs, stop, disk in (("2", "machine_code", None), ("2", "machine_code", DiskCache(tmp_path / "a")),
                             ("2", "llvm", DiskCache(tmp_path / "b")), ("1", "llvm", None)):
        monkeypatch.setenv(ENV, jobs)
        result = compile(TEXT, "m.relay", stop_after=stop, disk_cache=disk)
        assert result.ok, [d.render() for d in result.diagnostics]
        builds.append(result.lowered)
    again = compile(TEXT, "m.relay", disk_cache=DiskCache(tmp_path / "a")).lowered  # every kernel from disk
    stored = DiskCache(tmp_path / "a")
    entries = [stored.get(p.name.removesuffix(SUFFIX)) for p in stored.directory.glob("*" + SUFFIX)]
    assert entries and all(TEXT_BLOB not in e.blobs and e.meta["steps"] > 1
                           for e in entries)
    monkeypatch.setattr(Schedule, "record_text", made)
    for lowered in (*builds, again):
        assert {name: (fn.schedule_steps, fn.schedule_text) for name, fn in lowered.functions.items()} \
            == {name: (text.count("# step "), text) for name, text in expected.items()}


def test_a_build_whose_texts_are_all_read_has_them_made_by_its_children(monkeypatch, tmp_path):
    """`relaylens build --emit schedule` and `-o` read every text: the children that lower
    the kernels (or, for kernels from the disk cache without theirs, children forked for
    that) make them in parallel and the disk cache keeps them, so that the next such
    build reads them; the parent schedules nothing again."""
    from relaylens.compiler.lower.disk_cache import SUFFIX, DiskCache
    from relaylens.compiler.lower.schedule.primitives import Schedule

    expected = {name: fn.schedule_text for name, fn in compile(TEXT, "m.relay").lowered.functions.items()}
    monkeypatch.setenv(ENV, "2")

    def texts(disk) -> list:
        return [TEXT_BLOB in disk.get(p.name.removesuffix(SUFFIX)).blobs for p in disk.directory.glob("*" + SUFFIX)]

    def made(lowered) -> dict:
        assert all(fn.scheduled is None for fn in lowered.functions.values())  # nothing scheduled here
        return {name: fn.made_text for name, fn in lowered.functions.items()}

    cold = DiskCache(tmp_path / "cold")
    assert made(compile(TEXT, "m.relay", disk_cache=cold, schedule_texts=True).lowered) == expected
    assert texts(cold) == [True] * len(expected)
    warm = DiskCache(tmp_path / "warm")
    compile(TEXT, "m.relay", disk_cache=warm)  # a build that reads no text: the entries keep none
    assert texts(warm) == [False] * len(expected)
    assert made(compile(TEXT, "m.relay", disk_cache=warm, schedule_texts=True).lowered) == expected
    assert texts(warm) == [True] * len(expected)  # made by children, then kept

    def refused(self):
        raise AssertionError(f"{self.name}'s schedule text was made again")

    monkeypatch.setattr(Schedule, "record_text", refused)
    for disk in (cold, warm):
        assert made(compile(TEXT, "m.relay", disk_cache=disk, schedule_texts=True).lowered) == expected


def test_a_kept_schedule_text_is_renamed_with_its_kernel_alone() -> None:
    from relaylens.compiler.lower.pipeline import _named

    text = "# step 0: create_schedule(k_add: outputs T)\ndef k_add(p0):\n  k_add_1(p0)  # k_addx\n"
    assert _named(text, "k_add", "k_add_2") == \
        "# step 0: create_schedule(k_add_2: outputs T)\ndef k_add_2(p0):\n  k_add_1(p0)  # k_addx\n"
    assert _named(text, "k_add", "k_add") is text


def test_children_keep_the_heap_they_inherit_out_of_the_collector():
    """Every collection in a child would walk the parent's whole heap (the build): a
    child freezes what it inherits (gc.freeze) before its first item."""
    import gc

    assert all(count > 0 for _, count in map_forked(lambda _: gc.get_freeze_count(), [0, 1, 2], 2))


def test_a_child_collects_its_own_garbage_only_past_gc_objects(monkeypatch):
    """A child leaves the garbage of its items uncollected (gc.disable: llvmlite's IR is
    cyclic, and finding it cost a sixth of a child's Python) until GC_OBJECTS objects
    are left, then collects: its count grows over two items, and no further."""
    import gc

    from relaylens.compiler.lower import parallel

    monkeypatch.setattr(parallel, "GC_OBJECTS", 5000)

    def cycles(n: int) -> tuple[bool, int]:
        for _ in range(n):
            a: list = []
            a.append(a)
        return gc.isenabled(), gc.get_count()[0]

    seen = [answer for _, answer in sorted(map_forked(cycles, [3000] * 6, 1, isolate=True))]
    assert not any(enabled for enabled, _ in seen)
    counts = [count for _, count in seen]
    assert max(counts) > 5000, counts  # two items' garbage, uncollected
    assert max(counts) < 9000, counts  # collected past GC_OBJECTS, never three items' worth
