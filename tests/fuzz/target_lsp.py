"""Fuzz target `lsp`: raw bytes into the language server, as a client writes them on stdin.

Each input gets a fresh server (`relaylens.server.server.build()`) in this process, read
by pygls's own message loop (`run_async`, the loop server/stdio.py runs) from a stream
holding: a fixed start (initialize, initialized, didOpen of a probe document), the
fuzzed bytes, and, when the fuzzed bytes are whole frames (lsp_frames.split_frames), a
probe request (documentSymbol of the probe document).  The build worker is kept off
(initializationOptions build.enabled = false, and its process marked unable to start):
the slow path is fuzzed in process by the `passes` target.  Edits are analysed without
the debounce delay, between the messages that follow them (`_fuzzing_settings`), so the
incremental analysis of edits is fuzzed too.

Properties:
- no exception raised in RelayLens's code reaches pygls or is logged by our handlers'
  guards (an error logged with a traceback through compiler/ or server/ is a finding);
- the loop ends at the end of the input (a hang is a finding: libFuzzer's -timeout);
- after any whole frames that did not ask for shutdown or exit, the probe is answered,
  within PROBE_SECONDS.

What pygls itself does with a malformed message (a body that is not JSON, a message that
is not JSON-RPC: it logs and goes on) is not a finding: it is the probe that says
whether the server is still alive after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import threading

import pygls.lsp._base_server
from pygls.io_ import run_async
from pygls.protocol import default_converter

import relaylens.server.features.diagnostics as diagnostics_feature
from relaylens.server.server import build
from findings import InvariantBroken, own_frame
from lsp_frames import frame, methods, split_frames

INSTRUMENT = ("relaylens", "pygls")
MAX_LEN = 8192
PROBE_ID = "relaylens-fuzz-probe"
PROBE_URI = "file:///fuzz/probe.relay"
PROBE_TEXT = 'def @main(%x: Tensor[(1, 4), float32]) {\n  %0 = add(%x, %x);\n  nn.relu(%0)\n}\n'
PROBE_SECONDS = 5.0
START = b"".join(frame(m) for m in (
    {"jsonrpc": "2.0", "id": 0, "method": "initialize",
     "params": {"processId": None, "rootUri": None, "capabilities": {},
                "initializationOptions": {"build": {"enabled": False}}}},
    {"jsonrpc": "2.0", "method": "initialized", "params": {}},
    {"jsonrpc": "2.0", "method": "textDocument/didOpen",
     "params": {"textDocument": {"uri": PROBE_URI, "languageId": "relay", "version": 1, "text": PROBE_TEXT}}},
))
PROBE = frame({"jsonrpc": "2.0", "id": PROBE_ID, "method": "textDocument/documentSymbol",
               "params": {"textDocument": {"uri": PROBE_URI}}})


class _Yielding:
    """A reader that lets the event loop run before each line and body it hands over."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    async def readline(self) -> bytes:
        await asyncio.sleep(0)
        return await self.reader.readline()

    async def readexactly(self, n: int) -> bytes:
        await asyncio.sleep(0)
        return await self.reader.readexactly(n)


_CONVERTER: list = []  # the one cattrs converter of this process, once made


@contextlib.contextmanager
def _fuzzing_settings():
    """While one input runs:
    - edits are analysed at the next turn of the event loop, not 10-150 ms later: the
      reader yields to the loop between lines (`_Yielding`), so the edits' analyses (the
      incremental path, analysis.py) run between the messages that follow them;
    - every server shares one cattrs converter: making one (its hooks for every LSP type)
      costs 60 ms, ten times the rest of a small input; a converter holds no state of a
      connection.
    Both are put back afterwards (the replay test runs in pytest's process)."""
    if not _CONVERTER:
        _CONVERTER.append(default_converter())
    shared = _CONVERTER[0]
    init = pygls.lsp._base_server.BaseLanguageServer.__init__
    saved = init.__defaults__, diagnostics_feature.DEBOUNCE_SECONDS, diagnostics_feature.COALESCE_SECONDS
    protocol_cls, _, max_workers = init.__defaults__
    init.__defaults__ = (protocol_cls, lambda: shared, max_workers)
    diagnostics_feature.DEBOUNCE_SECONDS = diagnostics_feature.COALESCE_SECONDS = 0
    try:
        yield
    finally:
        init.__defaults__, diagnostics_feature.DEBOUNCE_SECONDS, diagnostics_feature.COALESCE_SECONDS = saved


class _Output:
    """The server's stdout, kept."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass

    def answered(self, request_id: str) -> bool:
        bodies, _ = split_frames(bytes(self.data))
        return any(f'"id": "{request_id}"'.encode() in b or f'"id":"{request_id}"'.encode() in b for b in bodies)


class _Tracebacks(logging.Handler):
    """Keeps every logged exception that passed through RelayLens's code."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.found: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and own_frame(exc) is not None:
            self.found.append(exc)


