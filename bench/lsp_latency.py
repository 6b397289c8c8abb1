"""Language-server latency and memory: RelayLens beside mlir-lsp-server, with one client.

    python bench/lsp_latency.py [--quick] [--reps K] [--breaks B] [--requests R]
                                [--inputs resnet50,...] [--json out.json]
    python bench/lsp_latency.py --profile          # where the fast path's time goes
    sh bench/mlir_setup.sh                         # installs mlir-lsp-server (Debian mlir-16-tools)

Inputs: the corpus ResNet-50 (005.relay) and GPT-2 (002.relay), which lack their
#[metadata] weights (so they have errors and are never built); bench/build.py's
ResNet-50, fully typed and buildable (`resnet50-typed`, needs onnx); generated chains of
1,000 and 20,000 bindings `%k = add(%k-1, %k-1);` on a typed parameter.  Beside each, for
mlir-lsp-server, a chain of `arith.addf` with as many lines.

Both servers are driven by the same client (bench/lsp_client.py: JSON-RPC over stdio,
plain dicts), in two sessions per server and input:

  * opens: a fresh server (RelayLens with builds off), a small warm-up document, then the
    input opened K times under new URIs (each closed before the next):
    didOpen → its publishDiagnostics.
  * editing: a fresh server as an editor starts it (RelayLens builds on), the input
    opened once.  For RelayLens, the time from didOpen until codeLens is non-empty (the
    build, in the worker; "report kept on disk" when an earlier run built this very text
    and the worker answered from that build's report: server/slow/report_cache.py; the
    kernel cache alone: `relaylens cache --clear` first, or another text), then R
    codeLens requests.  K one-character edits on distinct
    lines from the middle down (a digit of an operand, `%149` → `%140`: an earlier
    value), each timed from didChange to the publishDiagnostics of its version; 0.3 s
    later (`--pause`) a hover, the first on that version; 0.3 s later the next edit: one
    edit and one look, as a person makes them.  (With `--pause 0` the edits follow each
    other as in typing, which RelayLens debounces by design, and each hover comes while
    the server still indexes the version.)  Then B statements (`--breaks`, 10) from the
    middle down are broken (the `)` that closes a Relay statement's call, the `:` of an
    MLIR one, replaced by a blank: a syntax error), edited while broken (the operand digit,
    as above) and mended, each edit timed the same way.  After another pause, R hovers and R
    definitions on operand uses near the middle; one of each beforehand is not timed
    (pygls builds its converters for a message type on first use).  Last, the resident
    memory (VmRSS, and the peak VmHWM) of the server process and of RelayLens's build
    worker (`relaylens/status` gives its pid).

Edits go as the server's textDocumentSync asks (incremental: a one-character range;
full: the whole text).  Times run from just before a message is written to just after
its answer is read.  K is 20 (`--reps`), R 100 (`--requests`).  p50 is the median, p95
the nearest-rank 95th percentile (of 20, the 19th; of 100, the 95th; of 5, the largest).  The machine has other work on it: the load
average before and after the run is printed under the table.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from lsp_client import LspClient  # noqa: E402 -- bench/ is not a package

CORPUS = HERE.parents[1] / "shared" / "corpus" / "relay"
INPUTS = ("resnet50", "gpt2", "resnet50-typed", "chain1000", "chain20000", "two-at-once")
LABELS = {"resnet50": "ResNet-50 (corpus 005)", "gpt2": "GPT-2 (corpus 002)",
          "resnet50-typed": "ResNet-50 typed (bench/build.py)", "chain1000": "chain of 1,000 adds",
          "chain20000": "chain of 20,000 adds", "two-at-once": "two documents at once"}
QUIET_CHANGE = "change a small document, nothing else in flight → its diagnostics"
QUIET_SECONDS = 0.3  # before each change of the small document: not typing (the server debounces typing: 150 ms)
BUSY_OFFSETS = (0.05, 0.4)  # s after a large open that a small document is changed (parse, typing)
RELAYLENS = "RelayLens"
MLIR = "mlir-lsp-server"
PUBLISH = "textDocument/publishDiagnostics"
GOALS = {"hover": 2.0, "definition": 2.0}  # p95, ms
CHANGE_GOALS = {"chain1000": 50.0, "chain20000": 150.0}  # didChange → diagnostics, ms
TWO_AT_ONCE_GOALS = {"open B right after A (both large) → B's": 500.0, "change a small document": 30.0}  # ms
MEMORY_GOAL_MB = 300.0  # RelayLens on ResNet-50, server + worker
WARM_UP = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(4), float32]) {\n  add(%x, %x)\n}\n'
WARM_UP_MLIR = "func.func @main(%a: f32) -> f32 {\n  %0 = arith.addf %a, %a : f32\n  return %0 : f32\n}\n"


# --- inputs ------------------------------------------------------------------------------


def relay_chain(n: int) -> str:
    """`n` bindings, each adding the previous one to itself, on a typed parameter."""
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(16), float32]) -> Tensor[(16), float32] {",
             "  %0 = add(%x, %x);"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1});" for k in range(1, n)]
    return "\n".join(lines + [f"  %{n - 1}", "}"]) + "\n"


def mlir_chain(lines: int) -> str:
    """A chain of `arith.addf` with `lines` lines in all (at least 5)."""
    n = max(lines - 3, 2)
    body = ["  %0 = arith.addf %arg0, %arg0 : tensor<16xf32>"]
    body += [f"  %{k} = arith.addf %{k - 1}, %{k - 1} : tensor<16xf32>" for k in range(1, n)]
    return "\n".join(["func.func @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {", *body,
                      f"  return %{n - 1} : tensor<16xf32>", "}"]) + "\n"


def typed_resnet50() -> str:
    path = HERE / "build.py"
    spec = importlib.util.spec_from_file_location("bench_build", path)
    if spec is None or not path.exists():
        raise SystemExit("error: resnet50-typed needs bench/build.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.load_model("resnet50").text


def load_input(key: str) -> str:
    if key == "resnet50":
        return (CORPUS / "005.relay").read_text()
    if key == "gpt2":
        return (CORPUS / "002.relay").read_text()
    if key == "resnet50-typed":
        return typed_resnet50()
    if key == "two-at-once":
        return relay_chain(20000)
    return relay_chain(int(key.removeprefix("chain")))


# --- where to edit and hover -------------------------------------------------------------

_BINDING = re.compile(r"^\s*%\w+\s*=\s*")
_USE = re.compile(r"%(\d+)\b")


@dataclass(frozen=True)
class Spot:
    line: int
    character: int


def edit_spots(text: str, k: int) -> list[Spot]:
    """`k` places to edit, one per binding line from the middle down (wrapping to the top):
    the last digit of the line's first numbered operand, when that digit is not 0 (it
    becomes 0, naming an earlier value)."""
    spots = []
    for i, line in enumerate(text.split("\n")):
        head = _BINDING.match(line)
        use = _USE.search(line, head.end()) if head else None
        if use is not None and use.group(1)[-1] != "0":
            spots.append(Spot(i, use.end(1) - 1))
    return _from_middle(spots, text.count("\n"), k)


def break_spots(text: str, k: int) -> list[tuple[Spot, str, Spot | None]]:
    """`k` statements to break and mend, one per binding line from the middle down: the
    character that closes the statement's operation (the last `)` of a Relay line, the
    `:` before an MLIR type), which a blank replaces; with it, the edit spot of that
    line (`edit_spots`) if it has one, to edit the statement while it is broken."""
    found = []
    for i, line in enumerate(text.split("\n")):
        head = _BINDING.match(line)
        if head is None:
            continue
        at = line.rfind(")") if ")" in line[head.end():] else line.find(" : ", head.end()) + 1
        if at > head.end():
            use = _USE.search(line, head.end())
            inside = Spot(i, use.end(1) - 1) if use is not None and use.group(1)[-1] != "0" and use.end(1) <= at \
                else None
            found.append((Spot(i, at), line[at], inside))
    lines = text.count("\n")
    ordered = [f for f in found if f[0].line >= lines // 2] + [f for f in found if f[0].line < lines // 2]
    return [ordered[i % len(ordered)] for i in range(k)] if ordered else []


def use_spots(text: str, k: int) -> list[Spot]:
    """`k` operand uses (the last `%N` of a binding line), from the middle down: the
    cursor on the first character of the name after `%`."""
    spots = []
    for i, line in enumerate(text.split("\n")):
        head = _BINDING.match(line)
        uses = list(_USE.finditer(line, head.end())) if head else []
        if uses:
            spots.append(Spot(i, uses[-1].start() + 1))
    return _from_middle(spots, text.count("\n"), k)


def _from_middle(spots: list[Spot], lines: int, k: int) -> list[Spot]:
    if not spots:
        raise SystemExit("error: the input has no binding line to edit or hover on")
    ordered = [s for s in spots if s.line >= lines // 2] + [s for s in spots if s.line < lines // 2]
    return [ordered[i % len(ordered)] for i in range(k)]


# --- figures -----------------------------------------------------------------------------


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(math.ceil(0.95 * len(ordered)) - 1, 0)]


@dataclass
class Figures:
    """One server on one input: samples in ms per measure, memory in MB, notes."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    memory: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, measure: str, seconds: float) -> None:
        self.samples.setdefault(measure, []).append(seconds * 1000)

    def as_json(self) -> dict:
        return {"measures": {m: {"p50": p50(s), "p95": p95(s), "samples_ms": s}
                             for m, s in self.samples.items()},
                "memory_mb": self.memory, "notes": self.notes}


