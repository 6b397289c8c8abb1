"""A job the editor asks the build worker for by a request, and waits for: one request,
one worker job, its progress shown and its cancel passed on (the Check Numerics and the
Profile commands; profiles.py keeps the last profile on top of it).

    checks = EditorJobs(builds, kind="numerics", answer="checked", title="RelayLens check numerics", noun="check")
    report = await checks.run(uri, seed)          # the worker's report for the document's current version
    checks.running(uri)                           # whether one is under way

The job goes to the build worker as `(kind, job, uri, version, text, weights, *extra)`,
which answers `(answer, job, report)` (worker.py).  Progress is LSP work-done progress
titled `title`; a request the client cancels ($/cancelRequest) cancels the job in the
worker; a worker that dies, a job the worker cancelled, a document that is not open and
a job that takes longer than TIMEOUT_SECONDS fail with `JobFailed` (its message says
why).  The report names the version it was made for.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from .builds import Builds

TIMEOUT_SECONDS = 900.0
PROGRESS_CREATE_SECONDS = 5.0


class JobFailed(Exception):
    """No report: the message says why (not open, cancelled, the worker died)."""


@dataclass
class Pending:
    uri: str
    future: asyncio.Future
    token: str | None = None
    progress: asyncio.Task | None = None


class EditorJobs:
    def __init__(self, builds: "Builds", kind: str, answer: str, title: str, noun: str = "job") -> None:
        self.builds = builds
        self.kind, self.answer, self.title, self.noun = kind, answer, title, noun
        self.pending: dict[int, Pending] = {}

    def running(self, uri: str) -> bool:
        return any(p.uri == uri for p in self.pending.values())

    async def run(self, uri: str, *extra: Any) -> Any:
        """The worker's report on the document's current version."""
        doc = self.builds.server.documents.opened(uri)
        if doc is None:
            raise JobFailed(f"{uri} is not open: the {self.noun} runs on an open document only")
        job = next(self.builds._ids)
        pending = Pending(uri, asyncio.get_running_loop().create_future())
        self.pending[job] = pending
        message = (self.kind, job, uri, doc.version, doc.text, self.builds._weights(uri), *extra)
        if not self.builds.worker.send(message):
            del self.pending[job]
            raise JobFailed("the build worker cannot start")
        self._begin_progress(job, pending, uri, doc.version)
        try:
            return await asyncio.wait_for(asyncio.shield(pending.future), TIMEOUT_SECONDS)
        except (asyncio.CancelledError, asyncio.TimeoutError) as err:
            self.builds.worker.send(("cancel", job))
            if isinstance(err, asyncio.TimeoutError):
                raise JobFailed(f"the {self.noun} did not finish within {TIMEOUT_SECONDS:.0f} s") from None
            raise
        finally:
            self.pending.pop(job, None)
            self._end_progress(pending)

    def handle(self, message: tuple) -> bool:
        """Take a worker message that belongs to one of these jobs; False for any other."""
        pending = self.pending.get(message[1]) if len(message) > 1 else None
        if pending is None:
            return False
        kind = message[0]
        if kind == "progress":
            self._report_progress(pending, message[2], message[3])
        elif kind == self.answer and not pending.future.done():
            pending.future.set_result(message[2])
        elif kind == "cancelled" and not pending.future.done():
            pending.future.set_exception(JobFailed(f"the {self.noun} was cancelled"))
        return True

    def worker_stopped(self, why: str) -> None:
        for pending in self.pending.values():
            if not pending.future.done():
                pending.future.set_exception(JobFailed(f"the build worker stopped ({why}) during the {self.noun}"))

    # ---- progress ---------------------------------------------------------------------
    def _begin_progress(self, job: int, pending: Pending, uri: str, version: int | None) -> None:
        server = self.builds.server
        if not self.builds._progress_supported():
            return
        pending.token = f"relaylens-{self.kind}-{job}"

        async def create() -> bool:
            try:
                await asyncio.wait_for(server.work_done_progress.create_async(pending.token), PROGRESS_CREATE_SECONDS)
            except Exception:  # noqa: BLE001 -- the client refused or did not answer
                return False
            server.work_done_progress.begin(pending.token, lsp.WorkDoneProgressBegin(
                title=self.title, message=f"{uri.rsplit('/', 1)[-1]} (version {version})",
                percentage=0, cancellable=False))
            return True

        pending.progress = asyncio.get_running_loop().create_task(create())

    def _ready(self, pending: Pending) -> bool:
        task = pending.progress
        return task is not None and task.done() and not task.cancelled() and bool(task.result())

    def _report_progress(self, pending: Pending, message: str, fraction: float) -> None:
        if self._ready(pending):
            self.builds.server.work_done_progress.report(pending.token, lsp.WorkDoneProgressReport(
                message=message, percentage=max(0, min(100, int(fraction * 100)))))

    def _end_progress(self, pending: Pending) -> None:
        if pending.progress is None:
            return

        async def end() -> None:
            if await pending.progress:
                self.builds.server.work_done_progress.end(pending.token, lsp.WorkDoneProgressEnd())

        asyncio.get_running_loop().create_task(end())
