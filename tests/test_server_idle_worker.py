"""The build worker exits when idle, and the editor keeps what it showed (issue 16, memory).

With `{"worker": {"idleExitSeconds": 0.5}}` the worker of a server exits half a second
after its last message; the lenses, hovers, virtual documents (LLVM IR, schedules, pass
snapshots, views without debug information) and the line map of the last build still
answer from the reports the server keeps, with no worker running and without starting one;
an assembly view not made yet and a graph start a worker again (the graph's runs the
passes again from the report's text; the server never loads LLVM), an edit
builds in a new worker whose progress says it is starting; there is never more than one
worker.  The texts travel and are kept compressed (report.py, `Packed`): each view is the
very text an in-process build makes.  Waits are for notifications, or polls of
`relaylens/status` with a deadline, never a timed assertion.
"""

from __future__ import annotations

import asyncio
import pickle
import re
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from build_events import BuildEvents
from relaylens.server.slow import uris
from relaylens.server.slow.report import Packed, pack_texts, share_texts, unpack
from relaylens.server.slow.reporting import build_report

ROOT = Path(__file__).resolve().parents[1]
MNIST = (ROOT / "examples" / "mnist.relay").read_text(encoding="utf-8")
IDLE = 0.5  # seconds
asyncio_module = pytest.mark.asyncio(loop_scope="module")
EVENTS = BuildEvents()
FINISHES = EVENTS.seen


async def finished(uri: str, version: int, timeout: float = 120) -> dict:
    return await EVENTS.of(uri, version, timeout=timeout)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    EVENTS.listen(lsp_client)
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
    capabilities = lsp.ClientCapabilities(
        window=lsp.WindowClientCapabilities(work_done_progress=True),
        workspace=lsp.WorkspaceClientCapabilities(
            code_lens=lsp.CodeLensWorkspaceClientCapabilities(refresh_support=True)))
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=capabilities, initialization_options={"worker": {"idleExitSeconds": IDLE}}))
    yield
    await lsp_client.shutdown_session()


def _get(result, name: str):
    return result[name] if isinstance(result, dict) else getattr(result, name)


async def status(client: LanguageClient):
    return _get(await client.protocol.send_request_async("relaylens/status", {}), "worker")


def workers_of(server: int) -> list[int]:
    """The build worker processes whose parent is the server (zombies count: not reaped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == server and b"relaylens.server.slow.worker" in cmdline:
            found.append(int(entry.name))
    return found


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def idle_exit(client: LanguageClient, server: int, exits: int, deadline: float = 60) -> None:
    """Wait until the worker has exited when idle `exits` times in all, checking that the
    server never runs two workers meanwhile."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while True:
        worker = await status(client)
        assert len(workers_of(server)) <= 1
        if _get(worker, "idleExits") >= exits and _get(worker, "state") == "stopped":
            assert _get(worker, "pid") is None and workers_of(server) == []
            return
        assert loop.time() < end, f"the worker did not exit when idle: {worker}"
        await asyncio.sleep(0.1)


async def shown(client: LanguageClient, uri: str, version: int, kernel: str) -> dict:
    """Everything the editor shows of the build: lenses, a hover, virtual documents, the line map."""
    out: dict = {}
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    out["lenses"] = sorted((lens.range.start.line, lens.command.title) for lens in lenses
                           if lens.command.command == "relaylens.open")
    line = next(i for i, text in enumerate(MNIST.split("\n")) if "nn.conv2d" in text)
    hover = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), lsp.Position(line, MNIST.split("\n")[line].index("nn.conv2d") + 2)))
    out["hover"] = hover.contents.value
    names = [("llvm", "module.ll"), ("llvm", "module.opt.ll"), ("llvm", f"{kernel}.ll"),
             ("llvm", f"{kernel}.opt.nodebug.ll"), ("schedule", f"{kernel}.txt"), ("pass", "0-input.relay"),
             ("llvm", f"{kernel}.s"), ("llvm", f"{kernel}.nodebug.s")]
    for kind, name in names:
        doc = await client.protocol.send_request_async(
            "relaylens/virtualDocument", {"uri": uris.make(kind, name, uri, version)})
        out[name] = _get(doc, "text")
    view = uris.make("llvm", f"{kernel}.ll", uri, version)
    row = next(i for i, text in enumerate(out[f"{kernel}.ll"].split("\n"))
               if re.search(r"= f(mul|add) .*!dbg !", text))
    ir_hover = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(view),
                                                                      lsp.Position(row, 2)))
    out["ir hover"] = ir_hover.contents.value
    line_map = await client.protocol.send_request_async("relaylens/lineMap", {"uri": uri})
    out["line map"] = len(_get(line_map, "lines"))
    return out