def memory_mb(pid: int | None) -> tuple[float, float] | None:
    """(VmRSS, VmHWM) of a process in MB, or None when it is gone."""
    if pid is None:
        return None
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


# --- one server, one input ---------------------------------------------------------------


@dataclass
class Server:
    name: str
    command: list[str]
    language: str
    suffix: str

    @property
    def ours(self) -> bool:
        return self.name == RELAYLENS


class Document:
    """The client's copy of one open document: its text, version and how to edit it."""

    def __init__(self, client: LspClient, uri: str, language: str, text: str, incremental: bool) -> None:
        self.client, self.uri, self.language = client, uri, language
        self.lines = text.split("\n")
        self.version = 1
        self.incremental = incremental

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def diagnostics_of(self, version: int):
        uri = self.uri
        return self.client.expect(PUBLISH, lambda p: p.get("uri") == uri and p.get("version") == version)

    def open(self) -> tuple[asyncio.Future, float]:
        waiting = self.diagnostics_of(1)
        sent = self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": self.language, "version": 1, "text": self.text}})
        return waiting, sent

    def close(self) -> None:
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": self.uri}})

    def replace(self, spot: Spot, char: str) -> tuple[asyncio.Future, float]:
        """Replace the character at `spot` with `char`, as the next version."""
        line = self.lines[spot.line]
        self.lines[spot.line] = line[:spot.character] + char + line[spot.character + 1:]
        self.version += 1
        if self.incremental:
            change = {"range": {"start": {"line": spot.line, "character": spot.character},
                                "end": {"line": spot.line, "character": spot.character + 1}},
                      "text": char}
        else:
            change = {"text": self.text}
        waiting = self.diagnostics_of(self.version)
        sent = self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version}, "contentChanges": [change]})
        return waiting, sent

    async def at(self, method: str, spot: Spot) -> tuple[object, float]:
        return await self.client.timed_request(method, {
            "textDocument": {"uri": self.uri}, "position": {"line": spot.line, "character": spot.character}})


