"""The language server: pure tests of `convert` and `analysis`, and end-to-end tests over
stdio with pytest-lsp (one server for the module; every wait is for a notification or a
response, never a sleep)."""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pytest_lsp import ClientServerConfig, LanguageClient

from relaylens.compiler.diagnostics import Diagnostic, Severity
from relaylens.compiler.ir.span import LayerSpan, Source, Span
from relaylens.compiler.parser import parse
from relaylens.server import convert
from relaylens.server.analysis import Analyses

from conftest import CORPUS
HEADER = '#[version = "0.0.5"]\n'
BAD = HEADER + "def @f(%x: float32) -> float32 {\n  add(%x, %x))\n}\n"
GOOD = HEADER + "def @f(%x: float32) -> float32 {\n  add(%x, %x)\n}\n"
EMOJI = HEADER + "def @f(%x: float32) -> float32 {\n  /* 🙂🙂 */ add(%x, %x))\n}\n"
GRAPH = HEADER + "def @g(%x: Tensor[(2, 3), float32]) {\n  %0 = add(%x, %x);\n  multiply(%0, %x)\n}\n"
PUBLISH = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
asyncio_module = pytest.mark.asyncio(loop_scope="module")


def pos(line: int, character: int) -> lsp.Position:
    return lsp.Position(line=line, character=character)


def rng(l0: int, c0: int, l1: int, c1: int) -> lsp.Range:
    return lsp.Range(start=pos(l0, c0), end=pos(l1, c1))


# --- convert: pure ---------------------------------------------------------------------


def test_position_counts_utf16_units_and_zero_based_lines() -> None:
    src = Source("s", "ab\n🙂x\n\n")
    assert convert.position(src, 0) == pos(0, 0)
    assert convert.position(src, 2) == pos(0, 2)
    assert convert.position(src, 3) == pos(1, 0)
    assert convert.position(src, 4) == pos(1, 2)  # after the emoji: two UTF-16 units
    assert convert.position(src, 5) == pos(1, 3)
    assert convert.position(src, 6) == pos(2, 0)
    assert convert.position(src, 7) == pos(3, 0)  # the end of the text
    assert convert.position(src, 99) == pos(3, 0)  # clamped


@pytest.mark.parametrize("offset", range(0, 12))
def test_offset_inverts_position(offset: int) -> None:
    src = Source("s", "a😀b\r\n𝄞\n\nz")
    if offset <= len(src.text) and src.text[offset - 1 : offset] != "\r":  # not inside \r\n
        assert convert.offset(src, convert.position(src, offset)) == min(offset, len(src.text))


def test_offset_clamps_and_never_splits_a_surrogate_pair() -> None:
    src = Source("s", "🙂x\r\nyz")
    assert convert.offset(src, pos(0, 1)) == 0  # inside the pair: the emoji itself
    assert convert.offset(src, pos(0, 2)) == 1
    assert convert.offset(src, pos(0, 50)) == 2  # past the line: its end, before \r\n
    assert convert.offset(src, pos(7, 0)) == len(src.text)


def test_diagnostic_conversion() -> None:
    src = Source("file:///d.relay", "x 🙂 bad\nsecond\n")
    note_here = Span(src, 8, 14)
    diag = Diagnostic("it is bad", Span(src, 4, 7), Severity.WARNING,
                      notes=((note_here, "see here"), (LayerSpan("conv1/Conv"), "from layer")),
                      source="types", code="E1")
    out = convert.diagnostic(diag, src, "file:///d.relay")
    assert out.range == rng(0, 5, 0, 8)
    assert out.severity == lsp.DiagnosticSeverity.Warning
    assert out.source == "relaylens types"
    assert out.code == "E1"
    assert out.related_information == [lsp.DiagnosticRelatedInformation(
        lsp.Location("file:///d.relay", rng(1, 0, 1, 6)), "see here")]
    assert "note: from layer (conv1/Conv:0:0)" in out.message
    nowhere = convert.diagnostic(Diagnostic("no place"), src, "file:///d.relay")
    assert nowhere.range == rng(0, 0, 0, 0) and nowhere.severity == lsp.DiagnosticSeverity.Error


def test_analyses_are_cached_per_version() -> None:
    cache = Analyses()
    first = cache.update("u", 1, GOOD)
    assert cache.update("u", 1, GOOD) is first
    second = cache.update("u", 2, BAD)
    assert second is not first and cache.latest("u") is second
    assert cache.for_request("u", 3, GOOD) is second  # the last analysis answers
    cache.forget("u")
    assert cache.latest("u") is None
    assert cache.for_request("u", 3, GOOD).version == 3


def test_a_failing_handler_answers_its_default(caplog) -> None:
    from relaylens.server.features import guarded

    @guarded(default=[])
    def broken(params):
        raise RuntimeError("boom")

    assert broken(None) == []
    assert "broken failed" in caplog.text


@pytest.mark.parametrize("argv", [["serve", "--port", "3"], ["serve", "--tcp"],
                                  ["serve", "--tcp", "--port", "70000"]])
