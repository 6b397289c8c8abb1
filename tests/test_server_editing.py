"""The language server's editing features, end to end over stdio with pytest-lsp and the
client capabilities VS Code records (snippets, prepareRename, label offsets, versioned
document changes): declaration, rename and its refusals, completion (also on text that
does not parse), signature help, semantic tokens, folding ranges and formatting, on small
texts and on the GPT-2 corpus file.  One server for the module; every wait is for a
response or a notification."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from relaylens.compiler.parser import parse
from relaylens.server.cursor import cursor_context
from relaylens.server.text_edits import map_offset
from relaylens.server.tokens import TOKEN_MODIFIERS, TOKEN_TYPES

from conftest import CORPUS
GPT2 = CORPUS / "002.relay"
HEADER = '#[version = "0.0.5"]\n'
PUBLISH = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
asyncio_module = pytest.mark.asyncio(loop_scope="module")
INITIALIZED: list[lsp.InitializeResult] = []

# line 1: `def @f(...)`, the body on lines 2-4
SMALL = HEADER + (
    "def @f(%x: Tensor[(1, 4), float32], %b: Tensor[(4), float32]) -> Tensor[(1, 4), float32] {\n"
    "  %0 = nn.bias_add(%x, %b, axis=1);\n"
    "  let %y: Tensor[(1, 4), float32] = add(%0, 1f /* ty=float32 */);\n"
    "  multiply(%y, %x)\n"
    "}\n"
    "def @main(%x: Tensor[(1, 4), float32], %b: Tensor[(4), float32]) {\n"
    "  @f(%x, %b)\n"
    "}\n")
# non-ASCII before the symbols: `é` is one UTF-16 unit, `🙂` two
UNICODE = HEADER + (
    "def @g(%x: float32) -> float32 {\n"
    "  /* é🙂 */ add(%x, /* 🙂 */ %x)\n"
    "}\n")
ADT = HEADER + (
    "type List[A] {\n"
    "  Cons(A, List[A]),\n"
    "  Nil,\n"
    "}\n"
    "def @len[A](%xs: List[A]) -> int32 {\n"
    "  match (%xs) {\n"
    "    Cons(_, %rest) => add(1, @len(%rest)),\n"
    "    Nil => 0,\n"
    "  }\n"
    "}\n")


def pos(line: int, character: int) -> lsp.Position:
    return lsp.Position(line=line, character=character)


def rng(l0: int, c0: int, l1: int, c1: int) -> lsp.Range:
    return lsp.Range(start=pos(l0, c0), end=pos(l1, c1))


def where(text: str, needle: str, nth: int = 0, delta: int = 0) -> lsp.Position:
    """The position of the `nth` occurrence of `needle` (+ `delta` characters), in UTF-16."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += delta
    line = text.count("\n", 0, at)
    start = text.rfind("\n", 0, at) + 1
    return pos(line, len(text[start:at].encode("utf-16-le")) // 2)


# --- pure helpers ------------------------------------------------------------------------


def test_cursor_context_reads_unfinished_text() -> None:
    text = "def @f(%x: Tensor[(1, 2), float32]) {\n  %0 = nn.conv2d(%x, %w, padding=[1, 1], str"
    cur = cursor_context(text, len(text))
    assert cur.prefix == "str" and cur.call.callee == "nn.conv2d"
    assert (cur.call.arg_index, cur.call.keyword, cur.call.written) == (3, None, {"padding"})
    text2 = text + "ides=[1, "
    cur = cursor_context(text2, len(text2))
    assert cur.call.keyword == "strides" and cur.call.in_value
    assert cursor_context("def @f(%x: Ten", 14).type_position
    assert cursor_context("def @f(%x: Tensor[(1), fl", 25).dtype_position
    assert cursor_context("def @f() { /* ty=Te", 19).in_comment
    nested = "def @f() { concatenate((%a, %"
    cur = cursor_context(nested, len(nested))
    assert cur.prefix == "%" and cur.call.callee == "concatenate" and cur.call.arg_index == 0


def test_map_offset_carries_positions_over_an_edit() -> None:
    old, new = "abc XYZ def", "abc QQ def"
    assert map_offset(old, new, 2) == 2  # before the edit
    assert map_offset(old, new, 5) == 4  # inside it: its start
    assert map_offset(old, new, 6) == 7  # after it: shifted
    assert map_offset(old, new, 9) == 10
    assert map_offset(old, old, 7) == 7


# --- end to end ------------------------------------------------------------------------


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    # VS Code answers the refresh its capabilities announce (sent when a build finishes)
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
    result = await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code")))
    INITIALIZED.append(result)
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str, version: int | None) -> list[lsp.Diagnostic]:
    async def wait():
        while True:
            params = await client.wait_for_notification(PUBLISH)
            if params.uri == uri and params.version == version:
                return list(params.diagnostics)
    return await asyncio.wait_for(wait(), timeout=15)


