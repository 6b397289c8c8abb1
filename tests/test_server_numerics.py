"""The editor's Check Numerics: the worker's "numerics" job (server/slow/numerics.py) on a
miscompiled kernel (a test-only fault) and on a negative variance, and
`relaylens/checkNumerics` end to end over stdio with pytest-lsp (server/features/numerics.py):
the findings published on the culprit's lines, gone after an edit."""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from numerics_models import BATCH_NORM_TEXT, lstm_text, miscompiled_tanh  # noqa: F401 -- a fixture
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from relaylens.compiler.ir.span import Source
from relaylens.server.slow import frames
from relaylens.server.slow.numerics import numerics_report

asyncio_module = pytest.mark.asyncio(loop_scope="module")


def _lines(text: str, finding) -> tuple[int, int]:
    """1-based first and last line of a finding's range."""
    source = Source("t", text)
    return source.location(finding.range[0])[0], source.location(finding.range[1] - 1)[0]


def test_a_miscompiled_kernel_is_found_on_its_lines(miscompiled_tanh) -> None:
    text = lstm_text(steps=3, hidden=8, features=4)
    steps: list[str] = []
    report = numerics_report("file:///w/lstm.relay", 2, text, weights=None, progress=lambda s, f: steps.append(s))
    assert report.error is None and not report.ok
    assert pickle.loads(pickle.dumps(report)) == report
    culprit = report.culprit
    assert culprit is not None and "tanh" in culprit.display_name and culprit.name.startswith("tvmgen_default_fused_")
    assert "bisection: kernel #" in report.summary and culprit.display_name in report.summary
    assert any(s.startswith("bisecting: kernel #") for s in steps)
    # a warning on each run of the culprit's lines, the first tanh among them
    first_tanh = next(i + 1 for i, line in enumerate(text.splitlines()) if "tanh(" in line)
    runs = [_lines(text, f) for f in report.findings]
    assert report.findings and all(f.severity == 2 and "is the first whose outputs differ" in f.message
                                   for f in report.findings)
    assert any(first <= first_tanh <= last for first, last in runs)
    expected = {int(n) for part in culprit.lines.split(", ") for n in range(int(part.split("-")[0]),
                                                                          int(part.split("-")[-1]) + 1)}
    assert {n for first, last in runs for n in range(first, last + 1)} == expected
    assert "findings" not in report.to_json() and report.to_json()["culprit"]["lines"] == culprit.lines


def test_a_negative_variance_is_traced_to_its_batch_norm_line(tmp_path: Path) -> None:
    np.savez(tmp_path / "bn.npz", var=np.array([1.0, -1.0, 0.5, 2.0], "float32"))
    report = numerics_report("file:///w/bn.relay", 1, BATCH_NORM_TEXT, weights=str(tmp_path / "bn.npz"))
    assert report.error is None and report.ok  # NaN on both sides at the same places
    assert report.culprit is None and "%var" not in " ".join(report.inputs)  # bound, not drawn
    (finding,) = report.findings  # compiled and interpreted name the same expression: one finding
    assert _lines(BATCH_NORM_TEXT, finding) == (5, 5) and finding.severity == 2
    assert "the first non-finite value" in finding.message
    assert "bn.relay:5:8" in report.summary and "NaN" in report.summary


def test_a_correct_model_agrees_and_names_its_inputs() -> None:
    report = numerics_report("file:///w/bn.relay", 1, BATCH_NORM_TEXT, weights=None, seed=3)
    assert report.error is None and report.ok and not report.findings and report.seed == 3
    assert "%var: Tensor[(4), float32]  scale (nn.batch_norm moving_var): uniform(0.5, 1.5)" in report.inputs
    assert report.summary.startswith("compiled code and the reference interpreter agree on 1 output")


def test_the_editor_checks_on_the_inputs_run_check_draws(tmp_path: Path, capsys) -> None:
    from relaylens.compiler.cli import main

    text = lstm_text(steps=4, hidden=8, features=4)
    path = tmp_path / "lstm.relay"
    path.write_text(text)
    assert main(["run", str(path), "--check", "--seed", "5"]) == 0
    line = next(ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("check output: "))
    report = numerics_report(str(path), 1, text, weights=None, seed=5)
    assert line == f"check output: {report.outputs[0].text}"


def test_a_program_that_cannot_run_says_why() -> None:
    report = numerics_report("file:///w/d.relay", 1, "def @main(%x: Tensor[(?, 4), float32]) { nn.relu(%x) }\n",
                             weights=None)
    assert report.error is not None and not report.outputs


def test_the_worker_checks_and_cancels() -> None:
    text = lstm_text(steps=2, hidden=4, features=4)
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("numerics", 1, "file:///w/l.relay", 1, text, None, 0))
        frames.write(proc.stdin, ("numerics", 2, "file:///w/l.relay", 1, text, None, 0))
        frames.write(proc.stdin, ("cancel", 2))
        seen = {}
        while len(seen) < 2:
            message = frames.read(proc.stdout)
            if message[0] in ("checked", "cancelled"):
                seen[message[1]] = message
        assert seen[1][0] == "checked" and seen[1][2].error is None and seen[1][2].ok
        assert seen[2] == ("cancelled", 2)
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0


# --- end to end ----------------------------------------------------------------------------

NAN_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32]) {
  %0 = exp(%x);
  %1 = negative(%0);
  sqrt(%1)
}
"""


def _published(client: LanguageClient, uri: str) -> list[lsp.Diagnostic]:
    """What the server last published for `uri` from Check Numerics (pytest-lsp keeps it)."""
    return [d for d in client.diagnostics.get(uri, []) if d.source == "relaylens-numerics"]


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
    lsp_client.feature("relaylens/buildFinished")(lambda params: None)

    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(window=lsp.WindowClientCapabilities(work_done_progress=True)),
        initialization_options={"build": {"enabled": False}}))
    yield
    await lsp_client.shutdown_session()


def _get(result, name: str):
    return result[name] if isinstance(result, dict) else getattr(result, name)


@asyncio_module
async def test_check_numerics_publishes_the_first_nan_and_an_edit_removes_it(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-numerics/nan.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=NAN_TEXT)))
    answer = await asyncio.wait_for(client.protocol.send_request_async("relaylens/checkNumerics", {"uri": uri}), 120)
    assert _get(answer, "error") is None and _get(answer, "ok") is True and _get(answer, "current") is True
    assert "sqrt" in _get(answer, "summary") and _get(answer, "seed") == 0
    (diagnostic,) = _get(answer, "diagnostics")
    assert _get(_get(_get(diagnostic, "range"), "start"), "line") == 4  # sqrt(%1), 0-based
    assert "sqrt" in _get(diagnostic, "message") and _get(diagnostic, "severity") == 2
    while not _published(client, uri):  # published before the answer was sent
        await asyncio.wait_for(client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 30)
    assert [d.range.start.line for d in _published(client, uri)] == [4]
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text="// edited\n" + NAN_TEXT)]))
    while _published(client, uri):
        await asyncio.wait_for(client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 30)


@asyncio_module
async def test_checking_a_document_not_open_is_refused(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcException, match="not open"):
        await client.protocol.send_request_async("relaylens/checkNumerics", {"uri": "file:///tmp/none.relay"})
    with pytest.raises(JsonRpcException, match="seed"):
        await client.protocol.send_request_async("relaylens/checkNumerics",
                                                 {"uri": "file:///tmp/none.relay", "seed": -1})
