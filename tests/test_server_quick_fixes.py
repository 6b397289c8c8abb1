"""Quick fixes: each diagnostic that knows its fix (a misspelt operator, attribute or
variable, a missing ')', a missing 'let') offers it as a code action, and applying it leaves a clean file."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from test_server_editing import apply, change, published

HEADER = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(1, 8), float32], %scale: Tensor[(1, 8), float32]) {\n'
CASES = {
    "operator": ("  %0 = nn.rleu(%x);\n  %0\n}\n", "unknown operator nn.rleu (did you mean nn.relu?)", "nn.relu(%x)"),
    "attribute": ("  %0 = nn.softmax(%x, axsi=1);\n  %0\n}\n", "did you mean axis?", "axis=1"),
    "variable": ("  %0 = multiply(%x, %scael);\n  %0\n}\n", "undefined variable %scael (did you mean %scale?)",
                 "multiply(%x, %scale)"),
    "closer": ("  %0 = nn.relu(add(%x, %x);\n  %0\n}\n", "expected ')' to close this call", "nn.relu(add(%x, %x));"),
    "let": ("  %y = nn.relu(%x);\n  multiply(%y, %scale)\n}\n", "binds a name without 'let'", "let %y = nn.relu(%x);"),
}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]))
async def client(lsp_client: LanguageClient):
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
@pytest.mark.parametrize("case", list(CASES))
async def test_the_quick_fix_repairs_the_text(client: LanguageClient, case: str) -> None:
    body, message, repaired = CASES[case]
    text = HEADER + body
    uri = f"file:///tmp/relaylens-editing/fix-{case}.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=text)))
    diagnostics = await published(client, uri, 1)
    errors = [d for d in diagnostics if d.severity == lsp.DiagnosticSeverity.Error]
    assert len(errors) == 1 and message in errors[0].message, [d.message for d in diagnostics]
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), errors[0].range, lsp.CodeActionContext(diagnostics=errors)))
    assert [a.kind for a in actions] == [lsp.CodeActionKind.QuickFix] and actions[0].is_preferred
    fixed = apply(text, actions[0].edit.changes[uri])
    assert repaired in fixed
    await change(client, uri, 2, fixed, wait=False)
    assert [d.message for d in await published(client, uri, 2) if d.severity == lsp.DiagnosticSeverity.Error] == []


@pytest.mark.asyncio
async def test_a_diagnostic_without_a_fix_offers_nothing(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-editing/nofix.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=HEADER + "  %0 = zzyzx(%x);\n  %0\n}\n")))
    diagnostics = await published(client, uri, 1)
    assert [d.message for d in diagnostics] == ["unknown operator zzyzx"]
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), diagnostics[0].range, lsp.CodeActionContext(diagnostics=diagnostics)))
    assert not actions