def test_serve_usage_errors(argv: list[str], capsys) -> None:
    from relaylens.compiler.cli import EXIT_USAGE, main

    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.startswith("relaylens: ")


# --- end to end ------------------------------------------------------------------------


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str, version: int | None) -> list[lsp.Diagnostic]:
    """Wait for the diagnostics of `uri` at `version` (others are skipped)."""
    async def wait():
        while True:
            params = await client.wait_for_notification(PUBLISH)
            if params.uri == uri and params.version == version:
                return list(params.diagnostics)
    return await asyncio.wait_for(wait(), timeout=15)


async def open_doc(client: LanguageClient, name: str, text: str) -> tuple[str, list]:
    uri = f"file:///tmp/relaylens-test/{name}"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=text)))
    return uri, await published(client, uri, 1)


@asyncio_module
async def test_syntax_error_range_then_fixed(client: LanguageClient) -> None:
    uri, diags = await open_doc(client, "bad.relay", BAD)
    assert [(d.range, d.source, d.severity) for d in diags] == [
        (rng(2, 13, 2, 14), "relaylens syntax", lsp.DiagnosticSeverity.Error)]
    assert "expected '}'" in diags[0].message
    # an incremental edit removes the extra ')'
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangePartial(range=rng(2, 13, 2, 14), text="")]))
    assert await published(client, uri, 2) == []
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert await published(client, uri, None) == []


@asyncio_module
async def test_debounce_publishes_only_the_latest_version(client: LanguageClient) -> None:
    uri, diags = await open_doc(client, "typing.relay", GOOD)
    assert diags == []
    for version, text in ((2, BAD), (3, GOOD), (4, BAD)):
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)]))
    params = await asyncio.wait_for(client.wait_for_notification(PUBLISH), timeout=15)
    assert (params.uri, params.version, len(params.diagnostics)) == (uri, 4, 1)


@asyncio_module
async def test_utf16_columns_after_an_emoji(client: LanguageClient) -> None:
    _, diags = await open_doc(client, "emoji.relay", EMOJI)
    assert [d.range for d in diags] == [rng(2, 24, 2, 25)]


@asyncio_module
async def test_definition_references_highlight(client: LanguageClient) -> None:
    uri, diags = await open_doc(client, "graph.relay", GRAPH)
    assert diags == []
    doc = lsp.TextDocumentIdentifier(uri)
    # `%x` in `multiply(%0, %x)`, line 3 → the parameter `%x` on line 1
    found = await client.text_document_definition_async(lsp.DefinitionParams(doc, pos(3, 16)))
    assert found == [lsp.Location(uri, rng(1, 7, 1, 9))]
    # `%0` in the call → its binding
    found = await client.text_document_definition_async(lsp.DefinitionParams(doc, pos(3, 12)))
    assert found == [lsp.Location(uri, rng(2, 2, 2, 4))]
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=doc, position=pos(1, 8), context=lsp.ReferenceContext(include_declaration=True)))
    assert [r.range for r in refs] == [rng(1, 7, 1, 9), rng(2, 11, 2, 13), rng(2, 15, 2, 17),
                                       rng(3, 15, 3, 17)]
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=doc, position=pos(1, 8), context=lsp.ReferenceContext(include_declaration=False)))
    assert len(refs) == 3
    marks = await client.text_document_document_highlight_async(
        lsp.DocumentHighlightParams(doc, pos(2, 3)))
    assert [(m.range, m.kind) for m in marks] == [
        (rng(2, 2, 2, 4), lsp.DocumentHighlightKind.Write),
        (rng(3, 11, 3, 13), lsp.DocumentHighlightKind.Read)]
    nothing = await client.text_document_definition_async(lsp.DefinitionParams(doc, pos(0, 3)))
    assert not nothing


@asyncio_module
async def test_hover(client: LanguageClient) -> None:
    uri, _ = await open_doc(client, "hover.relay", GRAPH)
    doc = lsp.TextDocumentIdentifier(uri)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, pos(2, 12)))
    assert hover.contents.kind == lsp.MarkupKind.Markdown
    assert "local variable" in hover.contents.value
    assert "%x: Tensor[(2, 3), float32]" in hover.contents.value
    assert hover.range == rng(2, 11, 2, 13)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, pos(1, 5)))
    assert "global function" in hover.contents.value
    assert "def @g(%x: Tensor[(2, 3), float32])" in hover.contents.value


