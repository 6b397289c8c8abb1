"""An edit that breaks (or mends) a statement of a long body has the whole module typed
again after the statement is read (compiler/check.py `recheck`); that typing may be
stopped when the next edit comes (server/analysis.py `on_read`,
server/features/diagnostics.py): the analysis read so far stays the latest (`typed`
False), readers finish the typing before they read it, and the next analysis types the
module again whole.  Its diagnostics and types are then those of a whole check, and the
stopped version publishes nothing more.  Pieces are cut by the clock: the tests give
the work no time at all (each pause point ends the piece), never look at durations."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from relaylens.compiler.check import check_text, recheck, retype
from relaylens.compiler.pauses import Stopped
from relaylens.server.features.diagnostics import DiagnosticStore
from store_server import StoreServer, messages

URI = "file:///chain.relay"
N = 3_000  # statements: their typing passes several pause points


def chain(n: int = N) -> str:
    lines = ['#[version = "0.0.5"]',
             "def @main(%x: Tensor[(16), float32], %y: Tensor[(3), float32]) {", "  %0 = add(%x, %x);"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1});" for k in range(1, n)]
    lines += [f"  %{n} = add(%{n - 1}, %y);", f"  %{n}", "}"]
    return "\n".join(lines) + "\n"


MID = N // 2
TEXT = chain()
BROKEN = TEXT.replace(f"  %{MID} = add(%{MID - 1}, %{MID - 1});", f"  %{MID} = add(%{MID - 1}, %{MID - 1} ;")
INSIDE = BROKEN.replace(f"  %{MID} = add(%{MID - 1}, %{MID - 1} ;", f"  %{MID} = add(%{MID - 1}, %{MID - 2} ;")
MENDED = INSIDE.replace(f"  %{MID} = add(%{MID - 1}, %{MID - 2} ;", f"  %{MID} = add(%{MID - 1}, %{MID - 2});")


def main_type(module):
    return next(f for gv, f in module.functions.items() if gv.name == "main").ty


def _break_and_start_typing(store: DiagnosticStore, server: StoreServer):
    """Analyse TEXT, then edit it to BROKEN: run the analysis until the broken statement
    is read and one piece of the module's typing again has run; its pieces."""
    store.analyse_now(URI)
    server.doc = SimpleNamespace(version=2, text=BROKEN)
    pieces = store.analyse(URI)
    while server.analyses.stored(URI).version != 2:  # until the statement is read
        assert not pieces.run(0)
    assert not pieces.run(0)  # typing, a piece at a time
    return pieces


def test_a_stopped_retype_leaves_the_edit_read_and_the_next_edit_types_the_module_whole() -> None:
    server = StoreServer(TEXT)
    store = DiagnosticStore(server)  # type: ignore[arg-type]
    store.EARLY_CHARS = 1 << 40  # no early publication: the one the test waits for is the last
    stopped = []

    async def run() -> None:
        pieces = _break_and_start_typing(store, server)
        read = server.analyses.stored(URI)
        assert not read.typed and read.source.text == BROKEN
        server.doc = SimpleNamespace(version=3, text=INSIDE)
        store.analyse_now(URI)  # the typing of version 2 is stopped
        stopped.append(pieces.error)

    asyncio.run(run())
    assert isinstance(stopped[0], Stopped)
    latest = server.analyses.stored(URI)
    assert latest.version == 3 and latest.typed
    whole = check_text(INSIDE, URI)
    assert messages(latest.diagnostics) == messages(whole.diagnostics) != []
    assert main_type(latest.result.module) == main_type(whole.module)
    assert [v for v, _ in server.published] == [1, 3]  # version 2 published nothing
    assert server.published[-1][1] == messages(whole.diagnostics)


def test_a_reader_finishes_the_typing_of_the_analysis_it_reads() -> None:
    server = StoreServer(TEXT)
    store = DiagnosticStore(server)  # type: ignore[arg-type]
    found = []

    async def run() -> None:
        store.analyse_now(URI)
        server.doc = SimpleNamespace(version=2, text=BROKEN)
        pieces = store.analyse(URI)
        while server.analyses.stored(URI).version != 2:
            assert not pieces.run(0)
        found.append(server.analyses.latest(URI))  # settles: the typing is finished first
        found.append(pieces.done)

    asyncio.run(run())
    latest, done = found
    assert done and latest.typed and latest.version == 2
    assert messages(latest.diagnostics) == messages(check_text(BROKEN, URI).diagnostics)


def test_recheck_from_an_untyped_result_types_the_module_whole() -> None:
    untyped = []
    first = recheck(check_text(TEXT, URI, incremental=True), BROKEN,
                    on_committed=lambda result, change: untyped.append(result))
    assert first is not None and len(untyped) == 1 and not untyped[0].typed
    stale = untyped[0]  # as a stopped typing leaves it
    second = recheck(stale, INSIDE)
    assert second is not None and second[0].typed and second[1].retyped
    assert messages(second[0].diagnostics) == messages(check_text(INSIDE, URI).diagnostics)
    mended = recheck(second[0], MENDED)
    assert mended is not None
    assert messages(mended[0].diagnostics) == messages(check_text(MENDED, URI).diagnostics)
    again = retype(mended[0])
    assert messages(again.diagnostics) == messages(mended[0].diagnostics)


def test_a_hover_reads_the_analysis_being_typed_without_finishing_its_typing() -> None:
    """Hover (and definition) take the analysis read so far as it stands: the first hover
    after a statement broke waited for the whole module's typing (1-2 s of a 100,000-line
    @main).  Counted in pieces: the typing runs no further while the hover answers, and
    the hover still says what is under the cursor; another reader still finishes it."""
    from lsprotocol import types as lsp

    from relaylens.server.features import hover

    server = StoreServer(TEXT)
    handlers = {}
    server.feature = lambda method: (lambda f: handlers.setdefault(method, f))
    server.documents.get = lambda uri: SimpleNamespace(opened=True, version=server.doc.version, text=server.doc.text)
    server.builds = SimpleNamespace(current=lambda uri: None, building=lambda uri: False, find=lambda uri, v: None)
    hover.register(server)  # type: ignore[arg-type]
    store = DiagnosticStore(server)  # type: ignore[arg-type]
    line = TEXT.split("\n").index(f"  %{MID + 5} = add(%{MID + 4}, %{MID + 4});")
    found = []

    async def run() -> None:
        pieces = _break_and_start_typing(store, server)
        steps: list[bool] = []
        for character in (3, 11):  # on `%N` (a symbol), on `add` (an expression: the op's name)
            answer = handlers[lsp.TEXT_DOCUMENT_HOVER](lsp.HoverParams(
                lsp.TextDocumentIdentifier(URI), lsp.Position(line, character)))
            found.append(answer)
            steps.append(pieces.done)
        found.append((steps, server.analyses.stored(URI).typed))
        server.analyses.latest(URI)  # any other reader finishes it
        found.append(pieces.done)

    asyncio.run(run())
    on_name, on_call, (done_while_hovering, typed), finished = found
    assert done_while_hovering == [False, False] and not typed  # the hovers left the typing where it was
    assert on_name is not None and f"%{MID + 5}" in on_name.contents.value
    assert on_call is not None and "`add`" in on_call.contents.value
    assert finished
