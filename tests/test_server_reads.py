"""What the server reads (server/documents.py): opened documents, and regular files
inside the workspace folders, under a size limit; anything else is an error answer
naming the URI and the reason.  The server runs with a 3 GiB address-space limit, so a
read of `/dev/zero` fails fast instead of taking the machine down."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from lsp_raw import RawServer

HEADER = '#[version = "0.0.5"]\n'
TEXT = HEADER + "def @secret_name(%x: float32) -> float32 {\n  add(%x, %x)\n}\n"
REFUSED = -32803  # RequestFailed
MEMORY = 3 << 30
SERVER = Path(__file__).resolve().parents[1] / "server"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """(the workspace folder, a folder outside it), each with a model in it."""
    inside, outside = tmp_path / "ws", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (inside / "model.relay").write_text(TEXT)
    (outside / "model.relay").write_text(TEXT)
    return inside, outside


def _start(root: Path | None, options: dict | None = None) -> RawServer:
    server = RawServer.start(memory=MEMORY)
    server.initialize(root, options)
    return server


def _refusal(server: RawServer, method: str, uri: str, extra: dict | None = None) -> str:
    answer = server.answer(server.request(method, {"textDocument": {"uri": uri}, **(extra or {})}))
    assert "error" in answer, f"{method} on {uri} answered {answer}"
    assert answer["error"]["code"] == REFUSED and uri in answer["error"]["message"]
    return answer["error"]["message"]


AT = {"position": {"line": 1, "character": 8}}


@pytest.mark.parametrize("root", ["workspace", "/"])
def test_dev_zero_is_refused_and_the_server_lives(folders, root: str) -> None:
    server = _start(folders[0] if root == "workspace" else Path("/"))
    try:
        why = _refusal(server, "textDocument/hover", "file:///dev/zero", AT)
        assert ("outside the workspace" if root == "workspace" else "not a regular file") in why
        assert server.alive() and server.peak_memory() < 1 << 30
        good = (folders[0] / "model.relay").as_uri()
        assert server.result("textDocument/documentSymbol", {"textDocument": {"uri": good}})
    finally:
        server.close()


def test_a_file_outside_the_workspace_is_refused_for_every_request(folders) -> None:
    server = _start(folders[0])
    uri = (folders[1] / "model.relay").as_uri()
    try:
        for method, extra in (("textDocument/documentSymbol", {}), ("textDocument/hover", AT),
                              ("textDocument/completion", AT), ("textDocument/definition", AT),
                              ("textDocument/signatureHelp", AT), ("textDocument/formatting",
                                                                   {"options": {"tabSize": 2, "insertSpaces": True}})):
            assert "outside the workspace folders" in _refusal(server, method, uri, extra)
        assert not any("secret_name" in str(m) for m in server.messages.seen)
        virtual = "relaylens:/llvm/module.ll?uri=" + uri.replace(":", "%3A").replace("/", "%2F")
        for method in ("textDocument/completion", "textDocument/signatureHelp", "textDocument/hover"):
            assert server.result(method, {"textDocument": {"uri": virtual}, **AT}) is None  # never read
    finally:
        server.close()


def test_without_a_workspace_only_opened_documents_are_read(folders) -> None:
    server = _start(None)
    uri = (folders[0] / "model.relay").as_uri()
    try:
        assert "no workspace folder" in _refusal(server, "textDocument/documentSymbol", uri)
        server.open(uri, TEXT)
        symbols = server.result("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert [s["name"] for s in symbols] == ["@secret_name"]
    finally:
        server.close()


def test_a_file_inside_the_workspace_is_read_without_being_opened(folders) -> None:
    server = _start(folders[0])
    uri = (folders[0] / "model.relay").as_uri()
    try:
        symbols = server.result("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert [s["name"] for s in symbols] == ["@secret_name"]
        hover = server.result("textDocument/hover", {"textDocument": {"uri": uri}, **AT})
        assert "float32" in hover["contents"]["value"]
        (folders[0] / "model.relay").write_text(TEXT.replace("secret_name", "renamed"))
        symbols = server.result("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert [s["name"] for s in symbols] == ["@renamed"]  # read again, not a stale copy
    finally:
        server.close()


def test_special_files_symlinks_out_and_big_files_are_refused(folders) -> None:
    inside, outside = folders
    os.mkfifo(inside / "pipe.relay")  # opening it for reading would block
    (inside / "escape.relay").symlink_to(outside / "model.relay")
    (inside / "linked").symlink_to(outside, target_is_directory=True)
    (inside / "dir.relay").mkdir()
    (inside / "big.relay").write_text(TEXT + "// padding\n" * 40)
    (inside / "latin1.relay").write_bytes(b"// caf\xe9\n")
    (inside / "sub").mkdir()
    (inside / "sub" / "near.relay").symlink_to(inside / "model.relay")  # inside: fine
    server = _start(inside, {"files": {"maxBytes": len(TEXT) + 50}})
    try:
        expect = {"pipe.relay": "not a regular file", "escape.relay": "symlink out of the workspace",
                  "linked/model.relay": "symlink out of the workspace", "dir.relay": "not a regular file",
                  "big.relay": f"over the server's limit of {len(TEXT) + 50} bytes",
                  "latin1.relay": "not UTF-8", "missing.relay": "No such file"}
        for name, why in expect.items():
            assert why in _refusal(server, "textDocument/documentSymbol", (inside / name).as_uri())
        for uri in ("untitled:Untitled-1", "file://elsewhere/model.relay"):
            assert "not open in the editor" in _refusal(server, "textDocument/documentSymbol", uri)
        near = (inside / "sub" / "near.relay").as_uri()
        assert server.result("textDocument/documentSymbol", {"textDocument": {"uri": near}})
    finally:
        server.close()


def test_an_opened_document_over_the_limit_is_only_parsed(folders) -> None:
    ill_typed = HEADER + "def @f(%x: float32) -> int8 {\n  add(%x, %x)\n}\n" + "// padding\n" * 20
    server = _start(folders[0], {"files": {"maxBytes": 100}})
    uri = (folders[0] / "open.relay").as_uri()
    try:
        server.open(uri, ill_typed)
        published = server.notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
        assert len(published["diagnostics"]) == 1, published  # the size, and no type error
        note = published["diagnostics"][0]
        assert note["severity"] == 2 and re.search(r"is \d+ bytes, over the server's limit of 100 bytes "
                                                   r"\(initializationOptions files.maxBytes\): it is only "
                                                   r"parsed", note["message"])
        symbols = server.result("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert [s["name"] for s in symbols] == ["@f"]  # syntax-level features still answer
    finally:
        server.close()


def test_an_opened_document_under_the_limit_is_typed(folders) -> None:
    ill_typed = HEADER + "def @f(%x: float32) -> int8 {\n  add(%x, %x)\n}\n"
    server = _start(folders[0], {"files": {"maxBytes": 10_000}})
    uri = (folders[0] / "open.relay").as_uri()
    try:
        server.open(uri, ill_typed)
        published = server.notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
        assert [d["source"] for d in published["diagnostics"]] == ["relaylens types"]
    finally:
        server.close()


def test_only_documents_py_asks_pygls_for_a_document() -> None:
    """pygls's get_text_document reads any path from disk: only documents.py may call it,
    and only the opened ones (text_documents) are looked up."""
    offenders = [f"{path.relative_to(SERVER)}:{n}" for path in sorted(SERVER.rglob("*.py"))
                 if path.name != "documents.py"
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if "get_text_document" in line or "text_documents" in line]
    assert offenders == []
    assert "get_text_document" not in (SERVER / "documents.py").read_text()
