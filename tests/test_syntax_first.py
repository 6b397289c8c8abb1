"""Every document's syntax diagnostics before any document's types
(server/pieces.py `Pieces.urgent`, server/features/diagnostics.py): two documents opened
one right after the other get their first publications (the syntax diagnostics) one
after the other, before either is typed; the most recent first.  The scheduler runs
on a real event loop; the test looks at the order of the publications only."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from lsprotocol import types as lsp

from relaylens.compiler.check import check_text
from relaylens.server.analysis import Analyses
from relaylens.server.features.diagnostics import DiagnosticStore
from relaylens.compiler.pauses import pause_point
from relaylens.server.pieces import Pieces, Scheduler


def chain(n: int, other: str) -> str:
    """`n` statements, the last adding a Tensor[(3)] to a Tensor[(16)]: a type error."""
    lines = ['#[version = "0.0.5"]',
             f"def @main(%x: Tensor[(16), float32], %{other}: Tensor[(3), float32]) {{", "  %0 = add(%x, %x);"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1});" for k in range(1, n)]
    lines += [f"  %{n} = add(%{n - 1}, %{other});", f"  %{n}", "}"]
    return "\n".join(lines) + "\n"


DOCS = {"file:///a.relay": chain(400, "y"), "file:///b.relay": chain(400, "z")}


class Server:
    """What DiagnosticStore reads of the language server."""

    def __init__(self) -> None:
        self.documents = SimpleNamespace(opened=lambda uri: SimpleNamespace(version=1, text=DOCS[uri]))
        self.analyses = Analyses()
        self.published: list = []

    def text_document_publish_diagnostics(self, params: lsp.PublishDiagnosticsParams) -> None:
        self.published.append((params.uri, sorted(d.message for d in params.diagnostics)))


def test_both_documents_syntax_diagnostics_come_before_either_documents_types() -> None:
    server = Server()
    store = DiagnosticStore(server)  # type: ignore[arg-type]
    store.EARLY_CHARS = 0  # syntax, names, then types, for both
    store.scheduler.slice = 0  # a piece ends at every pause point

    async def run() -> None:
        a, b = DOCS
        store.analyse(a)
        store.analyse(b)
        while store.scheduler.busy:
            await asyncio.sleep(0)

    asyncio.run(run())
    order = [uri for uri, _ in server.published]
    a, b = DOCS
    typed = {uri: sorted(d.message for d in check_text(text, uri).diagnostics) for uri, text in DOCS.items()}
    assert all(typed.values())  # each has its type error
    assert order[:2] == [b, a]  # the syntax diagnostics of both, the most recent first
    assert all(messages != typed[uri] for uri, messages in server.published[:2])
    last = {uri: max(i for i, (u, _) in enumerate(server.published) if u == uri) for uri in DOCS}
    assert last[b] < last[a]  # then their types, the most recent first
    assert server.published[last[a]][1] == typed[a] and server.published[last[b]][1] == typed[b]


def _work(ran: list[str]):
    """work(name): a piece of work that appends `name` to `ran` three times, with a pause
    point after each."""
    def work(name: str):
        def run() -> None:
            for _ in range(3):
                ran.append(name)
                pause_point()
        return run
    return work


def test_the_scheduler_runs_urgent_work_first() -> None:
    ran: list[str] = []
    work = _work(ran)

    async def run() -> None:
        scheduler = Scheduler(slice_seconds=0)
        first, second = Pieces(work("first")), Pieces(work("second"))
        second.urgent = False
        scheduler.start(first, lambda p: None)
        scheduler.start(second, lambda p: None)  # the most recent, but not urgent
        while scheduler.busy:
            await asyncio.sleep(0)

    asyncio.run(run())
    assert ran == ["first"] * 3 + ["second"] * 3


def test_held_work_gets_no_slices_until_finished() -> None:
    """An analysis of a version its document no longer has is `held` while the change
    waits for its run (server/features/diagnostics.py `schedule`): no slices, so the old
    version's typing costs nothing meanwhile; `finish` (the run that stops it) still runs it."""
    ran: list[str] = []
    work = _work(ran)

    async def run() -> None:
        scheduler = Scheduler(slice_seconds=0)
        old = Pieces(work("old"))
        old.held = True
        scheduler.start(old, lambda p: None)
        for _ in range(5):
            await asyncio.sleep(0)
        assert ran == [] and scheduler.busy
        scheduler.finish(old)
        assert ran == ["old"] * 3 and not scheduler.busy

    asyncio.run(run())


def test_a_change_holds_the_analysis_of_the_older_version() -> None:
    server = Server()
    store = DiagnosticStore(server)  # type: ignore[arg-type]
    uri = next(iter(DOCS))
    held = []

    async def run() -> None:
        pieces = store.analyse(uri)
        store.schedule(uri)  # a change arrives: its run comes after the debounce
        held.append(pieces.held)
        store.cancel(uri)
        store.forget(uri)

    asyncio.run(run())
    assert held == [True]
