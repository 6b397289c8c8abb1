"""The language server's slow path, end to end over stdio with pytest-lsp: builds in the
worker process with work-done progress, code lenses on fused functions, the `relaylens:`
virtual documents (LLVM IR, schedules, pass snapshots) with definition and hover leading
back to the Relay source, provenance in hovers, the line map, stale versions, a worker
killed mid-build, and malformed virtual URIs.  One server for the module; every wait is
for a notification or a response, never a sleep.  Pure tests of the URI grammar first."""

from __future__ import annotations

import asyncio
import os
import pickle
import re
import tempfile
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from build_events import BuildEvents
from relaylens.server.slow import frames, uris
from relaylens.server.slow.reporting import build_report
from relaylens.server.slow.report import unpack
from relaylens.server.slow.uris import BadUri

ROOT = Path(__file__).resolve().parents[1]
from conftest import CORPUS
MNIST = (ROOT / "examples" / "mnist.relay").read_text(encoding="utf-8")
asyncio_module = pytest.mark.asyncio(loop_scope="module")
MNIST_FUSED = [  # AlterOpLayout's NCHWc convolutions and packed denses, weights unbound: packed at
    # run time; in source order of what each kernel computes (a dense kernel sits at its dense,
    # not at the bias parameter its expand_dims reads), a parameter's layout_transform at the
    # call that reads it, after that call's own kernel
    "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu", "tvmgen_default_fused_layout_transform",
    "tvmgen_default_fused_layout_transform_1", "tvmgen_default_fused_expand_dims_layout_transform",
    "tvmgen_default_fused_nn_max_pool2d", "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu_1",
    "tvmgen_default_fused_layout_transform_2", "tvmgen_default_fused_expand_dims_layout_transform_1",
    "tvmgen_default_fused_nn_max_pool2d_1", "tvmgen_default_fused_layout_transform_reshape",
    "tvmgen_default_fused_nn_contrib_dense_pack_expand_dims_add_nn_relu", "tvmgen_default_fused_layout_transform_3",
    "tvmgen_default_fused_nn_contrib_dense_pack_expand_dims_add_nn_relu_1", "tvmgen_default_fused_layout_transform_4",
    "tvmgen_default_fused_nn_contrib_dense_pack_expand_dims_add", "tvmgen_default_fused_layout_transform_5"]
MNIST_CONV = "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu"


def corpus(name: str) -> str:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus file {path} not available")
    return path.read_text(encoding="utf-8")


def line_of(text: str, needle: str) -> int:
    """The 0-based line of the first occurrence of `needle`."""
    return text.count("\n", 0, text.index(needle))


# --- the URI grammar: pure ------------------------------------------------------------------


def test_virtual_uris_round_trip_and_accept_vscode_encoding() -> None:
    doc = "file:///tmp/a b/m.relay"
    made = uris.make("llvm", "tvmgen_default_fused_add.opt.ll", doc, 7)
    assert made == ("relaylens:/llvm/tvmgen_default_fused_add.opt.ll"
                    "?uri=file%3A%2F%2F%2Ftmp%2Fa%20b%2Fm.relay&version=7")
    parsed = uris.parse(made + "#L12")
    assert (parsed.kind, parsed.document, parsed.version, parsed.function, parsed.optimized) == (
        "llvm", doc, 7, "tvmgen_default_fused_add", True)
    # VS Code's Uri.toString() percent-encodes `=` and `&` and encodes the inner URI again
    vscode = made.replace("%", "%25").replace("=", "%3D").replace("&", "%26")
    assert uris.parse(vscode) == uris.parse(made)
    snap = uris.parse(uris.make("pass", "15-FuseOps.relay", doc, None))
    assert (snap.pass_index, snap.version, snap.language_id) == (15, None, "relay")
    assert uris.parse(uris.make("llvm", "module.ll", doc, 1)).function is None


@pytest.mark.parametrize("bad", ["file:///x.relay", "relaylens:/nope/x.ll?uri=file%3A%2F%2F%2Fx",
                                 "relaylens:/llvm/x.ll", "relaylens:/pass/FuseOps.relay?uri=f",
                                 "relaylens:/llvm/x.txt?uri=f", "relaylens:/llvm/x.ll?uri=f&version=two",
                                 "relaylens:/llvm?uri=f"])
def test_malformed_virtual_uris_are_refused(bad: str) -> None:
    with pytest.raises(BadUri):
        uris.parse(bad)


# --- the report and the worker, without a client ------------------------------------------


