"""A language server process driven with raw bytes, for tests of what an LSP client
library would never send (broken framing) or would hide (error answers, ids).

    server = RawServer.start(memory=2 << 30)        # `python -m relaylens.server`, stderr to a file
    server.send(b"Content-Length: x\\r\\n\\r\\n{}")    # any bytes
    server.initialize(root=tmp_path, options={...})
    msg_id = server.request("textDocument/hover", {...})
    answer = server.answer(msg_id)                   # the response with that id (notifications kept)
    server.close()                                   # shutdown, exit, wait

Every wait has a timeout and fails with the server's stderr in the message, never hangs.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TIMEOUT = 30.0
NO_BUILDS = {"build": {"enabled": False}}


def frame(message: dict | bytes, length: int | None = None) -> bytes:
    """A message with its header; `length` overrides the true Content-Length."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body) if length is None else length, body)


class Messages:
    """Reads framed messages from a file descriptor (the server's output is well framed)."""

    def __init__(self, fd: int, describe) -> None:
        self.fd, self.describe = fd, describe
        self.buffer = b""
        self.seen: list[dict] = []  # every message read, in order

    def next(self, timeout: float = TIMEOUT) -> dict | None:
        """The next message, or None at the end of the stream."""
        deadline = time.monotonic() + timeout
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                header = self.buffer[:end].decode()
                length = int(next(line.split(":", 1)[1] for line in header.split("\r\n")
                                  if line.lower().startswith("content-length:")))
                if len(self.buffer) >= end + 4 + length:
                    body = self.buffer[end + 4:end + 4 + length]
                    self.buffer = self.buffer[end + 4 + length:]
                    message = json.loads(body)
                    self.seen.append(message)
                    return message
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise AssertionError(f"no message within {timeout} s\n{self.describe()}")
            chunk = _read(self.fd)
            if not chunk:
                return None
            self.buffer += chunk

    def until(self, match, timeout: float = TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        for message in self.seen:
            if match(message):
                self.seen.remove(message)
                return message
        while True:
            message = self.next(max(0.01, deadline - time.monotonic()))
            if message is None:
                raise AssertionError(f"the stream ended while waiting\n{self.describe()}")
            if match(message):
                self.seen.remove(message)
                return message


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except ConnectionResetError:
        return b""


class Client:
    """The JSON-RPC side shared by the stdio process and a TCP connection."""

    def __init__(self, write, messages: Messages) -> None:
        self.write, self.messages = write, messages
        self.ids = itertools.count(1)

    def send(self, data: bytes) -> None:
        self.write(data)

    def request(self, method: str, params: Any = None) -> int:
        msg_id = next(self.ids)
        self.send(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def answer(self, msg_id: int | str | None, timeout: float = TIMEOUT) -> dict:
        """The response with this id (None: the next response whose id is null)."""
        return self.messages.until(lambda m: "method" not in m and m.get("id") == msg_id
                                   and ("result" in m or "error" in m), timeout)

    def result(self, method: str, params: Any = None) -> Any:
        answer = self.answer(self.request(method, params))
        assert "error" not in answer, answer
        return answer["result"]

    def notification(self, method: str, match=lambda params: True, timeout: float = TIMEOUT) -> dict:
        return self.messages.until(lambda m: m.get("method") == method and "id" not in m
                                   and match(m.get("params")), timeout)["params"]

    def initialize(self, root: Path | None = None, options: dict | None = None) -> dict:
        params: dict[str, Any] = {"processId": None, "capabilities": {},
                                  "initializationOptions": {**NO_BUILDS, **(options or {})}}
        if root is not None:
            params["rootUri"] = root.as_uri()
            params["workspaceFolders"] = [{"uri": root.as_uri(), "name": root.name}]
        result = self.result("initialize", params)
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "relay", "version": version, "text": text}})


class RawServer(Client):
    """`python -m relaylens.server` over stdio."""

    def __init__(self, proc: subprocess.Popen, log: Path) -> None:
        self.proc, self.log = proc, log
        super().__init__(self._write, Messages(proc.stdout.fileno(), self.describe))

    @classmethod
    def start(cls, memory: int | None = None, args: tuple[str, ...] = ()) -> "RawServer":
        """Start the server; `memory`: its address-space limit in bytes (RLIMIT_AS)."""
        log = Path(tempfile.mkstemp(prefix="relaylens-server-", suffix=".log")[1])

        def limit() -> None:
            if memory is not None:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

        with open(log, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", "relaylens.server", *args],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                    preexec_fn=limit)
        return cls(proc, log)

    def _write(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def describe(self) -> str:
        state = "running" if self.proc.poll() is None else f"exited with {self.proc.returncode}"
        return f"server {state}; its stderr:\n{self.log.read_text(errors='replace')[-4000:]}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def peak_memory(self) -> int:
        """The server's peak resident memory in bytes (VmHWM)."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        kb = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
        return int(kb) * 1024

    def close(self) -> int:
        try:
            if self.alive():
                self.answer(self.request("shutdown"))
                self.notify("exit")
            return self.proc.wait(timeout=TIMEOUT)
        except (BrokenPipeError, AssertionError, subprocess.TimeoutExpired):
            self.proc.kill()
            return self.proc.wait()
        finally:
            self.log.unlink(missing_ok=True)


class TcpClient(Client):
    """One connection to `relaylens serve --tcp`."""

    def __init__(self, port: int, describe) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        super().__init__(self.sock.sendall, Messages(self.sock.fileno(), describe))

    def close(self) -> None:
        self.sock.close()