def _incremental(caps: dict) -> bool:
    sync = caps.get("textDocumentSync")
    kind = sync.get("change") if isinstance(sync, dict) else sync
    return kind == 2


async def measure_opens(server: Server, text: str, reps: int, logs: Path, figures: Figures,
                        timeout: float) -> None:
    """A fresh server (builds off), a warm-up document, then `reps` opens of `text`."""
    client = await LspClient.start(server.command, logs / f"{server.name}-opens.log")
    try:
        caps = await client.initialize({"build": {"enabled": False}} if server.ours else None)
        warm = WARM_UP if server.ours else WARM_UP_MLIR
        doc = Document(client, f"file:///tmp/lsp-bench/warm-up{server.suffix}", server.language, warm,
                       _incremental(caps))
        waiting, sent = doc.open()
        await client.received(waiting, sent, timeout)
        doc.close()
        for i in range(reps):
            doc = Document(client, f"file:///tmp/lsp-bench/open{i}/input{server.suffix}", server.language,
                           text, _incremental(caps))
            waiting, sent = doc.open()
            figures.add("open → diagnostics", (await client.received(waiting, sent, timeout))[1])
            doc.close()
    finally:
        await client.close()


async def measure_two_at_once(server: Server, big: str, small: str, reps: int, logs: Path, figures: Figures,
                              timeout: float) -> None:
    """A fresh server (builds off), a warm-up document; then `reps` times: open A and at
    once B (both `big`), timed to each one's first diagnostics, and both closed once
    all their diagnostics are in; then `small` opened, changed `reps` times with
    nothing else in flight, then `reps` times for each of BUSY_OFFSETS: `big` opened
    and `small` changed that many seconds later, each change timed from didChange to
    its diagnostics.  Every change of `small` comes QUIET_SECONDS after anything else
    happened to it, so the server never takes it for typing (which it debounces)."""
    client = await LspClient.start(server.command, logs / f"{server.name}-two-at-once.log")
    try:
        caps = await client.initialize({"build": {"enabled": False}} if server.ours else None)
        incremental = _incremental(caps)
        warm = Document(client, f"file:///tmp/lsp-bench/warm-up{server.suffix}", server.language,
                        WARM_UP if server.ours else WARM_UP_MLIR, incremental)
        waiting, sent = warm.open()
        await client.received(waiting, sent, timeout)
        warm.close()
        for i in range(reps):
            a = Document(client, f"file:///tmp/lsp-bench/two{i}/a{server.suffix}", server.language, big, incremental)
            b = Document(client, f"file:///tmp/lsp-bench/two{i}/b{server.suffix}", server.language, big, incremental)
            waiting_a, sent_a = a.open()
            waiting_b, sent_b = b.open()
            figures.add("open B right after A (both large) → B's first diagnostics",
                        (await client.received(waiting_b, sent_b, timeout))[1])
            figures.add("open B right after A (both large) → A's first diagnostics",
                        (await client.received(waiting_a, sent_a, timeout))[1])
            await _settled(client, [a, b], timeout)
            a.close()
            b.close()
        little = Document(client, f"file:///tmp/lsp-bench/small{server.suffix}", server.language, small, incremental)
        waiting, sent = little.open()
        await client.received(waiting, sent, timeout)
        spots = edit_spots(small, reps * (len(BUSY_OFFSETS) + 1))
        for i in range(reps):
            await asyncio.sleep(QUIET_SECONDS)
            waiting, sent = little.replace(spots[-1 - i], "0")
            figures.add(QUIET_CHANGE, (await client.received(waiting, sent, timeout))[1])
        for i in range(reps):
            for j, offset in enumerate(BUSY_OFFSETS):
                await asyncio.sleep(QUIET_SECONDS)  # the small document quiet, as in QUIET_CHANGE
                large = Document(client, f"file:///tmp/lsp-bench/busy{i}-{j}/large{server.suffix}", server.language,
                                 big, incremental)
                large.open()
                await asyncio.sleep(offset)
                waiting, sent = little.replace(spots[i * len(BUSY_OFFSETS) + j], "0")
                figures.add(f"change a small document {offset:g} s after a large open → its diagnostics",
                            (await client.received(waiting, sent, timeout))[1])
                await _settled(client, [large], timeout)
                large.close()
        little.close()
    finally:
        await client.close()


