"""The editor's Profile: the worker's "profile" job (server/slow/profiling.py), and
`relaylens/profile`, `relaylens/lastProfile` and the profile's inlay hints end to end over
stdio with pytest-lsp (server/features/profile.py).  Times are measured, never asserted."""

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


def test_a_program_that_cannot_run_says_why() -> None:
    text = 'def @main(%x: Tensor[(?, 4), float32]) { nn.relu(%x) }\n'
    report = profile_report("file:///d.relay", 1, text, runs=1, weights=None)
    assert report.error is not None and not report.functions


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
            inlay_hint=lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True)),
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


@asyncio_module
async def test_profiling_a_document_not_open_is_refused(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcException, match="not open"):
        await client.protocol.send_request_async("relaylens/profile", {"uri": "file:///tmp/none.relay"})
    with pytest.raises(JsonRpcException, match="runs"):
        await client.protocol.send_request_async("relaylens/profile", {"uri": "file:///tmp/none.relay", "runs": 0})
