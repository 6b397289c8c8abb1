"""Analyses in pieces, end to end over stdio with pytest-lsp (server/pieces.py,
server/features/diagnostics.py): a document opened while a long one is still being
analysed gets its diagnostics before the long one's analysis ends; a document changed
while its analysis runs gets the diagnostics of its last text only, never older ones
after newer ones; hover and definition answer right once the pieces are done.  The
tests look at the order of the publications, never at a clock."""

from __future__ import annotations

import asyncio
import functools
import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from relaylens.compiler.check import check_text

PUBLISH = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
asyncio_module = pytest.mark.asyncio(loop_scope="module")
LINES = 8_000  # long enough to be read in pieces (0.3 s), and over EARLY_CHARS (syntax first)
PUBLISHED: list[tuple[str, int | None, list[str]]] = []  # every publication: uri, version, messages
ARRIVED = asyncio.Event()
MISMATCH = "%y"  # the last statement adds a Tensor[(3)]: one type error, at the very end


def chain(n: int, broken: str = "") -> str:
    """`n` statements `%k = add(%k-1, %k-1)`, then one adding `%y` of another shape."""
    lines = ['#[version = "0.0.5"]',
             "def @main(%x: Tensor[(16), float32], %y: Tensor[(3), float32]) {", "  %0 = add(%x, %x);"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1});" for k in range(1, n)]
    lines += [f"  %{n} = add(%{n - 1}, {MISMATCH}){broken};", f"  %{n}", "}"]
    return "\n".join(lines) + "\n"


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    def record(params: lsp.PublishDiagnosticsParams) -> None:
        PUBLISHED.append((params.uri, params.version, sorted(d.message for d in params.diagnostics)))
        ARRIVED.set()

    lsp_client.protocol.fm.features[PUBLISH] = record  # every publication, in order
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        initialization_options={"build": {"enabled": False}}))
    yield
    await lsp_client.shutdown_session()


async def until(condition, timeout: float = 300.0) -> None:
    """Wait for publications until `condition()` holds."""
    async def loop() -> None:
        while not condition():
            ARRIVED.clear()
            await ARRIVED.wait()
    await asyncio.wait_for(loop(), timeout)


def of(uri: str) -> list[tuple[int, list[str]]]:
    return [(version, messages) for u, version, messages in PUBLISHED if u == uri]


@functools.cache
def expected(uri: str, text: str, syntax_only: bool = False) -> list[str]:
    checked = check_text(text, uri)
    return sorted(d.message for d in checked.diagnostics if not syntax_only or d.source == "syntax")


def final(uri: str, text: str):
    """A condition: `uri` has had the publication of all of `text`'s diagnostics."""
    return lambda: any(m == expected(uri, text) for _, m in of(uri))


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="relay", version=version, text=text)))


@asyncio_module
async def test_a_second_document_is_served_while_the_first_is_analysed(client: LanguageClient) -> None:
    long_uri, short_uri = "file:///pieces/long.relay", "file:///pieces/short.relay"
    long_text = chain(LINES)
    short_text = chain(3, broken=")")  # a syntax error (a `)` too many) and the type error
    open_doc(client, long_uri, long_text)
    open_doc(client, short_uri, short_text)
    await until(lambda: final(long_uri, long_text)() and final(short_uri, short_text)())
    order = [uri for uri, _, _ in PUBLISHED]
    last_long = len(order) - 1 - order[::-1].index(long_uri)
    assert order.index(short_uri) < last_long  # served before the long one's analysis ended
    syntax = expected(short_uri, short_text, syntax_only=True)
    assert syntax and set(syntax) <= set(of(short_uri)[0][1])  # its syntax error in its first publication
    assert of(long_uri)[-1][1] == expected(long_uri, long_text) != []  # the long one's type error, last


@asyncio_module
async def test_a_change_during_the_analysis_publishes_only_the_last_text(client: LanguageClient) -> None:
    uri = "file:///pieces/changed.relay"
    texts = [chain(LINES), chain(LINES, broken=")"), chain(LINES).replace(f"  %{LINES // 2} = add(", f"  %{LINES // 2} = sub(")]
    assert texts[2] != texts[0]
    open_doc(client, uri, texts[0])
    for version, text in enumerate(texts[1:], start=2):  # sent at once: the first analysis is still going
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
    await until(final(uri, texts[2]))
    await asyncio.sleep(0)
    published = of(uri)
    versions = [v for v, _ in published]
    assert versions == sorted(versions)  # never an older version after a newer one
    assert versions[-1] == 3
    assert published[-1][1] == expected(uri, texts[2])
    assert expected(uri, texts[1]) != expected(uri, texts[2])
    assert all(m != expected(uri, texts[1]) for v, m in published if v == 3)


@asyncio_module
async def test_hover_and_definition_after_the_pieces(client: LanguageClient) -> None:
    uri = "file:///pieces/look.relay"
    text = chain(LINES)
    open_doc(client, uri, text)
    await until(final(uri, text))
    line = 2 + 6_789  # `  %6789 = add(%6788, %6788);`
    assert text.split("\n")[line].startswith("  %6789 = add(%6788")
    use = lsp.Position(line=line, character=text.split("\n")[line].index("%6788") + 1)
    doc = lsp.TextDocumentIdentifier(uri=uri)
    hover = await client.text_document_hover_async(lsp.HoverParams(text_document=doc, position=use))
    assert hover is not None and "Tensor[(16), float32]" in str(hover.contents)
    found = await client.text_document_definition_async(lsp.DefinitionParams(text_document=doc, position=use))
    locations = found if isinstance(found, list) else [found]
    assert locations and locations[0].range.start.line == line - 1  # `%6788 = ...`, the line before