async def _settled(client: LspClient, docs: list[Document], timeout: float) -> None:
    """Wait until the server answers a request after each of `docs` is analysed: a
    document symbol request on each (served once its analysis is done, or from it)."""
    for doc in docs:
        await client.request("textDocument/documentSymbol", {"textDocument": {"uri": doc.uri}}, timeout)


async def measure_editing(server: Server, text: str, reps: int, requests: int, logs: Path, figures: Figures,
                          timeout: float, lens_timeout: float, build: bool, pause: float, breaks: int = 0) -> None:
    """A fresh server as an editor starts it: open, lenses (ours), edits, hovers,
    definitions, memory."""
    client = await LspClient.start(server.command, logs / f"{server.name}-editing.log")
    try:
        options = {"build": {"enabled": build}} if server.ours else None
        caps = await client.initialize(options)
        doc = Document(client, f"file:///tmp/lsp-bench/input{server.suffix}", server.language, text,
                       _incremental(caps))
        built = client.expect("relaylens/buildFinished",
                              lambda p: p.get("uri") == doc.uri and p.get("version") == 1)
        waiting, opened = doc.open()
        params, _ = await client.received(waiting, opened, timeout)
        if server.ours and build:
            await _lenses(doc, params, built, opened, requests, figures, lens_timeout)
        uses = use_spots(text, requests)  # edits keep every line's length: the spots stay
        for method in ("textDocument/hover", "textDocument/definition"):
            await doc.at(method, uses[0])  # untimed: pygls makes its converters on first use
        for i, spot in enumerate(edit_spots(text, reps)):
            await asyncio.sleep(pause)
            waiting, sent = doc.replace(spot, "0")
            figures.add("change → diagnostics", (await client.received(waiting, sent, timeout))[1])
            await asyncio.sleep(pause)
            use = uses[i % len(uses)]
            figures.add("first hover after an edit", (await doc.at("textDocument/hover", use))[1])
        for spot, closer, inside in break_spots(text, breaks):  # break a statement, edit it, mend it
            for measure, where, char in (("change → diagnostics, breaking", spot, " "),
                                         ("change → diagnostics, inside the broken statement", inside, "0"),
                                         ("change → diagnostics, mending", spot, closer)):
                if where is None:
                    continue
                if doc.lines[where.line][where.character] == char:  # made 0 by an edit above
                    char = "1"
                await asyncio.sleep(pause)
                waiting, sent = doc.replace(where, char)
                figures.add(measure, (await client.received(waiting, sent, timeout))[1])
                if char == " ":  # a look right after the statement broke, while the module is typed again
                    use = uses[len(figures.samples.get("first hover after a breaking edit", ())) % len(uses)]
                    figures.add("first hover after a breaking edit", (await doc.at("textDocument/hover", use))[1])
        await asyncio.sleep(pause)
        for method, measure in (("textDocument/hover", "hover"), ("textDocument/definition", "definition")):
            answered = 0
            for spot in uses:
                result, seconds = await doc.at(method, spot)
                figures.add(measure, seconds)
                answered += bool(result)
            if answered < len(uses):
                figures.notes.append(f"{measure}: {len(uses) - answered} of {len(uses)} answers were empty")
        _memory(figures, "server", client.pid)
        if server.ours:
            status = await client.request("relaylens/status", None)
            _memory(figures, "worker", (status.get("worker") or {}).get("pid"))
    finally:
        await client.close()


