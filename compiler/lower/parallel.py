"""Kernels lowered in forked worker processes, several at once.

    for index, result in map_forked(lower_one, jobs, workers=compile_jobs()):
        ...                                   # in completion order
    text = call_forked(link, optimized)       # one call in a child: its memory goes with it

A cold build spends most of its time in LLVM (O3, then machine code), and llvmlite runs
every LLVM call behind one lock per process, so threads cannot overlap two kernels.
Processes can: `map_forked` forks `workers` children that inherit the whole build (nothing
is pickled on the way in: the parent sends an index into its list of jobs), and each sends
back what its function returns (pickled), for pipeline.py the bytes the disk cache keeps of
a kernel (LLVM texts, schedule record, object code), which the parent loads as it loads a
cache hit.  The next index goes to whichever child answers first, as soon as it answers:
before the parent hands its answer on (pipeline.py loads the kernel's object code), which
a ResNet-50 build's two children otherwise spent idle, 0.2-0.5 s of theirs in all.

The children are bare `os.fork()`s, not a multiprocessing pool: a pool's child closes
sys.stdin and flushes stdout on its way in and out, which deadlocks when another thread of
the parent sits in a read of stdin (the language server's build worker does) and would
write the parent's buffered output twice.  A child here touches no stream: it reads and
writes its two pipes (its standard streams go to /dev/null), leaves with `os._exit`, and
dies with the parent (Linux's parent-death signal).  It moves the heap it inherits out of
the garbage collector's sight (`gc.freeze`): it lives for one build, so nothing it
inherited needs collecting there, and each collection would otherwise walk the parent's
whole heap (the build, the model, its weights' wrappers): LLVM IR generation over
ResNet-50's kernels took 15-40% more CPU time without it.  Nor does it collect its own
garbage as it goes (`gc.disable`): what lowering a kernel leaves is mostly llvmlite's IR,
whose instructions, blocks and functions point at each other, so only the collector frees
it, and finding it cost a sixth of a child's Python (ResNet-50's 29 kernels lowered in
one process: 3.0 CPU s collecting as Python does, 2.5 without, which leaves 270,000
objects and 35 MB more; collecting after every kernel costs as much as Python's own
collections).  A child collects once it has left GC_OBJECTS objects uncollected, a bound
on its memory for a model of many large kernels.  A child that dies, or answers with
something unreadable, costs nothing but time: the parent computes that item itself.

A build that stops at LLVM IR (the editor's) also runs LLVM's work of one item in a
child (`isolate`, `call_forked`): what LLVM maps of its 80 MB of code to parse, optimise
and link (65 MB resident on a ResNet-50 from the disk cache) and what its heap grows by
then count in the child, which leaves with them, not in the long-running process.

`compile_jobs()` is how many: RELAYLENS_COMPILE_JOBS when set (1 turns the children off),
else the CPUs this process may run on.  Without `os.fork` everything runs here, in order.
The function must not raise for an input it cannot handle: it returns a value that says
so (pipeline.py returns None and lowers that kernel again in the parent, where the error
becomes a diagnostic).
"""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import selectors
import signal
import struct
from typing import Any, Callable, Iterator, Sequence

ENV = "RELAYLENS_COMPILE_JOBS"
_PR_SET_PDEATHSIG = 1
_HEADER = struct.Struct("<q")  # an index (parent → child) or a length (child → parent)
GC_OBJECTS = 1_000_000  # objects a child leaves uncollected before it collects (about 125 MB)


def compile_jobs() -> int:
    """Worker processes for lowering: RELAYLENS_COMPILE_JOBS, else the usable CPUs."""
    wanted = os.environ.get(ENV, "").strip()
    if wanted.isdigit() and int(wanted) >= 1:
        return int(wanted)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return os.cpu_count() or 1


def map_forked(fn: Callable[[Any], Any], items: Sequence[Any], workers: int,
               isolate: bool = False, started: Callable[[], None] | None = None) -> Iterator[tuple[int, Any]]:
    """(index, fn(items[index])) for every item, in the order they finish: in `workers`
    forked children when there are more than one and at least two items, else here.
    `isolate`: in children even for one item or one worker, so that what `fn` maps and
    allocates (LLVM's code and heap) never counts in this process's memory.  `started` is
    called here once the children are forked and given their first items (never without
    children), before their first result is awaited: for work of this process beside
    theirs, in a thread it may start then, now that no fork can copy it holding a lock."""
    workers = max(min(workers, len(items)), 1 if isolate and items else 0)
    if workers < (1 if isolate else 2) or not hasattr(os, "fork"):
        yield from ((i, fn(item)) for i, item in enumerate(items))
        return
    children: list[_Child] = []
    try:
        for _ in range(workers):
            children.append(_Child.start(fn, items, children))
        yield from _schedule(fn, items, children, started)
    finally:
        for child in children:
            child.close()
        for child in children:
            child.reap()


