"""LSP base-protocol framing as every client writes it, for the `lsp` fuzz target.

    frame(message) -> bytes          `Content-Length: N\\r\\n\\r\\n` + the JSON body
    split_frames(data) -> (bodies, rest)
        the bodies of the whole frames at the start of `data`, and the bytes after them
        (b"" when `data` is exactly a sequence of frames)

This is an oracle written from the LSP specification, not the server's reader: a stream
that `split_frames` reads to the end is one a conforming server must read to the end too,
and so must still answer the request that follows it.  Headers are `Name: value\\r\\n`
lines ended by an empty line; Content-Length is required and written the way every
client writes it (decimal, one space after the colon); other headers (Content-Type) are
allowed before or after it.
"""

from __future__ import annotations

import json
import re

HEADER = re.compile(rb"([!-9;-~]+): ([^\r\n]*)\r\n")
LENGTH = re.compile(rb"[0-9]{1,9}")


def frame(message: dict | bytes) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def split_frames(data: bytes) -> tuple[list[bytes], bytes]:
    bodies: list[bytes] = []
    at = 0
    while at < len(data):
        length, pos = None, at
        while True:
            if data.startswith(b"\r\n", pos):
                pos += 2
                break
            m = HEADER.match(data, pos)
            if m is None:
                return bodies, data[at:]
            if m.group(1) == b"Content-Length":
                if length is not None or not LENGTH.fullmatch(m.group(2)):
                    return bodies, data[at:]
                length = int(m.group(2))
            pos = m.end()
        if length is None or length == 0 or pos + length > len(data):
            return bodies, data[at:]
        bodies.append(data[pos:pos + length])
        at = pos + length
    return bodies, b""


def methods(bodies: list[bytes]) -> set[str]:
    """The methods named by the top-level JSON objects among `bodies` (bodies that are not
    JSON objects name none)."""
    found = set()
    for body in bodies:
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            continue
        if isinstance(message, dict) and isinstance(message.get("method"), str):
            found.add(message["method"])
    return found
