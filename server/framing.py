"""The base protocol: bytes in, JSON-RPC messages out, and every framing error answered.

A message is a header block (`Content-Length: N\\r\\n`, maybe `Content-Type: ...\\r\\n`,
then `\\r\\n`) and a body of N bytes of UTF-8 JSON.  pygls's own loop
(`pygls.io_.run_async`) takes a header it cannot read for no header, and then reads the
next message's bytes as headers: after one bad Content-Length it never answers again.
Here an error is answered (`{"jsonrpc": "2.0", "id": null, "error": ...}`, JSON-RPC 2.0
section 5) and the stream is resynchronised on the next `Content-Length:` header:

- a header block without a usable Content-Length (missing, negative, not a number, over
  `MESSAGE_LIMIT`): -32700 Parse error; the bytes up to the next header are skipped
  (its body with them);
- a Content-Length too long swallows the start of the next message.  Valid JSON never
  holds a raw `Content-Length: <digits>\\r\\n` (outside a string those are not JSON
  tokens; inside one, CR and LF must be escaped), so a body in which one appears ends
  there: Parse error, and the next message is read from that header on;
- a Content-Length too short leaves a body that is not JSON: Parse error; what is left of
  it is skipped up to the next header;
- a body that is not UTF-8, or not JSON: -32700; JSON nested too deep to decode: -32600
  Invalid Request; JSON that is no JSON-RPC 2.0 message (no `"jsonrpc": "2.0"`, a
  method that is not a string, an array: LSP has no batches): -32600, with the message's
  id when it has one that can be read, else null.

`Framer` is the pure part (bytes → messages and errors, no I/O); `serve_stream` is the
loop every transport runs (stdio.py, tcp.py).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pygls.protocol import JsonRPCProtocol

log = logging.getLogger("relaylens.server")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
MESSAGE_LIMIT = 1 << 30  # one message may hold a whole document
HEADER_LIMIT = 1 << 16  # a header block longer than this is not one
CHUNK = 1 << 20  # bytes asked of the transport at a time
HEADER = b"Content-Length:"
NEXT_HEADER = re.compile(rb"Content-Length:[ \t]*\d{1,15}\r\n")  # never inside valid JSON


@dataclass(frozen=True, slots=True)
class FramingError:
    """A message that cannot be read, and the answer it gets."""

    code: int
    message: str
    id: int | str | None = None

    def response(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}


class Framer:
    """Cuts a byte stream into messages (decoded: `decode`); `feed` returns the messages
    and errors that the new bytes completed."""

    def __init__(self, limit: int = MESSAGE_LIMIT) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._length: int | None = None  # the body being read, once its header has been
        self._scanned = 0  # the body is searched for a next header up to here
        self._skipping = False  # after an error: bytes are dropped up to the next header

    def feed(self, data: bytes) -> list[dict[str, Any] | FramingError]:
        self._buffer += data
        out: list[dict[str, Any] | FramingError] = []
        while (item := self._next()) is not None:
            out.append(item)
        return out

    def _next(self) -> dict[str, Any] | FramingError | None:
        if self._length is None:
            return self._header()
        return self._body(self._length)

    def _header(self) -> dict[str, Any] | FramingError | None:
        buffer = self._buffer
        if self._skipping:
            start = buffer.find(HEADER)
            if start < 0:
                del buffer[:max(0, len(buffer) - len(HEADER) + 1)]  # keep what may start one
                return None
            del buffer[:start]
            self._skipping = False
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) <= HEADER_LIMIT:
                return None
            return self._error(f"no end of the header in its first {HEADER_LIMIT} bytes")
        length = _content_length(bytes(buffer[:end]).strip(b"\r\n"), self.limit)
        if isinstance(length, str):
            return self._error(length)
        del buffer[:end + 4]
        self._length, self._scanned = length, 0
        return self._body(length)

    def _body(self, length: int) -> dict[str, Any] | FramingError | None:
        buffer = self._buffer
        found = NEXT_HEADER.search(buffer, self._scanned)
        if found is not None and found.start() < length:
            self._length = None
            del buffer[:found.start()]
            return FramingError(PARSE_ERROR, f"the message ends after {found.start()} bytes, before "
                                f"its Content-Length ({length}): a new header starts there")
        if len(buffer) < length:
            self._scanned = max(0, len(buffer) - 64)  # a header may straddle the next chunk
            return None
        body = bytes(buffer[:length])
        del buffer[:length]
        self._length = None
        message = decode(body)
        if isinstance(message, FramingError) and message.code == PARSE_ERROR:
            self._resync(body)
        return message

    def _error(self, why: str) -> FramingError:
        del self._buffer[:1]  # the next header is searched for after this one's start
        self._skipping = True
        return FramingError(PARSE_ERROR, why)

    def _resync(self, body: bytes) -> None:
        """`body` was no message (its Content-Length too short, say): drop the rest of it.
        A header in it is where the next message starts."""
        start = body.find(HEADER, 1)
        if start > 0:
            self._buffer[:0] = body[start:]
        self._skipping = True


def _content_length(header: bytes, limit: int) -> int | str:
    """The Content-Length of a header block, or why there is none to use."""
    length: int | None = None
    for line in header.split(b"\r\n"):
        name, colon, value = line.partition(b":")
        if not colon:
            return f"a header line without a colon: {_show(line)}"
        if name.strip().lower() == b"content-length":
            value = value.strip()
            if not value.isdigit():
                return f"the Content-Length is not a number of bytes: {_show(value)}"
            if len(value) > 15 or int(value) > limit:
                return f"the Content-Length {_show(value)} is over the limit of {limit} bytes"
            length = int(value)
    if length is None:
        return f"a header without Content-Length: {_show(header)}"
    return length


def _show(data: bytes, most: int = 40) -> str:
    text = repr(data[:most])[2:-1]
    return text + "..." if len(data) > most else text


def decode(body: bytes) -> dict[str, Any] | FramingError:
    """The JSON-RPC 2.0 message in a body, or the error it is answered with."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        return FramingError(PARSE_ERROR, f"the message is not UTF-8 (byte {err.start}: {err.reason})")
    try:
        message = json.loads(text)
    except RecursionError:
        return FramingError(INVALID_REQUEST, "the message is nested too deeply to be read")
    except ValueError as err:
        return FramingError(PARSE_ERROR, f"the message is not JSON: {err}")
    if not isinstance(message, dict):
        kind = "a batch (an array), which LSP does not use" if isinstance(message, list) else "not an object"
        return FramingError(INVALID_REQUEST, f"the message is {kind}")
    msg_id = _readable_id(message)
    if message.get("jsonrpc") != "2.0":
        return FramingError(INVALID_REQUEST, 'the message has no "jsonrpc": "2.0"', msg_id)
    if "method" in message:
        if not isinstance(message["method"], str):
            return FramingError(INVALID_REQUEST, "the message's method is not a string", msg_id)
        if "id" in message and msg_id is None and message["id"] is not None:
            return FramingError(INVALID_REQUEST, "the request's id is neither a number nor a string")
    elif "id" not in message or ("result" not in message and "error" not in message):
        return FramingError(INVALID_REQUEST, "the message is neither a request, a notification "
                            "nor a response", msg_id)
    return message


def _readable_id(message: dict[str, Any]) -> int | str | None:
    msg_id = message.get("id")
    return msg_id if isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool) else None


def deliver(protocol: JsonRPCProtocol, message: dict[str, Any] | FramingError) -> None:
    """Hand one message to the protocol, or answer why it is none."""
    if isinstance(message, dict):
        try:
            protocol.handle_message(protocol.structure_message(message))
            return
        except RecursionError:
            message = FramingError(INVALID_REQUEST, "the message is nested too deeply to be read",
                                   _readable_id(message))
        except Exception:  # noqa: BLE001 -- as pygls's own loop: log it, and read on
            log.exception("unable to handle message")
            return
    log.warning("unreadable message: %s", message.message)
    protocol._send_data(message.response())


async def serve_stream(read: Callable[[], Awaitable[bytes]], protocol: JsonRPCProtocol,
                       stop: threading.Event) -> None:
    """Read messages from `read` (b"" at the end of the stream) and hand them to
    `protocol` until the stream ends or `stop` is set (pygls's shutdown sets it)."""
    framer = Framer()
    while not stop.is_set():
        data = await read()
        if not data:
            return
        for message in framer.feed(data):
            deliver(protocol, message)
