"""The editor's Profile command as the server runs it: one request, one worker job.

    report = await builds.profiles.run(uri, runs=10)    # a ProfileReport (profiling.py)
    builds.profiles.latest(uri)                          # the last one, kept for inlay hints
    builds.profiles.running(uri)                         # whether one is under way (the lens)

The job goes to the build worker (`("profile", job, uri, version, text, weights, runs,
onnx)`), which builds to machine code, runs @main `runs` times and answers `("profiled",
job, report)`.  `onnx` is the ONNX model `<stem>.onnx` beside the document when there is
one the server may read (inside the workspace) and `compare` is on: onnxruntime then
profiles it on the same inputs (profiling.py).  Progress is LSP work-done progress
("RelayLens profile"); a request the client cancels ($/cancelRequest) cancels the job in
the worker, which stops between two runs at the latest; a worker that dies fails it.  The
lenses above @main are refreshed when a profile starts and ends (profile_lens.py).
The report names the version it profiled: results are tied to it, and a newer version of
the document makes them stale (`relaylens/profile` says `current`; hints show only for the
version profiled).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from ..features import Refused

if TYPE_CHECKING:  # profiling.py loads the whole compiler and LLVM: the worker's, not the server's
    from .profiling import ProfileReport
    from .builds import Builds

TIMEOUT_SECONDS = 900.0
MAX_RUNS = 1000


class ProfileFailed(Exception):
    """No report: the message says why (not open, cancelled, the worker died)."""


@dataclass
class Pending:
    uri: str
    future: asyncio.Future
    token: str | None = None
    progress: asyncio.Task | None = None


class Profiles:
    def __init__(self, builds: "Builds") -> None:
        self.builds = builds
        self.pending: dict[int, Pending] = {}
        self._latest: dict[str, ProfileReport] = {}

    def latest(self, uri: str) -> ProfileReport | None:
        return self._latest.get(uri)

    def forget(self, uri: str) -> None:
        self._latest.pop(uri, None)

    def running(self, uri: str) -> bool:
        return any(p.uri == uri for p in self.pending.values())

    def _onnx(self, uri: str) -> str | None:
        """The path of `<stem>.onnx` beside the model, when there is one the server may read."""
        stem, dot, suffix = uri.rpartition(".")
        if not uri.startswith("file:") or not dot or "/" in suffix:
            return None
        try:
            return self.builds.server.documents.workspace_file(stem + ".onnx")
        except Refused:  # none there, or not one the server reads
            return None

    async def run(self, uri: str, runs: int, compare: bool = True) -> ProfileReport:
        server = self.builds.server
        doc = server.documents.opened(uri)
        if doc is None:
            raise ProfileFailed(f"{uri} is not open: only an open document is profiled")
        runs = max(1, min(int(runs), MAX_RUNS))
        job = next(self.builds._ids)
        pending = Pending(uri, asyncio.get_running_loop().create_future())
        self.pending[job] = pending
        onnx = self._onnx(uri) if compare else None
        if not self.builds.worker.send(("profile", job, uri, doc.version, doc.text, self.builds._weights(uri), runs,
                                        onnx)):
            del self.pending[job]
            raise ProfileFailed("the build worker cannot start")
        self._begin_progress(job, pending, uri, doc.version)
        self._refresh_lenses()
        report: ProfileReport | None = None
        try:
            report = await asyncio.wait_for(asyncio.shield(pending.future), TIMEOUT_SECONDS)
        except (asyncio.CancelledError, asyncio.TimeoutError) as err:
            self.builds.worker.send(("cancel", job))
            if isinstance(err, asyncio.TimeoutError):
                raise ProfileFailed(f"the profile did not finish within {TIMEOUT_SECONDS:.0f} s") from None
            raise
        finally:
            self.pending.pop(job, None)
            self._end_progress(pending)
            if report is not None and report.error is None:
                self._latest[uri] = report
            self._refresh_lenses()
        return report

    def _refresh_lenses(self) -> None:
        """The lens above @main says whether a profile runs and what the last one found."""
        if self.builds._lens_refresh_supported():
            self.builds.server.workspace_code_lens_refresh(None)

    def handle(self, message: tuple) -> bool:
        """Take a worker message that belongs to a profile job; False for any other."""
        pending = self.pending.get(message[1]) if len(message) > 1 else None
        if pending is None:
            return False
        kind = message[0]
        if kind == "progress":
            self._report_progress(pending, message[2], message[3])
        elif kind == "profiled" and not pending.future.done():
            pending.future.set_result(message[2])
        elif kind == "cancelled" and not pending.future.done():
            pending.future.set_exception(ProfileFailed("the profile was cancelled"))
        return True

    def worker_stopped(self, why: str) -> None:
        for pending in self.pending.values():
            if not pending.future.done():
                pending.future.set_exception(ProfileFailed(f"the build worker stopped ({why}) while profiling"))

    # ---- progress ---------------------------------------------------------------------
    def _begin_progress(self, job: int, pending: Pending, uri: str, version: int | None) -> None:
        server = self.builds.server
        if not self.builds._progress_supported():
            return
        pending.token = f"relaylens-profile-{job}"

        async def create() -> bool:
            try:
                await asyncio.wait_for(server.work_done_progress.create_async(pending.token), 5.0)
            except Exception:  # noqa: BLE001 -- the client refused or did not answer
                return False
            server.work_done_progress.begin(pending.token, lsp.WorkDoneProgressBegin(
                title="RelayLens profile", message=f"{uri.rsplit('/', 1)[-1]} (version {version})",
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
