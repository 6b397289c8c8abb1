"""What keeps the language server quick (bench/lsp_latency.py measures it): when the
fast path runs after didChange and what it leaves ready for requests
(server/features/diagnostics.py `DiagnosticStore`, on a stand-in server: the delay a
change gets is decided from the document's recent activity, so these tests look at the
decision, never at a clock); the build worker's lower CPU priority; stdin read on the
event loop, with pygls's threaded reader when stdin is a file."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from relaylens.server.analysis import Analyses
from relaylens.server.documents import Document
from relaylens.server.features import diagnostics
from relaylens.server.features.diagnostics import COALESCE_SECONDS, DEBOUNCE_SECONDS, DiagnosticStore
from relaylens.server.slow import worker

URI = "file:///d.relay"
TEXT = '#[version = "0.0.5"]\ndef @f(%x: float32) -> float32 {\n  %0 = add(%x, %x);\n  add(%0, %x)\n}\n'


class StandIn:
    """What DiagnosticStore reads of the server: one document, the analyses, the publisher."""

    def __init__(self) -> None:
        self.doc = Document(URI, 1, TEXT, opened=True)
        self.documents = SimpleNamespace(opened=lambda uri: self.doc)
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
        return asyncio.get_running_loop().call_soon(lambda: None)

    monkeypatch.setattr(DiagnosticStore, "_later", recorded)
    return DiagnosticStore(StandIn()), delays


@pytest.mark.asyncio
async def test_a_change_to_a_quiet_document_runs_at_once(store, clock) -> None:
    store, delays = store
    clock([100.0, 200.0])
    store.schedule(URI)  # never seen: quiet
    store._pending.pop(URI)  # ... and it ran
    store.schedule(URI)  # 100 s later: quiet again
    await asyncio.sleep(0)
    assert delays == [COALESCE_SECONDS, COALESCE_SECONDS]


@pytest.mark.asyncio
async def test_changes_while_busy_wait_for_a_pause(store, clock) -> None:
    store, delays = store
    clock([100.0, 100.05, 100.1])
    store.schedule(URI)  # quiet
    store.schedule(URI)  # 50 ms later, the first run still pending: typing
    store._pending.pop(URI)  # it ran
    store.schedule(URI)  # 50 ms after the last change: still typing
    await asyncio.sleep(0)
    assert delays == [COALESCE_SECONDS, DEBOUNCE_SECONDS, DEBOUNCE_SECONDS]


@pytest.mark.asyncio
async def test_a_changes_analysis_starts_in_the_turn_its_delay_ends(monkeypatch) -> None:
    """The delay is a timer whose callback starts the analysis, not a task that sleeps
    (which would start it a turn of the loop later: one more slice of the analysis of
    another document in progress)."""
    store = DiagnosticStore(StandIn())
    started: list = []
    monkeypatch.setattr(store, "analyse", lambda uri: started.append((uri, asyncio.current_task())))
    store.schedule(URI)
    assert isinstance(store._pending[URI], asyncio.TimerHandle)
    await asyncio.sleep(COALESCE_SECONDS * 3)
    assert started == [(URI, None)] and URI not in store._pending  # (None: no task but the timer's callback)


@pytest.mark.asyncio
async def test_edits_queued_behind_an_analysis_wait_for_a_pause(store, clock) -> None:
    store, delays = store
    clock([100.0, 100.001])
    store.analyse_now(URI)  # a long analysis ends at 100.0; edits sent meanwhile queued up
    store.schedule(URI)  # the first of them, read 1 ms later
    await asyncio.sleep(0)
    assert delays == [DEBOUNCE_SECONDS]


@pytest.mark.asyncio
async def test_a_change_just_after_an_analysis_in_pieces_runs_at_once(store, clock) -> None:
    """An analysis in pieces lets the loop read messages between its pieces: a change
    read just after it ended was made after it, not queued behind it (only an analysis
    run at once, for a request, holds messages back)."""
    store, delays = store
    clock([100.0, 100.001])
    store.analyse(URI)
    while store.scheduler.busy:
        await asyncio.sleep(0.001)
    assert store.server.published  # it ran to its end (at 100.0, were the clock read)
    store.schedule(URI)  # read 1 ms later
    await asyncio.sleep(0)
    assert delays == [COALESCE_SECONDS]


@pytest.mark.asyncio
async def test_a_change_a_while_after_a_long_analysis_runs_at_once(store, clock) -> None:
    """A long analysis ended 0.1 s ago (its syntax diagnostics were published long
    before): the change was made after it, not queued behind it."""
    store, delays = store
    clock([99.0, 100.0, 100.1])
    store.schedule(URI)  # the change analysed ...
    store._pending.pop(URI)
    store.analyse_now(URI)  # ... until 100.0
    store.schedule(URI)
    await asyncio.sleep(0)
    assert delays == [COALESCE_SECONDS, COALESCE_SECONDS]


@pytest.mark.asyncio
async def test_the_published_analysis_is_indexed_before_any_request(store) -> None:
    store, _ = store
    indexed_when_published = []
    publish = store.server.text_document_publish_diagnostics

    def published(params) -> None:
        indexed_when_published.append(store.server.analyses.stored(URI).index._sorted is not None)
        publish(params)

    store.server.text_document_publish_diagnostics = published
    store.analyse_now(URI)
    analysis = store.server.analyses.latest(URI)
    assert store.server.published[-1].version == 1
    assert indexed_when_published == [False]  # published first ...
    assert analysis.index._sorted is not None  # ... then indexed, by the same analysis
    assert analysis._exprs


@pytest.mark.asyncio
async def test_closing_forgets_the_activity(store, clock) -> None:
    store, delays = store
    clock([100.0, 100.001])
    store.analyse_now(URI)
    store.forget(URI)
    store.schedule(URI)  # reopened and changed at once: nothing remembered
    await asyncio.sleep(0)
    assert delays == [COALESCE_SECONDS]


# --- the worker's priority and the stdio transport (subprocesses) ---------------------------


def test_the_build_worker_lowers_its_priority() -> None:
    code = ("import os; from relaylens.server.slow import worker; "
            "before = os.nice(0); worker._lower_priority(); print(os.nice(0) - before)")
    if os.nice(0) >= 19:  # 19: the lowest priority there is
        pytest.skip("this process already runs at the lowest priority")
    expected = min(worker.NICENESS, 19 - os.nice(0))
    assert expected > 0
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert int(out.stdout) == expected


def _session() -> bytes:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": None, "capabilities": {},
                    "initializationOptions": {"build": {"enabled": False}}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit", "params": None},
    ]
    bodies = [json.dumps(m).encode() for m in messages]
    return b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)


def _answers(stdout: bytes) -> list[dict]:
    parts = stdout.split(b"\r\n\r\n")[1:]
    return [json.loads(p[: p.rfind(b"}") + 1]) for p in parts]


@pytest.mark.parametrize("stdin_is", ["pipe", "file"])
def test_a_session_over_stdio(stdin_is: str, tmp_path: Path) -> None:
    """A pipe is read on the event loop; a regular file (which the loop cannot watch)
    is read in a thread.  Either way: answers, then exit status 0."""
    command = [sys.executable, "-m", "relaylens.server"]
    if stdin_is == "pipe":
        done = subprocess.run(command, input=_session(), capture_output=True, timeout=60)
    else:
        path = tmp_path / "session.bin"
        path.write_bytes(_session())
        with path.open("rb") as stdin:
            done = subprocess.run(command, stdin=stdin, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    answers = _answers(done.stdout)
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[0]["result"]["capabilities"]["textDocumentSync"]["change"] == 2


def test_a_client_that_hangs_up_mid_message_ends_the_server() -> None:
    done = subprocess.run([sys.executable, "-m", "relaylens.server"], input=_session()[:200],
                          capture_output=True, timeout=60)
    assert done.returncode == 0
    assert b"Traceback" not in done.stderr
