"""The language server under random editing while its slow path runs, end to end over
stdio with pytest-lsp: seeded sequences of incremental edits on corpus models (text
broken and mended, non-ASCII included, several changes in one didChange) while builds run
in the worker, with every kind of request in between (on the document, on documents
never opened, at positions past the end, on virtual documents of any version), and the
worker killed in the middle of a build.  Every request must be answered, with a result or
an LSP error, within ANSWER_SECONDS; at the end the server is alive and has no build left
over, the restored text's diagnostics are published for the last version and are empty,
its build is done and its code lenses are those of the first build.  Then fixed cases:
requests on documents never opened and past the end of the text; a request whose params
LSP forbids (a negative line), answered InvalidParams; a virtual document asked for a
version whose build was only due when the text moved on, answered at once.  One server
for the module; every wait is for a response or a notification, never a sleep.

    RELAYLENS_FUZZ_SEEDS=11,12,13 RELAYLENS_FUZZ_STEPS=80 pytest tests/test_server_fuzz_builds.py

runs other sequences (a failure names its seed and step); the `slow` test runs more."""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import attrs
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient as PyglsClient
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features
from pytest_lsp.protocol import LanguageClientProtocol

from relaylens.server.slow import uris

from conftest import CORPUS
PUBLISH = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
FINISHED = "relaylens/buildFinished"
STATUS = "relaylens/status"
VIRTUAL = "relaylens/virtualDocument"
BUILD_SOURCE = "relaylens-build"
ANSWER_SECONDS = 30.0  # the longest any request may take (virtualDocument waits for builds)
BUILD_SECONDS = 60.0  # the longest a build may take to start or end
DEBOUNCE_MS = 200  # builds start this long after the last change (didSave: at once)
LSP_ERRORS = {-32602: "InvalidParams", -32803: "RequestFailed", -32800: "RequestCancelled",
              -32801: "ContentModified"}
asyncio_module = pytest.mark.asyncio(loop_scope="module")

# Pieces of Relay (and of broken Relay) the random edits insert.
PIECES = ("%", "%0", "%1", "%x1", "@main", "@f", "(", ")", "{", "}", "[", "]", ";", ",", "=", ":",
          " ", "  ", "\n", "\t", "nn.conv2d(", "add(", "nn.relu(", "Tensor[(1, 4), float32]",
          "float32", "1f", "3", "/*", "*/", "// note\n", '"', "let ", "fn ", "%y = ", "é", "🙂",
          "#[", "meta[relay.Constant][0]", "->", "-")
MODELS = ("073.relay", "084.relay")  # two conv2d: two fused functions, CNN-sized builds
# Sizes a random edit gives every `N, N)` of a shape (the spatial size), valid for both models;
# the text killed mid-build gets one, so that its build is not served from the compile cache.
SIZES = (8, 12, 20, 24, 32, 40)
SHAPE_END = re.compile(r"\b(\d+), (\1)\)")


