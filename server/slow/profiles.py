"""The editor's Profile command as the server runs it: one request, one worker job.

    report = await builds.profiles.run(uri, runs=10)    # a ProfileReport (profiling.py)
    builds.profiles.latest(uri)                          # the last one, kept for inlay hints
    builds.profiles.running(uri)                         # whether one is under way (the lens)

A profile is an editor job (editor_jobs.py: progress, cancel, timeout, a worker that dies);
this keeps the last report per document and refreshes the lenses above @main.

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

from typing import TYPE_CHECKING

from ..features import Refused
from .editor_jobs import EditorJobs, JobFailed

if TYPE_CHECKING:  # profiling.py loads the whole compiler and LLVM: the worker's, not the server's
    from .builds import Builds
    from .profiling import ProfileReport

MAX_RUNS = 1000
ProfileFailed = JobFailed  # no report: the message says why (not open, cancelled, the worker died)


class Profiles:
    def __init__(self, builds: "Builds") -> None:
        self.builds = builds
        self.jobs = EditorJobs(builds, kind="profile", answer="profiled", title="RelayLens profile", noun="profile")
        self._latest: dict[str, ProfileReport] = {}

    def latest(self, uri: str) -> ProfileReport | None:
        return self._latest.get(uri)

    def forget(self, uri: str) -> None:
        self._latest.pop(uri, None)

    def running(self, uri: str) -> bool:
        return self.jobs.running(uri)

    def handle(self, message: tuple) -> bool:
        return self.jobs.handle(message)

    def worker_stopped(self, why: str) -> None:
        self.jobs.worker_stopped(why)

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
        runs = max(1, min(int(runs), MAX_RUNS))
        onnx = self._onnx(uri) if compare else None
        report: ProfileReport | None = None
        self._refresh_lenses()  # asked for after the job below is registered: "profiling… · cancel"
        try:
            report = await self.jobs.run(uri, runs, onnx)
        finally:
            if report is not None and report.error is None:
                self._latest[uri] = report
            self._refresh_lenses()
        return report

    def _refresh_lenses(self) -> None:
        """The lens above @main says whether a profile runs and what the last one found."""
        if self.builds._lens_refresh_supported():
            self.builds.server.workspace_code_lens_refresh(None)