def call_forked(fn: Callable[[Any], Any], item: Any) -> Any:
    """`fn(item)` computed in one forked child and sent back (here when there is no fork or
    the child fails): the child's memory, LLVM's code it maps included, is gone with it."""
    return next(map_forked(fn, [item], 1, isolate=True))[1]


class _Child:
    """One forked worker: the pipe it reads indices from and the one it answers on.  It
    works until its index pipe ends."""

    def __init__(self, pid: int, to_child: int, from_child: int) -> None:
        self.pid, self.to_child, self.from_child = pid, to_child, from_child
        self.busy: int | None = None  # the index it is working on

    @classmethod
    def start(cls, fn: Callable[[Any], Any], items: Sequence[Any], siblings: list[_Child]) -> _Child:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's code
            status = 1
            try:
                for fd in (down_w, up_r, *(fd for s in siblings for fd in (s.to_child, s.from_child))):
                    os.close(fd)  # else a sibling's index pipe would never end
                _leave_with(parent)
                gc.freeze()  # the parent's heap: see the module's docstring
                gc.disable()  # and its own garbage, collected only past GC_OBJECTS (_serve)
                _serve(fn, items, down_r, up_w)
                status = 0
            finally:
                os._exit(status)
        os.close(down_r)
        os.close(up_w)
        return cls(pid, down_w, up_r)

    def give(self, index: int) -> bool:
        self.busy = index
        try:
            os.write(self.to_child, _HEADER.pack(index))
            return True
        except OSError:  # it died
            return False

    def answer(self) -> tuple[bool, Any]:
        """(True, its result) or (False, None) when it died or sent something unreadable."""
        header = _read(self.from_child, _HEADER.size)
        body = _read(self.from_child, _HEADER.unpack(header)[0]) if header is not None else None
        try:
            return (True, pickle.loads(body)) if body is not None else (False, None)
        except Exception:  # noqa: BLE001 - whatever it sent, the parent redoes the item
            return False, None
        finally:
            self.busy = None

    def close(self) -> None:
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass

    def reap(self) -> None:
        """Wait for it to leave (its pipes closed, an idle child does); a child still busy
        with an item nobody waits for any more is killed."""
        try:
            if self.busy is not None:
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass


def _schedule(fn: Callable[[Any], Any], items: Sequence[Any], children: list[_Child],
              started: Callable[[], None] | None) -> Iterator[tuple[int, Any]]:
    upcoming = iter(range(len(items)))
    redo: list[int] = []  # items whose child died: done here at the end
    with selectors.DefaultSelector() as selector:

        def feed(child: _Child) -> None:
            index = next(upcoming, None)
            if index is None:
                selector.unregister(child.from_child)
            elif not child.give(index):
                redo.append(index)
                selector.unregister(child.from_child)

        for child in children:
            selector.register(child.from_child, selectors.EVENT_READ, child)
            feed(child)
        if started is not None:
            started()
        while selector.get_map():
            for key, _ in selector.select():
                child: _Child = key.data
                index = child.busy
                ok, result = child.answer()
                if ok:
                    feed(child)  # first: it works on while the caller takes this result
                    yield index, result
                else:
                    redo.append(index)
                    selector.unregister(child.from_child)
    for index in redo:
        yield index, fn(items[index])


def _leave_with(parent: int) -> None:
    """In a child: die with the parent (the language server kills a build worker that
    does not stop), and hold none of its standard streams, whose readers wait for their end."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # Linux; elsewhere prctl is missing
    except (AttributeError, OSError):
        pass
    if os.getppid() != parent:  # it died before prctl
        os._exit(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _serve(fn: Callable[[Any], Any], items: Sequence[Any], down: int, up: int) -> None:
    while (header := _read(down, _HEADER.size)) is not None:
        body = pickle.dumps(fn(items[_HEADER.unpack(header)[0]]), protocol=pickle.HIGHEST_PROTOCOL)
        os.write(up, _HEADER.pack(len(body)))
        view = memoryview(body)
        while view:
            view = view[os.write(up, view):]
        if not gc.isenabled() and gc.get_count()[0] > GC_OBJECTS:
            gc.collect()


def _read(fd: int, size: int) -> bytes | None:
    """Exactly `size` bytes from `fd`, or None at its end."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