def _env_ints(name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    value = os.environ.get(name, "").strip()
    return tuple(int(v) for v in value.split(",") if v.strip()) if value else default


SEEDS = _env_ints("RELAYLENS_FUZZ_SEEDS", (1, 2, 3))
STEPS = _env_ints("RELAYLENS_FUZZ_STEPS", (40,))[0]


def corpus(name: str) -> str:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus file {path} not available")
    return path.read_text(encoding="utf-8")


def _get(value: Any, name: str, default: Any = None) -> Any:
    if isinstance(value, dict):
        return value.get(name, default)
    return getattr(value, name, default)


def plain(value: Any) -> Any:
    """A custom message's params or result (pygls reads them as named tuples) as JSON data."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _utf16(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


# --- a client that keeps every message from the server, and the server's stderr --------


class Seen:
    """Every notification and request from the server, in order, and a wait for the first
    one (from some index on) that matches."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self._wake: list[asyncio.Future] = []

    def add(self, method: str, params: Any) -> None:
        self.events.append((method, params))
        wake, self._wake = self._wake, []
        for future in wake:
            if not future.done():
                future.set_result(None)

    async def until(self, what: str, match: Callable[[str, Any], bool], since: int = 0,
                    timeout: float = BUILD_SECONDS) -> Any:
        async def wait() -> Any:
            i = since
            while True:
                while i < len(self.events):
                    if match(*self.events[i]):
                        return self.events[i][1]
                    i += 1
                future = asyncio.get_running_loop().create_future()
                self._wake.append(future)
                await future

        try:
            return await asyncio.wait_for(wait(), timeout)
        except asyncio.TimeoutError:
            tail = "\n  ".join(f"{m} {_brief(p)}" for m, p in self.events[-12:])
            raise AssertionError(f"no {what} within {timeout:.0f} s; the last messages:\n  {tail}") from None


def _brief(params: Any) -> str:
    text = repr(params)
    return text if len(text) < 300 else text[:300] + "…"


class RecordingProtocol(LanguageClientProtocol):
    def _handle_notification(self, method_name, params):
        super()._handle_notification(method_name, params)
        self._server.seen.add(method_name, plain(params) if method_name == FINISHED else params)

    def _handle_request(self, msg_id, method_name, params):
        self._server.seen.add(method_name, params)
        return super()._handle_request(msg_id, method_name, params)


class FuzzClient(LanguageClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen = Seen()
        self.stderr: list[str] = []

    async def start_io(self, cmd: str, *args: Any, **kwargs: Any) -> None:
        await PyglsClient.start_io(self, cmd, *args, **kwargs)
        if self._server is not None and self._server.stderr is not None:
            self._stderr_forwarder = asyncio.create_task(self._keep_stderr(self._server))

    async def _keep_stderr(self, server: asyncio.subprocess.Process) -> None:
        """Forward the server's (and its worker's) stderr, and keep it."""
        while (line := await server.stderr.readline()) != b"":
            sys.stderr.buffer.write(line)
            self.stderr.append(line.decode("utf-8", "replace"))


def _ignore(params: Any) -> None:
    return None


def make_client() -> FuzzClient:
    client = FuzzClient(protocol_cls=RecordingProtocol, converter_factory=default_converter)
    register_lsp_features(client)
    client.feature(FINISHED)(_ignore)
    client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(_ignore)
    return client


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"],
                              client_factory=make_client),
    scope="module",
)
async def client(lsp_client: FuzzClient):
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        initialization_options={"build": {"enabled": True, "debounceMs": DEBOUNCE_MS}}))
    yield
    await lsp_client.shutdown_session()


# --- waiting for the server --------------------------------------------------------------


def finished_of(uri: str, version: int, state: str | None = None) -> Callable[[str, Any], bool]:
    return lambda m, p: (m == FINISHED and _get(p, "uri") == uri and _get(p, "version") == version
                         and state in (None, _get(p, "state")))


def published_of(uri: str, version: int) -> Callable[[str, Any], bool]:
    return lambda m, p: m == PUBLISH and p.uri == uri and p.version == version


def running_of(uri: str, version: int) -> Callable[[str, Any], bool]:
    """A progress report of the build of (uri, version), or its end."""
    begun = f"{uri.rsplit('/', 1)[-1]} (version {version})"
    tokens: set = set()

    def match(method: str, params: Any) -> bool:
        if finished_of(uri, version)(method, params):
            return True
        if method != lsp.PROGRESS:
            return False
        kind = _get(params.value, "kind")
        if kind == "begin" and _get(params.value, "message") == begun:
            tokens.add(params.token)
        return kind == "report" and params.token in tokens

    return match


def last_published(client: FuzzClient, uri: str) -> lsp.PublishDiagnosticsParams:
    return next(p for m, p in reversed(client.seen.events) if m == PUBLISH and p.uri == uri)


def errors_of(params: lsp.PublishDiagnosticsParams) -> list[lsp.Diagnostic]:
    """The fast path's errors (what stops a build)."""
    return [d for d in params.diagnostics
            if d.severity == lsp.DiagnosticSeverity.Error and d.source != BUILD_SOURCE]


async def answer(client: FuzzClient, method: str, params: Any) -> tuple[str, Any]:
    """("ok", result) or ("error", (code, message)); an unanswered request is a timeout."""
    try:
        result = await asyncio.wait_for(client.protocol.send_request_async(method, params), ANSWER_SECONDS)
    except JsonRpcException as err:
        return "error", (err.code, err.message)
    return "ok", plain(result) if method.startswith("relaylens/") else result


async def status(client: FuzzClient) -> dict:
    kind, result = await answer(client, STATUS, {})
    assert kind == "ok", result
    return result


def rows(found: list[lsp.CodeLens]) -> dict[int, list[str]]:
    """Lens titles by line (the schedule's step count is the scheduler's: not compared)."""
    out: dict[int, list[str]] = {}
    for lens in found:
        if lens.command.command != "relaylens.open":  # the profile's, above @main: test_server_profile.py
            continue
        title = "schedule" if lens.command.title.startswith("schedule (") else lens.command.title
        out.setdefault(lens.range.start.line, []).append(title)
    return out


