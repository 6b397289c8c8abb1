"""The base protocol (server/framing.py): every framing error is answered, and the next
good message is answered too.

`Framer` alone: the same messages and errors whether the bytes come at once or one at a
time.  The real server over stdio, fed raw bytes: after each kind of bad message, a good
request gets its answer (one server for the module: the stream survives every case in
turn)."""

from __future__ import annotations

import json

import pytest

from lsp_raw import RawServer, frame
from relaylens.server.framing import INVALID_REQUEST, PARSE_ERROR, FramingError, Framer

REQUEST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x"}).encode()
HEADER = '#[version = "0.0.5"]\n'
TEXT = HEADER + "def @f(%x: float32) -> float32 {\n  add(%x, %x)\n}\n"
URI = "file:///framing/f.relay"

# name → (bytes of the bad message, the code of its answer, the id of its answer)
BAD = {
    "too short": (frame(REQUEST, length=10), PARSE_ERROR, None),
    "too long": (frame(REQUEST, length=len(REQUEST) + 20), PARSE_ERROR, None),
    "far too long": (frame(REQUEST, length=100_000), PARSE_ERROR, None),
    "negative": (b"Content-Length: -5\r\n\r\n" + REQUEST, PARSE_ERROR, None),
    "missing": (b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + REQUEST, PARSE_ERROR, None),
    "not a number": (b"Content-Length: 4x2\r\n\r\n" + REQUEST, PARSE_ERROR, None),
    "over the limit": (b"Content-Length: 99999999999999999999\r\n\r\n" + REQUEST, PARSE_ERROR, None),
    "zero": (frame(b""), PARSE_ERROR, None),
    "no header at all": (b"hello\r\n\r\n" + REQUEST, PARSE_ERROR, None),
    "not JSON": (frame(b"{oops"), PARSE_ERROR, None),
    "invalid UTF-8": (frame(b'{"jsonrpc": "2.0", "id": 9, "method": "\xff\xfe"}'), PARSE_ERROR, None),
    "no jsonrpc": (frame({"id": 41, "method": "textDocument/hover"}), INVALID_REQUEST, 41),
    "no jsonrpc, no id": (frame({"method": "initialized"}), INVALID_REQUEST, None),
    "method not a string": (frame({"jsonrpc": "2.0", "id": 42, "method": 7}), INVALID_REQUEST, 42),
    "a batch": (frame(b"[]"), INVALID_REQUEST, None),
    "not an object": (frame(b'"just a string"'), INVALID_REQUEST, None),
    "nested 100,000 deep": (frame(b"[" * 100_000 + b"]" * 100_000), INVALID_REQUEST, None),
    "params nested 100,000 deep": (frame(b'{"jsonrpc": "2.0", "id": 43, "method": "x", "params": '
                                         + b"[" * 100_000 + b"]" * 100_000 + b"}"), INVALID_REQUEST, None),
}


def _outcome(data: bytes, chunk: int) -> list:
    framer = Framer()
    found = []
    for at in range(0, len(data), chunk):
        found += framer.feed(data[at:at + chunk])
    return found


@pytest.mark.parametrize("name", BAD)
def test_framer_reads_the_same_whatever_the_chunks(name: str) -> None:
    bad, code, msg_id = BAD[name]
    data = bad + frame(REQUEST) + frame(REQUEST)
    whole = _outcome(data, len(data))
    assert [type(x) for x in whole] == [FramingError, dict, dict]
    assert (whole[0].code, whole[0].id) == (code, msg_id)
    assert whole[1] == whole[2] == json.loads(REQUEST)
    assert _outcome(data, 1) == whole
    assert _outcome(data, 7) == whole


def test_framer_takes_messages_split_anywhere_and_headers_in_any_case() -> None:
    data = frame(REQUEST) + b"content-length: %d\r\nContent-Type: x\r\n\r\n%s" % (len(REQUEST), REQUEST)
    assert _outcome(data, 1) == [json.loads(REQUEST)] * 2


@pytest.fixture(scope="module")
def server():
    server = RawServer.start(memory=4 << 30)
    server.initialize()
    server.open(URI, TEXT)
    yield server
    assert server.close() == 0


@pytest.mark.parametrize("name", BAD)
def test_a_bad_message_is_answered_and_the_next_one_too(server: RawServer, name: str) -> None:
    bad, code, msg_id = BAD[name]
    server.send(bad)  # a Content-Length too long is seen to be so only when the next message comes
    good = server.request("textDocument/documentSymbol", {"textDocument": {"uri": URI}})
    error = server.answer(msg_id)["error"]
    assert error["code"] == code and error["message"]
    assert [s["name"] for s in server.answer(good)["result"]] == ["@f"]
    assert server.alive()