def test_a_schedule_view_shows_the_text_the_build_scheduled_with(monkeypatch) -> None:
    """No build prints a schedule; the worker does when a view asks, from its kept build's
    snapshots or from the passes run again (a report kept on disk): text for text what the
    schedule the build lowered each kernel with prints, on a corpus model."""
    from relaylens.compiler.lower.parallel import ENV
    from relaylens.server.slow.report import Packed
    from relaylens.server.slow.worker import _schedule

    monkeypatch.setenv(ENV, "1")  # lowered here, in order: each kernel keeps the very schedule it was lowered with
    uri, text = "file:///w/009.relay", (CORPUS / "009.relay").read_text(encoding="utf-8")
    results: list = []
    report = build_report(uri, 1, text, keep=results.append)
    lowered = results[0].lowered
    shown = [f for f in report.functions if f.schedule_steps]
    assert len(shown) > 20 and not [d for d in report.diagnostics if d.is_error]
    kept: dict = {}  # the worker's: the passes run again once, for the first view
    for f in shown:
        answer = _schedule(kept, 7, uri, 1, f.name, answered={uri: (1, (text, None, None))})
        assert answer[:2] == ("schedule", 7) and isinstance(answer[2], Packed), answer
        scheduled, _ = lowered.functions[f.name].scheduled
        assert unpack(answer[2]) == scheduled.record_text(), f.name
        assert f.schedule_steps == len(scheduled.record)
    assert kept[uri][0] == 1
    nothing = _schedule(kept, 8, uri, 1, "tvmgen_default_fused_nothing")
    assert nothing[2] is None and "no fused function tvmgen_default_fused_nothing" in nothing[3]
    assert "keeps no build of version 2" in _schedule(kept, 9, uri, 2, shown[0].name)[3]


def test_the_report_of_mnist_is_plain_data_with_every_fused_function() -> None:
    report = build_report("file:///m.relay", 3, MNIST)
    assert pickle.loads(pickle.dumps(report)).functions == report.functions
    assert [f.name for f in report.functions] == MNIST_FUSED and not report.diagnostics
    conv = next(f for f in report.functions if f.name == MNIST_CONV)
    assert conv.anchor[0] == MNIST.index("nn.conv2d(%input")
    assert conv.layers == ("conv1/Conv", "conv1/Add", "relu1/Relu") and conv.passes == 2  # AlterOpLayout, FuseOps
    assert report.snapshots[conv.snapshot].pass_name == "FuseOps"
    assert conv.llvm_ir.startswith("; ModuleID") and conv.schedule_steps > 1  # the count; the text is made when read
    first, last = conv.module_lines[0]
    assert report.llvm_ir.split("\n")[first - 1].startswith("define")
    assert report.function_of_line(first + 1).name == conv.name
    expr = report.expr_at(MNIST.index("nn.relu(%1)") + 2)
    assert (expr.layers, expr.fused, [c.pass_name for c in expr.changes]) == (
        ("relu1/Relu",), conv.name, ["AlterOpLayout", "FuseOps"])
    assert report.snapshots[1].text is report.snapshots[0].text  # unchanged passes share


def test_the_worker_supersedes_an_older_build_of_the_same_document() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("build", 1, "file:///m.relay", 1, MNIST, None))
        frames.write(proc.stdin, ("build", 2, "file:///m.relay", 2, MNIST + "\n", None))
        seen = []
        while not seen or seen[-1][0] != "done":
            message = frames.read(proc.stdout)
            seen.append(message[:2])
        assert ("cancelled", 1) in seen and seen[-1] == ("done", 2)
        assert ("done", 1) not in seen
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0


def _worker_build(text: str, weights: str | None):
    """The report of one build in a fresh worker process, given the weights' path."""
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("build", 1, "file:///w/model.relay", 1, text, weights))
        while (message := frames.read(proc.stdout))[0] != "done":
            pass
        return message[2]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


WEIGHTED = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(3, 4), float32], %b: Tensor[(3), float32]) {\n"
            "  %0 = nn.dense(%x, %w, units=3);\n  nn.bias_add(%0, %b)\n}\n")


def test_the_worker_binds_the_weights_beside_a_model(tmp_path) -> None:
    np.savez(tmp_path / "model.npz", w=np.ones((3, 4), "float32"), b=np.ones(3, "float32"))
    report = _worker_build(WEIGHTED, str(tmp_path / "model.npz"))
    assert report.weights == "model.npz" and not [d for d in report.diagnostics if d.severity == 1]
    assert report.bound == ("w", "b")
    last = unpack(report.snapshots[-1].text)  # the worker sends its texts packed
    assert "def @main(%x" in last and "%w" not in last.split("{")[0]
    np.savez(tmp_path / "model.npz", w=np.ones((4, 3), "float32"))
    report = _worker_build(WEIGHTED, str(tmp_path / "model.npz"))  # a wrong shape: an error at %w
    assert ["parameter %w is Tensor[(3, 4), float32] but model.npz gives Tensor[(4, 3), float32]"] == [
        d.message for d in report.diagnostics if d.severity == 1]
    assert report.bound == ()
    (tmp_path / "model.npz").write_bytes(b"not a zip")
    report = _worker_build(WEIGHTED, str(tmp_path / "model.npz"))  # unreadable: a warning, built without
    assert report.weights is None and report.snapshots and any("cannot be read" in d.message for d in report.diagnostics)


# --- end to end ----------------------------------------------------------------------------

