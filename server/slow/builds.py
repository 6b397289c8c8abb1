"""The slow path as the server runs it: which version of which document to build and
when, the reports that came back, and what the client is told (docs/lsp.md).

    builds.opened(uri) / saved(uri)   build the current version now (after the fast path)
    builds.changed(uri)               ... once edits have settled (500 ms idle)
    builds.closed(uri)                cancel, forget
    builds.current(uri)               the `Built` of the document's current version, or None
    builds.find(uri, version)         a kept report (the last two versions), None = latest
    await builds.wait(uri, version)   the same, waiting for a build under way
    await builds.graph(uri, version, after)   (Built, GraphDocument): the graph of a snapshot
    await builds.schedule(built, name)         the schedule text of a fused function (Packed)

A model that names a BYOC pattern table (byoc_setup.py: its `// relaylens:` line, or the
settings) is built partitioned, and built again when the table or the settings change,
even at the same version; a pattern table itself is not built.
A build binds the weights in `<stem>.npz` beside a `file:` model when that file is inside
the workspace (documents.py's rule) and `{"params": {"bind": false}}` did not turn it off,
as `relaylens build` does; the worker reads them.  A version whose fast analysis has errors is not built.  A newer version supersedes the
older build (the worker stops it).  A report is published (diagnostics, lens refresh)
only while its version is the document's; older ones are kept for virtual documents
that name their version.  A dead worker is reported on the document it was building
and started again; the build that killed it is not retried.  So is a build that made no
progress for 5 minutes (a pass in an endless loop): the worker is killed.

A graph is computed by the worker from the snapshots of its last build of the document
(the server holds printed texts, not IR): the request waits for the build, then asks.  A
worker that did not make that report (it exited, or built another version since) is sent
the report's text too, and runs the passes again to answer.  So is a fused function's
schedule text, which no build makes (a report has its number of steps only).

The worker exits after `idle_exit` seconds with nothing to do (initializationOptions or the
setting `worker.idleExitSeconds`, IDLE_EXIT_SECONDS by default, 0 = never): what the editor
shows of a build (lenses, hovers, colours, IR views) is in the reports kept here, and the
next build, graph, profile or check starts a worker again (its progress says so).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import signal
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from ...compiler.ir.span import Source
from ...compiler.support import release_memory
from ..generated_sources import forget_generated_sources
from ...compiler.lower.codegen.views import View, asm_view, ir_view
from ...compiler.printer.renumber import Aligned, align_temporaries
from .. import convert
from ..features import Refused
from .editor_jobs import EditorJobs
from ...compiler.transform.patterns.table_check import is_pattern_table
from .byoc_setup import ByocRequest, byoc_request, dependents
from .process import WorkerProcess
from .profiles import Profiles
from .report import BuildReport, Packed, ReportDiagnostic, Text, share_texts, unpack
from .uris import VirtualUri

if TYPE_CHECKING:
    from ..server import RelayLensServer

STAGE = "build"  # the DiagnosticStore stage of the slow path
SOURCE = "relaylens-build"
FINISHED = "relaylens/buildFinished"
KEEP = 2  # reports kept per document
KEPT_VIEWS = 4  # of each kind of text made from a report (views, sources, line maps), the most recent
WAIT_SECONDS = 120.0
PROGRESS_CREATE_SECONDS = 5.0
STALL_SECONDS = 300.0  # a running build silent this long is killed (reported as a crash)
IDLE_EXIT_SECONDS = 60.0  # an idle worker exits after this long (0: never)
log = logging.getLogger("relaylens.server")


class NotBuilt(LookupError):
    """There is no report to answer with; the message says why."""


@dataclass
class Job:
    id: int
    uri: str
    version: int | None
    text: str
    state: str = "queued"  # queued | running
    void: bool = False  # superseded or closed: its result is not wanted
    token: str | None = None
    progress: asyncio.Task | None = None  # creating the client's progress bar
    begun: float = field(default_factory=time.monotonic)


class Recent(OrderedDict):
    """A dict that keeps its `size` most recently used entries (`found`, `keep`)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def found(self, key):
        if key in self:
            self.move_to_end(key)
            return self[key]
        return None

    def keep(self, key, value):
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)
        return value


