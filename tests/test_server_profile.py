"""The editor's Profile: the worker's "profile" job (server/slow/profiling.py), and
`relaylens/profile`, `relaylens/lastProfile`, the profile's inlay hints and its lenses
above @main end to end over stdio with pytest-lsp (server/features/profile.py,
profile_lens.py): staleness after an edit, a cancel that stops the worker's job, and
onnxruntime beside.  Times are measured, never asserted."""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from relaylens.server.slow import frames
from relaylens.server.slow.profiling import profile_report

ROOT = Path(__file__).resolve().parents[1]
MNIST = (ROOT / "examples" / "mnist.relay").read_text(encoding="utf-8")
# one convolution of about 0.2 GFLOP: a run takes milliseconds, 1000 runs seconds
SLOW = """\
def @main(%x: Tensor[(1, 32, 112, 112), float32], %w: Tensor[(32, 32, 3, 3), float32]) {
  nn.conv2d(%x, %w, padding=[1, 1, 1, 1])
}
"""
asyncio_module = pytest.mark.asyncio(loop_scope="module")


def test_the_report_has_figures_per_fused_function_and_per_line() -> None:
    report = profile_report("file:///m.relay", 4, MNIST, runs=2, weights=None)
    assert report.error is None and report.version == 4 and report.mode == "aot"
    assert pickle.loads(pickle.dumps(report)) == report
    conv = next(f for f in report.functions if f.name == "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu")
    assert conv.anchors == [MNIST.count("\n", 0, MNIST.index("nn.conv2d(%input"))]
    assert set(conv.layers) == {"conv1/Conv", "conv1/Add", "relu1/Relu"}
    for f in report.functions:  # attribution sums to the kernel's time
        assert sum(f.lines.values()) == pytest.approx(f.ms)
    assert sum(report.lines.values()) == pytest.approx(report.kernels_ms)
    data = report.to_json()
    assert all(isinstance(k, str) for k in data["lines"]) and data["functions"][0]["display_name"]


def test_control_flow_is_profiled_in_the_interpreter() -> None:
    text = ('def @main(%x: Tensor[(16), float32], %c: bool) {\n  if (%c) {\n    nn.relu(%x)\n  } else {\n'
            '    exp(%x)\n  }\n}\n')
    report = profile_report("file:///cf.relay", 1, text, runs=2, weights=None)
    assert report.error is None and report.mode == "interpreter"
    assert any("interpreter" in note for note in report.notes)
    assert len(report.functions) == 1 and report.functions[0].anchors[0] in (2, 4)  # the branch taken, only


def test_a_program_that_cannot_run_says_why() -> None:
    text = 'def @main(%x: Tensor[(?, 4), float32]) { nn.relu(%x) }\n'
    report = profile_report("file:///d.relay", 1, text, runs=1, weights=None)
    assert report.error is not None and not report.functions


SMALL_CNN = ROOT / "examples" / "small_cnn.onnx"


@pytest.fixture(scope="module")
def small_cnn(tmp_path_factory) -> str:
    """The demo model imported, as text (its weights printed as constants)."""
    pytest.importorskip("onnxruntime")
    from relaylens.compiler.cli import main

    relay = tmp_path_factory.mktemp("small_cnn") / "small_cnn.relay"
    assert main(["import", str(SMALL_CNN), "--shape", "input=1,1,28,28", "-o", str(relay)]) == 0
    return relay.read_text()


def test_onnxruntime_beside_gives_each_kernel_its_time(small_cnn: str) -> None:
    report = profile_report("file:///c.relay", 1, small_cnn, runs=2, weights=None, onnx=str(SMALL_CNN))
    assert report.error is None and report.compare is not None, report.notes
    assert report.compare["model"] == "small_cnn.onnx" and report.compare["ratio"] > 0
    conv = next(f for f in report.functions if "/conv1/Conv" in f.layers)
    # the conv's kernel holds most of our time for its layer (the input's layout_transform, which
    # carries the conv's span, the rest: microseconds, more under load) and gets that share of
    # onnxruntime's time for each of its layers
    assert conv.layers["/conv1/Conv"] > 0.5 * report.layers["/conv1/Conv"]
    theirs = report.compare["layers"]
    expected = sum(theirs[layer] * ms / report.layers[layer] for layer, ms in conv.layers.items()
                   if layer in theirs and report.layers.get(layer))
    assert conv.ort_ms is not None and conv.ort_ms == pytest.approx(expected)
    # every layer's onnxruntime time is shared out among the kernels it went into
    ran = sum(ms for layer, ms in report.compare["layers"].items() if layer in report.layers)
    assert sum(f.ort_ms or 0.0 for f in report.functions) == pytest.approx(ran)