EVENTS = BuildEvents()
FINISHES = EVENTS.seen


async def finished(uri: str, version: int, state: str | None = None, timeout: float = 60) -> dict:
    """Wait for `relaylens/buildFinished` of (uri, version) (in `state`, if given)."""
    return await EVENTS.of(uri, version, state, timeout)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    EVENTS.listen(lsp_client)
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(_lens_refresh)
    capabilities = lsp.ClientCapabilities(
        window=lsp.WindowClientCapabilities(work_done_progress=True),
        workspace=lsp.WorkspaceClientCapabilities(
            code_lens=lsp.CodeLensWorkspaceClientCapabilities(refresh_support=True)))
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=capabilities))
    yield
    await lsp_client.shutdown_session()


REFRESH_WAITERS: list[asyncio.Future] = []


def _lens_refresh(params) -> None:
    """workspace/codeLens/refresh: wakes whoever waits for one (`next_refresh`)."""
    for waiter in REFRESH_WAITERS:
        if not waiter.done():
            waiter.set_result(True)
    REFRESH_WAITERS.clear()


def next_refresh() -> asyncio.Future:
    waiter = asyncio.get_running_loop().create_future()
    REFRESH_WAITERS.append(waiter)
    return waiter


def open_doc(client: LanguageClient, name: str, text: str) -> str:
    uri = f"file:///tmp/relaylens-build/{name}"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=text)))
    return uri


async def built(client: LanguageClient, name: str, text: str) -> str:
    uri = open_doc(client, name, text)
    assert (await finished(uri, 1))["state"] == "done"
    return uri


async def lenses(client: LanguageClient, uri: str) -> list[lsp.CodeLens]:
    """The fused functions' lenses (not the profile's above @main: test_server_profile.py)."""
    found = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    return [lens for lens in found if lens.command.command == "relaylens.open"]


def symbol(lens: lsp.CodeLens) -> str:
    """The `tvmgen_…` symbol a fused function's lens names in its tooltip."""
    return re.match(r"tvmgen_\w+", lens.command.tooltip)[0]


def rows(found: list[lsp.CodeLens]) -> dict[int, list[str]]:
    """Lens titles by line, the schedule's step count written N (it is the scheduler's)."""
    out: dict[int, list[str]] = {}
    for lens in found:
        assert lens.range.start == lens.range.end and lens.range.start.character == 0
        title = re.sub(r"^schedule \(\d+ steps\)$", "schedule (N steps)", lens.command.title)
        if title.startswith("ƒ "):  # the display name, then the symbol its tooltip names
            title += f" ⟨{symbol(lens)}⟩"
        out.setdefault(lens.range.start.line, []).append(title)
    return out


async def virtual(client: LanguageClient, uri: str) -> dict:
    return await client.protocol.send_request_async("relaylens/virtualDocument", {"uri": uri})


def _field(result, name: str):
    return result[name] if isinstance(result, dict) else getattr(result, name)


@asyncio_module
async def test_code_lenses_on_a_corpus_file_with_two_convolutions(client: LanguageClient) -> None:
    text = corpus("073.relay")
    uri = await built(client, "073.relay", text)
    found = await lenses(client, uri)
    conv_add, conv = line_of(text, "%0 = nn.conv2d"), line_of(text, "%1 = nn.conv2d")
    add = line_of(text, "add(%0, %1)")
    found_rows = rows(found)
    # AlterOpLayout's layout_transforms of each input and weight to NCHW4c / OIHW4i4o run with
    # the conv that reads them (identical kernels share a name): lenses after its kernel's;
    # the result's, back to NCHW, a kernel of its own on the line of the result's expression
    assert {conv_add: found_rows[conv_add], conv: found_rows[conv]} == {  # AlterOpLayout, FuseOps
        conv_add: ["ƒ conv2d + add ⟨tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add⟩", "LLVM IR",
                   "schedule (N steps)", "passes (2)", "layout_transform %x1", "layout_transform %w1"],
        conv: ["ƒ conv2d ⟨tvmgen_default_fused_nn_contrib_conv2d_NCHWc⟩", "LLVM IR", "schedule (N steps)",
               "passes (2)", "layout_transform %x2", "layout_transform %w2"]}
    assert {line: found_rows[line][0] for line in found_rows if line not in (conv_add, conv)} == {
        add: "ƒ layout_transform ⟨tvmgen_default_fused_layout_transform_2⟩"}
    movers = {lens.command.title: symbol(lens) for lens in found if lens.command.title.startswith("layout_transform %")}
    assert movers == {"layout_transform %x1": "tvmgen_default_fused_layout_transform",
                      "layout_transform %w1": "tvmgen_default_fused_layout_transform_1",
                      "layout_transform %x2": "tvmgen_default_fused_layout_transform",
                      "layout_transform %w2": "tvmgen_default_fused_layout_transform_1"}
    assert {lens.command.command for lens in found} == {"relaylens.open"}
    schedule = next(lens.command for lens in found if lens.command.title.startswith("schedule"))
    doc = await virtual(client, schedule.arguments[0])
    assert _field(doc, "languageId") == "plaintext"
    assert schedule.title == f"schedule ({_field(doc, 'text').count('# step ')} steps)"
    llvm = [lens.command.arguments[0] for lens in found if lens.command.title == "LLVM IR"]
    assert [uris.parse(u).function for u in llvm] == [  # in line order
        "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add", "tvmgen_default_fused_nn_contrib_conv2d_NCHWc",
        "tvmgen_default_fused_layout_transform_2"]
    assert all(uris.parse(u).document == uri and uris.parse(u).version == 1 for u in llvm)
    # the build reported work-done progress: begin, reports, end
    ends = [r for reports in client.progress_reports.values() for r in reports
            if isinstance(r, lsp.WorkDoneProgressEnd)]
    assert any(e.message.startswith(("built in", "built before: its report kept on disk")) and e.message.endswith("7 fused functions") for e in ends)
    progress = next(reports for reports in client.progress_reports.values()
                    if isinstance(reports[-1], lsp.WorkDoneProgressEnd) and "7 fused" in reports[-1].message)
    assert isinstance(progress[0], lsp.WorkDoneProgressBegin) and progress[0].title == "RelayLens build"
    assert any(isinstance(r, lsp.WorkDoneProgressReport) and r.message == "pass FuseOps" for r in progress)
    # the line map: the conv2d+add group spans the first conv2d and the final add
    line_map = await client.protocol.send_request_async("relaylens/lineMap", {"uri": uri})
    functions = {_field(f, "name"): f for f in _field(line_map, "functions")}
    assert _field(functions["tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add"], "relay") == [
        [conv_add, conv_add + 3], [add, add]]
    assert _field(line_map, "lines") and all(relay in range(line_of(text, "def @main"), add + 1)
                                             for _, relay in _field(line_map, "lines"))