class Built:
    """A finished report, with what requests derive from its texts, derived once.  The
    report's large texts are kept compressed (report.py, `Packed`); what is made from them
    (a view, a `Source` over a virtual document) is kept for the few most recently used
    (KEPT_VIEWS), so an IR view shown once does not stay in memory uncompressed."""

    def __init__(self, report: BuildReport) -> None:
        self.report = report
        self.source = Source(report.uri, report.text)
        self._sources: Recent = Recent(KEPT_VIEWS)
        self._lines: Recent = Recent(KEPT_VIEWS)
        self._aligned: Recent = Recent(KEPT_VIEWS)
        self._views: Recent = Recent(KEPT_VIEWS)
        self._made: dict[tuple[str, str | None, bool], Packed] = {}  # the worker's texts (`keep_made`)
        self._derived: dict = {}  # small values features derive from the report (`derived`)

    def view(self, vuri: VirtualUri, base: Text | None = None) -> View:
        """An LLVM IR text of the report (`base`) as the URI asks: as it is, without its
        debug information, or as assembly (the worker's, `keep_made`); made here when
        it is asked for with its base text and not kept; NotBuilt when asked for without it,
        or for assembly the worker has not made."""
        found = self._views.found(vuri.name)
        if found is not None:
            return found
        if base is None:
            raise NotBuilt(f"{vuri.name} has not been made yet")
        if vuri.assembly:
            made = self._made.get(_made_key(vuri))
            if made is None:
                raise NotBuilt(f"{vuri.name} has not been made yet (the build worker makes it when it is opened)")
            return self._views.keep(vuri.name, asm_view(unpack(made), nodebug=vuri.nodebug))
        return self._views.keep(vuri.name, ir_view(unpack(base), nodebug=vuri.nodebug))

    def has_made(self, vuri: VirtualUri) -> bool:
        return _made_key(vuri) in self._made

    def keep_made(self, vuri: VirtualUri, made: Packed) -> None:
        """A text the worker made for `vuri`, kept packed: the assembly of the IR it names
        (`Builds.assembly`; its views with and without debug lines share it), or a
        schedule text (`Builds.schedule`)."""
        self._made[_made_key(vuri)] = made

    def schedule(self, vuri: VirtualUri) -> str:
        """The schedule text `vuri` names, as the worker made it (NotBuilt when it has not)."""
        made = self._made.get(_made_key(vuri))
        if made is None:
            raise NotBuilt(f"{vuri.name} has not been made yet (the build worker makes it when it is opened)")
        return unpack(made)

    def aligned(self, index: int) -> Aligned:
        """Snapshot `index` renumbered as the one before it numbers the same statements
        (for a diff of the two that shows what the pass changed, not the renumbering)."""
        found = self._aligned.found(index)
        if found is None:
            snapshots = self.report.snapshots
            found = self._aligned.keep(index, align_temporaries(unpack(snapshots[index - 1].text),
                                                                unpack(snapshots[index].text)))
        return found

    def derived(self, key, make: Callable[[], Any]) -> Any:
        """`make()`, made once for this build and kept as long as it is: for small values
        a request derives from the report alone (a fused function's lenses: code_lens.py)."""
        if key not in self._derived:
            self._derived[key] = make()
        return self._derived[key]

    def text_source(self, key: str, text: Text | Callable[[], str]) -> Source:
        """A `Source` over one of the report's texts (a virtual document's), kept while it
        is among the most recently used; `text` may be a function that makes the text."""
        found = self._sources.found(key)
        if found is None:
            made = text() if callable(text) else unpack(text)
            found = self._sources.keep(key, Source(key, made))
        return found

    def line_map(self, key: str, text: str, vuri: VirtualUri) -> Mapping[int, tuple[int, int]]:
        """LLVM IR line (1-based) -> Relay (line, col) for the IR text `vuri` names."""
        report = self.report
        if vuri.function is None and not vuri.assembly and not vuri.nodebug:  # module.ll, module.opt.ll
            return report.optimized_line_map if vuri.optimized else report.llvm_lines
        found = self._lines.found(key)
        if found is None:
            from ...compiler.lower.codegen.llvm_map import line_locations  # lazy: lowering loads in the worker, here only for an IR text the report lacks

            found = self._lines.keep(key, line_locations(text))
        return found