def test_the_hints_give_the_ratio_to_onnxruntime(small_cnn: str) -> None:
    from types import SimpleNamespace

    from relaylens.compiler.ir.span import Source
    from relaylens.server.features.profile import profile_hints

    uri = "file:///c.relay"
    report = profile_report(uri, 3, small_cnn, runs=1, weights=None, onnx=str(SMALL_CNN))
    doc = SimpleNamespace(version=3, text=small_cnn)
    server = SimpleNamespace(builds=SimpleNamespace(profiles=SimpleNamespace(latest=lambda u: report)),
                             documents=SimpleNamespace(opened=lambda u: doc))
    labels = [h.label for h in profile_hints(server, uri, Source(uri, small_cnn), 0, len(small_cnn))]
    conv = next(f for f in report.functions if "/conv1/Conv" in f.layers)
    assert f"{conv.ms / conv.ort_ms:.2f}x onnxruntime" in "\n".join(labels)
    # a kernel none of whose layers onnxruntime timed says nothing of it
    assert all(("x onnxruntime" in h.label) == bool(f.ort_ms) for f in report.functions for h in
               profile_hints(server, uri, Source(uri, small_cnn), 0, len(small_cnn)) if h.tooltip.split("\n")[1] == f.name)


def test_a_cancel_reaches_onnxruntime_s_runs(small_cnn: str) -> None:
    class Stop(Exception):
        pass

    def progress(step: str, fraction: float) -> None:
        if step.startswith("onnxruntime"):
            raise Stop(step)

    with pytest.raises(Stop, match=r"run 1 of 6"):  # before the first of 2 × (2 + 1) runs
        profile_report("file:///c.relay", 1, small_cnn, runs=2, weights=None, onnx=str(SMALL_CNN), progress=progress)


def test_a_model_onnxruntime_cannot_load_is_a_note(tmp_path) -> None:
    fake = tmp_path / "m.onnx"
    fake.write_text("not a model")
    report = profile_report("file:///m.relay", 1, MNIST, runs=1, weights=None, onnx=str(fake))
    assert report.error is None and report.functions and report.compare is None
    assert any("not compared with onnxruntime" in note for note in report.notes)
    assert all(f.ort_ms is None for f in report.functions)


def test_a_cancel_stops_the_runs_and_the_worker_takes_the_next_job() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    runs = 1000
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("profile", 1, "file:///s.relay", 1, SLOW, None, runs))
        while not ((message := frames.read(proc.stdout))[0] == "progress" and message[2].startswith("run ")):
            assert message[0] in ("started", "progress"), message
        frames.write(proc.stdin, ("cancel", 1))
        last_run = 0
        while (message := frames.read(proc.stdout))[0] == "progress":
            last_run = int(message[2].split()[1])
        assert message == ("cancelled", 1)
        assert last_run < runs // 2  # it stopped between runs, not after the last
        frames.write(proc.stdin, ("profile", 2, "file:///m.relay", 1, MNIST, None, 1))
        while (message := frames.read(proc.stdout))[0] in ("started", "progress"):
            pass
        assert message[:2] == ("profiled", 2) and message[2].error is None
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0


def test_the_worker_profiles_and_cancels() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("profile", 1, "file:///m.relay", 1, MNIST, None, 2))
        frames.write(proc.stdin, ("profile", 2, "file:///m.relay", 1, MNIST, None, 2))
        frames.write(proc.stdin, ("cancel", 2))
        seen = {}
        while len(seen) < 2:
            message = frames.read(proc.stdout)
            if message[0] in ("profiled", "cancelled"):
                seen[message[1]] = message
        assert seen[1][0] == "profiled" and seen[1][2].error is None and seen[1][2].functions
        assert seen[2] == ("cancelled", 2)
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0


# --- end to end ----------------------------------------------------------------------------

REFRESHES: list = []


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
    lsp_client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)(lambda params: REFRESHES.append(params))
    lsp_client.feature("relaylens/buildFinished")(lambda params: None)
    capabilities = lsp.ClientCapabilities(
        window=lsp.WindowClientCapabilities(work_done_progress=True),
        workspace=lsp.WorkspaceClientCapabilities(
            inlay_hint=lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True),
            code_lens=lsp.CodeLensWorkspaceClientCapabilities(refresh_support=True)),
        text_document=lsp.TextDocumentClientCapabilities(inlay_hint=lsp.InlayHintClientCapabilities()))
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=capabilities, initialization_options={"build": {"enabled": False}}))
    yield
    await lsp_client.shutdown_session()


def _get(result, name: str):
    return result[name] if isinstance(result, dict) else getattr(result, name)