# --- the document as the client holds it -------------------------------------------------


class Doc:
    """The text the client shows, changed by incremental edits; each edit is undoable."""

    def __init__(self, client: FuzzClient, name: str, text: str) -> None:
        self.client = client
        self.uri = f"file:///tmp/relaylens-fuzz/{name}"
        self.original = self.text = text
        self.version = 1
        self.undo: list[list[tuple[int, int, str, bool]]] = []  # steps of (start, end, old, breaks)
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=self.uri, language_id="relay", version=1, text=text)))

    @property
    def ident(self) -> lsp.TextDocumentIdentifier:
        return lsp.TextDocumentIdentifier(self.uri)

    def position(self, offset: int) -> lsp.Position:
        start = self.text.rfind("\n", 0, offset) + 1
        return lsp.Position(line=self.text.count("\n", 0, offset),
                            character=_utf16(self.text[start:offset]))

    def edit(self, start: int, end: int, new: str, undoable: bool = True, breaks: bool = False,
             group: list | None = None) -> lsp.TextDocumentContentChangePartial:
        """Replace text[start:end] (code points) with `new`, undoable as one step (or with
        the edits of `group`); `breaks`: it may break the text."""
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start=self.position(start), end=self.position(end)), text=new)
        if undoable:
            if group is None:
                group = []
                self.undo.append(group)
            group.append((start, start + len(new), self.text[start:end], breaks))
        self.text = self.text[:start] + new + self.text[end:]
        return change

    @property
    def broken(self) -> bool:
        """An edit that may have broken the text is still to undo."""
        return any(entry[3] for group in self.undo for entry in group)

    def undo_one(self) -> list[lsp.TextDocumentContentChangePartial]:
        return [self.edit(start, end, old, undoable=False) for start, end, old, _ in reversed(self.undo.pop())]

    def undo_all(self) -> list[lsp.TextDocumentContentChangePartial]:
        changes = [change for _ in range(len(self.undo)) for change in self.undo_one()]
        assert self.text == self.original
        return changes

    def send(self, changes: list[lsp.TextDocumentContentChangePartial]) -> int:
        self.version += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version), changes))
        return self.version

    def save(self) -> None:
        self.client.text_document_did_save(lsp.DidSaveTextDocumentParams(self.ident))

    def close(self) -> None:
        self.client.text_document_did_close(lsp.DidCloseTextDocumentParams(self.ident))

    def reopen(self) -> int:
        """Close the document and open it again, as it is now, with the next version."""
        self.close()
        self.version += 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=self.uri, language_id="relay", version=self.version, text=self.text)))
        return self.version


def resized(doc: Doc, size: int) -> list[lsp.TextDocumentContentChangePartial]:
    """Every `N, N)` (the spatial size in a shape) of the commonest N made `size, size)`."""
    found = [(m.start(1), m.end(2), m[1]) for m in SHAPE_END.finditer(doc.text)]
    if not found:
        return []
    common = max({n for _, _, n in found}, key=lambda n: sum(1 for *_, m in found if m == n))
    group: list = []
    doc.undo.append(group)
    return [doc.edit(start, end, f"{size}, {size}", group=group) for start, end, n in reversed(found) if n == common]


def random_change(rng: random.Random, doc: Doc) -> list[lsp.TextDocumentContentChangePartial]:
    """Break the text (insert pieces, delete characters, drop or copy a line, replace a few
    characters), change it and keep it valid (a comment line, trailing blanks, another size
    in the shapes), or undo the last edit: mostly that, while the text is broken."""
    text, r = doc.text, rng.random()
    if doc.undo and r < (0.55 if doc.broken else 0.1):
        return doc.undo_one()
    at = rng.randint(0, len(text))
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    if r > (0.8 if doc.broken else 0.55):
        kind = rng.choice(("comment", "comment", "blanks", "resize"))
        if kind == "comment":
            return [doc.edit(start, start, rng.choice(("// edited\n", "/* é🙂 */\n", "\n", "  // %0 = add(\n")))]
        if kind == "blanks" or not (found := resized(doc, rng.choice(SIZES))):
            return [doc.edit(end, end, rng.choice((" ", "\t", "  ")))]
        return found
    kind = rng.choice(("insert", "insert", "delete", "delete", "drop line", "copy line", "replace"))
    if kind in ("drop line", "copy line") and text:
        end = min(end + 1, len(text))
        if kind == "drop line":
            return [doc.edit(start, end, "", breaks=True)]
        line = text[start:end]
        return [doc.edit(start, start, line if line.endswith("\n") else line + "\n", breaks=True)]
    if kind == "delete":
        return [doc.edit(at, min(len(text), at + rng.randint(1, 8)), "", breaks=True)]
    new = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 3)))
    if kind == "replace":
        return [doc.edit(at, min(len(text), at + rng.randint(1, 5)), new, breaks=True)]
    return [doc.edit(at, at, new, breaks=True)]