async def _lenses(doc: Document, published: dict, built: asyncio.Future, opened: float, reps: int,
                  figures: Figures, timeout: float) -> None:
    """Time from didOpen to a non-empty codeLens answer, then `reps` codeLens requests."""
    if any(d.get("severity") == 1 for d in published.get("diagnostics", ())):
        figures.notes.append("code lenses: none (the file has errors, so it is not built)")
        return
    try:
        params, _ = await doc.client.received(built, opened, timeout)
    except TimeoutError:
        figures.notes.append(f"code lenses: the build did not finish within {timeout:.0f} s")
        return
    lenses, _ = await doc.client.timed_request("textDocument/codeLens", {"textDocument": {"uri": doc.uri}})
    if params.get("state") != "done" or not lenses:
        figures.notes.append(f"code lenses: none (build {params.get('state')})")
        return
    kept = bool(params.get("kept"))  # nothing built: the report of a build of this very text, kept on disk
    figures.add("lenses ready (report kept on disk)" if kept else "lenses ready (build)", time.perf_counter() - opened)
    for _ in range(reps):
        figures.add("codeLens", (await doc.client.timed_request(
            "textDocument/codeLens", {"textDocument": {"uri": doc.uri}}))[1])
    figures.notes.append(f"code lenses: {len(lenses)} after " + (
        "reading the report kept on disk" if kept else f"a build of {params.get('seconds', 0):.1f} s"))


def _memory(figures: Figures, who: str, pid: int | None) -> None:
    found = memory_mb(pid)
    if found is not None:
        figures.memory[f"{who} RSS"], figures.memory[f"{who} peak"] = found