@asyncio_module
async def test_the_worker_exits_when_idle_and_the_editor_keeps_what_it_showed(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-idle/mnist.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=MNIST)))
    assert (await finished(uri, 1))["state"] == "done"
    worker = await status(client)
    first = _get(worker, "pid")
    assert first is not None and _get(worker, "idleExitSeconds") == IDLE
    server = parent_of(first)
    kernel = "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu"
    before = await shown(client, uri, 1, kernel)
    assert len(before["lenses"]) > 10 and "fused" in before["hover"] and before["line map"] > 0

    # the texts are the very ones an in-process build makes (they travelled compressed)
    results: list = []
    report = build_report(uri, 1, MNIST, keep=results.append)
    fn = report.function(kernel)
    assert before["module.ll"] == report.llvm_ir and before["module.opt.ll"] == report.optimized_ir
    assert before[f"{kernel}.ll"] == fn.llvm_ir  # and the schedule, which the worker made when it was opened
    assert before[f"{kernel}.txt"] == results[0].lowered.functions[kernel].schedule_text
    assert before["0-input.relay"] == report.snapshots[0].text
    assert f"{kernel}:" in before[f"{kernel}.nodebug.s"] and ".loc" in before[f"{kernel}.s"]
    # the assembly was the worker's: the server never loads LLVM
    assert "llvmlite" not in Path(f"/proc/{server}/maps").read_text()

    await idle_exit(client, server, 1)
    assert not Path(f"/proc/{first}").exists()
    after = await shown(client, uri, 1, kernel)  # all from the kept report
    assert after == before
    worker = await status(client)
    assert (_get(worker, "state"), _get(worker, "pid")) == ("stopped", None)  # nothing started one
    module_s = await client.protocol.send_request_async(  # assembly not made yet: the worker makes it
        "relaylens/virtualDocument", {"uri": uris.make("llvm", "module.nodebug.s", uri, 1)})
    assert f"\n{kernel}:\n" in _get(module_s, "text") and ".loc" not in _get(module_s, "text")
    assert "llvmlite" not in Path(f"/proc/{server}/maps").read_text()
    await idle_exit(client, server, 2)

    # a graph needs the worker: a new one runs the passes again from the report's text
    graph = await client.protocol.send_request_async("relaylens/graph", {"uri": uri, "after": "FuseOps"})
    assert (_get(graph, "passName"), _get(graph, "version")) == ("FuseOps", 1)
    second = _get(await status(client), "pid")
    if second is not None:  # it exits IDLE s after its answer, at once (os._exit): it may be gone
        assert second != first and set(workers_of(server)) <= {second}
    await idle_exit(client, server, 3)  # a third idle exit: a new worker drew the graph

    # an edit starts a new worker at once (its imports overlap the debounce) and builds in it;
    # the build's progress says it is starting when the worker is not ready yet
    edited = MNIST + "\n"
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text=edited)]))
    assert (await finished(uri, 2))["state"] == "done"
    begins = [v.message for values in client.progress_reports.values() for v in values
              if isinstance(v, lsp.WorkDoneProgressBegin)]
    assert any("(version 2)" in m for m in begins), begins
    third = _get(await status(client), "pid")
    if third is not None:  # as above: it may have exited when idle already
        assert third not in (first, second) and set(workers_of(server)) <= {third}
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    assert sorted((lens.range.start.line, lens.command.title) for lens in lenses
                  if lens.command.command == "relaylens.open") == before["lenses"]
    await idle_exit(client, server, 4)

    # 0: the worker stays (a setting, changed at any time)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"relaylens": {"worker": {"idleExitSeconds": 0}}}))
    assert _get(await status(client), "idleExitSeconds") == 0


