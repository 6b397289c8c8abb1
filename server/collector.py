"""The cycle collector, run when the server is idle rather than wherever it falls.

An analysis makes a million objects and more for a 20,000-line document (with the
collector paused: compiler/support.py `gc_paused`).  Left to itself, the collector
walks them all again on its own schedule, in one piece: 0.3-0.5 s for the first
collection after an open, as long for each older generation's, in the middle of
whatever runs then (another document's analysis, a keystroke's diagnostics, a hover).
So `serve()` switches the automatic collector off and this collects when the server
is idle: IDLE_SECONDS after the last message, with no analysis waiting.  Then it does
what the automatic collector would have done by then, generation by generation with
CPython's own thresholds: the youngest when enough objects were made, an older one
after every 10 collections of the one below.  A message that arrives during a
collection waits for it, as it would have waited for the automatic one.

Except after an analysis of a long document: its objects (three million and more for a
100,000-line @main) are what the young generation then holds, and walking them is
what the first quiet second cost: 2-3 s for the youngest generation, as long again for
each older one's, 11 s for a full collection, each finding nothing (the IR is freed by
reference counting; tests/test_no_cycles.py).  A hover that came meanwhile waited for
it (the 5-10 s of a hover after an edit).  So a young generation of FREEZE_OBJECTS and
more is frozen instead (`gc.freeze`: every object tracked so far goes where no
collection walks, at no cost), and the collections after it walk only what came
later.  What a frozen cycle holds is never freed: an analysis replaced by the next
leaves none or a handful (tests/test_no_cycles.py counts them).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable

log = logging.getLogger("relaylens.server")

IDLE_SECONDS = 1.0
YOUNG_OBJECTS = 700  # CPython's threshold for the youngest generation
OLDER = 10  # collections of one generation before one of the next
FREEZE_OBJECTS = 200_000  # a young generation this large holds an analysis: frozen, not walked


class IdleCollector:
    def __init__(self, busy: Callable[[], bool]) -> None:
        self.busy = busy
        self._timer: asyncio.TimerHandle | None = None

    def install(self) -> None:
        """Switch the automatic collector off: this one collects from now on."""
        gc.disable()

    def touch(self) -> None:
        """Something happened: collect IDLE_SECONDS after the last such call."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(IDLE_SECONDS, self._idle)

    def _idle(self) -> None:
        self._timer = None
        if self.busy():
            self.touch()
            return
        young, collections0, collections1 = gc.get_count()
        if young >= FREEZE_OBJECTS:
            gc.freeze()
            return
        generation = 2 if collections1 >= OLDER else 1 if collections0 >= OLDER else 0
        if generation == 0 and young < YOUNG_OBJECTS:
            return
        gc.collect(generation)
        if gc.get_count()[0] >= YOUNG_OBJECTS or generation < 2 and gc.get_count()[1] >= OLDER:
            self.touch()  # more to do, on the next quiet second
