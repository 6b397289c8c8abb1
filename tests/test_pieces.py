"""Work in pieces (server/pieces.py, compiler/pauses.py): the work runs only on its
caller's turn and hands back at pause points; the scheduler runs the most recent work
first; a stopped work ends at its next pause point unless it is steady; calls made
from the work run on the loop's thread.  Pieces are cut by a clock, so these tests
give the work no time at all (each pause point ends the piece) or all of it (None), and
look at the order of events, never at durations."""

from __future__ import annotations

import asyncio
import threading

import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.pauses import Stopped, pause_point, steady
from relaylens.server.analysis import Analyses
from relaylens.server.pieces import Pieces, Scheduler, on_loop


def counting(log: list, name: str, steps: int):
    def work() -> str:
        for i in range(steps):
            log.append((name, i))
            pause_point()
        return name
    return work


def test_the_work_runs_only_on_its_callers_turn() -> None:
    log: list = []
    pieces = Pieces(counting(log, "a", 3))
    assert not pieces.run(0)  # one step, then the pause point hands back
    assert log == [("a", 0)]
    assert not pieces.run(0)
    assert log == [("a", 0), ("a", 1)]
    pieces.finish()
    assert pieces.done and pieces.result == "a" and pieces.error is None
    assert log == [("a", 0), ("a", 1), ("a", 2)]


def test_a_pause_point_outside_pieces_does_nothing() -> None:
    log: list = []
    assert counting(log, "plain", 2)() == "plain" and len(log) == 2


def test_stopping_ends_the_work_at_its_next_pause_point_unless_steady() -> None:
    log: list = []
    pieces = Pieces(counting(log, "a", 10))
    pieces.run(0)
    pieces.stop()
    pieces.finish()
    assert isinstance(pieces.error, Stopped) and log == [("a", 0)]

    def careful() -> str:
        with steady():
            counting(log, "b", 3)()
        pause_point()  # out of the steady part: stopped here
        log.append("after")
        return "b"

    pieces = Pieces(careful)
    pieces.run(0)
    pieces.stop()
    pieces.finish()
    assert isinstance(pieces.error, Stopped)
    assert [entry for entry in log if entry[0] == "b"] == [("b", 0), ("b", 1), ("b", 2)] and "after" not in log


def test_calls_from_the_work_run_on_the_loops_thread_at_once() -> None:
    seen: list = []

    def work() -> None:
        on_loop(lambda: seen.append(("call", threading.current_thread() is threading.main_thread())))
        seen.append(("work", threading.current_thread() is threading.main_thread()))

    pieces = Pieces(work)
    assert not pieces.run(None)  # the call ends the piece ...
    assert seen == [("call", True)]
    assert pieces.run(None)  # ... and the work goes on at its next turn
    assert seen == [("call", True), ("work", False)]


@pytest.mark.asyncio
async def test_the_scheduler_runs_the_most_recent_work_first() -> None:
    log: list = []
    finished: list = []
    scheduler = Scheduler(slice_seconds=0)
    first = Pieces(counting(log, "first", 4))
    scheduler.start(first, lambda p: finished.append(p.result))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the first has run a piece or two
    second = Pieces(counting(log, "second", 3))
    scheduler.start(second, lambda p: finished.append(p.result))
    while len(finished) < 2:
        await asyncio.sleep(0)
    assert finished == ["second", "first"]
    names = [name for name, _ in log]
    started = names.index("second")
    assert 0 < started and names[started:started + 3] == ["second"] * 3  # not interleaved with the first
    assert names.count("first") == 4


def test_a_whole_check_in_pieces_is_the_check() -> None:
    text = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(4), float32]) {\n' + "".join(
        f"  %{k} = add({'%x' if k == 0 else f'%{k - 1}'}, %x);\n" for k in range(600)) + "  %599\n}\n"
    pieces = Pieces(lambda: Analyses().update("file:///p.relay", 1, text))
    turns = 1
    while not pieces.run(0):
        turns += 1
    assert pieces.error is None and turns > 10  # it did pause, many times
    whole = check_text(text, "file:///p.relay")
    analysis = pieces.result
    assert [d.message for d in analysis.diagnostics] == [d.message for d in whole.diagnostics]
    assert analysis.result.module.functions  # typed: @main's type is known
    assert next(iter(analysis.result.module.global_vars.values())).ty is not None


def test_the_scan_searches_a_window_at_a_time_and_finds_what_one_search_finds(monkeypatch) -> None:
    """parser/scan.py `_next_event`: events cut by a window's end (`def` of `define`,
    `/` then `*`) are found whole in the next window, never a false one."""
    import random

    from relaylens.compiler.parser import scan

    monkeypatch.setattr(scan, "WINDOW", 16)
    pieces = ["def", "define", "type", "extern", "/*", "//", '"', "#", " ", "\n", "%", "@", "x", "/", ".", "*"]
    rng = random.Random(16)
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        found = {}
        for name, search in (("whole", scan._EVENT.search), ("windows", scan._next_event)):
            pos, events = 0, []
            while (m := search(text, pos, len(text))) is not None:
                events.append((m.start(), m.group()))
                pos = m.end()
            found[name] = events
        assert found["whole"] == found["windows"], text


@pytest.mark.asyncio
async def test_a_timer_due_during_a_slice_runs_before_the_next_slice() -> None:
    """A change's timer (or a message read) that comes due while a slice runs is served
    before the next slice, not after it."""
    log: list = []
    finished: list = []

    def work() -> str:
        for i in range(40):
            log.append(("slice", i))
            if i == 3:  # (the loop is parked while the work runs: one flow of control)
                loop.call_later(0, lambda: log.append(("timer",)))
            pause_point()
        return "done"

    loop = asyncio.get_running_loop()
    scheduler = Scheduler(slice_seconds=0)
    scheduler.start(Pieces(work), lambda p: finished.append(p.result))
    while not finished:
        await asyncio.sleep(0)
    timer = next(k for k, entry in enumerate(log) if entry[0] == "timer")
    assert log[timer - 1] == ("slice", 3)  # the slice it came due in, then the timer
