"""Type hints after bindings (textDocument/inlayHint, server/features/inlay_hints.py): the
short form, end to end over stdio with pytest-lsp on a small text and corpus files, limited
to the requested range, hidden where a `ty=` comment already says the type, and turned off
by `relaylens.inlayHints.types` (initializationOptions or workspace/didChangeConfiguration)."""

from __future__ import annotations

import asyncio
import re
import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from relaylens.compiler.ir.types import FuncType, TensorType, TupleType
from relaylens.server.features.inlay_hints import WIDTH, short_dtype, short_type

from conftest import CORPUS

HEADER = '#[version = "0.0.5"]\n'
PUBLISH = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
asyncio_module = pytest.mark.asyncio(loop_scope="module")
REFRESHES: list[None] = []

# line 1: `def @f`; line 2 %0 carries a ty comment of its own type, line 3 a wrong one
SMALL = HEADER + (
    "def @f(%x: Tensor[(1, 64, 56, 56), float32], %b: Tensor[(64, 1, 1), float32]) {\n"
    "  %0 = add(%x, %b) /* ty=Tensor[(1, 64, 56, 56), float32] */;\n"
    "  %1 = nn.relu(%0) /* ty=Tensor[(1, 64), float32] */;\n"
    "  %2 = sum(%1);\n"
    "  let %y = cast(%2, dtype=\"int64\");\n"
    "  let %z: int64 = %y;\n"
    "  let %t = (%z, %1) /* ty=(int64, Tensor[(1, 64, 56, 56), float32]) */;\n"
    "  %3 = (%1, %y);\n"
    "  %3\n"
    "}\n")


# --- the short form ----------------------------------------------------------------------


def test_short_form_of_tensors_scalars_tuples_and_the_rest() -> None:
    assert short_type(TensorType((1, 64, 56, 56), "float32")) == "(1, 64, 56, 56) f32"
    assert short_type(TensorType((), "bool")) == "bool"
    assert short_type(TensorType((4,), "uint8")) == "(4) u8"
    assert [short_dtype(d) for d in ("int64", "bfloat16", "float16x4", "custom")] == ["i64", "bf16", "f16x4", "custom"]
    scalar = TensorType((), "int32")
    assert short_type(TupleType((scalar, TensorType((2, 3), "float64")))) == "(i32, (2, 3) f64)"
    assert short_type(TupleType((scalar,))) == "(i32,)"
    assert short_type(FuncType((scalar,), scalar)) == "fn (int32) -> int32"


# --- end to end ----------------------------------------------------------------------------


def capabilities() -> lsp.ClientCapabilities:
    """VS Code's recorded capabilities, plus inlay hints with refresh (as VS Code 1.67+)."""
    caps = client_capabilities("visual-studio-code")
    caps.workspace.inlay_hint = lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    caps.text_document.inlay_hint = lsp.InlayHintClientCapabilities()
    return caps


def _client_fixture(options: dict | None):
    @pytest_lsp.fixture(
        config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
        scope="module",
    )
    async def fixture(lsp_client: LanguageClient):
        lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
        lsp_client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)(lambda params: REFRESHES.append(params))
        await lsp_client.initialize_session(lsp.InitializeParams(
            capabilities=capabilities(), initialization_options=options))
        yield
        await lsp_client.shutdown_session()

    return fixture


client = _client_fixture(None)
client_off = _client_fixture({"inlayHints": {"types": False}})


async def open_doc(client: LanguageClient, name: str, text: str) -> str:
    uri = f"file:///tmp/relaylens-inlay/{name}"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=text)))

    async def wait():
        while (await client.wait_for_notification(PUBLISH)).uri != uri:
            pass
    await asyncio.wait_for(wait(), timeout=30)
    return uri


async def hints(client: LanguageClient, uri: str, text: str, lines: tuple[int, int] | None = None):
    """(line, text before the hint, label) of each hint in `lines` (inclusive), or the whole text."""
    first, last = lines or (0, text.count("\n"))
    found = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(first, 0), lsp.Position(last + 1, 0))))
    rows = text.split("\n")
    out = []
    for h in found:
        assert h.kind == lsp.InlayHintKind.Type
        out.append((h.position.line, rows[h.position.line][: h.position.character].strip(), h.label))
    return out


@asyncio_module
async def test_hints_on_a_small_text(client: LanguageClient) -> None:
    uri = await open_doc(client, "small.relay", SMALL)
    found = await hints(client, uri, SMALL)
    # %0 has its type in a comment; %z is annotated; %t's value has its type in a comment
    assert found == [
        (3, "%1", ": (1, 64, 56, 56) f32"),  # its comment says another type: the hint stays
        (4, "%2", ": f32"),
        (5, "let %y", ": i64"),
        (8, "%3", ": ((1, 64, 56, 56) f32, i64)"),
    ]
    raw = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(4, 0), lsp.Position(5, 0))))
    assert [h.tooltip for h in raw] == ["float32"]  # the full type