# --- the requests --------------------------------------------------------------------------

REFUSING = (VIRTUAL, lsp.TEXT_DOCUMENT_PREPARE_RENAME, lsp.TEXT_DOCUMENT_RENAME,  # may say why not
            lsp.TEXT_DOCUMENT_FORMATTING)
UNKNOWN_URIS = ("file:///tmp/relaylens-fuzz/never-opened.relay", "untitled:Untitled-7",
                "file:///nonexistent%20dir/x.relay")


def _refused_unread(params: Any, code: int, message: str, opened: str = "") -> bool:
    """A request on a document never opened (and outside any workspace folder: the
    server has none here) is refused, naming it (server/documents.py)."""
    uri = getattr(getattr(params, "text_document", None), "uri", None)
    return (uri is not None and uri != opened and not uris.is_virtual(uri) and code == -32803
            and f"{uri} is not open in the editor" in message)


@dataclass
class Requests:
    """Requests fired without waiting, answered (or not) while the edits go on."""

    client: FuzzClient
    rng: random.Random
    doc: Doc
    functions: list[str]  # fused functions of the first build
    snapshots: list[str]  # its pass snapshots' file names
    tasks: list[asyncio.Task] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def position(self) -> lsp.Position:
        rng, text = self.rng, self.doc.text
        if rng.random() < 0.75:
            return self.doc.position(rng.randint(0, len(text)))
        lines = text.count("\n")
        return rng.choice((lsp.Position(line=lines + rng.randint(1, 50), character=0),
                           lsp.Position(line=rng.randint(0, lines), character=rng.randint(200, 10_000)),
                           lsp.Position(line=2**31 - 1, character=2**31 - 1),
                           lsp.Position(line=0, character=2**31 - 1)))

    def document(self) -> lsp.TextDocumentIdentifier:
        rng = self.rng
        if rng.random() < 0.85:
            return self.doc.ident
        if rng.random() < 0.5:
            return lsp.TextDocumentIdentifier(rng.choice(UNKNOWN_URIS))
        return lsp.TextDocumentIdentifier(self.virtual_uri())

    def virtual_uri(self) -> str:
        rng, doc = self.rng, self.doc
        if rng.random() < 0.1:
            return rng.choice(("relaylens:/nope/x.ll?uri=x", "relaylens:/llvm/x.ll",
                               "relaylens:/pass/FuseOps.relay?uri=y", "file:///x.relay",
                               "relaylens:/llvm/module.ll?uri=" + doc.uri + "&version=two"))
        fn = rng.choice(self.functions)
        kind, name = rng.choice((("llvm", "module.ll"), ("llvm", "module.opt.ll"), ("llvm", f"{fn}.ll"),
                                 ("llvm", f"{fn}.opt.ll"), ("schedule", f"{fn}.txt"),
                                 ("pass", rng.choice(self.snapshots)), ("pass", "99-FuseOps.relay"),
                                 ("llvm", "tvmgen_default_fused_nothing.ll")))
        version = rng.choice((None, None, doc.version, doc.version, doc.version - 1, 1, doc.version + 5))
        target = doc.uri if rng.random() < 0.9 else rng.choice(UNKNOWN_URIS)
        return uris.make(kind, name, target, version)

    def fire(self, step: int) -> None:
        rng = self.rng
        method = rng.choice((lsp.TEXT_DOCUMENT_HOVER, lsp.TEXT_DOCUMENT_DEFINITION,
                             lsp.TEXT_DOCUMENT_REFERENCES, lsp.TEXT_DOCUMENT_CODE_LENS,
                             lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL, lsp.TEXT_DOCUMENT_COMPLETION,
                             lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, VIRTUAL, VIRTUAL,
                             lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, lsp.TEXT_DOCUMENT_SIGNATURE_HELP,
                             lsp.TEXT_DOCUMENT_FOLDING_RANGE, lsp.TEXT_DOCUMENT_FORMATTING,
                             lsp.TEXT_DOCUMENT_PREPARE_RENAME, lsp.TEXT_DOCUMENT_RENAME,
                             "relaylens/lineMap", "relaylens/snapshots"))
        doc = self.document()
        params: Any
        if method == lsp.TEXT_DOCUMENT_HOVER:
            params = lsp.HoverParams(doc, self.position())
        elif method == lsp.TEXT_DOCUMENT_DEFINITION:
            params = lsp.DefinitionParams(doc, self.position())
        elif method == lsp.TEXT_DOCUMENT_REFERENCES:
            params = lsp.ReferenceParams(text_document=doc, position=self.position(),
                                         context=lsp.ReferenceContext(include_declaration=rng.random() < 0.5))
        elif method == lsp.TEXT_DOCUMENT_CODE_LENS:
            params = lsp.CodeLensParams(doc)
        elif method == lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL:
            params = lsp.DocumentSymbolParams(doc)
        elif method == lsp.TEXT_DOCUMENT_COMPLETION:
            params = lsp.CompletionParams(doc, self.position())
        elif method == lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL:
            params = lsp.SemanticTokensParams(doc)
        elif method == lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT:
            params = lsp.DocumentHighlightParams(doc, self.position())
        elif method == lsp.TEXT_DOCUMENT_SIGNATURE_HELP:
            params = lsp.SignatureHelpParams(doc, self.position())
        elif method == lsp.TEXT_DOCUMENT_FOLDING_RANGE:
            params = lsp.FoldingRangeParams(doc)
        elif method == lsp.TEXT_DOCUMENT_FORMATTING:
            params = lsp.DocumentFormattingParams(doc, lsp.FormattingOptions(tab_size=2, insert_spaces=True))
        elif method == lsp.TEXT_DOCUMENT_PREPARE_RENAME:
            params = lsp.PrepareRenameParams(doc, self.position())
        elif method == lsp.TEXT_DOCUMENT_RENAME:
            params = lsp.RenameParams(text_document=doc, position=self.position(),
                                      new_name=rng.choice(("%z", "renamed", "@g", "", "1x", "let", "é")))
        elif method == VIRTUAL:
            params = {"uri": self.virtual_uri()} if rng.random() < 0.95 else {"url": 3}
        else:
            params = {"uri": doc.uri}
        self.counts[method] = self.counts.get(method, 0) + 1
        what = f"step {step} (version {self.doc.version}): {method} {_brief(params)}"
        self.tasks.append(asyncio.ensure_future(self._ask(what, method, params)))

    async def _ask(self, what: str, method: str, params: Any) -> None:
        try:
            kind, result = await answer(self.client, method, params)
        except asyncio.TimeoutError:
            self.failures.append(f"{what}: no answer within {ANSWER_SECONDS:.0f} s")
            return
        except Exception as err:  # noqa: BLE001 -- the server died, or answered garbage
            self.failures.append(f"{what}: {type(err).__name__}: {err}")
            return
        if kind == "error":
            code, message = result
            if code not in LSP_ERRORS:
                self.failures.append(f"{what}: error {code}: {message}")
            elif method not in REFUSING and not _refused_unread(params, code, message, self.doc.uri):
                self.failures.append(f"{what}: refused ({code}: {message})")
            return
        problem = self._check(method, params, result)
        if problem:
            self.failures.append(f"{what}: {problem}: {_brief(result)}")

    def _check(self, method: str, params: Any, result: Any) -> str | None:
        if method == lsp.TEXT_DOCUMENT_CODE_LENS and not isinstance(result, (list, tuple)):
            return "codeLens is not a list"
        if method == lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL and result is not None and len(result.data) % 5:
            return "semantic tokens are not quintuples"
        if method == VIRTUAL and not isinstance(_get(result, "text"), str):
            return "a virtual document without text"
        if method == lsp.TEXT_DOCUMENT_HOVER and result is not None and not result.contents.value:
            return "an empty hover"
        return None

    async def drain(self) -> None:
        tasks, self.tasks = self.tasks, []
        if tasks:
            await asyncio.gather(*tasks)