# --- the run -----------------------------------------------------------------------------


def find_mlir(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    found = shutil.which("mlir-lsp-server") or sorted(glob.glob("/usr/lib/llvm-*/bin/mlir-lsp-server"))
    return found if isinstance(found, str) else (found[-1] if found else None)


async def run(args, inputs: dict[str, str], servers: list[Server], logs: Path) -> dict:
    results: dict[str, dict[str, Figures]] = {}
    for key, text in inputs.items():
        lines = text.count("\n")
        results[key] = {}
        for server in servers:
            body = text if server.ours else mlir_chain(lines)
            figures = results[key][server.name] = Figures()
            print(f"{LABELS[key]}: {server.name} ...", file=sys.stderr, flush=True)
            if key == "two-at-once":
                small = relay_chain(1000) if server.ours else mlir_chain(1003)
                await measure_two_at_once(server, body, small, args.opens, logs, figures, args.timeout)
                continue
            await measure_opens(server, body, args.opens, logs, figures, args.timeout)
            await measure_editing(server, body, args.reps, args.requests, logs, figures, args.timeout,
                                  args.lens_timeout, not args.no_build, args.pause, args.breaks)
    return results


MEASURES = ("open B right after A (both large) → B's first diagnostics",
            "open B right after A (both large) → A's first diagnostics",
            QUIET_CHANGE,
            *(f"change a small document {offset:g} s after a large open → its diagnostics" for offset in BUSY_OFFSETS),
            "open → diagnostics", "change → diagnostics", "change → diagnostics, breaking",
            "change → diagnostics, inside the broken statement", "change → diagnostics, mending",
            "first hover after an edit", "first hover after a breaking edit", "hover", "definition", "codeLens", "lenses ready (build)",
            "lenses ready (report kept on disk)")


def _ms(samples: list[float] | None, which) -> str:
    if not samples:
        return "—"
    value = which(samples)
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms" if value >= 10 else f"{value:.2f} ms"


def tables(results: dict[str, dict[str, Figures]], inputs: dict[str, str], names: list[str]) -> list[str]:
    head = "| input | lines | measure | " + " | ".join(f"{n} p50 | {n} p95" for n in names) + " |"
    out = [head, "|" + " --- |" * 3 + " ---: |" * (2 * len(names))]
    for key, by_server in results.items():
        for measure in MEASURES:
            cells = [(_ms(by_server[n].samples.get(measure), p50), _ms(by_server[n].samples.get(measure), p95))
                     for n in names]
            if all(c == ("—", "—") for c in cells):
                continue
            if measure.startswith("lenses ready"):
                cells = [(c[0], "—") for c in cells]
            out.append(f"| {LABELS[key]} | {inputs[key].count(chr(10)):,} | {measure} | "
                       + " | ".join(f"{a} | {b}" for a, b in cells) + " |")
    out += ["", "| input | RelayLens server RSS (peak) | build worker RSS (peak) | both | "
            f"{MLIR} RSS (peak) |", "| --- | ---: | ---: | ---: | ---: |"]
    for key, by_server in results.items():
        ours = by_server[RELAYLENS].memory
        theirs = by_server[MLIR].memory if MLIR in by_server else {}

        def mb(mem: dict, who: str) -> str:
            return f"{mem[who + ' RSS']:.0f} MB ({mem[who + ' peak']:.0f})" if who + " RSS" in mem else "—"

        both = (f"{ours['server RSS'] + ours['worker RSS']:.0f} MB"
                if "server RSS" in ours and "worker RSS" in ours else "—")
        out.append(f"| {LABELS[key]} | {mb(ours, 'server')} | {mb(ours, 'worker')} | {both} | {mb(theirs, 'server')} |")
    return out


def goals(results: dict[str, dict[str, Figures]]) -> list[str]:
    out = []
    for key, by_server in results.items():
        ours = by_server[RELAYLENS]
        for measure, limit in GOALS.items():
            if measure in ours.samples:
                value = p95(ours.samples[measure])
                out.append(f"- {measure} p95 ≤ {limit:g} ms on {LABELS[key]}: {value:.2f} ms, "
                           f"{'met' if value <= limit else 'MISSED'}")
        if key in CHANGE_GOALS and "change → diagnostics" in ours.samples:
            s = ours.samples["change → diagnostics"]
            out.append(f"- didChange → diagnostics ≤ {CHANGE_GOALS[key]:g} ms on {LABELS[key]}: "
                       f"p50 {p50(s):.0f} ms, p95 {p95(s):.0f} ms, "
                       f"{'met' if p50(s) <= CHANGE_GOALS[key] else 'MISSED'} (judged on p50)")
        for measure, samples in ours.samples.items():
            limit = next((ms for start, ms in TWO_AT_ONCE_GOALS.items() if measure.startswith(start)), None)
            if limit is not None:
                out.append(f"- {measure} ≤ {limit:g} ms: p50 {p50(samples):.0f} ms, p95 {p95(samples):.0f} ms, "
                           f"{'met' if p95(samples) <= limit else 'MISSED'} (judged on p95)")
        if key.startswith("resnet50") and "server RSS" in ours.memory:
            total = ours.memory["server RSS"] + ours.memory.get("worker RSS", 0.0)
            peak = ours.memory["server peak"] + ours.memory.get("worker peak", 0.0)
            out.append(f"- memory ≤ {MEMORY_GOAL_MB:g} MB on {LABELS[key]} (server + worker): {total:.0f} MB "
                       f"(peaks {peak:.0f} MB), {'met' if peak <= MEMORY_GOAL_MB else 'MISSED'} (judged on peaks)")
    return out


def machine(mlir: str | None) -> list[str]:
    """The machine (bench/parse.py's lines), pygls, and the mlir-lsp-server compared."""
    import subprocess
    from importlib.metadata import version

    spec = importlib.util.spec_from_file_location("bench_parse", HERE / "parse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    lines = module.machine() + [f"- pygls {version('pygls')}, lsprotocol {version('lsprotocol')}"]
    if mlir is not None:
        try:
            out = subprocess.run([mlir, "--version"], capture_output=True, text=True, timeout=10).stdout
            lines.append(f"- {MLIR}: {mlir} ({' '.join(out.split()[:4])})")
        except (OSError, subprocess.SubprocessError):
            lines.append(f"- {MLIR}: {mlir}")
    return lines


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"


# --- profile -----------------------------------------------------------------------------


def profile(keys: list[str]) -> int:
    """Where `check_text` spends its time (the fast path of one didChange), per stage."""
    import cProfile
    import pstats

    from importlib import import_module

    check = import_module("relaylens.compiler.check")
    parse_mod = import_module("relaylens.compiler.parser.parse")  # the module, not the function
    lower = import_module("relaylens.compiler.parser.lower")

    clock: dict[str, float] = {}

    def timed(stage, fn):
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                clock[stage] = clock.get(stage, 0.0) + time.perf_counter() - start
        return wrapper

    patches = [(parse_mod, "scan", "scan (comments, items)"),
               (parse_mod, "_parse_with_recovery", "LALR parse (lalr_driver.py on Lark's tables, lexer included)"),
               (lower.Lowerer, "define_function", "lower to IR + names + symbol index"),
               (lower.Lowerer, "check_undefined", "undefined names"),
               (check, "infer_types", "type inference")]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, stage in patches:
        setattr(owner, name, timed(stage, getattr(owner, name)))
    try:
        check.check_text(WARM_UP, "warm-up")
        for key in keys:
            text = load_input(key)
            runs = 3
            clock.clear()
            start = time.perf_counter()
            for _ in range(runs):
                check.check_text(text, "bench.relay")
            total = (time.perf_counter() - start) / runs * 1000
            print(f"\n{LABELS[key]} ({text.count(chr(10)):,} lines): check_text {total:,.0f} ms (mean of {runs})")
            print("| stage | ms | share |\n| --- | ---: | ---: |")
            for stage, seconds in clock.items():
                ms = seconds / runs * 1000
                print(f"| {stage} | {ms:,.0f} | {ms / total:.0%} |")
            rest = total - sum(clock.values()) / runs * 1000
            print(f"| rest (sorting diagnostics, gc) | {rest:,.0f} | {rest / total:.0%} |")
            prof = cProfile.Profile()
            prof.runcall(check.check_text, text, "bench.relay")
            print("\ncProfile, by own time:")
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(12)
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)
    return 0


# --- main --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", default=",".join(INPUTS), help=f"comma-separated, of {', '.join(INPUTS)}")
    ap.add_argument("--reps", type=int, default=20, help="edits (each followed by one hover)")
    ap.add_argument("--requests", type=int, default=100, help="hovers, definitions and lens requests")
    ap.add_argument("--opens", type=int, default=5, help="opens per input")
    ap.add_argument("--breaks", type=int, default=10,
                    help="statements broken, edited while broken and mended (3 edits each)")
    ap.add_argument("--quick", action="store_true", help="5 edits, 3 breaks, 20 requests, 2 opens")
    ap.add_argument("--json", type=Path, help="write every sample here")
    ap.add_argument("--mlir", help="the mlir-lsp-server binary (default: on PATH or /usr/lib/llvm-*/bin)")
    ap.add_argument("--no-mlir", action="store_true", help="RelayLens alone")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one answer")
    ap.add_argument("--lens-timeout", type=float, default=600.0, help="seconds to wait for a build")
    ap.add_argument("--pause", type=float, default=0.3,
                    help="seconds between an edit's diagnostics and the next edit (0: typing)")
    ap.add_argument("--no-build", action="store_true", help="RelayLens's slow path off in the editing session")
    ap.add_argument("--server-python", default=sys.executable,
                    help="the Python that runs RelayLens's server (another checkout's venv: its figures)")
    ap.add_argument("--profile", action="store_true", help="time check_text's stages on the chains, and stop")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.inputs.split(",") if k.strip()]
    for key in keys:  # any chainN: a chain of N adds (chain100000, the longest a user reported)
        if re.fullmatch(r"chain[1-9][0-9]*", key) and key not in LABELS:
            LABELS[key] = f"chain of {int(key[5:]):,} adds"
    unknown = [k for k in keys if k not in INPUTS and not re.fullmatch(r"chain[1-9][0-9]*", k)]
    if unknown:
        ap.error(f"unknown input(s) {', '.join(unknown)}; choose from {', '.join(INPUTS)}")
    if args.profile:
        return profile([k for k in keys if k.startswith("chain")] or ["chain20000"])
    if args.quick:
        args.reps, args.breaks, args.requests, args.opens = 5, 3, 20, 2
    servers = [Server(RELAYLENS, [args.server_python, "-m", "relaylens.server"], "relay", ".relay")]
    mlir = None if args.no_mlir else find_mlir(args.mlir)
    if mlir is not None:
        servers.append(Server(MLIR, [mlir], "mlir", ".mlir"))
    elif not args.no_mlir:
        print(f"note: no {MLIR} found; run `sh bench/mlir_setup.sh` (Debian: mlir-16-tools) for the comparison",
              file=sys.stderr)
    inputs = {key: load_input(key) for key in keys}
    before = load()
    logs = Path(tempfile.mkdtemp(prefix="lsp-latency-"))
    try:
        results = asyncio.run(run(args, inputs, servers, logs))
    except Exception as err:  # noqa: BLE001 -- say what failed and where its logs are
        print(f"error: {type(err).__name__}: {err} (server logs in {logs})", file=sys.stderr)
        return 1
    shutil.rmtree(logs, ignore_errors=True)
    names = [s.name for s in servers]
    print("\n".join(tables(results, inputs, names)))
    print()
    print("\n".join(goals(results)))
    for key, by_server in results.items():
        for name, figures in by_server.items():
            for note in figures.notes:
                print(f"- {LABELS[key]}, {name}: {note}")
    print(f"\n{args.opens} opens, {args.reps} edits, {args.requests} of each request; edits {args.pause:g} s apart; "
          f"builds {'off' if args.no_build else 'on'} while editing; "
          f"load average before {before}, after {load()}, on {os.cpu_count()} CPUs")
    print("\n".join(machine(mlir)))
    if args.json:
        args.json.write_text(json.dumps({
            "reps": args.reps, "requests": args.requests, "opens": args.opens, "pause": args.pause, "build": not args.no_build,
            "load_before": before, "load_after": load(), "mlir_lsp_server": mlir,
            "results": {k: {n: f.as_json() for n, f in v.items()} for k, v in results.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