@asyncio_module
async def test_hints_stay_in_the_requested_range(client: LanguageClient) -> None:
    uri = await open_doc(client, "range.relay", SMALL)
    assert [line for line, _, _ in await hints(client, uri, SMALL, (4, 5))] == [4, 5]
    assert await hints(client, uri, SMALL, (9, 10)) == []
    # a range that starts after a binding's name holds no hint for it
    found = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(4, 5), lsp.Position(5, 0))))
    assert list(found) == []


@asyncio_module
async def test_hints_on_a_corpus_file(client: LanguageClient) -> None:
    text = (CORPUS / "060.relay").read_text()
    if not text:
        pytest.skip("corpus file 060.relay is empty")
    uri = await open_doc(client, "060.relay", text)
    found = await hints(client, uri, text)
    graph = [i for i, row in enumerate(text.split("\n")) if re.match(r"\s*%\d+ = ", row)]
    assert [line for line, _, _ in found] == graph  # every `%N =`; the lets are annotated
    assert {label for _, _, label in found[:-1]} == {": (1) f32"}
    assert found[-1][1:] == ("%20", ": ((1) f32, (1) f32, (1) f32, (1) f32)")
    # a screen in the middle: only its own bindings
    middle = await hints(client, uri, text, (graph[5], graph[9]))
    assert [line for line, _, _ in middle] == graph[5:10]


@asyncio_module
async def test_no_hint_where_the_ty_comment_already_says_it(client: LanguageClient) -> None:
    text = (CORPUS / "132.relay").read_text()
    uri = await open_doc(client, "132.relay", text)
    assert await hints(client, uri, text) == []  # TVM printed every binding with its type
    bare = re.sub(r" ?/\* ty=[^*]*\*/", "", text)  # the same model without the comments
    uri = await open_doc(client, "132-bare.relay", bare)
    found = await hints(client, uri, bare)
    commented = [i for i, row in enumerate(text.split("\n")) if re.match(r"\s*%\d+ = .*/\* ty=[^*]*\*/;$", row)]
    assert len(found) >= len(commented) > 10
    assert {line for line, _, _ in found} >= set(commented)
    assert ("%0", ": (1, 512, 512, 3) f32") in {(before, label) for _, before, label in found}
    assert all(len(label) <= WIDTH + 2 for _, _, label in found)


@asyncio_module
async def test_a_statement_being_typed_keeps_the_other_hints(client: LanguageClient) -> None:
    """While a statement does not parse (its `)` not typed yet), the statements before it
    keep their hints, and so do those after it that do not use it (the hole the parser
    puts in its place cut them off the dataflow, and they went untyped: every hint of
    the function vanished at each such keystroke)."""
    text = (CORPUS / "060.relay").read_text()
    if not text:
        pytest.skip("corpus file 060.relay is empty")
    uri = await open_doc(client, "060-typing.relay", text)
    whole = await hints(client, uri, text)
    rows = text.split("\n")
    graph = [i for i, row in enumerate(rows) if re.match(r"\s*%\d+ = .*\);", row)]
    line = graph[len(graph) // 2]
    col = rows[line].rindex(");")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(line, col), lsp.Position(line, col + 1)),
                                              text="")]))

    async def wait():
        while True:
            published = await client.wait_for_notification(PUBLISH)
            if published.uri == uri and published.version == 2:
                return published
    published = await asyncio.wait_for(wait(), timeout=30)
    assert [d.range.start.line for d in published.diagnostics] == [line]
    broken = rows[:line] + [rows[line][:col] + rows[line][col + 1:]] + rows[line + 1:]
    found = await hints(client, uri, "\n".join(broken))
    assert [h for h in whole if h[0] < line] == [h for h in found if h[0] < line]
    assert line not in {h[0] for h in found}


@asyncio_module
async def test_the_setting_turns_hints_off_and_on(client: LanguageClient) -> None:
    uri = await open_doc(client, "setting.relay", SMALL)
    assert await hints(client, uri, SMALL)
    before = len(REFRESHES)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"relaylens": {"inlayHints": {"types": False}}}))
    assert await hints(client, uri, SMALL) == []
    assert len(REFRESHES) == before + 1  # the client was asked to request them again
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"relaylens": {"inlayHints": {"types": "no"}}}))  # not a bool: no change
    assert await hints(client, uri, SMALL) == []
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"relaylens": {"inlayHints": {"types": True}}}))
    assert len(await hints(client, uri, SMALL)) == 4


@asyncio_module
async def test_initialization_options_turn_hints_off(client_off: LanguageClient) -> None:
    uri = await open_doc(client_off, "off.relay", SMALL)
    assert await hints(client_off, uri, SMALL) == []
    client_off.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"relaylens": {"inlayHints": {"types": True}}}))
    assert len(await hints(client_off, uri, SMALL)) == 4