@asyncio_module
async def test_code_lenses_on_mnist_and_the_way_back_from_llvm(client: LanguageClient) -> None:
    uri = await built(client, "mnist.relay", MNIST)
    found = await lenses(client, uri)
    names = [symbol(lens) for lens in found if lens.command.title.startswith(("ƒ ", "layout_transform %"))]
    assert names == MNIST_FUSED
    conv1 = line_of(MNIST, "%0 = nn.conv2d")
    assert rows(found)[conv1] == [f"ƒ conv2d + add + relu · conv1/Conv ⟨{MNIST_CONV}⟩",
                                  "LLVM IR", "schedule (N steps)", "passes (2)",
                                  "layout_transform %input", "layout_transform %conv1_weight"]
    assert rows(found)[line_of(MNIST, "%8 = reshape")][0] == "ƒ layout_transform + reshape · flatten/Reshape ⟨tvmgen_default_fused_layout_transform_reshape⟩"
    # open the first kernel's LLVM IR; definition on a multiply-add line leads to the conv2d
    llvm_uri = next(lens.command.arguments[0] for lens in found
                    if lens.command.title == "LLVM IR" and lens.range.start.line == conv1)
    doc = await virtual(client, llvm_uri)
    assert _field(doc, "languageId") == "llvm" and _field(doc, "version") == 1
    lines = _field(doc, "text").split("\n")
    assert lines[0].startswith("; ModuleID")
    fmul = next(i for i, line in enumerate(lines) if " fmul " in line and "!dbg" in line)
    llvm_doc = lsp.TextDocumentIdentifier(llvm_uri)
    target = await client.text_document_definition_async(lsp.DefinitionParams(llvm_doc, lsp.Position(fmul, 4)))
    assert [(t.uri, t.range.start.line) for t in target] == [(uri, conv1)]
    start = MNIST.split("\n")[conv1].index("nn.conv2d")
    assert target[0].range.start.character == start
    hover = await client.text_document_hover_async(lsp.HoverParams(llvm_doc, lsp.Position(fmul, 4)))
    assert f"mnist.relay:{conv1 + 1}:{start + 1}" in hover.contents.value
    assert "`conv1/Conv`" in hover.contents.value and "nn.conv2d(%input, %conv1_weight" in hover.contents.value
    assert hover.range.start.line == fmul
    # a line without a debug location has no way back
    assert not await client.text_document_definition_async(lsp.DefinitionParams(llvm_doc, lsp.Position(0, 0)))
    # the whole module: every kernel is there, and relu's lines lead to the relu
    module = _field(await virtual(client, uris.make("llvm", "module.ll", uri, 1)), "text").split("\n")
    assert all(any(line.startswith("define") and f"@{name}(" in line for line in module) for name in MNIST_FUSED)
    # the pass snapshot the "passes" lens opens: definition on the fused function's conv2d
    passes = next(lens for lens in found if lens.command.title.startswith("passes") and lens.range.start.line == conv1)
    snap_uri, selection = passes.command.arguments
    assert uris.parse(snap_uri).name.endswith("-FuseOps.relay")
    snapshot = _field(await virtual(client, snap_uri), "text").split("\n")
    first = selection["start"]["line"] if isinstance(selection, dict) else selection.start.line
    assert "Primitive=1" in snapshot[first]
    conv_line = next(i for i in range(first, len(snapshot)) if "nn.contrib_conv2d_NCHWc(" in snapshot[i])
    column = snapshot[conv_line].index("nn.contrib_conv2d_NCHWc(")
    snap_doc = lsp.TextDocumentIdentifier(snap_uri)
    target = await client.text_document_definition_async(
        lsp.DefinitionParams(snap_doc, lsp.Position(conv_line, column + 3)))
    assert [(t.uri, t.range.start.line, t.range.start.character) for t in target] == [(uri, conv1, start)]
    hover = await client.text_document_hover_async(lsp.HoverParams(snap_doc, lsp.Position(conv_line, column + 3)))
    assert "after FuseOps" in hover.contents.value and "`conv1/Conv`" in hover.contents.value