def _made_key(vuri: VirtualUri) -> tuple[str, str | None, bool]:
    return (vuri.kind, vuri.function, vuri.optimized)


def cache_environment(cache: dict) -> dict[str, str]:
    """The worker's environment for initializationOptions `cache`; values of the wrong
    type are ignored (the environment's, or the defaults, stay)."""
    env: dict[str, str] = {}
    if isinstance(cache.get("enabled"), bool):
        env["RELAYLENS_NO_CACHE"] = "0" if cache["enabled"] else "1"
    size = cache.get("maxBytes")
    if isinstance(size, (int, str)) and not isinstance(size, bool) and str(size).strip():
        env["RELAYLENS_CACHE_SIZE"] = str(size).strip()
    if isinstance(cache.get("directory"), str) and cache["directory"].strip():
        env["RELAYLENS_CACHE_DIR"] = cache["directory"].strip()
    return env


class Builds:
    def __init__(self, server: "RelayLensServer") -> None:
        self.server = server
        self.enabled = True
        self.debounce = 0.5
        self.worker = WorkerProcess(self._on_message, self._on_exit)
        self.jobs: dict[int, Job] = {}
        self.reports: dict[str, list[Built]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._waiters: dict[tuple[str, int | None], list[asyncio.Future]] = {}
        self._ids = itertools.count(1)
        self._watchdog: asyncio.TimerHandle | None = None
        self._stalled = False
        self._unbuilt: dict[str, int | None] = {}  # uri -> a version not built: it has errors
        self._asks: dict[int, asyncio.Future] = {}  # graph, schedule and assembly requests sent to the worker
        self.bind_params = True  # weights beside a model are bound (initializationOptions "params")
        # the editor's Check Numerics, run by the same worker
        self.numerics = EditorJobs(self, "numerics", "checked", "RelayLens check numerics", "check")
        self.profiles = Profiles(self)  # the editor's Profile command, run by the same worker
        self._byoc_keys: dict[str, str | None] = {}  # uri -> the BYOC request of its last build (byoc_setup.py)
        self.idle_exit = IDLE_EXIT_SECONDS
        self._worker_keeps: dict[str, tuple[int, int | None]] = {}  # uri -> (worker run, version) of its snapshots
        self._idle_timer: asyncio.TimerHandle | None = None

    def configure(self, options: Any) -> None:
        """Read `{"build": {"enabled": bool, "debounceMs": int}, "params": {"bind": bool},
        "cache": {"enabled": bool, "maxBytes": int | "512M", "directory": str}}`
        (initializationOptions; `cache` is the worker's kernel cache on disk, given to it as
        RELAYLENS_NO_CACHE, RELAYLENS_CACHE_SIZE and RELAYLENS_CACHE_DIR)."""
        cache = options.get("cache") if isinstance(options, dict) else None
        if isinstance(cache, dict):
            self.worker.env.update(cache_environment(cache))
        weights = options.get("params") if isinstance(options, dict) else None
        if isinstance(weights, dict) and isinstance(weights.get("bind"), bool):
            self.bind_params = weights["bind"]
        build = options.get("build") if isinstance(options, dict) else None
        if isinstance(build, dict):
            if isinstance(build.get("enabled"), bool):
                self.enabled = build["enabled"]
            if isinstance(build.get("debounceMs"), (int, float)) and build["debounceMs"] >= 0:
                self.debounce = build["debounceMs"] / 1000
        self.configure_worker(options)

    def configure_worker(self, options: Any) -> None:
        """Read `{"worker": {"idleExitSeconds": number}}` (initializationOptions, and the
        `relaylens.worker.idleExitSeconds` setting): 0 keeps the worker running."""
        worker = options.get("worker") if isinstance(options, dict) else None
        seconds = worker.get("idleExitSeconds") if isinstance(worker, dict) else None
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0:
            self.idle_exit = float(seconds)
            self._arm_idle()

    # ---- triggers ---------------------------------------------------------------------
    def opened(self, uri: str) -> None:
        self._build_now(uri)

    def saved(self, uri: str) -> None:
        self._build_now(uri)
        self.reconsider(self._dependents(uri))

    def changed(self, uri: str, dependent: bool = True) -> None:
        """`dependent`: the models built with this document as their pattern table are
        built again too (byoc_setup.py), once edits have settled."""
        self._cancel_timer(uri)
        self._fail_superseded_waiters(uri)
        if self.enabled:
            self._timers[uri] = asyncio.get_running_loop().call_later(self.debounce, self._build_later, uri)
            self.worker.start()  # one gone idle starts now: its imports overlap the debounce (preload.py)
        if dependent:
            self.reconsider(self._dependents(uri))

    def reconsider(self, uris: list[str]) -> None:
        """Build these open documents again if what their build would run changed (their
        pattern table, the BYOC settings), once edits have settled."""
        for uri in uris:
            self.changed(uri, dependent=False)

    def _build_later(self, uri: str) -> None:
        try:
            self._build_now(uri)
        except Exception:  # noqa: BLE001 -- a timer callback has nobody to raise to
            log.exception("starting the build of %s failed", uri)

    def closed(self, uri: str) -> None:
        self._cancel_timer(uri)
        self._unbuilt.pop(uri, None)
        self._byoc_keys.pop(uri, None)
        self.profiles.forget(uri)
        self._void_jobs(uri)
        self.reports.pop(uri, None)
        self._worker_keeps.pop(uri, None)
        self._fail_waiters(uri, None, "the document was closed")
        if self.worker.state == "ready":
            self.worker.send(("forget", uri))

    def start_worker(self) -> None:
        if self.enabled:
            self.worker.start()

    def shutdown(self) -> None:
        for uri in list(self._timers):
            self._cancel_timer(uri)
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self.worker.close()

    async def stopped(self) -> None:
        """The server ends: as `shutdown`, and the worker's process is gone on return."""
        self.shutdown()
        await self.worker.closed()

    # ---- the idle exit ----------------------------------------------------------------
    def _busy(self) -> bool:
        """Something is asked of the worker, or a build is due."""
        return bool(self.jobs or self._asks or self._timers or self.numerics.pending or self.profiles.jobs.pending)

    def _arm_idle(self) -> None:
        """(Re)arm the idle exit of a ready worker, for when it will have been idle long enough."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self.idle_exit <= 0 or self.worker.state != "ready":
            return
        due = self.worker.last_active + self.idle_exit - time.monotonic()
        self._idle_timer = asyncio.get_running_loop().call_later(max(due, 0.01), self._idle_check)

    def _idle_check(self) -> None:
        self._idle_timer = None
        if self.idle_exit <= 0 or self.worker.state != "ready":
            return
        if self._busy():
            self.worker.last_active = time.monotonic()
        elif time.monotonic() - self.worker.last_active >= self.idle_exit and self.worker.retire():
            log.info("the build worker was idle for %.0f s: it exits (the next build starts another)", self.idle_exit)
            return
        self._arm_idle()

    # ---- queries ----------------------------------------------------------------------
    def current(self, uri: str) -> Built | None:
        doc = self.server.documents.opened(uri)
        if doc is None:
            return None
        version, text = doc.version, doc.text
        return next((b for b in reversed(self.reports.get(uri, ()))
                     if b.report.version == version and b.report.text == text), None)

    def find(self, uri: str, version: int | None) -> Built | None:
        kept = self.reports.get(uri, ())
        if version is None:
            return kept[-1] if kept else None
        return next((b for b in kept if b.report.version == version), None)

    def building(self, uri: str) -> bool:
        """A build of the document's current version is due or under way."""
        version = self._version(uri)
        return uri in self._timers or any(j.uri == uri and j.version == version and not j.void
                                          for j in self.jobs.values())

    async def wait(self, uri: str, version: int | None) -> Built:
        """The report of that version (None: the latest), waiting for a build under way."""
        found = self.find(uri, version)
        if found is not None and (version is not None or not self.building(uri)):
            return found
        if not self._due(uri, version):
            if found is not None:
                return found
            raise NotBuilt(self._why_not(uri, version))
        target = version if version is not None else self._version(uri)
        future = asyncio.get_running_loop().create_future()
        self._waiters.setdefault((uri, target), []).append(future)
        try:
            return await asyncio.wait_for(future, WAIT_SECONDS)
        except asyncio.TimeoutError:
            raise NotBuilt(f"the build of {uri} (version {target}) did not finish within "
                           f"{WAIT_SECONDS:.0f} s") from None

    async def graph(self, uri: str, version: int | None, after: str | int | None,
                    options: dict | None = None) -> tuple[Built, Any]:
        """The report of that version (None: the latest, waiting as `wait` does) and the
        worker's GraphDocument of its snapshot after the pass `after` (NotBuilt: why not);
        `options` are graph_document's (`layout`, `compare`)."""
        built = await self.wait(uri, version)
        report = built.report
        return built, await self._ask("graph", uri, report.version, after, options or {}, self._again(uri, report))

    async def schedule(self, built: Built, name: str) -> Packed:
        """The worker's schedule text of the fused function `name` of `built`'s build
        (lower/pipeline.py `schedule_text`; NotBuilt: why not).  No build makes it: a
        worker that did not make this report runs the passes again first, as for a graph."""
        report = built.report
        return await self._ask("schedule", report.uri, report.version, name, self._again(report.uri, report))

    async def assembly(self, ir: str) -> Packed:
        """The worker's host assembly of an LLVM IR text (compiler/lower/runtime/assembly.py):
        LLVM's code generator is loaded in the worker, never here (NotBuilt: why not)."""
        return await self._ask("assembly", ir)

    def _again(self, uri: str, report: BuildReport) -> tuple | None:
        """What a worker that did not make `report` needs to run its passes again (worker.py,
        `_snapshots`): (text, weights, byoc); None when the worker keeps that build."""
        kept = self.worker.state == "ready" and self._worker_keeps.get(uri) == (self.worker.runs, report.version)
        if kept:
            return None
        upcoming = self.worker.state not in ("ready", "starting")  # the message goes to the next process
        self._worker_keeps[uri] = (self.worker.runs + upcoming, report.version)
        return (report.text, self._weights(uri), self._byoc(uri, report.text))

    async def _ask(self, kind: str, *args: Any) -> Any:
        """Send (kind, request, *args) to the worker and wait for its answer (NotBuilt: why not)."""
        request = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        if not self.worker.send((kind, request, *args)):
            raise NotBuilt("the build worker cannot start")
        self._asks[request] = future
        try:
            return await asyncio.wait_for(future, WAIT_SECONDS)
        except asyncio.TimeoutError:
            raise NotBuilt(f"the build worker did not answer within {WAIT_SECONDS:.0f} s") from None
        finally:
            self._asks.pop(request, None)

    def status(self) -> dict:
        return {"worker": {"pid": self.worker.pid, "state": self.worker.state,
                           "restarts": self.worker.restarts, "idleExits": self.worker.retired,
                           "idleExitSeconds": self.idle_exit},
                "builds": [{"uri": j.uri, "version": j.version, "state": j.state}
                           for j in self.jobs.values() if not j.void],
                "reports": [{"uri": uri, "version": b.report.version}
                            for uri, kept in self.reports.items() for b in kept]}

    # ---- starting builds --------------------------------------------------------------
    def _build_now(self, uri: str) -> None:
        self._cancel_timer(uri)
        if not self.enabled:
            return
        doc = self.server.documents.opened(uri)
        if doc is None:  # only what the client opened is built
            return
        version, text = doc.version, doc.text
        analysis = self.server.analyses.latest(uri)
        if analysis is None or analysis.version != version or analysis.source.text != text:
            self.server.diagnostics.cancel(uri)  # the fast path comes first
            self.server.diagnostics.analyse_now(uri)
            analysis = self.server.analyses.latest(uri)
        if analysis is None or analysis.syntax_only or any(d.is_error for d in analysis.diagnostics) \
                or is_pattern_table(analysis.result.module, text):  # a table is not a model
            self._void_jobs(uri)
            self._publish(uri, version, [])
            if self._unbuilt.get(uri, object()) != version and self.find(uri, None) is not None \
                    and self._lens_refresh_supported():  # its lenses said "rebuilding…": now "out of date"
                self.server.workspace_code_lens_refresh(None)
            self._unbuilt[uri] = version
            self._fail_waiters(uri, version, self._why_not(uri, version))
            return
        byoc = self._byoc(uri, text)
        if self._byoc_keys.get(uri, None) == (byoc.key if byoc else None) and (self.find(uri, version) is not None or any(
                j.uri == uri and j.version == version and not j.void for j in self.jobs.values())):
            return  # built or being built
        self._void_jobs(uri)
        job = Job(next(self._ids), uri, version, text)
        self._byoc_keys[uri] = byoc.key if byoc else None
        restarting = self.worker.state in ("stopped", "stopping", "starting") and self.worker.retired > 0
        if not self.worker.send(("build", job.id, uri, version, text, self._weights(uri), byoc)):
            self._fail_waiters(uri, version, "the build worker cannot start")
            return
        self.jobs[job.id] = job
        if restarting:
            log.info("starting the build worker again (it exited when idle) to build %s", uri)
        self._begin_progress(job, "starting the build worker" if restarting else None)

    def _weights(self, uri: str) -> str | None:
        """The path of `<stem>.npz` beside the model, when there is one the server may read
        (inside the workspace, under the size limit) and binding is on."""
        stem, dot, suffix = uri.rpartition(".")
        if not self.bind_params or not uri.startswith("file:") or not dot or "/" in suffix:
            return None
        try:
            return self.server.documents.workspace_file(stem + ".npz")
        except Refused:  # none there, or not one the server reads
            return None

    def _dependents(self, uri: str) -> list[str]:
        """The open models whose pattern table is `uri` (byoc_setup.py)."""
        try:
            return dependents(self.server, uri)
        except Exception:  # noqa: BLE001 -- a bug there must not cost the document's own build
            log.exception("finding the models built with %s failed", uri)
            return []

    def _byoc(self, uri: str, text: str) -> ByocRequest | None:
        """The document's BYOC options (byoc_setup.py); None: a plain build."""
        try:
            return byoc_request(self.server, uri, text)
        except Exception:  # noqa: BLE001 -- a bug there must not cost the build
            log.exception("reading the BYOC options of %s failed", uri)
            return None

    def _void_jobs(self, uri: str) -> None:
        for job in self.jobs.values():
            if job.uri == uri and not job.void:
                job.void = True
                self.worker.send(("cancel", job.id))

    def _cancel_timer(self, uri: str) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()

    # ---- what the worker says ---------------------------------------------------------
    def _on_message(self, message: tuple) -> None:
        if self.profiles.handle(message) or self.numerics.handle(message):
            return
        kind = message[0]
        if kind in ("graph", "assembly", "schedule"):  # (kind, request, GraphDocument | Packed | None, why)
            future = self._asks.get(message[1])
            if future is not None and not future.done():
                if message[2] is None:
                    future.set_exception(NotBuilt(message[3]))
                else:
                    future.set_result(message[2])
            return
        job = self.jobs.get(message[1]) if kind != "ready" and len(message) > 1 else None
        if job is not None:
            self._handle(kind, job, message)
        elif kind == "ready":
            self._arm_idle()
        self._watch()

    def _watch(self) -> None:
        """(Re)arm the stall timer while a build runs."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if any(j.state == "running" for j in self.jobs.values()):
            self._watchdog = asyncio.get_running_loop().call_later(STALL_SECONDS, self._stall)

    def _stall(self) -> None:
        log.error("the build worker made no progress for %.0f s; killing it", STALL_SECONDS)
        self._stalled = True
        self.worker.kill()

    def _handle(self, kind: str, job: Job, message: tuple) -> None:
        if kind == "started":
            job.state = "running"
        elif kind == "progress":
            self._report_progress(job, message[2], message[3])
        elif kind == "done" and not job.void:
            del self.jobs[job.id]
            self._done(job, message[2])
        elif kind in ("done", "cancelled"):  # a void job's report is not wanted either
            del self.jobs[job.id]
            self._cancelled(job)

    def _cancelled(self, job: Job) -> None:
        newer = next((j.version for j in self.jobs.values() if j.uri == job.uri and not j.void), None)
        why = f"cancelled: superseded by version {newer}" if newer is not None else "cancelled"
        self._fail_waiters(job.uri, job.version, f"the build of version {job.version} was {why}")
        self._finish(job, "cancelled", why, time.monotonic() - job.begun, 0)

    def _done(self, job: Job, report: BuildReport) -> None:
        kept = [b for b in self.reports.get(job.uri, ()) if b.report.version != report.version]
        share_texts(report, [b.report for b in kept[-(KEEP - 1):]] if KEEP > 1 else [])
        built = Built(report)
        self._worker_keeps[job.uri] = (self.worker.runs, report.version)
        self.reports[job.uri] = (kept + [built])[-KEEP:]
        forget_generated_sources()  # converters made since (generated_sources.py)
        release_memory(collect=False)  # the message's bytes, a report dropped: 10-30 MB
        current = report.version == self._version(job.uri)
        if current:
            self._publish(job.uri, report.version,
                          [_diagnostic(d, built.source, job.uri) for d in report.diagnostics])
        for future in self._waiters.pop((job.uri, job.version), ()):
            if not future.done():
                future.set_result(built)
        n = len(report.functions)
        bound = f", weights from {report.weights}" if report.weights else ""
        how = "built before: its report kept on disk" if report.kept else f"built in {report.seconds:.1f} s"
        self._finish(job, "done", f"{how}: {n} fused function{'s' * (n != 1)}{bound}",
                     report.seconds, n, refresh=current, weights=report.weights if report.bound else None,
                     kept=report.kept)

    def _on_exit(self, code: int | None, was_ready: bool) -> None:
        why = f"it made no progress for {STALL_SECONDS:.0f} s" if self._stalled else _exit_reason(code)
        self._stalled = False
        self.profiles.worker_stopped(why)
        self.numerics.worker_stopped(why)
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        broken = self.worker.state == "broken"
        for future in self._asks.values():  # a graph, schedule or assembly it was making
            if not future.done():
                future.set_exception(NotBuilt(f"the build worker stopped ({why}); retry"))
        for job in sorted(self.jobs.values(), key=lambda j: j.id):
            if job.void:
                del self.jobs[job.id]
                self._cancelled(job)
                continue
            if job.state != "running" and not broken:
                continue  # queued: goes to the next worker
            del self.jobs[job.id]
            if job.state == "running":
                message = (f"the build worker stopped ({why}) while building version {job.version}; "
                           "it was restarted. Edit or save to build again.")
            else:
                message = f"the build worker cannot start ({why}); builds are off until the server restarts"
            if job.version == self._version(job.uri):
                self._publish(job.uri, job.version, [_crash_diagnostic(message)])
            self.server.window_log_message(lsp.LogMessageParams(lsp.MessageType.Error, f"{job.uri}: {message}"))
            self._fail_waiters(job.uri, job.version, message)
            self._finish(job, "crashed", message, time.monotonic() - job.begun, 0)
        if broken:
            self.server.window_show_message(lsp.ShowMessageParams(
                lsp.MessageType.Error, f"RelayLens: the build worker cannot start ({why}); "
                                       "code lenses and LLVM views are off."))
            return
        queued = sorted(self.jobs.values(), key=lambda j: j.id)
        for job in queued:  # what was waiting goes to the next worker
            job.state = "queued"
            self.worker.send(("build", job.id, job.uri, job.version, job.text, self._weights(job.uri),
                              self._byoc(job.uri, job.text)))
        if not queued and was_ready:
            self.worker.start()

    # ---- telling the client -----------------------------------------------------------
    def _publish(self, uri: str, version: int | None, items: list[lsp.Diagnostic]) -> None:
        store = self.server.diagnostics
        if store.get(STAGE, uri) == items:
            store.set(STAGE, uri, version, items)
            return
        store.set(STAGE, uri, version, items)
        store.sync(uri, self._version(uri))

    def _progress_supported(self) -> bool:
        caps = self.server.client_capabilities
        return bool(caps is not None and caps.window is not None and caps.window.work_done_progress)

    def _begin_progress(self, job: Job, note: str | None = None) -> None:
        if not self._progress_supported():
            return
        job.token = f"relaylens-build-{job.id}"
        name = job.uri.rsplit("/", 1)[-1]
        title = f"{name} (version {job.version})" + (f": {note}" if note else "")

        async def create() -> bool:
            try:
                await asyncio.wait_for(self.server.work_done_progress.create_async(job.token),
                                       PROGRESS_CREATE_SECONDS)
            except Exception:  # noqa: BLE001 -- the client refused or did not answer
                return False
            self.server.work_done_progress.begin(job.token, lsp.WorkDoneProgressBegin(
                title="RelayLens build", message=title, percentage=0))
            return True

        job.progress = asyncio.get_running_loop().create_task(create())

    def _report_progress(self, job: Job, message: str, fraction: float) -> None:
        task = job.progress
        if task is not None and task.done() and not task.cancelled() and task.result():
            self.server.work_done_progress.report(job.token, lsp.WorkDoneProgressReport(
                message=message, percentage=max(0, min(100, int(fraction * 100)))))

    def _finish(self, job: Job, state: str, message: str, seconds: float, functions: int,
                refresh: bool = False, weights: str | None = None, kept: bool = False) -> None:
        """End the job's progress, then say `relaylens/buildFinished` (in that order)."""

        async def finish() -> None:
            if job.progress is not None and await job.progress:
                self.server.work_done_progress.end(job.token, lsp.WorkDoneProgressEnd(message=message))
            if refresh and self._lens_refresh_supported():
                self.server.workspace_code_lens_refresh(None)
            self.server.protocol.notify(FINISHED, {
                "uri": job.uri, "version": job.version, "state": state,
                "current": job.version == self._version(job.uri),
                "seconds": round(seconds, 3), "functions": functions, "weights": weights, "kept": kept})

        asyncio.get_running_loop().create_task(finish())

    def _lens_refresh_supported(self) -> bool:
        caps = self.server.client_capabilities
        ws = caps.workspace if caps is not None else None
        return bool(ws is not None and ws.code_lens is not None and ws.code_lens.refresh_support)

    # ---- helpers ----------------------------------------------------------------------
    def _version(self, uri: str) -> int | None:
        doc = self.server.documents.opened(uri)
        return None if doc is None else doc.version

    def _due(self, uri: str, version: int | None) -> bool:
        """A build of that version (None: any) is due or under way."""
        if version is None or version == self._version(uri):
            if uri in self._timers:
                return True
        return any(j.uri == uri and not j.void and (version is None or j.version == version)
                   for j in self.jobs.values())

    def _why_not(self, uri: str, version: int | None) -> str:
        if not self.enabled:
            return "builds are turned off (initializationOptions build.enabled)"
        if uri in self._unbuilt and self._unbuilt[uri] == (version if version is not None else self._version(uri)):
            return f"version {self._unbuilt[uri]} of {uri} has errors or is over the size limit; it is not built"
        kept = [b.report.version for b in self.reports.get(uri, ())]
        if version is not None and kept:
            return (f"version {version} of {uri} is not kept (kept: "
                    f"{', '.join(str(v) for v in kept)})")
        return f"{uri} has no build (it is not open, or it has errors)"

    def _fail_superseded_waiters(self, uri: str) -> None:
        """The document has a new version: requests waiting for an older one whose build was
        only due (no job runs for it, so none will end) are answered now, not after
        WAIT_SECONDS."""
        version = self._version(uri)
        for key in [k for k in self._waiters if k[0] == uri and k[1] != version]:
            if not any(j.uri == uri and j.version == key[1] and not j.void for j in self.jobs.values()):
                self._fail_waiters(uri, key[1], f"version {key[1]} of {uri} was superseded by version "
                                                f"{version} before it was built")

    def _fail_waiters(self, uri: str, version: int | None, message: str) -> None:
        for key in [k for k in self._waiters if k[0] == uri and (version is None or k[1] == version)]:
            for future in self._waiters.pop(key):
                if not future.done():
                    future.set_exception(NotBuilt(message))


def _diagnostic(d: ReportDiagnostic, source: Source, uri: str) -> lsp.Diagnostic:
    rng = convert.offset_range(source, *d.range) if d.range is not None else convert.empty_range(source)
    message = d.message
    related = []
    for where, text in d.notes:
        if where is not None:
            related.append(lsp.DiagnosticRelatedInformation(
                lsp.Location(uri, convert.offset_range(source, *where)), text))
        else:
            message += f"\nnote: {text}"
    return lsp.Diagnostic(range=rng, message=message, severity=lsp.DiagnosticSeverity(d.severity),
                          source=SOURCE, code=d.stage, related_information=related or None)


def _crash_diagnostic(message: str) -> lsp.Diagnostic:
    at = lsp.Position(line=0, character=0)
    return lsp.Diagnostic(range=lsp.Range(start=at, end=at), message=message,
                          severity=lsp.DiagnosticSeverity.Error, source=SOURCE, code="worker")


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "it could not be started"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