# --- the random sequence ----------------------------------------------------------------


@dataclass
class Kill:
    version: int
    pid: int
    restarts: int
    mid_build: bool  # the status said this version's build was running


async def settle(client: FuzzClient, doc: Doc) -> lsp.PublishDiagnosticsParams:
    """The fast path's diagnostics of the current version (no edit is sent meanwhile)."""
    return await client.seen.until(f"diagnostics of version {doc.version}", published_of(doc.uri, doc.version),
                                   timeout=ANSWER_SECONDS)


async def let_a_build_run(client: FuzzClient, doc: Doc, save: bool) -> bool:
    """If the current text has no error, wait until its build runs (or has ended)."""
    if errors_of(await settle(client, doc)):
        return False
    if save:
        doc.save()
    await client.seen.until(f"the build of version {doc.version} running",
                            running_of(doc.uri, doc.version))
    return True


async def kill_mid_build(client: FuzzClient, doc: Doc, rng: random.Random) -> Kill:
    """Mend the text, give it a size never built (no cache hit), save, and kill the worker
    once the build reports progress."""
    size = rng.choice(SIZES)
    changes = doc.undo_all()
    changes += resized(doc, size)
    version = doc.send(changes)
    assert await let_a_build_run(client, doc, save=True), f"the text of size {size} has errors"
    found = await status(client)
    worker = found["worker"]
    running = any(b["uri"] == doc.uri and b["version"] == version and b["state"] == "running"
                  for b in found["builds"])
    assert worker["state"] == "ready" and worker["pid"], found
    os.kill(worker["pid"], signal.SIGKILL)
    return Kill(version, worker["pid"], worker["restarts"], running)


