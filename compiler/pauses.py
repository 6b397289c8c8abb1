"""Pause points: where a long analysis may stop for a while and let other work run.

The language server analyses a document in pieces (server/pieces.py): the analysis runs
on a thread of its own that runs only while the event loop waits for it, and hands
control back at the next pause point once its piece's time is up, so that a message
about another document is served in between.  The stages whose time grows with the text
call `pause_point()`: the LALR driver every few hundred tokens, the lowering at each
statement of a block, type inference every few hundred nodes.  Outside such a thread
(the command line, a request answered on the loop) the call does nothing but look up
one thread-local attribute.

A pause point may also stop the work for good: the hook raises `Stopped` (a
BaseException, so that the `except Exception` guards of the parser, which turn a bug
into a diagnostic, let it through) when the analysis is no longer wanted, say the
document changed again.  Work that is stopped must leave nothing shared half done: a
whole check builds new objects only, so it may stop anywhere.  Code that updates shared
objects in place (the incremental re-check, which spends the previous analysis) runs
`steady()`: its pause points still pause, but never stop.

A sort of a long table is one C call that no pause point interrupts: `sorted_in_pieces`
sorts it a run at a time and merges the runs a piece at a time.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

Hook = Callable[[bool], None]  # hook(may_stop): pause if the piece's time is up; raise Stopped if asked to


class Stopped(BaseException):
    """Raised at a pause point: the work is no longer wanted."""


class _State(threading.local):
    hook: Hook | None = None
    steady: int = 0


_state = _State()


def pause_point() -> None:
    """Let the thread's hook pause (or stop) the work here; nothing without a hook."""
    hook = _state.hook
    if hook is not None:
        hook(_state.steady == 0)


def may_stop() -> bool:
    """Whether a pause point here may stop the work (not inside `steady()`)."""
    return _state.steady == 0


@contextmanager
def pausing(hook: Hook) -> Iterator[None]:
    """Call `hook` at this thread's pause points inside the block."""
    saved, _state.hook = _state.hook, hook
    try:
        yield
    finally:
        _state.hook = saved


@contextmanager
def steady() -> Iterator[None]:
    """Inside the block, pause points may pause but never stop the work."""
    _state.steady += 1
    try:
        yield
    finally:
        _state.steady -= 1


RUN = 512  # items sorted (or merged, or copied) between two pause points


def sorted_in_pieces(items: Sequence, key: Callable) -> list:
    """`sorted(items, key=key)` (stable), with pause points between pieces of at most
    2 * RUN items: runs of RUN sorted one at a time, then merged two by two, a piece at a
    time (`_merged`).  One `sorted` of 60,000 symbol positions holds its thread for
    30-100 ms, and so does one merge of two runs of 30,000."""
    keys: list = []
    runs: list[list[int]] = []
    for i in range(0, len(items), RUN):
        pause_point()
        keys += map(key, items[i:i + RUN])
        runs.append(sorted(range(i, min(i + RUN, len(items))), key=keys.__getitem__))
    while len(runs) > 1:
        runs = [_merged(runs[i], runs[i + 1], keys.__getitem__) if i + 1 < len(runs) else runs[i]
                for i in range(0, len(runs), 2)]
    out: list = []
    for i in range(0, len(items), RUN):
        pause_point()
        out += map(items.__getitem__, runs[0][i:i + RUN])
    return out


def _merged(a: list, b: list, key: Callable) -> list:
    """Sorted lists `a` and `b` merged, `a`'s item first of two with equal keys, a piece
    of at most 2 * RUN items at a time: every item whose key is below the RUN-th next
    key of `a` or of `b`, whichever is smaller (or, when that is the smallest key left,
    every item with that key)."""
    out: list = []
    i = j = 0
    while i < len(a) and j < len(b):
        pause_point()
        split = min(key(a[min(i + RUN, len(a) - 1)]), key(b[min(j + RUN, len(b) - 1)]))
        i2, j2 = bisect_left(a, split, i, key=key), bisect_left(b, split, j, key=key)
        if i2 == i and j2 == j:  # `split` is the smallest key left
            i2, j2 = bisect_right(a, split, i, key=key), bisect_right(b, split, j, key=key)
            out += a[i:i2]
            out += b[j:j2]
        else:
            out += sorted(a[i:i2] + b[j:j2], key=key)  # stable: `a`'s first
        i, j = i2, j2
    out += a[i:]
    out += b[j:]
    return out