@asyncio_module
async def test_hover_shows_provenance_and_the_fused_function(client: LanguageClient) -> None:
    uri = await built(client, "mnist-hover.relay", MNIST)
    conv1 = line_of(MNIST, "%0 = nn.conv2d")
    column = MNIST.split("\n")[conv1].index("nn.conv2d")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(conv1, column + 2)))
    value = hover.contents.value
    assert value.startswith("**call** `nn.conv2d`")  # what it is and its type, then the story, then the docs
    fast, slow, docs = value.split("\n\n---\n\n")
    assert "Tensor[" in fast and "Fusion pattern" in docs
    assert slow.startswith("**frontend layer**: `conv1/Conv`")
    assert slow.index("**fused into**") < slow.index("**passes that changed it**")
    passes = _field(await client.protocol.send_request_async("relaylens/snapshots", {"uri": uri}), "passes")
    assert _field(passes[0], "name") == "input" and _field(passes[0], "changed")
    fuse = next(p for p in passes if _field(p, "name") == "FuseOps")
    index, snapshot = _field(fuse, "index"), _field(fuse, "uri")
    assert snapshot == uris.make("pass", f"{index}-FuseOps.relay", uri, 1)
    alter = next(p for p in passes if _field(p, "name") == "AlterOpLayout")
    assert (f"- [#{_field(alter, 'index')} AlterOpLayout]({_field(alter, 'uri')}#L5): "
            "`nn.conv2d(%input, %conv1_weight, padding=[2, 2, 2, 2]") in slow
    assert "→ `nn.contrib_conv2d_NCHWc(" in slow  # x86's blocked convolution
    assert f"- [#{index} FuseOps]({snapshot}#L17): `nn.contrib_conv2d_NCHWc(%0, %1" in slow
    assert re.search(r"→ `nn.contrib_conv2d_NCHWc\(%p0\d*, %p1, padding=\[2, 2, 2, 2\]", slow)
    assert f"**fused into** conv2d + add + relu · conv1/Conv  \n`{MNIST_CONV}`" in slow
    # LLVM IR: module.ll at the function's define line (as the ƒ lens opens it), then the function alone
    module = _field(await virtual(client, uris.make("llvm", "module.ll", uri, 1)), "text").split("\n")
    link = re.search(r"\[LLVM IR\]\((\S+)#L(\d+)\) · \[alone\]\((\S+)\)", slow)
    assert link and link[1] == uris.make("llvm", "module.ll", uri, 1), slow
    assert module[int(link[2]) - 1].startswith(f"define void @{MNIST_CONV}(")
    assert link[3] == uris.make("llvm", f"{MNIST_CONV}.ll", uri, 1)
    # on the relu, a different layer, the same fused function
    relu = line_of(MNIST, "%2 = nn.relu")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(relu, 8)))
    assert "`relu1/Relu`" in hover.contents.value
    assert f"`{MNIST_CONV}`" in hover.contents.value


@asyncio_module
async def test_lenses_stay_marked_stale_until_the_next_build_replaces_them(client: LanguageClient) -> None:
    text = corpus("073.relay")
    uri = await built(client, "stale-lenses.relay", text)
    fresh = rows(await lenses(client, uri))
    for version, edit in ((2, "// moved down a line\n"), (3, "%%% broken\n")):
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), text=edit)]))
        stale = rows(await lenses(client, uri))  # the last build's, one more line down each time
        assert sorted(stale) == [line + version - 1 for line in sorted(fresh)]
        assert all(re.search(r" · (rebuilding…|out of date \(the text has errors\)) ⟨", titles[0])
                   for titles in stale.values()), stale
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=4),
        [lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(0, 0), lsp.Position(1, 0)), text="")]))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert (await finished(uri, 4))["state"] == "done"
    again = rows(await lenses(client, uri))  # this version's own lenses, unmarked
    assert sorted(again) == [line + 1 for line in sorted(fresh)]
    assert [titles[0] for titles in again.values()] == [titles[0] for titles in fresh.values()]


