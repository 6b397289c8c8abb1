"""BYOC partitioning in the editor, end to end over stdio with pytest-lsp
(server/features/byoc.py, server/slow/byoc_setup.py, server/slow/byoc_report.py): a model
that names its pattern table in a `// relaylens:` line is built partitioned; its regions
come coloured by target, a lens per external function, hovers that say which composite and
target took a call or which pattern came closest; the table gets no wildcard warnings,
"matched N times" lenses and references to its matches; editing the table or the settings
builds the models again.  Every wait is for a notification or a response.  Each test has a
server and a workspace of its own and opens what it reads, so the tests pass in any order
and spread over processes (`pytest -n 2` without `--dist loadfile`)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from build_events import BuildEvents
from byoc_cases import NPU_MODEL_BODY

ROOT = Path(__file__).resolve().parents[1]
TABLE = (ROOT / "examples" / "byoc" / "mynpu_patterns.relay").read_text(encoding="utf-8")
# the table with its conv2d+bias+relu taking the weights as parameters (no Constants=)
TABLE_PARAMETERS = TABLE.replace('def @conv2d_bias_relu(%x, %w, %b, Constants=["w", "b"])',
                                 "def @conv2d_bias_relu(%x, %w, %b)")
DIRECTIVE = "// relaylens: --patterns mynpu_patterns.relay --target mynpu\n"
BODY = NPU_MODEL_BODY
MODEL = '#[version = "0.0.5"]\n' + DIRECTIVE + BODY


class Session:
    """One server per test, in a workspace of its own (the table and four models on disk,
    `bound.npz` beside bound.relay): a test opens what it reads, whatever ran before it or
    beside it (pytest -n 2 spreads the tests of this file over two processes)."""

    def __init__(self, client: LanguageClient, workspace: Path, events: BuildEvents) -> None:
        self.client, self.workspace, self.events = client, workspace, events

    def uri(self, name: str) -> str:
        return (self.workspace / name).as_uri()

    def open(self, name: str, text: str) -> str:
        uri = self.uri(name)
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=text)))
        return uri

    async def finished(self, uri: str, count: int = 1, timeout: float = 120) -> dict:
        """The `count`-th `relaylens/buildFinished` of `uri` (a rebuild keeps the version)."""
        return await self.events.nth(lambda p: p["uri"] == uri and p["state"] == "done", count, timeout)

    def finishes(self, uri: str) -> int:
        return len([p for p in self.events.seen if p["uri"] == uri and p["state"] == "done"])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "mynpu_patterns.relay").write_text(TABLE)
    for name in ("bound", "plain", "configured", "broken"):
        (workspace / f"{name}.relay").write_text(MODEL)
    np.savez(workspace / "bound.npz", w=np.ones((4, 3, 3, 3), "float32"), b=np.ones(4, "float32"))
    return workspace


@pytest.fixture
def events() -> BuildEvents:
    return BuildEvents()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]))
async def client(lsp_client: LanguageClient, workspace: Path, events: BuildEvents):
    events.listen(lsp_client)
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
    root = workspace.as_uri()
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(workspace=lsp.WorkspaceClientCapabilities(
            code_lens=lsp.CodeLensWorkspaceClientCapabilities(refresh_support=True))),
        root_uri=root, workspace_folders=[lsp.WorkspaceFolder(uri=root, name="w")]))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def session(client: LanguageClient, workspace: Path, events: BuildEvents) -> Session:
    return Session(client, workspace, events)


def line_of(text: str, needle: str) -> int:
    return text.count("\n", 0, text.index(needle))


async def hover(client: LanguageClient, uri: str, text: str, needle: str) -> str:
    line = line_of(text, needle)
    col = text.splitlines()[line].index(needle) + 1
    found = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(uri),
                                                                   lsp.Position(line, col)))
    return found.contents.value


async def lens_rows(client: LanguageClient, uri: str) -> dict[int, list[str]]:
    found = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    rows: dict[int, list[str]] = {}
    for lens in found:
        rows.setdefault(lens.range.start.line, []).append(lens.command.title)
    return rows


async def published(client: LanguageClient, uri: str, wanted=lambda found: True) -> list:
    """The diagnostics published for `uri` once `wanted(them)` (they may be in already)."""
    while uri not in client.diagnostics or not wanted(client.diagnostics[uri]):
        await asyncio.wait_for(client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 60)
    return list(client.diagnostics[uri])


def get(obj, name: str):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


@pytest.mark.asyncio
async def test_a_model_built_with_its_table_has_regions_lenses_and_hovers(session: Session) -> None:
    client = session.client
    uri = session.open("bound.relay", MODEL)  # its weights bound: the convolution's are constants
    await session.finished(uri)
    conv, add = line_of(MODEL, "nn.conv2d"), line_of(MODEL, "add(%3")
    regions = await client.protocol.send_request_async("relaylens/byocRegions", {"uri": uri})
    assert get(regions, "targets") == ["mynpu"]
    assert [(get(r, "target"), get(r, "colour"), get(r, "title"), get(r, "lines")) for r in get(regions, "regions")] == [
        ("mynpu", 0, "mynpu · 3 ops · conv2d_bias_relu", [[conv, conv], [conv + 1, conv + 1], [conv + 2, conv + 2]]),
        ("mynpu", 0, "mynpu · 2 ops · add_relu", [[add, add], [add + 1, add + 1]])]
    rows = await lens_rows(client, uri)
    assert "mynpu · 3 ops · conv2d_bias_relu" in rows[conv] and "mynpu · 2 ops · add_relu" in rows[add]
    found = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    opens = next(lens.command for lens in found if lens.command.title.startswith("mynpu · 3"))
    assert opens.command == "relaylens.open" and "-PartitionGraph.relay" in opens.arguments[0]
    # the external function is one kernel, compiled under its global_symbol (not fused by FuseOps)
    kernel = next(lens.command for lens in found if lens.command.title.startswith("ƒ ") and lens.range.start.line == conv)
    ir = next(lens.command for lens in found if lens.command.title == "LLVM IR" and lens.range.start.line == conv)
    assert kernel.tooltip.startswith("tvmgen_default_mynpu_main_0:"), kernel.tooltip
    assert "/llvm/tvmgen_default_mynpu_main_0.ll?" in ir.arguments[0]
    text = await hover(client, uri, MODEL, "nn.bias_add")
    table = session.uri("mynpu_patterns.relay")
    assert text.startswith("**call** `nn.bias_add`")
    assert (f"**BYOC: mynpu** · composite `mynpu.conv2d_bias_relu` (pattern [`@conv2d_bias_relu`]({table}#L"
            f"{line_of(TABLE, 'def @conv2d_bias_relu') + 1})) in [`tvmgen_default_mynpu_main_0`](relaylens:/pass/") in text
    assert "**BYOC: host** · no pattern of `mynpu_patterns.relay` calls `exp`" in await hover(client, uri, MODEL, "exp(")
    # moved into the composite, its text the same: said so, not "X → X"
    merged = next(line for line in text.splitlines() if "MergeComposite" in line)
    assert "` moved, unchanged (line " in merged and "→" not in merged, merged


@pytest.mark.asyncio
async def test_a_call_left_on_the_host_names_the_closest_pattern_and_why(session: Session) -> None:
    client = session.client
    uri = session.open("plain.relay", MODEL)  # no weights beside it: %w is a parameter
    await session.finished(uri)
    text = await hover(client, uri, MODEL, "nn.conv2d")
    table = session.uri("mynpu_patterns.relay")
    line = line_of(TABLE, "def @conv2d_bias_relu") + 1
    assert f"**BYOC: host** · closest pattern [`@conv2d_bias_relu`]({table}#L{line}): %w must be a constant" in text
    regions = await client.protocol.send_request_async("relaylens/byocRegions", {"uri": uri})
    assert [get(r, "title") for r in get(regions, "regions")] == ["mynpu · 2 ops · add_relu"]


@pytest.mark.asyncio
async def test_the_table_checks_clean_and_finds_its_matches(session: Session) -> None:
    client = session.client
    bound, plain = session.open("bound.relay", MODEL), session.open("plain.relay", MODEL)
    table = session.open("mynpu_patterns.relay", TABLE)
    await session.finished(bound)
    await session.finished(plain)
    assert await published(client, table) == []  # no "cannot infer the type" for the wildcards
    # a Relay file like any other: hover and definition on a wildcard
    use = line_of(TABLE, "  %0 = nn.conv2d(%x, %w);")
    at = lsp.Position(use, TABLE.splitlines()[use].index("%x") + 1)
    shown = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(table), at))
    assert "`%x`" in shown.contents.value
    [target] = await client.text_document_definition_async(lsp.DefinitionParams(lsp.TextDocumentIdentifier(table), at))
    assert target.range.start.line == line_of(TABLE, "def @conv2d_bias_relu")
    rows = await lens_rows(client, table)
    assert rows[line_of(TABLE, "def @add_relu")] == ["matched 2 times in 2 models"]
    assert rows[line_of(TABLE, "def @conv2d_bias_relu")] == ["matched 1 time in 1 model"]
    assert rows[line_of(TABLE, "def @dense_bias")] == ["no match in the open models"]
    line = line_of(TABLE, "def @add_relu")
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        context=lsp.ReferenceContext(include_declaration=False), text_document=lsp.TextDocumentIdentifier(table),
        position=lsp.Position(line, 6)))
    add = line_of(MODEL, "add(%3")
    assert sorted((Path(r.uri).name, r.range.start.line, r.range.end.line) for r in refs) == [
        ("bound.relay", add, add + 1), ("plain.relay", add, add + 1)]


@pytest.mark.asyncio
async def test_editing_the_table_builds_its_models_again(session: Session) -> None:
    client = session.client
    plain = session.open("plain.relay", MODEL)
    table = session.open("mynpu_patterns.relay", TABLE)
    await session.finished(plain)
    rows = await lens_rows(client, plain)  # no weights: the table's Constants= keeps conv2d+bias+relu out
    assert not any(t.startswith("mynpu · 3 ops") for t in rows.get(line_of(MODEL, "nn.conv2d"), [])), rows
    before = session.finishes(plain)
    assert TABLE_PARAMETERS != TABLE
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(version=2, uri=table),
        [lsp.TextDocumentContentChangeWholeDocument(TABLE_PARAMETERS)]))
    await session.finished(plain, before + 1)  # the same version of the model, built with the new table
    rows = await lens_rows(client, plain)
    assert "mynpu · 3 ops · conv2d_bias_relu" in rows[line_of(MODEL, "nn.conv2d")]


@pytest.mark.asyncio
async def test_the_settings_name_a_table_for_every_model(session: Session) -> None:
    client = session.client
    text = MODEL.replace(DIRECTIVE, "")
    session.open("mynpu_patterns.relay", TABLE_PARAMETERS)  # edited in the editor, not saved
    uri = session.open("configured.relay", text)
    await session.finished(uri)
    assert await client.protocol.send_request_async("relaylens/byocRegions", {"uri": uri}) is None
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        {"relaylens": {"byoc": {"patterns": "mynpu_patterns.relay", "target": "mynpu"}}}))
    await session.finished(uri, 2)
    regions = await client.protocol.send_request_async("relaylens/byocRegions", {"uri": uri})
    # the table as the editor holds it (its file on disk has Constants=): conv2d_bias_relu takes parameters
    assert [get(r, "title") for r in get(regions, "regions")] == ["mynpu · 3 ops · conv2d_bias_relu",
                                                                   "mynpu · 2 ops · add_relu"]


@pytest.mark.asyncio
async def test_a_table_that_cannot_be_read_is_an_error_on_the_directive(session: Session) -> None:
    client = session.client
    text = MODEL.replace("mynpu_patterns.relay", "missing.relay")
    uri = session.open("broken.relay", text)
    await session.finished(uri)
    [diagnostic] = await published(client, uri, lambda found: len(found) > 0)
    assert diagnostic.range.start.line == line_of(text, "// relaylens:")
    assert diagnostic.message.startswith("the directive's --patterns missing.relay: ")
    assert "cannot be read" in diagnostic.message
