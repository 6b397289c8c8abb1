"""textDocument/didOpen, didChange, didSave, didClose → textDocument/publishDiagnostics,
and the slow path's builds (`server.builds`, server/slow/builds.py) started from them.

Diagnostics are stored by (stage, uri) and published together by `sync()`, tagged with the
version they were computed on.  Every analysis runs in pieces (server/pieces.py): on a
thread of its own that runs only on the event loop's turn, a few milliseconds at a time,
the most recently started analysis first (an analysis of a version its document no
longer has gets no more slices while the change waits for its run, which stops it),
except that an analysis which has not yet
published its first diagnostics goes before those that have (so every document's
syntax diagnostics come before any document's types: two long documents opened one
after the other get their syntax diagnostics one after the other, then their types);
between pieces the loop reads and answers what arrived.  So a document opened or
changed while a long one is being analysed is served at once, its syntax diagnostics
first, and the long one goes on after it.  An
analysis of a version the document no longer has is stopped at its next pause point
(compiler/pauses.py), or finished first while it is updating the previous analysis in
place (the incremental re-check reading the edited statement: a few ms); the typing
after that (the module typed again, 0.3 s at 20,000 lines, when a statement breaks or
mends) is stopped like the rest, and the next analysis types the module again; a
request that cannot do without an analysis in progress finishes it (`_settle`).  didOpen starts its analysis at once (and the build once it is done).  didChange is debounced per
URI, and a newer edit cancels the pending run: a change to a document that was quiet
(no change and no analysis of it in the last 150 ms) is analysed after 10 ms, enough to
take edits sent together as one; a change while the document is busy (being typed in,
or analysed to its end at once on the loop a moment ago, 30 ms: edits that queued up
meanwhile; an analysis in pieces lets every message in as it comes) waits for 150 ms
without changes.  So one edit shows its diagnostics after one analysis, and a burst of typing costs one
analysis, not one per keystroke.  didClose clears the document's diagnostics.  A
result is published only if its version is still the document's version at that moment
(so never an older version after a newer one); then the analysis builds the lookup
tables of hover and definition (`Analysis.prepare`).  The fast
stage is published only for the version it was computed on; the slow path's stage
(`build`) stays, whatever its version, until the next build replaces it, so neither
path clears the other.  Documents of our `relaylens:` scheme (virtual documents a client
may open) are not analysed.  A document of 800 lines and more (`EARLY_CHARS`) gets its diagnostics twice
for one version: syntax and names as soon as it is parsed (after an edit, with the
previous version's type diagnostics outside the edited statement, which typing may
change), then all of them once typed: typing 20,000 lines takes 0.3 s.  A document read
whole (opened, or an edit the incremental path does not take) gets them three times:
the syntax diagnostics alone as soon as the grammar has read it, before names are
resolved (0.3 s of 20,000 lines).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Callable

from lsprotocol import types as lsp

from ...compiler.pauses import Stopped
from .. import convert
from ..pieces import Pieces, Scheduler, on_loop
from ..slow.builds import STAGE as BUILD
from ..slow.uris import is_virtual
from . import guarded, log

if TYPE_CHECKING:
    from ..server import RelayLensServer

DEBOUNCE_SECONDS = 0.15  # a busy document's changes wait for a pause this long
QUEUED_SECONDS = 0.03  # a change read this soon after an analysis run at once (`_finish`) was sent during it
COALESCE_SECONDS = 0.01  # a quiet document's change waits this long for the edits sent with it
FAST = "fast"  # parse + names + types
STICKY = frozenset({BUILD})  # stages published whatever their version (the slow path's)


class DiagnosticStore:
    EARLY_CHARS = 16_000  # a document this long (800 lines) gets its syntax diagnostics before its types

    def __init__(self, server: "RelayLensServer") -> None:
        self.server = server
        self._by_stage: dict[tuple[str, str], tuple[int | None, list[lsp.Diagnostic]]] = {}
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._active: dict[str, float] = {}  # uri -> time of its last change
        self._analysed: dict[str, float] = {}  # uri -> when its last analysis run at once (`_finish`) ended
        self._finishing = 0  # inside `_finish`: the loop reads no message meanwhile
        self._running: dict[str, tuple[Pieces, int | None]] = {}  # uri -> its analysis in progress, version
        self._published: dict[str, tuple[int | None, list[lsp.Diagnostic]]] = {}  # uri -> what the client has
        self.scheduler = Scheduler()
        server.analyses.settle = self._settle

    def set(self, stage: str, uri: str, version: int | None, items: list[lsp.Diagnostic]) -> None:
        self._by_stage[(stage, uri)] = (version, items)

    def get(self, stage: str, uri: str) -> list[lsp.Diagnostic]:
        return self._by_stage.get((stage, uri), (None, []))[1]

    def clear(self, uri: str) -> None:
        for key in [k for k in self._by_stage if k[1] == uri]:
            del self._by_stage[key]

    def sync(self, uri: str, version: int | None) -> None:
        """Publish `uri`'s diagnostics: the fast stage's of this version (maybe none) and
        the sticky stages' whatever their version; not again when the client already has
        exactly these for this version (a long document's early and final ones after an
        edit that kept the types): VS Code takes every publication as changed markers and
        asks for code actions again, which drops a quick-fix menu the user is opening."""
        items = [d for (stage, u), (v, ds) in self._by_stage.items()
                 if u == uri and (v == version or stage in STICKY) for d in ds]
        if self._published.get(uri) == (version, items):
            return
        self._published[uri] = (version, items)
        self.server.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=items, version=version))

    def analyse(self, uri: str, then: Callable[[], None] | None = None) -> Pieces | None:
        """Start analysing the opened document (a closed one: nothing) in pieces, ahead of
        the other analyses waiting; its diagnostics are published as they are known, and
        `then` is called (on the loop) once they all are.  An analysis of an older version
        of the document still going is stopped first (finished, when it is updating the
        previous analysis in place: pieces.py)."""
        doc = self.server.documents.opened(uri)
        if doc is None:
            return None
        running = self._running.get(uri)
        if running is not None:
            if running[1] == doc.version:
                self.scheduler.raise_(running[0])
                return running[0]
            running[0].stop()
            self._finish(running[0])
        version, text = doc.version, doc.text
        pieces = Pieces(lambda: self._analyse(uri, version, text), f"analysis of {uri}")
        self._running[uri] = (pieces, version)
        self.scheduler.start(pieces, lambda done: self._done(uri, done, then))
        return pieces

    def analyse_now(self, uri: str) -> None:
        """Analyse the opened document and publish, before returning."""
        pieces = self.analyse(uri)
        if pieces is not None:
            self._finish(pieces)

    def _finish(self, pieces: Pieces) -> None:
        """Run `pieces` to its end now, on the loop: messages that arrive meanwhile wait,
        so a change read just after it ends may have queued up behind it (`schedule`)."""
        self._finishing += 1
        try:
            self.scheduler.finish(pieces)
        finally:
            self._finishing -= 1

    def _settle(self, uri: str, exact: bool, typing: bool = False) -> None:
        """Finish the analysis of `uri` in progress when a reader cannot do without it:
        it is typing the analysis stored, which is not `typed` yet (unless the reader
        takes it while `typing`), there is no analysis yet, or the reader needs the
        document's current version (`exact`).  One updating the previous analysis in
        place (reading the edited statement: `steady`) is run to the end of that first;
        then, once this version's analysis is the one stored, for a reader `typing`, no further (the rest, the module typed again, took
        1-2 s of a 100,000-line @main, which a hover waited for)."""
        running = self._running.get(uri)
        if running is None:
            return
        pieces, version = running
        steady = pieces.steady
        if steady and not exact:
            self._finishing += 1
            try:
                self.scheduler.steady_out(pieces)
            finally:
                self._finishing -= 1
        stored = self.server.analyses.stored(uri)
        spent = steady and (stored is None or stored.version != version)  # not yet this version's
        if not pieces.done and (stored is None or spent or not (stored.typed or typing) or exact):
            self._finish(pieces)

    def _analyse(self, uri: str, version: int | None, text: str) -> None:
        """The work of one analysis (on its own thread, a piece at a time: pieces.py)."""
        early = syntax = None
        if len(text) >= self.EARLY_CHARS:
            def syntax(source, diagnostics) -> None:  # syntax first, then names, types after
                items = [convert.diagnostic(d, source, uri) for d in diagnostics]
                on_loop(lambda: self._publish(uri, version, items))

            def early(parsed, type_diagnostics) -> None:
                syntax(parsed.source, (*parsed.diagnostics, *type_diagnostics))
        analysis = self.server.analyses.update(uri, version, text, early, syntax)
        items = [convert.diagnostic(d, analysis.source, uri) for d in analysis.diagnostics]
        on_loop(lambda: self._publish(uri, version, items, final=True))
        if self.server.analyses.stored(uri) is analysis:
            analysis.prepare()  # the tables of hover and definition (the expressions' in pieces too)

    def _publish(self, uri: str, version: int | None, items: list[lsp.Diagnostic], final: bool = False) -> None:
        """Publish the fast stage of `version` if it is still the document's version."""
        current = self.server.documents.opened(uri)
        if current is None or current.version != version:  # a newer edit arrived; its own run publishes
            return
        self.set(FAST, uri, version, items)
        self.sync(uri, version)
        running = self._running.get(uri)
        if running is not None and running[1] == version:
            running[0].urgent = False  # published: the other documents' syntax first (pieces.py)
        if final and self._finishing:  # (in pieces, the loop read every message in between)
            self._analysed[uri] = time.monotonic()

    def _done(self, uri: str, pieces: Pieces, then: Callable[[], None] | None) -> None:
        if self._running.get(uri, (None,))[0] is pieces:
            del self._running[uri]
        if isinstance(pieces.error, Stopped):
            return
        if pieces.error is not None:
            log.error("analysis of %s failed", uri, exc_info=pieces.error)
            return
        if then is not None:
            then()

    def schedule(self, uri: str) -> None:
        """Analyse `uri` soon if it was quiet, after a pause in its changes if busy."""
        now = time.monotonic()
        pending = self._pending.pop(uri, None)
        busy = (pending is not None or now - self._active.get(uri, float("-inf")) < DEBOUNCE_SECONDS
                or now - self._analysed.get(uri, float("-inf")) < QUEUED_SECONDS)
        self._active[uri] = now
        if pending is not None:
            pending.cancel()
        running = self._running.get(uri)
        if running is not None:  # of an older version: the run below stops it; no slices till then
            running[0].held = True
        delay = DEBOUNCE_SECONDS if busy else COALESCE_SECONDS
        self._pending[uri] = self._later(uri, delay)

    def cancel(self, uri: str) -> None:
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()

    def forget(self, uri: str) -> None:
        """A closed document: nothing pending, nothing running, nothing stored."""
        self.cancel(uri)
        running = self._running.pop(uri, None)
        if running is not None:
            running[0].stop()
            self._finish(running[0])
        self.clear(uri)
        self._published.pop(uri, None)
        self._active.pop(uri, None)
        self._analysed.pop(uri, None)

    def _later(self, uri: str, delay: float) -> asyncio.TimerHandle:
        """Analyse `uri` in `delay` seconds: a timer whose callback starts the analysis
        (a task sleeping `delay` would start it one turn of the loop later: a slice of
        another document's analysis more)."""
        return asyncio.get_running_loop().call_later(delay, self._due, uri)

    def _due(self, uri: str) -> None:
        self._pending.pop(uri, None)
        try:
            self.analyse(uri)
        except Exception:  # noqa: BLE001
            log.exception("analysis of %s failed", uri)


def register(server: "RelayLensServer") -> None:
    store = server.diagnostics

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @guarded()
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        if is_virtual(uri):
            return
        store.cancel(uri)
        store.analyse(uri, then=lambda: server.builds.opened(uri))

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    @guarded()
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if is_virtual(uri):
            return
        store.schedule(uri)
        server.builds.changed(uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    @guarded()
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        if not is_virtual(params.text_document.uri):
            server.builds.saved(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    @guarded()
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if is_virtual(uri):
            return
        store.forget(uri)
        server.analyses.forget(uri)
        server.builds.closed(uri)
        server.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