@asyncio_module
async def test_lenses_say_out_of_date_once_a_broken_version_is_not_built(client: LanguageClient) -> None:
    """A breaking edit: the lenses the editor asks for at once say *rebuilding…* (a build is
    due after the debounce); when the build is then not started (the text has errors) the
    server asks the editor to fetch them again, and they say *out of date*.  VS Code asks
    for lenses on an edit, not when a timer fires: without the refresh they said
    *rebuilding…* for as long as the error stayed."""
    text = corpus("073.relay")
    uri = await built(client, "broken-lenses.relay", text)
    refreshed = next_refresh()
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
                                              text="%%% broken\n")]))
    stale = rows(await lenses(client, uri))
    assert all(" · rebuilding… ⟨" in titles[0] for titles in stale.values()), stale
    await asyncio.wait_for(refreshed, 30)  # the debounce ran out and nothing was built
    stale = rows(await lenses(client, uri))
    assert stale and all(" · out of date (the text has errors) ⟨" in titles[0] for titles in stale.values()), stale


@asyncio_module
async def test_an_edit_during_a_build_never_shows_the_old_report(client: LanguageClient) -> None:
    text = corpus("073.relay")
    uri = open_doc(client, "stale.relay", text)
    doc = lsp.TextDocumentIdentifier(uri)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
                                              text="// moved down a line\n")]))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(doc))  # build version 2 now
    assert not await lenses(client, uri)  # version 1's build never finished: nothing to show
    conv = line_of(text, "%1 = nn.conv2d") + 1
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, lsp.Position(conv, 14)))
    assert hover.contents.value.startswith("**call** `nn.conv2d`")
    assert "_building…_" in hover.contents.value and "fused into" not in hover.contents.value
    assert (await finished(uri, 2))["state"] == "done"
    old = [f for f in FINISHES if f["uri"] == uri and f["version"] == 1]
    # superseded, never published: cancelled, or never started (the open's analysis, in
    # pieces, was stopped by the edit before it was done: server/pieces.py)
    assert [f["state"] for f in old] in ([], ["cancelled"])
    assert {line_of(text, "%0 = nn.conv2d") + 1, conv} <= set(rows(await lenses(client, uri)))
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, lsp.Position(conv, 14)))
    assert ("**fused into** conv2d" in hover.contents.value
            and "`tvmgen_default_fused_nn_contrib_conv2d_NCHWc`" in hover.contents.value)


@asyncio_module
async def test_builds_wait_for_edits_to_settle(client: LanguageClient) -> None:
    text = corpus("080.relay")
    uri = await built(client, "typing.relay", text)
    for version in (2, 3, 4):  # three quick edits: one build, of the last
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text="\n" * version + text)]))
    assert (await finished(uri, 4))["state"] == "done"
    assert [f["version"] for f in FINISHES if f["uri"] == uri] == [1, 4]
    # the conv, AlterOpLayout's transforms of its input and its result's back, on the conv's
    # line (the def's computes nothing)
    assert sorted(rows(await lenses(client, uri))) == [line_of(text, "nn.conv2d") + 4]
    # an edit that breaks the text is not built; its build diagnostics are cleared
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=5),
        [lsp.TextDocumentContentChangeWholeDocument(text=text.replace("nn.conv2d(", "nn.conv2d(("))]))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    stale = [lens.command.title for lens in await lenses(client, uri)]
    assert [title for title in stale if title.startswith("ƒ ")] == [
        "ƒ conv2d · out of date (the text has errors)"]  # version 4's, marked; the transforms of its
    assert len([title for title in stale if title.startswith("layout_transform ")]) == 3  # inputs and result after it
    with pytest.raises(JsonRpcException) as err:
        await virtual(client, uris.make("llvm", "module.ll", uri, 5))
    assert "has errors" in err.value.message


@asyncio_module
async def test_a_killed_worker_is_reported_and_replaced(client: LanguageClient) -> None:
    uri = open_doc(client, "killed.relay", MNIST)
    while True:  # wait until the build runs (the worker reports a step)
        params = await asyncio.wait_for(client.wait_for_notification(lsp.PROGRESS), 30)
        if isinstance(params.value, dict) and params.value.get("kind") == "report":
            break
    status = await client.protocol.send_request_async("relaylens/status", {})
    pid = _field(_field(status, "worker"), "pid")
    os.kill(pid, signal.SIGKILL)
    assert (await finished(uri, 1, "crashed"))["current"]
    diags = client.diagnostics[uri]
    crash = [d for d in diags if d.source == "relaylens-build"]
    assert len(crash) == 1 and "the build worker stopped (killed by SIGKILL) while building version 1" in crash[0].message
    assert any(m.type == lsp.MessageType.Error and "killed by SIGKILL" in m.message for m in client.log_messages)
    # the server still answers, and saving builds again in a new worker
    assert not await lenses(client, uri)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert (await finished(uri, 1, "done"))["functions"] == len(MNIST_FUSED)
    assert not [d for d in client.diagnostics[uri] if d.source == "relaylens-build"]
    movers = 6  # the input's and the weights' layout_transforms: one lens each, after their call's kernel's
    assert len(await lenses(client, uri)) == 4 * (len(MNIST_FUSED) - movers) + movers
    status = await client.protocol.send_request_async("relaylens/status", {})
    assert _field(_field(status, "worker"), "pid") not in (None, pid)
    assert _field(_field(status, "worker"), "restarts") >= 1


