"""Hover, definition and highlights right after an edit, before the edit's analysis
(server/reading.py): they read the latest analysis at once, which may be of the text
before the edit, so a position is carried over the edit and the ranges back; a position
inside the edited part gets no answer.  Before, a hover on a conv2d that a new line above
had moved down described the old occupant of its line (nn.batch_norm)."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from relaylens.server.analysis import Analyses
from relaylens.server.reading import Reading

from test_server_editing import published

LAYER = """  %{a} = nn.conv2d(%{x}, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %{b} = nn.batch_norm(%{a}, %g, %be, %m, %v);
  %{c} = %{b}.0;
"""
HEADER = ('#[version = "0.0.5"]\n'
          "def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32], %g: Tensor[(4), float32], "
          "%be: Tensor[(4), float32], %m: Tensor[(4), float32], %v: Tensor[(4), float32]) {\n")


def model(layers: int) -> str:
    body, x = "", "x"
    for i in range(layers):
        body += LAYER.format(a=3 * i, b=3 * i + 1, c=3 * i + 2, x=x)
        x = str(3 * i + 2)
    return HEADER + body + f"  nn.relu(%{x})\n}}\n"


TEXT = model(200)
EDITED = TEXT.replace("  %300 = nn.conv2d", "  // a new line above: the rest moves down\n  %300 = nn.conv2d")
CONV = TEXT.splitlines().index(next(l for l in TEXT.splitlines() if l.startswith("  %300 = nn.conv2d")))


def test_a_position_is_carried_over_the_edit_and_the_ranges_back():
    analysis = Analyses().update("file:///m.relay", 1, TEXT)
    reading = Reading(analysis, EDITED)
    column = TEXT.splitlines()[CONV].index("nn.conv2d") + 3
    offset = reading.offset(lsp.Position(CONV + 1, column))  # the conv2d, a line lower now
    assert TEXT[offset - 3:offset + 6] == "nn.conv2d"
    start, end, node = analysis.exprs.at(offset)
    assert node.op.name == "nn.conv2d"
    assert reading.offset_range(start, end).start.line == CONV + 1
    assert reading.offset(lsp.Position(CONV, 5)) is None  # on the new line: nothing before it
    before = TEXT.index("%297")
    assert reading.offset_range(before, before + 4).start.line == TEXT.count("\n", 0, before)  # above: unmoved


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]))
async def client(lsp_client: LanguageClient):
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_hover_and_definition_just_after_an_edit_describe_what_is_there_now(client: LanguageClient):
    uri = "file:///tmp/relaylens-editing/stale-reading.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=TEXT)))
    await published(client, uri, 1)
    await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri)))
    # typed as two keystrokes: the second comes while the document is busy, so its analysis
    # waits for a pause (150 ms) and the requests below find the analysis of version 1
    half = EDITED.replace("// a new line above: the rest moves down", "//")
    for version, text in ((2, half), (3, EDITED)):
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text)]))
    line = EDITED.splitlines()[CONV + 1]
    conv = lsp.Position(CONV + 1, line.index("nn.conv2d") + 3)
    use = lsp.Position(CONV + 1, line.index("%299") + 2)
    hover = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(uri), conv))
    target = await client.text_document_definition_async(lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri), use))
    assert hover is not None and hover.contents.value.startswith("**call** `nn.conv2d`"), hover
    assert hover.range.start.line == CONV + 1
    [where] = target
    assert EDITED.splitlines()[where.range.start.line].lstrip().startswith("%299 = %298.0"), where