def check(data: bytes) -> None:
    tracebacks = _Tracebacks()
    root = logging.getLogger()
    saved = root.level, root.handlers[:]
    root.handlers[:] = [tracebacks]  # the server's log is noise here: only its tracebacks count
    root.setLevel(logging.WARNING)
    try:
        with _fuzzing_settings():
            _check(data, tracebacks)
    finally:
        root.level, root.handlers[:] = saved


def _check(data: bytes, tracebacks: _Tracebacks) -> None:
    bodies, rest = split_frames(data)
    probe = not rest and not methods(bodies) & {"shutdown", "exit"}
    server = build()
    server.builds.worker.state = "broken"  # never start a worker process here
    server.report_server_error = lambda error, source: None  # the log handler sees them
    server._stop_event = threading.Event()
    output = _Output()
    server.protocol.set_writer(output)

    async def serve() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(START + data + (PROBE if probe else b""))
        reader.feed_eof()
        try:
            await run_async(stop_event=server._stop_event, reader=_Yielding(reader), protocol=server.protocol,
                            error_handler=server.report_server_error)
        except asyncio.IncompleteReadError:
            pass  # the input ended inside a body: the client closed stdin (stdio.py)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PROBE_SECONDS
        while probe and not output.answered(PROBE_ID) and loop.time() < deadline:
            await asyncio.sleep(0.001)
        for _ in range(10):  # let what was scheduled (an edit's analysis, indexing after it) run
            await asyncio.sleep(0)

    exited = False
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(serve())
    except SystemExit:  # pygls's answer to `exit`
        if "exit" not in methods(bodies) and "exit" not in _all_methods(data):
            raise
        exited = True
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
    if tracebacks.found:
        raise tracebacks.found[0]
    if probe and not exited and not output.answered(PROBE_ID):
        raise InvariantBroken("no answer to a good request", f"after {len(bodies)} whole frames")


def _all_methods(data: bytes) -> set[str]:
    """Methods named anywhere in the stream (the frames the oracle could not read included)."""
    return {m for m in ("exit", "shutdown") if f'"{m}"'.encode() in data}


# ---- a structure-aware mutator: frames in, frames out ---------------------------------
VALUES = [0, -1, 1, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1.5, None, True, "", "%0", "@main", [], {},
          "relaylens:/pass/0-input.relay?uri=file%3A%2F%2F%2Ffuzz%2Fprobe.relay", PROBE_URI,
          "file:///etc/passwd", "relaylens:/llvm/module.ll?uri=" + PROBE_URI, "\ud800", "x" * 300,
          PROBE_TEXT.replace(")", "", 1)]


def _mutate_json(value, rng: random.Random):
    """`value` with one member replaced, deleted or added, somewhere inside it."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        choice = rng.randrange(4)
        if choice == 0:
            del value[key]
        elif choice == 1:
            value[key] = rng.choice(VALUES)
        else:
            value[key] = _mutate_json(value[key], rng)
        return value
    if isinstance(value, list) and value and rng.random() < 0.8:
        i = rng.randrange(len(value))
        value[i] = _mutate_json(value[i], rng)
        return value
    if isinstance(value, int) and not isinstance(value, bool) and rng.random() < 0.5:
        return value + rng.choice([-1, 1, -2, 7, 1000])
    if isinstance(value, str) and value and rng.random() < 0.5:
        i = rng.randrange(len(value))
        return value[:i] + rng.choice(["", ")", "%0", "\n", "{", ";", "fn", "\u2047"]) + value[i + 1:]
    return rng.choice(VALUES)


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    import atheris

    rng = random.Random(seed)
    bodies, rest = split_frames(data)
    if not bodies or rest or rng.random() < 0.2:
        return atheris.Mutate(data, max_size)  # the framing itself
    i = rng.randrange(len(bodies))
    choice = rng.randrange(5)
    if choice == 0:
        bodies[i] = atheris.Mutate(bodies[i], max(len(bodies[i]) * 2, 16)) or b"{}"
    elif choice == 1:
        bodies.insert(rng.randrange(len(bodies) + 1), bodies[i])
    elif choice == 2 and len(bodies) > 1:
        del bodies[i]
    else:
        try:
            message = json.loads(bodies[i])
        except (ValueError, RecursionError):
            message = {}
        bodies[i] = json.dumps(_mutate_json(message, rng)).encode("utf-8", "surrogatepass")
    return b"".join(frame(b) for b in bodies)[:max_size]


def crossover(a: bytes, b: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    mine, _ = split_frames(a)
    theirs, _ = split_frames(b)
    if not mine or not theirs:
        return a[:max_size]
    at = rng.randrange(len(mine) + 1)
    mine[at:at] = theirs[rng.randrange(len(theirs)):][:rng.randint(1, 3)]
    return b"".join(frame(x) for x in mine)[:max_size]