@asyncio_module
async def test_identical_groups_share_a_kernel_and_each_get_lenses(client: LanguageClient) -> None:
    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(8, 8), float32]) {\n"
            "  %0 = nn.dense(%x, %w, units=8);\n  %1 = nn.relu(%0);\n"
            "  %2 = nn.dense(%1, %w, units=8);\n  nn.relu(%2)\n}\n")
    uri = await built(client, "twins.relay", text)
    found = rows(await lenses(client, uri))
    # the weight's pack (AlterOpLayout: x86 packs a dense's weight, a parameter here), once,
    # with the first dense that reads it
    assert sorted(found) == [2, 4]
    assert found[2] == found[4] + ["layout_transform %w"]
    assert found[2][0] == "ƒ dense + relu ⟨tvmgen_default_fused_nn_contrib_dense_pack_nn_relu⟩"
    line_map = await client.protocol.send_request_async("relaylens/lineMap", {"uri": uri})
    functions = _field(line_map, "functions")
    assert [(_field(f, "name"), _field(f, "relay")) for f in functions] == [
        ("tvmgen_default_fused_nn_contrib_dense_pack_nn_relu", [[2, 5]]),
        ("tvmgen_default_fused_layout_transform", [[2, 2]])]


@asyncio_module
async def test_lenses_sit_on_the_primitive_functions_of_a_file_already_fused(client: LanguageClient) -> None:
    text = corpus("023.relay")
    uri = await built(client, "prefused.relay", text)
    found = rows(await lenses(client, uri))
    assert {line: titles[0] for line, titles in found.items()} == {
        line_of(text, "def @collage_example_target_hook("): "ƒ add + relu ⟨tvmgen_default_fused_add_nn_relu⟩",
        line_of(text, "def @collage_example_target_hook_nn_relu("): "ƒ relu ⟨tvmgen_default_fused_nn_relu⟩",
        line_of(text, "abs(%4)"): "ƒ abs ⟨tvmgen_default_fused_abs⟩"}


@asyncio_module
async def test_unknown_virtual_uris_are_lsp_errors(client: LanguageClient) -> None:
    text = corpus("080.relay")
    uri = await built(client, "errors.relay", text)
    for bad in ("relaylens:/nope/x.ll?uri=x", "file:///x.relay", "relaylens:/pass/x.relay?uri=y"):
        with pytest.raises(JsonRpcException) as err:
            await virtual(client, bad)
        assert err.value.code == -32602, bad
    for missing, message in (
            (uris.make("llvm", "tvmgen_default_fused_nothing.ll", uri, 1), "no fused function"),
            (uris.make("pass", "99-FuseOps.relay", uri, 1), "no snapshot 99"),
            (uris.make("llvm", "module.ll", uri, 7), "version 7"),
            (uris.make("llvm", "module.ll", "file:///never/opened.relay", None), "has no build")):
        with pytest.raises(JsonRpcException) as err:
            await virtual(client, missing)
        assert err.value.code == -32803 and message in err.value.message, (missing, err.value.message)
    with pytest.raises(JsonRpcException) as err:
        await client.protocol.send_request_async("relaylens/virtualDocument", {"url": 3})
    assert err.value.code == -32602
    # hover and definition on a URI that names nothing answer null
    nothing = lsp.TextDocumentIdentifier(uris.make("llvm", "module.ll", "file:///never/opened.relay", None))
    assert await client.text_document_hover_async(lsp.HoverParams(nothing, lsp.Position(3, 3))) is None
    assert not await client.text_document_definition_async(lsp.DefinitionParams(nothing, lsp.Position(3, 3)))
    assert await client.protocol.send_request_async("relaylens/lineMap", {"uri": "file:///never/opened.relay"}) is None
    # and the real document still answers
    assert rows(await lenses(client, uri))[line_of(text, "nn.conv2d")][:4] == [
        "ƒ conv2d ⟨tvmgen_default_fused_nn_contrib_conv2d_NCHWc⟩", "LLVM IR", "schedule (N steps)", "passes (2)"]