async def crash_reported(client: FuzzClient, doc: Doc, kill: Kill) -> None:
    """With no edit since the kill: the build is reported crashed, on the document too."""
    finished = await client.seen.until(f"the end of the build of version {kill.version}",
                                       finished_of(doc.uri, kill.version))
    if finished["state"] == "done" and not kill.mid_build:
        return  # it ended between the progress report and the kill
    assert (finished["state"], finished["current"]) == ("crashed", True), finished
    published = last_published(client, doc.uri)
    crash = [d for d in published.diagnostics if d.source == BUILD_SOURCE]
    assert published.version == kill.version and len(crash) == 1 and crash[0].code == "worker", published
    assert f"(killed by SIGKILL) while building version {kill.version}" in crash[0].message


def server_errors(client: FuzzClient, since: int) -> str:
    """What the server logged on stderr since then, if it logged an error (a handler that
    fails answers empty and logs it; so does the worker for a bug in a stage)."""
    lines = client.stderr[since:]
    bad = any("relaylens.server: ERROR" in line or "Traceback" in line for line in lines)
    return "".join(lines) if bad else ""


async def fuzz(client: FuzzClient, model: str, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    original = corpus(model)
    doc = Doc(client, f"seed{seed}-{model}", original)
    stderr_before = len(client.stderr)
    first = await client.seen.until("the first build", finished_of(doc.uri, 1))
    assert first["state"] == "done", first
    kind, lenses = await answer(client, lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensParams(doc.ident))
    assert kind == "ok" and lenses, lenses
    expected = rows(lenses)
    functions = sorted({re.match(r"tvmgen_\w+", lens.command.tooltip)[0]  # the symbol; the title is for people
                        for lens in lenses if lens.command.title.startswith("ƒ ")})
    kind, found = await answer(client, "relaylens/snapshots", {"uri": doc.uri})
    assert kind == "ok" and found, found
    snapshots = [uris.parse(_get(p, "uri")).name for p in _get(found, "passes")]
    requests = Requests(client, rng, doc, functions, snapshots)
    kill_at = rng.randint(steps // 4, steps // 2)
    kill: Kill | None = None

    for step in range(steps):
        doc.send([c for _ in range(rng.choice((1, 1, 1, 2, 3))) for c in random_change(rng, doc)])
        if rng.random() < 0.15:
            doc.save()
        elif rng.random() < 0.04:
            doc.reopen()  # closed in the middle of whatever runs, and opened again
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            requests.fire(step)
        if step == kill_at:
            kill = await kill_mid_build(client, doc, rng)
            if rng.random() < 0.5:
                continue  # the next edits reach a server whose worker just died
            await crash_reported(client, doc, kill)
        pace = rng.random()
        if pace < 0.25:
            await settle(client, doc)
        elif pace < 0.45:
            await let_a_build_run(client, doc, save=rng.random() < 0.3)
        else:
            await asyncio.sleep(0)  # let answers in, and keep typing
        if step % 10 == 9:
            await requests.drain()

    # Mend the text (undo every edit, or replace it whole) and wait for its build.
    since = len(client.seen.events)
    if rng.random() < 0.5:
        changes = doc.undo_all()
    else:
        changes = [doc.edit(0, len(doc.text), original, undoable=False)]
        doc.undo.clear()
    assert doc.text == original
    last = doc.send(changes)
    done = await client.seen.until(f"the build of the last version ({last})", finished_of(doc.uri, last), since)
    assert (done["state"], done["current"]) == ("done", True), done
    await requests.drain()
    assert not requests.failures, f"seed {seed} on {model}:\n" + "\n".join(requests.failures)

    # The last version's diagnostics: published for it, empty (no build or crash left).
    published = last_published(client, doc.uri)
    assert published.version == last and list(published.diagnostics) == [], published
    assert any(m == lsp.WORKSPACE_CODE_LENS_REFRESH for m, _ in client.seen.events[since:])
    kind, lenses = await answer(client, lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensParams(doc.ident))
    assert kind == "ok" and rows(lenses) == expected
    kind, module = await answer(client, VIRTUAL, {"uri": uris.make("llvm", "module.ll", doc.uri, last)})
    assert kind == "ok" and _get(module, "text").startswith("; ModuleID"), module

    # The worker was killed once and replaced; the server is alive with nothing left over.
    assert kill is not None
    # (a save may build the killed version again: its first build is the one killed)
    killed = [_get(p, "state") for m, p in client.seen.events if finished_of(doc.uri, kill.version)(m, p)]
    assert killed and killed[0] in ("crashed", "cancelled", "done"), killed
    if killed[0] == "crashed":
        assert any(m.type == lsp.MessageType.Error and "killed by SIGKILL" in m.message
                   and doc.uri in m.message for m in client.log_messages)
    after = await status(client)
    assert after["worker"]["pid"] not in (None, kill.pid) and after["worker"]["state"] == "ready"
    assert after["worker"]["restarts"] > kill.restarts
    assert [b for b in after["builds"] if b["uri"] == doc.uri] == [], after["builds"]
    assert client._server.returncode is None
    assert not server_errors(client, stderr_before), server_errors(client, stderr_before)
    states = [_get(p, "state") for m, p in client.seen.events
              if m == FINISHED and _get(p, "uri") == doc.uri]
    print(f"seed {seed} on {model}: {steps} steps to version {last}, {sum(requests.counts.values())} "
          f"requests, builds: {states.count('done')} done, {states.count('cancelled')} cancelled, "
          f"{states.count('crashed')} crashed; killed {'mid-build' if kill.mid_build else 'after the build'}")
    doc.close()
    await client.seen.until("diagnostics cleared on close",
                            lambda m, p: m == PUBLISH and p.uri == doc.uri and p.version is None,
                            since, timeout=ANSWER_SECONDS)


def _cases(seeds: tuple[int, ...]) -> list[tuple[int, str]]:
    models = sorted(MODELS)
    return [(seed, models[seed % len(models)]) for seed in seeds]


@asyncio_module
@pytest.mark.parametrize(("seed", "model"), _cases(SEEDS))
async def test_random_edits_while_building(client: FuzzClient, seed: int, model: str) -> None:
    await fuzz(client, model, seed, STEPS)


@asyncio_module
@pytest.mark.slow
@pytest.mark.parametrize(("seed", "model"), _cases(tuple(range(100, 104))))
async def test_random_edits_while_building_longer(client: FuzzClient, seed: int, model: str) -> None:
    await fuzz(client, model, seed, 100)


# --- deterministic cases ------------------------------------------------------------------


@asyncio_module
async def test_requests_on_unknown_documents_and_past_the_end(client: FuzzClient) -> None:
    text = corpus("073.relay")
    stderr_before = len(client.stderr)
    doc = Doc(client, "edges-073.relay", text)
    assert (await client.seen.until("the build", finished_of(doc.uri, 1)))["state"] == "done"
    lines = text.count("\n")
    far = (lsp.Position(line=lines + 3, character=0), lsp.Position(line=2, character=5000),
           lsp.Position(line=2**31 - 1, character=2**31 - 1))
    for uri in (*UNKNOWN_URIS, uris.make("llvm", "module.ll", UNKNOWN_URIS[0], None)):
        ident = lsp.TextDocumentIdentifier(uri)
        for method, params in ((lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(ident, far[0])),
                               (lsp.TEXT_DOCUMENT_DEFINITION, lsp.DefinitionParams(ident, far[1])),
                               (lsp.TEXT_DOCUMENT_REFERENCES,
                                lsp.ReferenceParams(text_document=ident, position=far[2],
                                                    context=lsp.ReferenceContext(include_declaration=True))),
                               (lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensParams(ident)),
                               (lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL, lsp.DocumentSymbolParams(ident)),
                               (lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionParams(ident, far[0])),
                               (lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, lsp.SemanticTokensParams(ident))):
            kind, result = await answer(client, method, params)
            if uris.is_virtual(uri):  # never analysed: nothing to say
                assert kind == "ok" and not result, (uri, method, result)
            else:  # never read: refused, or empty when the answer needs no text (lenses)
                assert (kind == "error" and _refused_unread(params, *result)) or (kind == "ok" and not result), \
                    (uri, method, result)
        kind, result = await answer(client, VIRTUAL, {"uri": uris.make("llvm", "module.ll", uri, None)})
        assert kind == "error" and result[0] == -32803, (uri, result)
    # past the end of the real document: answers about its last character, or nothing
    for pos in far:
        for method, params in ((lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(doc.ident, pos)),
                               (lsp.TEXT_DOCUMENT_DEFINITION, lsp.DefinitionParams(doc.ident, pos)),
                               (lsp.TEXT_DOCUMENT_REFERENCES,
                                lsp.ReferenceParams(text_document=doc.ident, position=pos,
                                                    context=lsp.ReferenceContext(include_declaration=False))),
                               (lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionParams(doc.ident, pos)),
                               (lsp.TEXT_DOCUMENT_SIGNATURE_HELP, lsp.SignatureHelpParams(doc.ident, pos))):
            kind, result = await answer(client, method, params)
            assert kind == "ok", (method, pos, result)
    # past the end of the virtual documents (longer than the Relay text): nothing
    for vuri in (uris.make("llvm", "module.ll", doc.uri, 1), uris.make("pass", "0-input.relay", doc.uri, 1)):
        ident = lsp.TextDocumentIdentifier(vuri)
        for pos in (lsp.Position(line=10**6, character=0), far[2]):
            for method, params in ((lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(ident, pos)),
                                   (lsp.TEXT_DOCUMENT_DEFINITION, lsp.DefinitionParams(ident, pos))):
                kind, result = await answer(client, method, params)
                assert kind == "ok" and not result, (vuri, method, pos, result)
    kind, tokens = await answer(client, lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, lsp.SemanticTokensParams(doc.ident))
    assert kind == "ok" and tokens.data and len(tokens.data) % 5 == 0
    assert not server_errors(client, stderr_before), server_errors(client, stderr_before)
    doc.close()


@asyncio_module
async def test_a_request_with_params_the_protocol_forbids_is_answered(client: FuzzClient) -> None:
    """A negative line (LSP positions are unsigned): an InvalidParams error, not silence."""
    doc = Doc(client, "negative-073.relay", corpus("073.relay"))
    await settle(client, doc)
    with attrs.validators.disabled():  # this client's types refuse to make it otherwise
        below = lsp.Position(line=-1, character=0)
    for method, params in ((lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(doc.ident, below)),
                           (lsp.TEXT_DOCUMENT_DEFINITION, lsp.DefinitionParams(doc.ident, below))):
        kind, result = await answer(client, method, params)
        assert kind == "error" and result[0] == -32602 and "$.params.position" in result[1], (method, result)
    assert (await status(client))["worker"]["pid"]
    doc.close()


@asyncio_module
async def test_a_virtual_document_of_a_version_superseded_before_its_build(client: FuzzClient) -> None:
    """Asked for while its build is only due (edits have not settled), then the text moves
    on: the request is answered (an error: that version will not be built) at once, not
    after the server's 120 s wait."""
    text = corpus("073.relay")
    doc = Doc(client, "superseded-073.relay", text)
    assert (await client.seen.until("the build", finished_of(doc.uri, 1)))["state"] == "done"
    v2 = doc.send([doc.edit(0, 0, "// two\n")])
    waiting = [asyncio.ensure_future(answer(client, VIRTUAL, {"uri": uris.make("llvm", "module.ll", doc.uri, v)}))
               for v in (v2, None)]
    await status(client)  # both requests have reached the server, which is debouncing
    v3 = doc.send([doc.edit(0, 0, "// three\n")])
    assert (await client.seen.until("the build of version 3", finished_of(doc.uri, v3)))["state"] == "done"
    answers = await asyncio.wait_for(asyncio.gather(*waiting), 10)  # the server would wait 120 s
    # version 2 was never built (or, on a machine slow enough, its build started and was
    # cancelled, or even finished); the latest build was version 2's or 3's, or none
    for kind, result in answers:
        assert (kind == "error" and result[0] == -32803 and "version 2" in result[1]
                or kind == "ok" and result["version"] in (v2, v3)), answers
    doc.close()