async def _hints(client: LanguageClient, uri: str, text: str) -> list[tuple[int, str]]:
    found = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(0, 0), lsp.Position(text.count("\n") + 1, 0))))
    return [(h.position.line, h.label) for h in found if "GFLOP/s" in str(h.label)]


@asyncio_module
async def test_profile_request_hints_and_staleness(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-profile/mnist.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=MNIST)))
    assert await client.protocol.send_request_async("relaylens/lastProfile", {"uri": uri}) is None
    answer = await asyncio.wait_for(
        client.protocol.send_request_async("relaylens/profile", {"uri": uri, "runs": 2}), 120)
    assert _get(answer, "error") is None and _get(answer, "version") == 1 and _get(answer, "current") is True
    functions = _get(answer, "functions")
    conv = next(f for f in functions if _get(f, "name") == "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu")
    conv_line = MNIST.count("\n", 0, MNIST.index("nn.conv2d(%input"))
    assert _get(conv, "anchors") == [conv_line]
    hints = await _hints(client, uri, MNIST)
    assert conv_line in {line for line, _ in hints} and REFRESHES
    assert len(hints) == sum(len(_get(f, "anchors")) for f in functions)
    # an edit: the figures are stale, the hints gone, the answer kept
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text="// edited\n" + MNIST)]))
    last = await client.protocol.send_request_async("relaylens/lastProfile", {"uri": uri})
    assert _get(last, "version") == 1 and _get(last, "current") is False
    assert await _hints(client, uri, "// edited\n" + MNIST) == []


async def _lenses(client: LanguageClient, uri: str) -> list[tuple[int, str, str]]:
    found = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    return [(lens.range.start.line, lens.command.title, lens.command.command) for lens in found
            if lens.command.command.lower().endswith("profile")]


@asyncio_module
async def test_the_lenses_above_main_run_and_show_the_profile(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-profile/lens.relay"
    text = "// a model\n\n" + MNIST
    main_line = text.split("\n").index(next(line for line in text.split("\n") if line.startswith("def @main")))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=text)))
    assert await _lenses(client, uri) == [(main_line, "▶ Profile", "relaylens.profile")]
    await asyncio.wait_for(client.protocol.send_request_async("relaylens/profile", {"uri": uri, "runs": 1}), 120)
    lenses = await _lenses(client, uri)
    assert [(line, command) for line, _, command in lenses] == [(main_line, "relaylens.profile"),
                                                                (main_line, "relaylens.showProfile")]
    figures = lenses[1][1]
    assert " ms · " in figures and "thread" in figures and "stale" not in figures
    # an edit that moves @main down a line: the lens follows it, its figures marked stale
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text="// edited\n" + text)]))
    lenses = await _lenses(client, uri)
    assert {line for line, _, _ in lenses} == {main_line + 1}
    assert lenses[1][1] == figures + " · stale (version 1)"


@asyncio_module
async def test_a_cancelled_profile_leaves_the_server_answering(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-profile/slow.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=SLOW)))
    request = asyncio.wrap_future(client.protocol.send_request("relaylens/profile", {"uri": uri, "runs": 1000},
                                                               msg_id="slow"))

    def running() -> bool:
        return any(getattr(r, "message", "") and r.message.startswith("run ")
                   for reports in client.progress_reports.values() for r in reports)

    while not running():
        await asyncio.wait_for(client.wait_for_notification("$/progress"), 120)
    assert [title for _, title, _ in await _lenses(client, uri)] == ["⏱ profiling… · cancel"]
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="slow"))
    with pytest.raises(JsonRpcException, match="cancel"):
        await asyncio.wait_for(request, 30)
    assert [title for _, title, _ in await _lenses(client, uri)] == ["▶ Profile"]
    assert await client.protocol.send_request_async("relaylens/lastProfile", {"uri": uri}) is None
    # the worker is free: the next profile is served (a job left running would hold it)
    answer = await asyncio.wait_for(
        client.protocol.send_request_async("relaylens/profile", {"uri": uri, "runs": 1}), 120)
    assert _get(answer, "error") is None and _get(answer, "runs") == 1


@asyncio_module
async def test_profiling_a_document_not_open_is_refused(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcException, match="not open"):
        await client.protocol.send_request_async("relaylens/profile", {"uri": "file:///tmp/none.relay"})
    with pytest.raises(JsonRpcException, match="runs"):
        await client.protocol.send_request_async("relaylens/profile", {"uri": "file:///tmp/none.relay", "runs": 0})
    with pytest.raises(JsonRpcException, match="compare"):
        await client.protocol.send_request_async("relaylens/profile", {"uri": "file:///tmp/none.relay", "compare": 1})
