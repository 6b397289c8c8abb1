"""Work in pieces on the event loop: a long analysis that lets other messages in between.

`Pieces(work)` runs `work()` on a thread of its own, but never beside the event loop:
the thread runs only while the loop waits for it (`run(seconds)`), and hands control
back at the first pause point (compiler/pauses.py) after `seconds`.  So there is one
flow of control at a time, as if the work were a coroutine: no lock around the
server's state, no contention for the GIL (an analysis beside the loop would halve the
speed of both), and the compiler's code stays plain functions with a `pause_point()` in
its long loops.  `Scheduler` runs the pieces of every piece of work waiting, a slice
at a time, the most recently started first, and yields to the loop between slices, so
a message that arrives meanwhile is read and answered after at most one slice.  Work
still `urgent` (an analysis that has not published its first diagnostics: its syntax)
goes before the rest, so every document's syntax diagnostics come before any
document's types.  Work `held` (an analysis of a version its document no longer has,
which the next analysis will stop) gets no slices; `finish()` still runs it.

From inside the work, `on_loop(call)` runs `call` on the loop's thread at once (the
piece ends there; everything that writes to the client goes this way); outside a piece
it calls it directly.  `stop()` asks the work to stop: the next pause point that may
(not inside `steady()`) raises `Stopped`, which ends the work with it as its error.
`finish()` runs the rest of the work now, in one go (what a request that needs its
result does).  A piece of work started and never finished costs one parked daemon thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..compiler.pauses import Stopped, may_stop, pausing

log = logging.getLogger("relaylens.server")

SLICE_SECONDS = 0.004  # one piece; a message that arrives waits at most about this long
STACK_BYTES = 64 << 20  # the analysis thread's stack: the parser's recursion on deep nesting

_local = threading.local()  # .pieces: the Pieces whose work this thread runs


class Pieces:
    """`work()` run a piece at a time, on the caller's turn (see the module docstring)."""

    def __init__(self, work: Callable[[], Any], name: str = "analysis") -> None:
        self._work = work
        self.name = name
        self._go = threading.Lock()  # held while the work must wait
        self._go.acquire()
        self._back = threading.Lock()  # held while the caller must wait
        self._back.acquire()
        self._thread: threading.Thread | None = None
        self._deadline = 0.0
        self._stopping = False
        self._calls: list[Callable[[], None]] = []
        self.steady = False  # paused where it may not stop (updating shared objects in place)
        self.urgent = True  # goes before the work that is not (the owner says when it stops being)
        self.held = False  # gets no slices from the scheduler (only `finish`)
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None

    # ---- from the loop's thread -------------------------------------------------------
    def run(self, seconds: float | None) -> bool:
        """Run the work for about `seconds` (None: to its end); True once it is done."""
        if self.done:
            return True
        self._deadline = float("inf") if seconds is None else time.perf_counter() + seconds
        if self._thread is None:
            self._thread = _thread(self._main, self.name)
        else:
            self._go.release()
        self._back.acquire()
        calls, self._calls = self._calls, []
        for call in calls:
            try:
                call()
            except Exception:  # noqa: BLE001 -- a callback's failure is logged, the work goes on
                log.exception("%s: a call on the loop failed", self.name)
        return self.done

    def finish(self) -> None:
        """Run the rest of the work now."""
        while not self.run(None):
            pass

    def stop(self) -> None:
        """Ask the work to stop at its next pause point that may (it then ends with `Stopped`)."""
        self._stopping = True

    @property
    def stopping(self) -> bool:
        return self._stopping

    # ---- on the work's thread ---------------------------------------------------------
    def _main(self) -> None:
        _local.pieces = self
        try:
            with pausing(self._pause):
                self.result = self._work()
        except BaseException as err:  # noqa: BLE001 -- handed to whoever reads `error`
            self.error = err
        finally:
            self.done = True
            self._back.release()

    def _pause(self, stoppable: bool) -> None:
        if self._stopping and stoppable:
            raise Stopped
        if time.perf_counter() >= self._deadline:
            self._hand_back(stoppable)
            if self._stopping and stoppable:
                raise Stopped

    def _hand_back(self, stoppable: bool) -> None:
        self.steady = not stoppable
        self._back.release()
        self._go.acquire()


def on_loop(call: Callable[[], None]) -> None:
    """Run `call` on the loop's thread: from inside a piece of work, now, ending the piece
    (the work goes on at its next turn); elsewhere, here."""
    pieces = getattr(_local, "pieces", None)
    if pieces is None:
        call()
        return
    pieces._calls.append(call)
    pieces._hand_back(may_stop())


def _thread(target: Callable[[], None], name: str) -> threading.Thread:
    saved = threading.stack_size()
    try:
        threading.stack_size(STACK_BYTES)
        thread = threading.Thread(target=target, name=name, daemon=True)
    finally:
        threading.stack_size(saved)
    thread.start()
    return thread


async def _after_the_loops_turn() -> None:
    """Let the loop run what came due during a slice before the next slice.

    One `sleep(0)` is not enough: it queues this task at once, and the loop's next turn
    runs it before the callbacks that turn adds (the messages read, the timers due, such
    as a change's `_later`), so those waited for one more slice (4-8 ms).  Yielding twice
    queues this task behind them."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


class Scheduler:
    """Runs the waiting pieces of work on the event loop, one slice at a time, the most
    recently started (or `raise_`d) of the `urgent` ones first, else the most recent,
    none that is `held`, yielding to the loop between slices."""

    def __init__(self, slice_seconds: float = SLICE_SECONDS) -> None:
        self.slice = slice_seconds
        self._queue: list[tuple[Pieces, Callable[[Pieces], None]]] = []  # the last runs first
        self._task: asyncio.Task | None = None

    @property
    def busy(self) -> bool:
        """Whether some work is waiting."""
        return bool(self._queue)

    def start(self, pieces: Pieces, done: Callable[[Pieces], None]) -> None:
        """Queue `pieces` first; `done(pieces)` is called on the loop when it is done."""
        self._queue.append((pieces, done))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drive())

    def raise_(self, pieces: Pieces) -> None:
        """Put queued `pieces` first."""
        for i, (queued, done) in enumerate(self._queue):
            if queued is pieces:
                self._queue.append(self._queue.pop(i))
                return

    def finish(self, pieces: Pieces) -> None:
        """Run queued `pieces` to its end now, and its `done`."""
        pieces.finish()
        self._retire(pieces)

    def steady_out(self, pieces: Pieces) -> None:
        """Run queued `pieces` now until it is paused where it may stop (out of `steady()`:
        done updating shared objects in place), or to its end (then its `done`)."""
        while pieces.steady and not pieces.done:
            if pieces.run(0):
                self._retire(pieces)

    def _retire(self, pieces: Pieces) -> None:
        for i, (queued, done) in enumerate(self._queue):
            if queued is pieces:
                del self._queue[i]
                try:
                    done(pieces)
                except Exception:  # noqa: BLE001 -- the next piece of work must still run
                    log.exception("%s: finishing failed", pieces.name)
                return

    async def _drive(self) -> None:
        while self._queue:
            pieces = self._next()
            if pieces is None:
                return  # all held: the next `start` drives again
            if pieces.run(self.slice):
                self._retire(pieces)
            await _after_the_loops_turn()  # the loop reads and answers what arrived meanwhile

    def _next(self) -> Pieces | None:
        """The work to run a slice of: the most recent urgent one, else the most recent;
        none held (None if all are)."""
        ready = [pieces for pieces, _ in self._queue if not pieces.held]
        for pieces in reversed(ready):
            if pieces.urgent:
                return pieces
        return ready[-1] if ready else None