@asyncio_module
async def test_a_pass_diff_has_an_aligned_side_with_hover(client: LanguageClient) -> None:
    uri = await built(client, "mnist-aligned.relay", MNIST)
    passes = _field(await client.protocol.send_request_async("relaylens/snapshots", {"uri": uri}), "passes")
    assert getattr(passes[0], "aligned", None) is None  # none for the input
    fuse = next(p for p in passes if _field(p, "name") == "FuseOps")
    index = _field(fuse, "index")
    aligned_uri = _field(fuse, "aligned")
    assert aligned_uri == uris.make("pass", f"{index}-FuseOps.aligned.relay", uri, 1)
    plain = _field(await virtual(client, _field(fuse, "uri")), "text")
    aligned = _field(await virtual(client, aligned_uri), "text")
    assert aligned != plain and re.sub(r"%\d+", "%", aligned) == re.sub(r"%\d+", "%", plain)
    # hover on the second conv2d of the aligned text: found through the renumbering
    lines = aligned.splitlines()
    conv = re.compile(r"nn\.(contrib_)?conv2d")  # AlterOpLayout's NCHWc form
    row = [i for i, line in enumerate(lines) if conv.search(line)][1]
    hover = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(aligned_uri), lsp.Position(row, conv.search(lines[row]).start() + 3)))
    assert "after FuseOps" in hover.contents.value and "`conv2/Conv`" in hover.contents.value
    start = hover.range.start
    assert conv.match(lines[start.line], start.character)


@asyncio_module
async def test_optimised_ir_and_assembly_views_with_and_without_debug_information(client: LanguageClient) -> None:
    uri = await built(client, "mnist-views.relay", MNIST)
    conv1 = line_of(MNIST, "%0 = nn.conv2d")
    kernel = next(n for n in MNIST_FUSED if "conv2d" in n)  # conv2d + add + relu, from lines conv1 .. conv1 + 2
    texts = {}
    for name in ("module.opt.nodebug.ll", f"{kernel}.opt.ll", f"{kernel}.opt.nodebug.ll",
                 f"{kernel}.s", f"{kernel}.nodebug.s", "module.nodebug.s"):
        doc = await virtual(client, uris.make("llvm", name, uri, 1))
        texts[name] = _field(doc, "text")
        assert _field(doc, "languageId") == ("plaintext" if name.endswith(".s") else "llvm")
    assert "!dbg" in texts[f"{kernel}.opt.ll"] and "!dbg" not in texts[f"{kernel}.opt.nodebug.ll"]
    assert not re.search(r"^!", texts["module.opt.nodebug.ll"], re.M)
    assert ".loc\t" in texts[f"{kernel}.s"] and ".loc" not in texts[f"{kernel}.nodebug.s"]
    # the label may open the view (no constant pool before it on every CPU)
    assert re.search(rf"^{kernel}:$", texts[f"{kernel}.nodebug.s"], re.M) and ".cfi_" not in texts["module.nodebug.s"]
    # go to definition from an instruction of the kernel, in both clean views, lands in its lines
    for name in (f"{kernel}.opt.nodebug.ll", "module.nodebug.s"):
        view = uris.make("llvm", name, uri, 1)
        lines = texts[name].split("\n")
        first = next(i for i, line in enumerate(lines) if line.startswith(("define", kernel + ":")) and kernel in line)
        row = next(i for i in range(first, len(lines)) if re.match(r"\s+(%\S+ = )?\S*(fmul|fadd|fma|vfmadd|vmul|vadd)", lines[i]))
        target = await client.text_document_definition_async(
            lsp.DefinitionParams(lsp.TextDocumentIdentifier(view), lsp.Position(row, 2)))
        assert target and target[0].uri == uri and conv1 <= target[0].range.start.line <= conv1 + 2, (name, lines[row])
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(view), lsp.Position(row, 2)))
        assert f"in fused function `{kernel}`" in hover.contents.value
    with pytest.raises(Exception, match="NAME\\[.opt\\]\\[.nodebug\\].ll"):
        await virtual(client, uris.make("llvm", "module.nodebug.opt.ll", uri, 1))


WORKSPACE = Path(tempfile.gettempdir()) / "relaylens-bound-workspace"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]))
async def rooted(lsp_client: LanguageClient):
    """A client whose workspace holds a model and its weights."""
    WORKSPACE.mkdir(exist_ok=True)
    (WORKSPACE / "model.relay").write_text(WEIGHTED)
    np.savez(WORKSPACE / "model.npz", w=np.ones((3, 4), "float32"), b=np.ones(3, "float32"))
    EVENTS.listen(lsp_client)
    root = WORKSPACE.as_uri()
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), root_uri=root,
        workspace_folders=[lsp.WorkspaceFolder(uri=root, name="w")]))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_the_editor_says_the_weights_were_bound(rooted: LanguageClient) -> None:
    uri = (WORKSPACE / "model.relay").as_uri()
    rooted.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=WEIGHTED)))
    done = await finished(uri, 1)
    assert done["state"] == "done" and done["weights"] == "model.npz"
    line = WEIGHTED.splitlines()[1]
    hover = await rooted.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), lsp.Position(1, line.index("%w") + 1)))
    assert "**bound** to `w` of `model.npz`" in hover.contents.value
    hover = await rooted.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), lsp.Position(1, line.index("%x") + 1)))
    assert "**bound**" not in hover.contents.value  # the real input stays a parameter
    assert "**parameter of @main**" in hover.contents.value and "**read at every run by**" in hover.contents.value
