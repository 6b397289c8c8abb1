"""`relaylens serve --tcp`: it says where it listens, serves one client, and refuses a
second connection while the first is served (which keeps getting its answers)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

from lsp_raw import TIMEOUT, TcpClient

HEADER = '#[version = "0.0.5"]\n'
TEXT = HEADER + "def @f(%x: float32) -> float32 {\n  add(%x, %x)\n}\n"
URI = "file:///tcp/f.relay"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stderr_line(proc: subprocess.Popen, pattern: str) -> str:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if re.search(pattern, line):
            return line
        assert line, f"the server's stderr ended before a line matching {pattern!r}"
    raise AssertionError(f"no line matching {pattern!r} on the server's stderr")


def _serve() -> tuple[subprocess.Popen, int]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.compiler", "serve", "--tcp", "--port",
                             str(port)], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    bound = _stderr_line(proc, "serving LSP on")
    assert f"127.0.0.1:{port}" in bound and "no authentication" in bound
    return proc, port


def test_a_second_connection_is_refused_while_the_first_is_served() -> None:
    proc, port = _serve()
    try:
        first = TcpClient(port, lambda: "")
        first.initialize()
        first.open(URI, TEXT)
        second = TcpClient(port, lambda: "")
        told = second.messages.next()
        assert told["method"] == "window/showMessage" and "one client at a time" in told["params"]["message"]
        assert second.messages.next() is None  # then closed
        assert "refused a connection from 127.0.0.1:" in _stderr_line(proc, "refused")
        symbols = first.result("textDocument/documentSymbol", {"textDocument": {"uri": URI}})
        assert [s["name"] for s in symbols] == ["@f"]
        first.result("shutdown")
        first.notify("exit")
        assert proc.wait(timeout=TIMEOUT) == 0
        first.close()
        second.close()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_the_session_ends_when_its_client_hangs_up() -> None:
    proc, port = _serve()
    try:
        client = TcpClient(port, lambda: "")
        client.initialize()
        client.send(b"Content-Length: nope\r\n\r\n{}")  # framing errors are answered over TCP too
        assert client.answer(None)["error"]["code"] == -32700
        client.close()
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