@asyncio_module
async def test_corpus_document_symbols_and_hover(client: LanguageClient) -> None:
    path = CORPUS / "039.relay"
    if not path.exists():
        pytest.skip("corpus not available")
    uri, diags = await open_doc(client, "039.relay", path.read_text(encoding="utf-8"))
    assert not [d for d in diags if d.severity == lsp.DiagnosticSeverity.Error]
    doc = lsp.TextDocumentIdentifier(uri)
    outline = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
    assert [(s.name, s.kind) for s in outline] == [
        ("List", lsp.SymbolKind.Enum), ("@id", lsp.SymbolKind.Function),
        ("@map", lsp.SymbolKind.Function), ("@main", lsp.SymbolKind.Function)]
    assert [(c.name, c.kind) for c in outline[0].children] == [
        ("Cons", lsp.SymbolKind.EnumMember), ("Nil", lsp.SymbolKind.EnumMember)]
    assert outline[0].range == rng(2, 0, 5, 1)  # the whole `type List[A] {...}`
    assert outline[1].range == rng(6, 0, 8, 1) and outline[1].selection_range == rng(6, 4, 6, 7)
    # hover on the constructor `Cons` in a pattern and `@map` in @main
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, pos(11, 5)))
    assert "constructor" in hover.contents.value and "Cons(A, List[A])" in hover.contents.value
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, pos(16, 3)))
    assert "def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B]" in hover.contents.value
    # definition of `@map` (the recursive call) → its name in `def @map`
    found = await client.text_document_definition_async(lsp.DefinitionParams(doc, pos(11, 36)))
    assert found == [lsp.Location(uri, rng(9, 4, 9, 8))]


@asyncio_module
async def test_garbage_never_kills_the_server(client: LanguageClient) -> None:
    rnd = random.Random(8)
    alphabet = "%@()[]{}:;,=-> \n\t\"#/*\\0123abcdefxyz🙂\u2028\r"
    uri, _ = await open_doc(client, "garbage.relay", "".join(rnd.choice(alphabet) for _ in range(400)))
    doc = lsp.TextDocumentIdentifier(uri)
    for version in range(2, 12):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(1, 600)))
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)]))
        for line, char in ((0, 0), (3, 7), (999, 999), (-0, 10_000)):
            await client.text_document_hover_async(lsp.HoverParams(doc, pos(line, char)))
            await client.text_document_definition_async(lsp.DefinitionParams(doc, pos(line, char)))
        await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
    await published(client, uri, 11)
    # malformed protocol messages: framed but not JSON, JSON but not JSON-RPC
    for body in (b"{oops", b"[1, 2", b'{"jsonrpc": "2.0"}', b'"just a string"'):
        client.protocol.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with pytest.raises(JsonRpcMethodNotFound):  # an unknown method is a proper LSP error, not a crash
        await client.protocol.send_request_async("relaylens/noSuchMethod", {})
    # requests about a document nobody opened are answered too: with an error saying why
    unknown = lsp.TextDocumentIdentifier("file:///nowhere/missing.relay")
    with pytest.raises(JsonRpcException, match="missing.relay is not open in the editor"):
        await client.text_document_hover_async(lsp.HoverParams(unknown, pos(0, 0)))
    # and a valid document still gets answers
    uri, diags = await open_doc(client, "after.relay", GRAPH)
    assert diags == []
    found = await client.text_document_definition_async(
        lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri), pos(3, 16)))
    assert found == [lsp.Location(uri, rng(1, 7, 1, 9))]


@asyncio_module
async def test_hover_on_an_operator_and_an_expression(client: LanguageClient) -> None:
    text = HEADER + ("def @g(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
                     "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n  (%0, %0)\n}\n")
    uri, diags = await open_doc(client, "ops.relay", text)
    assert diags == []
    doc = lsp.TextDocumentIdentifier(uri)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, pos(2, 10)))
    value = hover.contents.value
    assert value.startswith("**call** `nn.conv2d`\n\n```relay\n: Tensor[(1, 4, 8, 8), float32]\n```")  # name and type first
    story, docs = value.rsplit("\n\n---\n\n", 1)  # the operator's docs come last
    assert "strides=[1, 1]" in docs and "Fusion pattern: OutEWiseFusable" in docs
    assert "| `padding` | `[1, 1]` | [0, 0] |" in docs and "| `strides` |" not in docs  # only what it writes
    assert "at their defaults: `strides`, `dilation`" in docs
    assert hover.range == rng(2, 7, 2, 16)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, pos(3, 2)))
    assert "(Tensor[(1, 4, 8, 8), float32], Tensor[(1, 4, 8, 8), float32])" in hover.contents.value
    hover = await client.text_document_hover_async(lsp.HoverParams(doc, pos(2, 4)))
    assert "Tensor[(1, 4, 8, 8), float32]" in hover.contents.value  # the binding %0


@asyncio_module
async def test_type_errors_are_published(client: LanguageClient) -> None:
    text = HEADER + "def @g(%x: Tensor[(2, 3), float32], %y: Tensor[(4, 1), float32]) {\n  add(%x, %y)\n}\n"
    uri, diags = await open_doc(client, "types.relay", text)
    assert [(d.range.start.line, d.range.start.character, d.severity) for d in diags] == [
        (2, 2, lsp.DiagnosticSeverity.Error)]
    assert diags[0].message.startswith("add: shapes cannot be broadcast together")
    assert diags[0].source == "relaylens types"
