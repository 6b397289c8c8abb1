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
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
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