async def open_doc(client: LanguageClient, name: str, text: str) -> tuple[str, lsp.TextDocumentIdentifier]:
    uri = f"file:///tmp/relaylens-editing/{name}"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=text)))
    await published(client, uri, 1)
    return uri, lsp.TextDocumentIdentifier(uri)


async def change(client: LanguageClient, uri: str, version: int, text: str, wait: bool = True) -> None:
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        [lsp.TextDocumentContentChangeWholeDocument(text=text)]))
    if wait:
        await published(client, uri, version)


def apply(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply edits (UTF-16 ranges) the way a client does."""
    lines = text.split("\n")

    def offset(p: lsp.Position) -> int:
        line = lines[p.line]
        units, i = 0, 0
        while units < p.character:
            units += 2 if ord(line[i]) > 0xFFFF else 1
            i += 1
        return sum(len(l) + 1 for l in lines[: p.line]) + i

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def decode(text: str, data: list[int]) -> list[tuple[int, int, str, str, set[str]]]:
    """Semantic tokens as (line, char, text, type, modifiers), with UTF-16 columns."""
    lines = text.split("\n")
    out, line, char = [], 0, 0
    for i in range(0, len(data), 5):
        dl, dc, length, kind, mods = data[i : i + 5]
        line += dl
        char = char + dc if dl == 0 else dc
        units = lines[line].encode("utf-16-le")
        piece = units[2 * char : 2 * (char + length)].decode("utf-16-le")
        names = {m for b, m in enumerate(TOKEN_MODIFIERS) if mods & (1 << b)}
        out.append((line, char, piece, TOKEN_TYPES[kind], names))
    return out


async def refused(coro) -> str:
    with pytest.raises(JsonRpcException) as info:
        await coro
    return info.value.message


@asyncio_module
async def test_capabilities(client: LanguageClient) -> None:
    caps = INITIALIZED[-1].capabilities
    assert caps.text_document_sync.change == lsp.TextDocumentSyncKind.Incremental
    assert caps.declaration_provider and caps.folding_range_provider
    assert caps.document_formatting_provider
    assert caps.rename_provider.prepare_provider is True
    assert set(caps.completion_provider.trigger_characters) >= {"%", "@", ".", ":"}
    assert set(caps.signature_help_provider.trigger_characters) == {"(", ","}
    legend = caps.semantic_tokens_provider.legend
    assert list(legend.token_types) == list(TOKEN_TYPES)
    for kind in ("variable", "parameter", "function", "type", "enumMember", "keyword", "number",
                 "string", "comment", "decorator"):
        assert kind in legend.token_types
    assert "annotation" in legend.token_modifiers and "defaultLibrary" in legend.token_modifiers
    assert caps.semantic_tokens_provider.full is True


@asyncio_module
async def test_declaration_is_the_definition(client: LanguageClient) -> None:
    uri, doc = await open_doc(client, "decl.relay", SMALL)
    for at in (where(SMALL, "%y, %x"), where(SMALL, "@f(%x"), where(SMALL, "%0, 1f")):
        decl = await client.text_document_declaration_async(lsp.DeclarationParams(doc, at))
        defn = await client.text_document_definition_async(lsp.DefinitionParams(doc, at))
        assert decl == defn and len(decl) == 1
    decl = await client.text_document_declaration_async(lsp.DeclarationParams(doc, where(SMALL, "%y, %x")))
    assert decl[0].range.start == where(SMALL, "%y:")
    assert not await client.text_document_declaration_async(lsp.DeclarationParams(doc, where(SMALL, "multiply")))


@asyncio_module
async def test_rename_local_with_utf16_ranges(client: LanguageClient) -> None:
    uri, doc = await open_doc(client, "unicode.relay", UNICODE)
    at = where(UNICODE, "%x)", delta=1)
    prep = await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(doc, at))
    assert prep.placeholder == "x"
    assert prep.range == rng(2, 30, 2, 31)  # `x` after `/* é🙂 */ add(%x, /* 🙂 */ %`
    edit = await client.text_document_rename_async(lsp.RenameParams(doc, at, "%size"))
    (change_,) = edit.document_changes  # VS Code takes versioned document changes
    assert change_.text_document.uri == uri and change_.text_document.version == 1
    assert [e.range for e in change_.edits] == [rng(1, 8, 1, 9), rng(2, 17, 2, 18), rng(2, 30, 2, 31)]
    renamed = apply(UNICODE, change_.edits)
    assert "def @g(%size: float32)" in renamed and "add(%size, /* 🙂 */ %size)" in renamed
    assert not [d for d in parse(renamed).diagnostics if d.is_error]


@asyncio_module
async def test_rename_global_type_and_constructor(client: LanguageClient) -> None:
    uri, doc = await open_doc(client, "small.relay", SMALL)
    edit = await client.text_document_rename_async(lsp.RenameParams(doc, where(SMALL, "@f(%x", delta=1), "@bias_mul"))
    text = apply(SMALL, edit.document_changes[0].edits)
    assert "def @bias_mul(" in text and "@bias_mul(%x, %b)" in text and "@f" not in text
    # a local bound in @f is not the one of @main: same names elsewhere are untouched
    edit = await client.text_document_rename_async(lsp.RenameParams(doc, where(SMALL, "%b: Tensor"), "bias"))
    text = apply(SMALL, edit.document_changes[0].edits)
    assert text.count("%bias") == 2 and "nn.bias_add(%x, %bias, axis=1)" in text and "@f(%x, %b)" in text

    uri, doc = await open_doc(client, "adt.relay", ADT)
    edit = await client.text_document_rename_async(lsp.RenameParams(doc, where(ADT, "List[A])"), "Seq"))
    text = apply(ADT, edit.document_changes[0].edits)
    assert "type Seq[A]" in text and "Cons(A, Seq[A])" in text and "%xs: Seq[A]" in text
    edit = await client.text_document_rename_async(lsp.RenameParams(doc, where(ADT, "Cons(_"), "Push"))
    text = apply(ADT, edit.document_changes[0].edits)
    assert "  Push(A, List[A])," in text and "    Push(_, %rest)" in text
    assert not [d for d in parse(text).diagnostics if d.is_error]


@asyncio_module
async def test_rename_refusals(client: LanguageClient) -> None:
    uri, doc = await open_doc(client, "refuse.relay", SMALL)

    async def prepare(at):
        return await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(doc, at))

    async def rename(at, name):
        return await client.text_document_rename_async(lsp.RenameParams(doc, at, name))

    assert "operator" in await refused(prepare(where(SMALL, "nn.bias_add", delta=3)))
    assert "keyword" in await refused(prepare(where(SMALL, "let")))
    assert "literal" in await refused(prepare(where(SMALL, "1f")))
    assert "graph binding" in await refused(prepare(where(SMALL, "%0 =")))
    assert "attribute" in await refused(prepare(where(SMALL, "axis")))
    assert "comment" in await refused(prepare(where(SMALL, "ty=float32", delta=1)))
    y = where(SMALL, "%y, %x")
    assert "not a valid variable name" in await refused(rename(y, "%1y"))
    assert "not a valid variable name" in await refused(rename(y, "a b"))
    assert "not a valid global name" in await refused(rename(where(SMALL, "@f("), "@f.g"))
    message = await refused(rename(y, "x"))  # %x is a parameter of the same function
    assert "%x is already bound" in message and "line 2" in message
    assert "already exists as a global" in await refused(rename(where(SMALL, "@f("), "main"))

    uri, doc = await open_doc(client, "adt-refuse.relay", ADT)
    ctor = where(ADT, "Nil =>")
    assert "operator name" in await refused(client.text_document_rename_async(lsp.RenameParams(doc, ctor, "add")))
    assert "already exists as a constructor" in await refused(
        client.text_document_rename_async(lsp.RenameParams(doc, ctor, "Cons")))
    ty = where(ADT, "List[A] {")
    assert "dtype" in await refused(client.text_document_rename_async(lsp.RenameParams(doc, ty, "float32")))
    assert "type variable" in await refused(client.text_document_rename_async(lsp.RenameParams(doc, ty, "A")))
    assert "keyword" in await refused(client.text_document_rename_async(lsp.RenameParams(doc, ty, "fn")))
    assert "type variable" in await refused(client.text_document_prepare_rename_async(
        lsp.PrepareRenameParams(doc, where(ADT, "A](%xs"))))
    # a document with a syntax error: a broken definition would keep the old name
    await change(client, uri, 2, ADT.replace("Nil => 0,", "Nil => 0 0,"))
    assert "syntax errors" in await refused(client.text_document_rename_async(
        lsp.RenameParams(doc, where(ADT, "%rest)"), "tail")))


@asyncio_module
async def test_completion_in_small_texts(client: LanguageClient) -> None:
    text = SMALL.replace("  multiply(%y, %x)\n", "  multiply(%y, %\n")
    uri, doc = await open_doc(client, "complete.relay", text)
    at = where(text, "%\n", delta=1)
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, at))
    labels = [i.label for i in found.items]
    assert {"%x", "%b", "%y", "%0"} <= set(labels)
    item = next(i for i in found.items if i.label == "%y")
    assert item.text_edit.range == lsp.Range(start=pos(at.line, at.character - 1), end=at)
    assert "Tensor[(1, 4), float32]" in item.detail
    # ops at a bare word, as a snippet with their positional arguments
    line3 = "  %1 = nn.bi"
    text = SMALL.replace("  multiply(%y, %x)\n", line3 + "\n")
    await change(client, uri, 2, text)
    at = pos(4, len(line3))
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, at))
    bias = next(i for i in found.items if i.label == "nn.bias_add")
    assert bias.insert_text_format == lsp.InsertTextFormat.Snippet
    assert bias.text_edit.new_text == "nn.bias_add(${1:data}, ${2:bias})$0"
    assert bias.text_edit.range == rng(4, 7, 4, len(line3))  # the whole `nn.bi`
    assert bias.detail == "nn.bias_add(data, bias, axis=1)"
    # attributes inside the call's parentheses, with defaults; written ones are left out
    line3 = "  %1 = nn.conv2d(%x, %b, padding=[1, 1], "
    text = SMALL.replace("  multiply(%y, %x)\n", line3 + "\n")
    await change(client, uri, 3, text)
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, pos(4, len(line3))))
    attrs = [i for i in found.items if i.kind == lsp.CompletionItemKind.Property]
    names = [i.label for i in attrs]
    assert names[:2] == ["strides", "dilation"] and "padding" not in names
    assert attrs[0].text_edit.new_text == "strides=${1:[1, 1]}" and attrs[0].detail == "= [1, 1]"
    assert min(i.sort_text for i in attrs) < min(i.sort_text for i in found.items if i.kind != lsp.CompletionItemKind.Property)
    # types after `:`, dtypes inside Tensor[...]
    line3 = "  let %z: Te"
    text = SMALL.replace("  multiply(%y, %x)\n", line3 + "\n")
    await change(client, uri, 4, text)
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, pos(4, len(line3))))
    labels = {i.label for i in found.items}
    assert {"Tensor", "float32", "int64"} <= labels and "nn.conv2d" not in labels
    line3 = "  let %z: Tensor[(1, 4), flo"
    text = SMALL.replace("  multiply(%y, %x)\n", line3 + "\n")
    await change(client, uri, 5, text)
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, pos(4, len(line3))))
    assert "float16" in {i.label for i in found.items} and "Tensor" not in {i.label for i in found.items}
    # globals after `@`
    line3 = "  @"
    text = SMALL.replace("  multiply(%y, %x)\n", line3 + "\n")
    await change(client, uri, 6, text)
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, pos(4, 3)))
    glob = {i.label: i for i in found.items}
    assert set(glob) == {"@f", "@main"} and glob["@f"].detail.startswith("def @f(%x: Tensor[(1, 4), float32]")
    # non-ASCII before the word: the replaced range is counted in UTF-16 units
    line3 = "  /* é🙂 */ multiply(%y, %"
    text = SMALL.replace("  multiply(%y, %x)\n", line3 + "\n")
    await change(client, uri, 7, text)
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, pos(4, 26)))
    item = next(i for i in found.items if i.label == "%y")
    assert item.text_edit.range == rng(4, 25, 4, 26)  # 24 code points before the `%`
    assert apply(text, [item.text_edit]).split("\n")[4] == "  /* é🙂 */ multiply(%y, %y"
    # nothing inside a comment
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, where(SMALL, "ty=float32", delta=4)))
    assert not found or not found.items


@asyncio_module
async def test_completion_while_the_text_does_not_parse(client: LanguageClient) -> None:
    uri, doc = await open_doc(client, "typing.relay", SMALL)
    # the user is typing a new statement; the definition no longer parses
    typed = "  let %w = nn.bias_add(%y, %"
    text = SMALL.replace("  multiply(%y, %x)\n", typed + "\n  multiply(%y, %x)\n")
    await change(client, uri, 2, text)  # the latest analysis is of the broken text
    at = pos(4, len(typed))
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, at))
    labels = {i.label for i in found.items}
    assert {"%x", "%b", "%y", "%0"} <= labels  # from the last good analysis, carried over
    assert "%w" in labels  # typed since: from the text around the cursor
    # and before the server has even analysed the new text (no wait for diagnostics)
    typed2 = "  let %v = %"
    text2 = text.replace(typed + "\n", "  let %w = nn.bias_add(%y, %b, axis=1);\n" + typed2 + "\n")
    analysed = asyncio.ensure_future(published(client, uri, 3))  # listening before the requests:
    await change(client, uri, 3, text2, wait=False)  # a request may have the analysis finished
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, pos(5, len(typed2))))
    labels = {i.label for i in found.items}
    assert {"%x", "%b", "%y", "%w", "%v"} <= labels
    help_ = await client.text_document_signature_help_async(lsp.SignatureHelpParams(doc, pos(4, len(typed))))
    assert help_ is None or help_.signatures  # a stale position answers without failing
    await analysed


@asyncio_module
async def test_signature_help(client: LanguageClient) -> None:
    line3 = "  %1 = nn.conv2d(%x, "
    text = SMALL.replace("  multiply(%y, %x)\n", line3 + "\n")
    uri, doc = await open_doc(client, "sig.relay", text)

    async def help_at(character: int, line: int = 4):
        return await client.text_document_signature_help_async(lsp.SignatureHelpParams(doc, pos(line, character)))

    found = await help_at(len(line3))
    sig = found.signatures[0]
    assert sig.label.startswith("nn.conv2d(data, weight, strides=[1, 1], padding=[0, 0]")
    labels = [sig.label[a:b] for a, b in (p.label for p in sig.parameters)]
    assert labels[:4] == ["data", "weight", "strides=[1, 1]", "padding=[0, 0]"]
    assert 'data_layout="NCHW"' in labels
    assert found.active_parameter == 1
    strides = sig.parameters[2].documentation
    assert "a list of integers" in strides and "[1, 1]" in strides
    assert (await help_at(len("  %1 = nn.conv2d("))).active_parameter == 0
    line4 = '  %1 = nn.conv2d(%x, %b, groups=2, kernel_layout="OI'
    await change(client, uri, 2, SMALL.replace("  multiply(%y, %x)\n", line4 + "\n"))
    found = await help_at(len(line4))
    assert sig.parameters[found.active_parameter].label == sig.parameters[labels.index('kernel_layout="OIHW"')].label
    # a call of a global: its def line
    uri, doc = await open_doc(client, "sig-global.relay", SMALL)
    found = await client.text_document_signature_help_async(lsp.SignatureHelpParams(doc, where(SMALL, "%b)\n}", delta=0)))
    assert found.signatures[0].label.startswith("def @f(%x: Tensor[(1, 4), float32], %b: Tensor[(4), float32])")
    assert found.active_parameter == 1
    assert await client.text_document_signature_help_async(lsp.SignatureHelpParams(doc, pos(1, 0))) is None


@asyncio_module
async def test_semantic_tokens_small(client: LanguageClient) -> None:
    uri, doc = await open_doc(client, "tokens.relay", SMALL + "// the end\n")
    data = (await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(doc))).data
    tokens = decode(SMALL + "// the end\n", data)
    seen = {(t[2], t[3], frozenset(t[4])) for t in tokens}
    for expected in (('#[version = "0.0.5"]', "decorator"), ("def", "keyword"), ("@f", "function"),
                     ("%y", "variable"), ("axis", "property"), ("1f", "number"), ("let", "keyword"),
                     ("// the end", "comment"), ("/*", "comment", "annotation")):
        assert (expected[0], expected[1], frozenset(expected[2:])) in seen, expected
    assert ("@f", "function", frozenset({"declaration"})) in seen
    assert [(t[1], t[4]) for t in tokens if t[0] == 7 and t[2] == "@f"] == [(2, set())]  # the call
    assert ("%x", "parameter", frozenset({"declaration"})) in seen and ("%x", "parameter", frozenset()) in seen
    assert ("%0", "variable", frozenset({"readonly", "declaration"})) in seen
    assert ("nn.bias_add", "function", frozenset({"defaultLibrary"})) in seen
    assert ("float32", "type", frozenset({"defaultLibrary"})) in seen
    assert ("Tensor", "type", frozenset({"defaultLibrary"})) in seen
    # inside `/* ty=float32 */`: the key, the type, the delimiters, all marked as annotation
    assert ("ty=", "decorator", frozenset({"annotation"})) in seen
    assert ("float32", "type", frozenset({"annotation", "defaultLibrary"})) in seen
    # UTF-16 columns after non-ASCII text, a block comment, an emoji inside a comment
    uri, doc = await open_doc(client, "tokens-unicode.relay", UNICODE)
    data = (await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(doc))).data
    tokens = decode(UNICODE, data)
    line2 = [(t[1], t[2], t[3]) for t in tokens if t[0] == 2]
    assert line2 == [(2, "/* é🙂 */", "comment"), (12, "add", "function"), (16, "%x", "parameter"),
                     (20, "/* 🙂 */", "comment"), (29, "%x", "parameter")]


@asyncio_module
async def test_folding_ranges(client: LanguageClient) -> None:
    text = HEADER + (
        "/* a comment\n"
        "   over two lines */\n"
        "def @f(%c: bool, %x: float32) -> float32 {\n"
        "  if (%c) {\n"
        "    let %y = add(%x, %x);\n"
        "    %y\n"
        "  } else {\n"
        "    %x\n"
        "  }\n"
        "}\n")
    uri, doc = await open_doc(client, "fold.relay", text)
    folds = await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc))
    got = [(f.start_line, f.end_line, f.kind) for f in folds]
    assert got == [(1, 2, lsp.FoldingRangeKind.Comment), (3, 9, None), (4, 6, None), (7, 8, None)]
    meta = HEADER + (
        "// one\n"
        "// two\n"
        "def @m() -> float32 {\n"
        "  1f\n"
        "}\n"
        "#[metadata]\n"
        "{\n"
        '  "root": 1\n'
        "}\n")
    uri, doc = await open_doc(client, "fold-meta.relay", meta)
    folds = await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc))
    assert [(f.start_line, f.end_line, f.kind) for f in folds] == [
        (1, 2, lsp.FoldingRangeKind.Comment), (3, 4, None), (6, 9, lsp.FoldingRangeKind.Region)]
    uri, doc = await open_doc(client, "fold-adt.relay", ADT)
    folds = await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc))
    assert [(f.start_line, f.end_line) for f in folds] == [(1, 3), (5, 9), (6, 8)]


@asyncio_module
async def test_formatting(client: LanguageClient) -> None:
    messy = HEADER + "def @f(%x: float32,%y:float32)->float32{ %0=add(%x,%y) /* ty=float32 */; multiply(%0,%0) }\n"
    uri, doc = await open_doc(client, "fmt.relay", messy)
    options = lsp.FormattingOptions(tab_size=2, insert_spaces=True)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options))
    assert len(edits) == 1 and edits[0].range == rng(0, 0, 2, 0)
    assert edits[0].new_text == HEADER + (
        "def @f(%x: float32, %y: float32) -> float32 {\n"
        "  %0 = add(%x, %y) /* ty=float32 */;\n"
        "  multiply(%0, %0)\n"
        "}\n")
    formatted = edits[0].new_text
    await change(client, uri, 2, formatted)  # formatted text is left alone
    assert list(await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options))) == []
    # refusals: a user comment, a syntax error; each says why, and no edit is made
    for version, text, reason in (
            (3, messy.replace("{ %0", "{ // mine\n %0"), "comment"),
            (4, messy.replace("multiply(%0,%0)", "multiply(%0,%0"), "error"),
            (5, messy.replace("{ %0", "{ /* mine */ %0"), "comment")):
        await change(client, uri, version, text)
        before = len(client.messages)
        assert await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options)) is None
        message = await asyncio.wait_for(client.wait_for_notification(lsp.WINDOW_SHOW_MESSAGE), 10) \
            if len(client.messages) == before else client.messages[-1]
        assert reason in message.message and message.type == lsp.MessageType.Warning
    # definitions keep their order, variables their names; span= origins are kept, not invented
    two = HEADER + ("def @b(%x: float32) { negative(%x) /* span=layer1:0:0 */ }\n"
                    "def @a(%x: float32) { %x }\n")
    await change(client, uri, 6, two)
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(doc, options))
    assert edits[0].new_text == HEADER + (
        "def @b(%x: float32) {\n"
        "  negative(%x) /* span=layer1:0:0 */\n"
        "}\n"
        "\n"
        "def @a(%x: float32) {\n"
        "  %x\n"
        "}\n")

@asyncio_module
async def test_gpt2_corpus_file(client: LanguageClient) -> None:
    if not GPT2.exists():
        pytest.skip("corpus not available")
    text = GPT2.read_text(encoding="utf-8")
    uri, doc = await open_doc(client, "002.relay", text)
    lines = text.split("\n")
    # semantic tokens: every `%x` is the parameter; ops are the library's
    data = (await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(doc))).data
    tokens = decode(text, data)
    assert len(tokens) > 4000
    assert all(t[2] and t[1] + len(t[2]) <= len(lines[t[0]]) for t in tokens)
    params = [t for t in tokens if t[3] == "parameter"]
    assert [t[2] for t in params] == ["%x"] * len(params) and len(params) == text.count("%x,") + text.count("%x)") + 1
    ops = {t[2] for t in tokens if t[3] == "function" and "defaultLibrary" in t[4]}
    assert {"nn.dense", "nn.batch_matmul", "nn.softmax", "reshape", "take"} <= ops
    graph = [t for t in tokens if t[2] == "%914"]
    assert [t[4] for t in graph] == [{"declaration", "readonly"}, {"readonly"}]
    # folding: the long signature and the body
    folds = await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc))
    body_open = next(i for i, l in enumerate(lines) if l.rstrip().endswith("{"))
    assert (body_open, len(lines) - 3) in [(f.start_line, f.end_line) for f in folds]
    # rename the parameter: every use, the definition included
    at = where(text, "%x: Tensor", delta=1)
    edit = await client.text_document_rename_async(lsp.RenameParams(doc, at, "input_ids"))
    edits = edit.document_changes[0].edits
    assert len(edits) == len(params)
    assert "reshape(%input_ids, newshape=[-1, 32])" in apply(text, edits)
    # completion deep in the body: the parameter and the graph bindings before the cursor
    line = next(i for i, l in enumerate(lines) if l.strip().startswith("%500 ="))
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, pos(line, lines[line].index("%500"))))
    found = await client.text_document_completion_async(lsp.CompletionParams(doc, pos(line, lines[line].index("%500") + 1)))
    labels = [i.label for i in found.items]
    assert "%x" in labels and "%499" in labels and "%0" in labels and "%500" not in labels
    assert labels.index("%499") < labels.index("%0") or \
        next(i.sort_text for i in found.items if i.label == "%499") < next(i.sort_text for i in found.items if i.label == "%0")
    # signature help on a real call
    line = next(i for i, l in enumerate(lines) if "nn.dense(" in l)
    found = await client.text_document_signature_help_async(lsp.SignatureHelpParams(
        doc, pos(line, lines[line].index("nn.dense(") + len("nn.dense("))))
    assert found.signatures[0].label.startswith("nn.dense(data, weight, units=None")
    # formatting: the printer's layout, and a second pass changes nothing
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        doc, lsp.FormattingOptions(tab_size=2, insert_spaces=True)))
    formatted = edits[0].new_text
    assert formatted.startswith('#[version = "0.0.5"]\ndef @main(%x: Tensor[(1, 50, 32), int64]) -> (')
    assert "  %0 = reshape(%x, newshape=[-1, 32]);" in formatted
    await change(client, uri, 2, formatted)
    assert list(await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        doc, lsp.FormattingOptions(tab_size=2, insert_spaces=True)))) == []