def test_packed_texts_read_back_the_same_and_are_shared() -> None:
    report = build_report("file:///p.relay", 1, MNIST)
    texts = {"module": report.llvm_ir, "opt": report.optimized_ir,
             "snapshots": [s.text for s in report.snapshots],
             "kernels": [(f.llvm_ir, f.optimized_ir) for f in report.functions]}
    packed = pickle.loads(pickle.dumps(pack_texts(report)))  # as the server gets it
    assert isinstance(packed.llvm_ir, Packed) and unpack(packed.llvm_ir) == texts["module"]
    assert unpack(packed.optimized_ir) == texts["opt"]
    assert [unpack(s.text) for s in packed.snapshots] == texts["snapshots"]
    assert [(unpack(f.llvm_ir), unpack(f.optimized_ir)) for f in packed.functions] == texts["kernels"]
    assert packed.snapshots[1].text is packed.snapshots[0].text  # unchanged passes still share
    assert len(pickle.dumps(packed)) * 3 < len(pickle.dumps(build_report("file:///p.relay", 1, MNIST)))
    assert packed.lowered and not Packed.of("") and unpack("plain") == "plain"
    # two builds of the same text: the newer report's texts become the older one's objects
    again = pickle.loads(pickle.dumps(pack_texts(build_report("file:///p.relay", 2, MNIST))))
    assert again.llvm_ir is not packed.llvm_ir and again.llvm_ir == packed.llvm_ir
    share_texts(again, [packed])
    assert again.llvm_ir is packed.llvm_ir and again.functions[0].llvm_ir is packed.functions[0].llvm_ir


def test_a_message_sent_while_the_worker_retires_goes_to_the_next_one() -> None:
    from relaylens.server.slow.process import WorkerProcess

    async def run() -> tuple:
        answers: asyncio.Queue = asyncio.Queue()
        exits: list = []
        worker = WorkerProcess(lambda m: answers.put_nowait(m), lambda *why: exits.append(why))
        worker.start()
        assert (await asyncio.wait_for(answers.get(), 60))[0] == "ready"
        first = worker.pid
        assert worker.retire() and worker.state == "stopping" and not worker.retire()
        worker.send(("graph", 1, "file:///r.relay", 1, None, {}, None))  # waits for the next process
        assert worker.state == "stopping"
        ready = await asyncio.wait_for(answers.get(), 60)
        answer = await asyncio.wait_for(answers.get(), 60)
        states = (worker.runs, worker.retired, worker.restarts, worker.pid != first, ready[0])
        worker.close()
        while worker.pid is not None:  # reaped: its transport closes before the loop does
            await asyncio.sleep(0.05)
        return states, answer, exits, first

    states, answer, exits, first = asyncio.run(run())
    assert states == (2, 1, 0, True, "ready") and not exits  # retiring is no crash
    assert answer[:3] == ("graph", 1, None) and "keeps no build" in answer[3]
    assert not Path(f"/proc/{first}").exists() or "Z" in Path(f"/proc/{first}/stat").read_text().split()[2]


def test_the_worker_ends_without_the_interpreters_teardown() -> None:
    """stdin closed (a retired worker): it exits at once, 0, its answers flushed, and skips the
    teardown (freeing every module, LLVM's static destructors) that kept a retired worker
    past the server's wait on a busy machine (atexit handlers are part of that teardown)."""
    import subprocess

    from relaylens.server.slow import frames

    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('torn down', file=sys.stderr))\n"
            "from relaylens.server.slow.worker import main\n"
            "main()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert frames.read(proc.stdout) == ("ready", proc.pid)
    frames.write(proc.stdin, ("graph", 1, "file:///r.relay", 1, None))
    proc.stdin.close()
    assert frames.read(proc.stdout)[:3] == ("graph", 1, None)  # answered before it ended
    assert proc.wait(timeout=120) == 0
    assert "torn down" not in proc.stderr.read().decode()
