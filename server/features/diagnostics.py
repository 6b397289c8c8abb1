"""textDocument/didOpen, didChange, didSave, didClose → textDocument/publishDiagnostics,
and the slow path's builds (`server.builds`, server/slow/builds.py) started from them.

Diagnostics are stored by (stage, uri) and published together by `sync()`, tagged with the
version they were computed on.  didOpen analyses at once.  didChange is debounced per
URI, and a newer edit cancels the pending run: a change to a document that was quiet
(no change and no analysis of it in the last 150 ms) is analysed after 10 ms, enough to
take edits sent together as one; a change while the document is busy (being typed in,
or analysed a moment ago, 30 ms: edits that queued up meanwhile) waits for 150 ms
without changes.  So
one edit shows its diagnostics after one analysis, and a burst of typing costs one
analysis, not one per keystroke.  didClose clears the document's diagnostics.  A
result is published only if its version is still the document's version; once it is,
the analysis builds the lookup tables of hover and definition (`Analysis.prepare`).  The fast
stage is published only for the version it was computed on; the slow path's stage
(`build`) stays, whatever its version, until the next build replaces it, so neither
path clears the other.  Documents of our `relaylens:` scheme (virtual documents a client
may open) are not analysed.  A long document (`EARLY_CHARS`) gets its diagnostics twice
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
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from ..slow.builds import STAGE as BUILD
from ..slow.uris import is_virtual
from . import guarded, log

if TYPE_CHECKING:
    from ..server import RelayLensServer

DEBOUNCE_SECONDS = 0.15  # a busy document's changes wait for a pause this long
QUEUED_SECONDS = 0.03  # a change read this soon after an analysis was sent during it
COALESCE_SECONDS = 0.01  # a quiet document's change waits this long for the edits sent with it
FAST = "fast"  # parse + names + types
STICKY = frozenset({BUILD})  # stages published whatever their version (the slow path's)


class DiagnosticStore:
    EARLY_CHARS = 200_000  # a document this long gets its syntax diagnostics before its types

    def __init__(self, server: "RelayLensServer") -> None:
        self.server = server
        self._by_stage: dict[tuple[str, str], tuple[int | None, list[lsp.Diagnostic]]] = {}
        self._pending: dict[str, asyncio.Task] = {}
        self._active: dict[str, float] = {}  # uri -> time of its last change
        self._analysed: dict[str, float] = {}  # uri -> when its last analysis ended

    def set(self, stage: str, uri: str, version: int | None, items: list[lsp.Diagnostic]) -> None:
        self._by_stage[(stage, uri)] = (version, items)

    def get(self, stage: str, uri: str) -> list[lsp.Diagnostic]:
        return self._by_stage.get((stage, uri), (None, []))[1]

    def clear(self, uri: str) -> None:
        for key in [k for k in self._by_stage if k[1] == uri]:
            del self._by_stage[key]

    def sync(self, uri: str, version: int | None) -> None:
        """Publish `uri`'s diagnostics: the fast stage's of this version (maybe none) and
        the sticky stages' whatever their version."""
        items = [d for (stage, u), (v, ds) in self._by_stage.items()
                 if u == uri and (v == version or stage in STICKY) for d in ds]
        self.server.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=items, version=version))

    def analyse_now(self, uri: str) -> None:
        """Analyse the opened document (a closed one: nothing) and publish."""
        doc = self.server.documents.opened(uri)
        if doc is None:
            return
        version = doc.version
        early = syntax = None
        if len(doc.text) >= self.EARLY_CHARS:
            def syntax(source, diagnostics) -> None:  # syntax first, then names, types after
                self.set(FAST, uri, version, [convert.diagnostic(d, source, uri) for d in diagnostics])
                self.sync(uri, version)

            def early(parsed, type_diagnostics) -> None:
                syntax(parsed.source, (*parsed.diagnostics, *type_diagnostics))
        analysis = self.server.analyses.update(uri, version, doc.text, early, syntax)
        current = self.server.documents.opened(uri)
        if current is None or current.version != version:  # a newer edit arrived; its own run will publish
            return
        items = [convert.diagnostic(d, analysis.source, uri) for d in analysis.diagnostics]
        self.set(FAST, uri, version, items)
        self.sync(uri, version)
        self._analysed[uri] = time.monotonic()
        asyncio.get_running_loop().call_soon(self._prepare, analysis)

    def _prepare(self, analysis) -> None:
        if self.server.analyses.latest(analysis.uri) is not analysis:
            return  # a newer version was analysed meanwhile: its own call prepares it
        try:
            analysis.prepare()
        except Exception:  # noqa: BLE001 -- the request that needs the table will say why
            log.exception("indexing %s failed", analysis.uri)

    def schedule(self, uri: str) -> None:
        """Analyse `uri` soon if it was quiet, after a pause in its changes if busy."""
        now = time.monotonic()
        pending = self._pending.pop(uri, None)
        busy = (pending is not None or now - self._active.get(uri, float("-inf")) < DEBOUNCE_SECONDS
                or now - self._analysed.get(uri, float("-inf")) < QUEUED_SECONDS)
        self._active[uri] = now
        if pending is not None:
            pending.cancel()
        delay = DEBOUNCE_SECONDS if busy else COALESCE_SECONDS
        self._pending[uri] = asyncio.get_running_loop().create_task(self._later(uri, delay))

    def cancel(self, uri: str) -> None:
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()

    def forget(self, uri: str) -> None:
        """A closed document: nothing pending, nothing stored."""
        self.cancel(uri)
        self.clear(uri)
        self._active.pop(uri, None)
        self._analysed.pop(uri, None)

    async def _later(self, uri: str, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            return
        self._pending.pop(uri, None)
        try:
            self.analyse_now(uri)
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
        store.analyse_now(uri)
        server.builds.opened(uri)

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
