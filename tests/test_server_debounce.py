"""When the fast path runs after didChange, and what it leaves ready for requests
(server/features/diagnostics.py `DiagnosticStore`), on a stand-in server: which delay a
change gets is decided from the document's recent activity, so these tests look at the
decision, never at a clock."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from relaylens.server.analysis import Analyses
from relaylens.server.features import diagnostics
from relaylens.server.features.diagnostics import COALESCE_SECONDS, DEBOUNCE_SECONDS, DiagnosticStore

pytestmark = pytest.mark.asyncio
URI = "file:///d.relay"
TEXT = '#[version = "0.0.5"]\ndef @f(%x: float32) -> float32 {\n  %0 = add(%x, %x);\n  add(%0, %x)\n}\n'


class StandIn:
    """What DiagnosticStore reads of the server: one document, the analyses, the publisher."""

    def __init__(self) -> None:
        self.doc = SimpleNamespace(version=1, source=TEXT)
        self.workspace = SimpleNamespace(get_text_document=lambda uri: self.doc)
        self.analyses = Analyses()
        self.published: list = []

    def text_document_publish_diagnostics(self, params) -> None:
        self.published.append(params)


@pytest.fixture
def clock(monkeypatch):
    """`clock([t0, t1, ...])`: the times the store reads, in order (the event loop keeps
    the real clock)."""
    def set_times(times: list[float]) -> None:
        ticks = iter(times)
        monkeypatch.setattr(diagnostics, "time", SimpleNamespace(monotonic=lambda: next(ticks)))
    return set_times


@pytest.fixture
def store(monkeypatch) -> tuple[DiagnosticStore, list[float]]:
    """A store whose delayed runs record their delay instead of waiting."""
    delays: list[float] = []

    def recorded(self, uri: str, delay: float):
        delays.append(delay)  # when the run is scheduled, whether or not it is cancelled later
        return asyncio.sleep(0)

    monkeypatch.setattr(DiagnosticStore, "_later", recorded)
    return DiagnosticStore(StandIn()), delays


async def test_a_change_to_a_quiet_document_runs_at_once(store, clock) -> None:
    store, delays = store
    clock([100.0, 200.0])
    store.schedule(URI)  # never seen: quiet
    store._pending.pop(URI)  # ... and it ran
    store.schedule(URI)  # 100 s later: quiet again
    await asyncio.sleep(0)
    assert delays == [COALESCE_SECONDS, COALESCE_SECONDS]


async def test_changes_while_busy_wait_for_a_pause(store, clock) -> None:
    store, delays = store
    clock([100.0, 100.05, 100.1])
    store.schedule(URI)  # quiet
    store.schedule(URI)  # 50 ms later, the first run still pending: typing
    store._pending.pop(URI)  # it ran
    store.schedule(URI)  # 50 ms after the last change: still typing
    await asyncio.sleep(0)
    assert delays == [COALESCE_SECONDS, DEBOUNCE_SECONDS, DEBOUNCE_SECONDS]


async def test_edits_queued_behind_an_analysis_wait_for_a_pause(store, clock) -> None:
    store, delays = store
    clock([100.0, 100.001])
    store.analyse_now(URI)  # a long analysis ends at 100.0; edits sent meanwhile queued up
    store.schedule(URI)  # the first of them, read 1 ms later
    await asyncio.sleep(0)
    assert delays == [DEBOUNCE_SECONDS]


async def test_the_published_analysis_is_indexed_before_any_request(store) -> None:
    store, _ = store
    store.analyse_now(URI)
    analysis = store.server.analyses.latest(URI)
    assert store.server.published[-1].version == 1
    assert analysis.index._sorted is None  # published first ...
    await asyncio.sleep(0)
    assert analysis.index._sorted is not None  # ... then indexed, on the next turn of the loop
    assert analysis._exprs


async def test_closing_forgets_the_activity(store, clock) -> None:
    store, delays = store
    clock([100.0, 100.001])
    store.analyse_now(URI)
    store.forget(URI)
    store.schedule(URI)  # reopened and changed at once: nothing remembered
    await asyncio.sleep(0)
    assert delays == [COALESCE_SECONDS]
