"""The build worker process: `python -m relaylens.server.slow.worker`.

Reads framed messages (`frames.py`) on stdin and answers on the stdout it was started
with; its own fd 1 is pointed at stderr first, so that nothing printed by a library can
corrupt the stream.  One job runs at a time, in the main thread; a reader thread takes
messages as they come, so a "cancel" (or a newer "build" of the same URI) reaches a
running build, which stops at its next pass or fused function (`reporting.Cancelled`).

The worker runs at a lower CPU priority (`NICENESS`): on a machine with few cores, the
server's fast path (what the user waits for after each keystroke) gets the CPU first,
and a build only slows down.

Per document, the worker keeps the lowering cache of its last build: a rebuild re-lowers
only the fused functions whose structure changed.  A build that is cancelled hands what
it lowered to the next one.  Behind those, the persistent kernel cache shared with every
other process (`disk_cache()`: where the environment says, RELAYLENS_NO_CACHE=1 for none),
so a model built before, by the CLI or another editor, lowers nothing; and in front of
everything, the reports of finished builds kept on disk (`report_cache.py`): a document
built before with the same text and weights is answered from its report, with nothing but
the framing and the cache loaded (the worker imports the compiler while it waits for
work: `preload.py`).  It also keeps the
last finished build's snapshots, to answer ("graph", request, uri, version, pass[, options[, again]])
with the graph of one of them (compiler/graph/snapshots.py; options: {"layout": bool,
"compare": bool}, graph_document's): ("graph", request, GraphDocument, None),
or ("graph", request, None, why) when it has no such build or no such pass.  `again`,
(text, weights, byoc) of that version, is sent when the server knows this process did not
make the build (it started after the build, or built another version since): the worker runs
the passes again (`snapshots_again`) and keeps those.  Graph requests queue behind builds, in
the order they came, and so do ("assembly", request, llvm_ir) -> ("assembly", request,
Packed, None) (the host assembly of an IR text, for the editor's assembly views: the
server never loads LLVM's code generator) or ("assembly", request, None, why), and
("schedule", request, uri, version, name[, again]) -> ("schedule", request, Packed, None),
the schedule text of the fused function `name` (every step's loop nest, which no build
prints: lower/pipeline.py `schedule_text`), made from the snapshots as a graph is, or
("schedule", request, None, why).  stdin closing ends the process (the server closes it when the worker
has been idle: builds.py).

After each build the memory it freed is handed back to the system (`release_memory`),
and before it waits for a message (after its imports, after a job) it unmaps the clean
pages of the libraries it is not running when a job mapped more of them (`resident.Trim`:
LLVM's code, 95 MB resident right after llvmlite loads, most of it never run again).
Its builds stop at LLVM IR and run LLVM itself only in forked children
(lower/pipeline.py), and the host's facts that the cache keys, schedules and passes need
come from a child process (compiler/host.py `from_a_child`), so a build never loads LLVM
here (which alone made the worker's peak 95 MB higher); a profile, a numerics check or
an assembly view loads LLVM in this process.
A report goes with its large texts compressed (`report.pack_texts`): smaller to send, and
the server keeps them so.

A "profile" job (the editor's Profile command, profiling.py) builds to machine code and
runs the model; so does a "numerics" job (the Check Numerics command, numerics.py:
("numerics", job, uri, version, text, weights, seed) -> ("checked", job, NumericsReport)).
Neither is superseded by a build, only cancelled.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import traceback
from typing import BinaryIO

from ...compiler.host import from_a_child
from ...compiler.support import release_memory

from . import frames
from .report import Packed, pack_texts
from .preload import Preload
from .resident import Trim

NICENESS = 10  # added to the worker's nice value: the server's fast path comes first


class Jobs:
    """What the reader thread tells the main thread: the queue and which jobs are void."""

    def __init__(self) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.latest: dict[str, int] = {}  # uri -> its newest job
        self.cancelled: set[int] = set()
        self.forgotten: queue.Queue = queue.Queue()

    def take(self, message: tuple) -> None:
        """Note one message from the server."""
        kind = message[0]
        with self.lock:
            if kind == "build":
                job, uri = message[1], message[2]  # ("build", job, uri, version, text, weights[, byoc])
                older = self.latest.get(uri)
                if older is not None:
                    self.cancelled.add(older)
                self.latest[uri] = job
                self.queue.put(message)
            elif kind in ("profile", "graph", "assembly", "schedule"):  # never superseded: ("profile", job, uri, version, text, weights, runs, onnx)
                self.queue.put(message)
            elif kind == "cancel":
                self.cancelled.add(message[1])
            elif kind == "forget":
                self.forgotten.put(message[1])
            elif kind == "numerics":  # never superseded either: ("numerics", job, uri, version, text, weights, seed)
                self.queue.put(message)

    def is_void(self, job: int) -> bool:
        with self.lock:
            return job in self.cancelled


class GenerationalCache:
    """A `LoweringCache` front for one build: hits come from this build or the previous
    one, and everything used is kept in `current`, so the next build starts from exactly
    what this one used (the cache never grows past one build's kernels)."""

    def __init__(self, previous) -> None:
        from ...compiler.lower.pipeline import LoweringCache  # lazy: the worker says it is ready before the compiler loads

        self.previous = previous
        self.current = LoweringCache()
        self.added: list = []

    def get(self, name, func, structural=None):
        hit = self.current.get(name, func, structural) or self.previous.get(name, func, structural)
        if hit is not None:
            self.put(hit, structural)
        return hit

    def put(self, lowered, structural=None) -> None:
        self.current.put(lowered, structural)
        self.added.append(lowered)

    def salvage(self):
        """After a cancelled build: the previous cache, plus what this build lowered."""
        for entry in self.added:
            self.previous.put(entry)
        return self.previous


def disk_cache():
    """The persistent kernel cache the environment names, or None (RELAYLENS_NO_CACHE=1, or
    a RELAYLENS_CACHE_SIZE that does not read: said on stderr, the server's log)."""
    from ...compiler.lower.disk_cache import environment_cache  # lazy: as the compiler below

    try:
        return environment_cache()
    except ValueError as err:
        print(f"relaylens worker: no kernel cache: {err}", file=sys.stderr)
        return None


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    from_a_child()  # the host's facts (the cache keys need them), read beside the imports: LLVM stays out of here
    from . import report_cache  # the kernel cache: enough to answer from a kept report

    trim = Trim()
    trim()  # what the imports mapped and no longer run (resident.py), before any job
    jobs = Jobs()

    def read_all() -> None:
        while (message := frames.read(inp)) is not None:
            jobs.take(message)
        jobs.queue.put(None)

    threading.Thread(target=read_all, name="relaylens-worker-reader", daemon=True).start()
    caches: dict[str, object] = {}
    kept: dict[str, tuple[int | None, list]] = {}  # uri -> (version, snapshots) of its last build
    answered: dict[str, tuple[int | None, tuple]] = {}  # uri -> (version, (text, weights, byoc)): from a kept report
    frames.write(out, ("ready", os.getpid()))
    disk = disk_cache()
    preload = Preload()
    while (message := _next(jobs, trim, preload)) is not None:
        while not jobs.forgotten.empty():
            forgotten = jobs.forgotten.get()
            caches.pop(forgotten, None)
            kept.pop(forgotten, None)
            answered.pop(forgotten, None)
        if message[0] == "numerics":
            _numerics(message, jobs, out, disk)
            continue
        if message[0] == "profile":
            _profile(message, jobs, out, disk)
            continue
        if message[0] == "graph":
            frames.write(out, _graph(kept, *message[1:7], answered=answered))
            continue
        if message[0] == "assembly":
            frames.write(out, _assembly(*message[1:3]))
            continue
        if message[0] == "schedule":
            frames.write(out, _schedule(kept, *message[1:6], answered=answered))
            continue
        _, job, uri, version, text, weights = message[:6]
        byoc = message[6] if len(message) > 6 else None  # the BYOC options (byoc_report.py)
        if jobs.is_void(job):
            frames.write(out, ("cancelled", job))
            continue
        frames.write(out, ("started", job))
        key = report_cache.report_key(uri, text, weights, byoc)
        kept_report = report_cache.load(disk, key, version)
        if kept_report is not None:  # built before, by this or another worker: nothing to build
            if jobs.is_void(job):  # superseded while it was read
                frames.write(out, ("cancelled", job))
                continue
            frames.write(out, ("done", job, kept_report))
            answered[uri] = (version, (text, weights, byoc))  # a graph view runs the passes then
            del kept_report
            release_memory()
            continue
        answered.pop(uri, None)
        # lazy: loaded while the worker waited (preload.py), or now
        from ...compiler.lower.pipeline import LoweringCache
        from .reporting import Cancelled, build_report, internal_error

        cache = GenerationalCache(caches.get(uri) or LoweringCache())

        def progress(step: str, fraction: float, job=job) -> None:
            if jobs.is_void(job):
                raise Cancelled(step)
            frames.write(out, ("progress", job, step, fraction))

        results: list = []  # the driver's result, kept once the build is done
        try:
            report = build_report(uri, version, text, cache=cache, progress=progress, weights=weights,
                                  disk_cache=disk, keep=results.append, byoc=byoc)
        except Cancelled:
            caches[uri] = cache.salvage()
            frames.write(out, ("cancelled", job))
            continue
        except Exception as err:  # noqa: BLE001 -- a bug in a stage: a diagnostic, not a dead worker
            traceback.print_exc()  # to stderr: the server's log
            report = internal_error(uri, version, text, err)
        caches[uri] = cache.current
        if results:
            kept[uri] = (version, results[0].snapshots)
        if jobs.is_void(job):
            frames.write(out, ("cancelled", job))
        else:
            frames.write(out, ("done", job, pack_texts(report)))  # its large texts compressed
            report_cache.store(disk, key, report)  # after the answer: for the next open
        del report, results
        release_memory()


def _next(jobs: Jobs, trim: Trim, preload: Preload | None = None):
    """The next message.  Before the worker waits for one, the rest of the compiler is
    imported (preload.py, stopping when a message comes), then the clean library pages it
    is not running are unmapped when a job mapped more of them (resident.py `Trim`; what
    the next job runs of LLVM is mapped again, a hundred minor faults from the page cache
    for a ResNet-50 link); a message already waiting is taken first."""
    if preload is not None:
        preload.run(lambda: not jobs.queue.empty())
    if jobs.queue.empty():
        trim()
    return jobs.queue.get()


def _profile(message: tuple, jobs: Jobs, out: BinaryIO, disk) -> None:
    """Build to machine code and profile (profiling.py); answer ("profiled", job, report)."""
    from .profiling import ProfileReport, profile_report  # lazy: the worker says it is ready before the compiler loads

    _, job, uri, version, text, weights, runs = message[:7]
    onnx = message[7] if len(message) > 7 else None
    _one_shot(job, jobs, out, "profiled",
              lambda progress: profile_report(uri, version, text, runs=runs, weights=weights, onnx=onnx,
                                              progress=progress, disk_cache=disk),
              lambda why: ProfileReport(uri, version, error=why))


def _snapshots(kept: dict, uri: str, version: int | None, again: tuple | None,
               answered: dict | None) -> tuple[list | None, str | None]:
    """(the snapshots of the kept build of that version, None) or (None, why not): made
    again from `again`, (text, weights, byoc), when they are not kept, or from the inputs
    of a build of that version `answered` from its kept report (the passes run again)."""
    from .reporting import snapshots_again  # lazy: as the compiler above

    version_answered, inputs = (answered or {}).get(uri, (None, None))
    if again is None and inputs is not None and version_answered == version:
        again = inputs
    version_kept, snapshots = kept.get(uri, (None, None))
    if (snapshots is None or version_kept != version) and again is not None:
        text, weights, byoc = again
        try:
            snapshots = snapshots_again(uri, text, weights=weights, byoc=byoc)
        except Exception as err:  # noqa: BLE001 -- a bug in a pass: an answer, not a dead worker
            traceback.print_exc()
            return None, f"internal error building again: {type(err).__name__}: {err}"
        kept[uri] = (version, snapshots)
        version_kept = version
        release_memory()
    if snapshots is None or version_kept != version:
        return None, f"the build worker keeps no build of version {version} of {uri}"
    return snapshots, None


def _graph(kept: dict, request: int, uri: str, version: int | None, after, options: dict | None = None,
           again: tuple | None = None, *, answered: dict | None = None) -> tuple:
    """The answer to a graph request: the graph document of the kept build's snapshot
    after the pass `after` (`_snapshots`), or why not."""
    from ...compiler.graph.snapshots import UnknownPass, graph_document  # lazy: as the compiler above

    snapshots, why = _snapshots(kept, uri, version, again, answered)
    if snapshots is None:
        return ("graph", request, None, why)
    try:
        options = options or {}
        doc = graph_document(snapshots, after, uri, layout=bool(options.get("layout")),
                             compare=bool(options.get("compare")))
        return ("graph", request, doc, None)
    except UnknownPass as err:
        return ("graph", request, None, str(err))
    except Exception as err:  # noqa: BLE001 -- a bug in the graph: an answer, not a dead worker
        traceback.print_exc()
        return ("graph", request, None, f"internal error: {type(err).__name__}: {err}")


def _schedule(kept: dict, request: int, uri: str, version: int | None, name: str, again: tuple | None = None,
              *, answered: dict | None = None) -> tuple:
    """The answer to a schedule request: the schedule text of the fused function `name` of
    the kept build (`_snapshots`), made now, or why not."""
    from ...compiler.lower.pipeline import schedule_text  # lazy: as the compiler above

    snapshots, why = _snapshots(kept, uri, version, again, answered)
    if snapshots is None:
        return ("schedule", request, None, why)
    try:
        return ("schedule", request, Packed.of(schedule_text(snapshots[-1].module, name)), None)
    except KeyError:
        return ("schedule", request, None, f"there is no fused function {name} in version {version} of {uri}")
    except Exception as err:  # noqa: BLE001 -- a bug in a schedule: an answer, not a dead worker
        traceback.print_exc()
        return ("schedule", request, None, f"internal error: {type(err).__name__}: {err}")


def _assembly(request: int, ir: str) -> tuple:
    """The answer to an assembly request: ("assembly", request, Packed, None), or why not."""
    from ...compiler.lower.runtime.assembly import assembly  # lazy: as the compiler above
    try:
        return ("assembly", request, Packed.of(assembly(ir)), None)
    except Exception as err:  # noqa: BLE001 -- IR LLVM refuses, or a bug: an answer, not a dead worker
        traceback.print_exc()
        return ("assembly", request, None, f"internal error: {type(err).__name__}: {err}")


def _numerics(message: tuple, jobs: Jobs, out: BinaryIO, disk) -> None:
    """Build to machine code and check numerics (numerics.py); answer ("checked", job, report)."""
    from .numerics import NumericsReport, numerics_report  # lazy: the worker says it is ready before the compiler loads

    _, job, uri, version, text, weights, seed = message[:7]
    _one_shot(job, jobs, out, "checked",
              lambda progress: numerics_report(uri, version, text, weights=weights, seed=seed, progress=progress,
                                               disk_cache=disk),
              lambda why: NumericsReport(uri, version, seed=seed, error=why))


def _one_shot(job: int, jobs: Jobs, out: BinaryIO, answer: str, work, failed) -> None:
    """Run one job the editor asked for (a profile, a numerics check): `work(progress)` makes the
    report, sent as (answer, job, report); a bug is `failed(why)`'s report; a cancel stops
    it at the next progress step."""
    from .reporting import Cancelled  # lazy: as above

    if jobs.is_void(job):
        frames.write(out, ("cancelled", job))
        return
    frames.write(out, ("started", job))

    def progress(step: str, fraction: float) -> None:
        if jobs.is_void(job):
            raise Cancelled(step)
        frames.write(out, ("progress", job, step, fraction))

    try:
        report = work(progress)
    except Cancelled:
        frames.write(out, ("cancelled", job))
        return
    except Exception as err:  # noqa: BLE001 -- a bug: an answer saying so, not a dead worker
        traceback.print_exc()
        report = failed(f"internal error: {type(err).__name__}: {err}")
    frames.write(out, ("cancelled", job) if jobs.is_void(job) else (answer, job, report))


def _lower_priority() -> None:
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):  # no os.nice (Windows), or not allowed: run as is
        pass


def main() -> None:
    _lower_priority()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray output goes to stderr, never into the protocol stream
    sys.stdout = sys.stderr
    try:
        serve(sys.stdin.buffer, out)
    except BrokenPipeError:  # the server went away
        pass
    _exit_now()


def _exit_now() -> None:
    """End the process without the interpreter's teardown: freeing every module and object,
    and LLVM's static destructors, which run through code the worker had unmapped (resident.py)
    and took seconds on a busy machine, past the server's wait for a retired worker
    (process.RETIRE_SECONDS).  Nothing is left to write: each answer is flushed as sent."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


if __name__ == "__main__":
    main()
