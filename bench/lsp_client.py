"""A small LSP client over stdio, for benchmarks: the same client for every server.

    client = await LspClient.start(["mlir-lsp-server"], log_path)
    caps = await client.initialize(options)                  # the server's capabilities
    waiting = client.expect("textDocument/publishDiagnostics", lambda p: p["version"] == 2)
    sent_at = client.notify("textDocument/didChange", {...})
    params, seconds = await client.received(waiting, sent_at, timeout=60)
    result, seconds = await client.timed_request("textDocument/hover", {...})
    await client.close()

JSON-RPC 2.0 with `Content-Length` framing on an asyncio subprocess; messages stay plain
dicts (no schema conversion on our side, so the client costs both servers the same).
Times run from just before a message is written to just after its answer is read off
the pipe (before it is decoded), not to when the awaiting coroutine resumes.  Requests
from the server (progress tokens, capability registration, lens refresh, configuration)
are answered at once with an empty result.  A server that answers with an error
raises `LspError`; one that dies raises `ServerDied`, naming its log file.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any, Callable

STREAM_LIMIT = 1 << 30  # one message may be a whole document's diagnostics


class LspError(RuntimeError):
    """The server answered a request with a JSON-RPC error."""


class ServerDied(RuntimeError):
    """The server process ended (or closed its output) while we waited for it."""


class LspClient:
    def __init__(self, proc: asyncio.subprocess.Process, log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._waiters: list[tuple[str, Callable[[dict], bool], asyncio.Future]] = []
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls, command: list[str], log_path: Path) -> "LspClient":
        """Start `command` with its stdin and stdout as the protocol, stderr to `log_path`."""
        with open(log_path, "wb") as log:
            proc = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=log, limit=STREAM_LIMIT)
        return cls(proc, log_path)

    @property
    def pid(self) -> int:
        return self.proc.pid

    # ---- sending ------------------------------------------------------------------------
    def _send(self, message: dict) -> float:
        """Write one message; the time just before writing it (taken after, it could come
        late: the server, woken by the write, may run first on this core and answer)."""
        body = json.dumps(message, separators=(",", ":")).encode()
        data = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        start = time.perf_counter()
        self.proc.stdin.write(data)
        return start

    def notify(self, method: str, params: Any) -> float:
        """Send a notification; the time just before it was written."""
        return self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def timed_request(self, method: str, params: Any, timeout: float = 60.0) -> tuple[Any, float]:
        """Send a request and wait for its result: (result, seconds from writing to reading)."""
        msg_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        sent = self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        result, at = await self._wait(future, timeout, method)
        return result, at - sent

    async def request(self, method: str, params: Any, timeout: float = 60.0) -> Any:
        return (await self.timed_request(method, params, timeout))[0]

    # ---- notifications from the server ----------------------------------------------------
    def expect(self, method: str, match: Callable[[dict], bool] = lambda p: True) -> asyncio.Future:
        """A future for the next `method` notification whose params satisfy `match`.  Make
        it before sending what provokes the notification, so that it cannot be missed."""
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((method, match, future))
        return future

    async def received(self, future: asyncio.Future, since: float, timeout: float = 60.0) -> tuple[dict, float]:
        """Wait for an `expect()`ed notification: (params, seconds from `since` to reading it)."""
        params, at = await self._wait(future, timeout, "a notification")
        return params, at - since

    async def _wait(self, future: asyncio.Future, timeout: float, what: str) -> tuple[Any, float]:
        done, _ = await asyncio.wait({future, self._reader}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        if future in done:
            return future.result()
        if self._reader in done:
            raise ServerDied(f"the server stopped while we waited for {what} (its log: {self.log_path})")
        future.cancel()
        raise TimeoutError(f"no answer to {what} within {timeout:.0f} s")

    # ---- reading --------------------------------------------------------------------------
    async def _read(self) -> None:
        stdout = self.proc.stdout
        try:
            while True:
                header = await stdout.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":", 1)[1]) for line in header.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                body = await stdout.readexactly(length)
                at = time.perf_counter()  # before decoding: a big message costs us, not the server
                self._dispatch(json.loads(body), at)
        except (asyncio.IncompleteReadError, ConnectionError):
            return  # the server closed its output

    def _dispatch(self, message: dict, at: float) -> None:
        if "method" in message and "id" in message:  # a request from the server
            self._answer(message)
        elif "method" in message:
            for entry in list(self._waiters):
                method, match, future = entry
                if future.done():
                    self._waiters.remove(entry)
                elif method == message["method"] and match(message.get("params") or {}):
                    self._waiters.remove(entry)
                    future.set_result((message.get("params"), at))
                    break
        else:
            future = self._pending.pop(message.get("id"), None)
            if future is None or future.done():
                return
            if "error" in message:
                future.set_exception(LspError(f"{message['error'].get('message')} "
                                              f"(code {message['error'].get('code')})"))
            else:
                future.set_result((message.get("result"), at))

    def _answer(self, message: dict) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            result = [None] * len((message.get("params") or {}).get("items", []))
        self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    # ---- the session ------------------------------------------------------------------------
    async def initialize(self, options: Any = None, timeout: float = 60.0) -> dict:
        """initialize + initialized; the server's capabilities."""
        params = {"processId": None, "rootUri": None, "capabilities": {
            "textDocument": {"publishDiagnostics": {"versionSupport": True},
                             "hover": {"contentFormat": ["markdown", "plaintext"]},
                             "synchronization": {"didSave": False}}},
                  "initializationOptions": options}
        result = await self.request("initialize", params, timeout)
        self.notify("initialized", {})
        return result.get("capabilities", {})

    async def close(self, timeout: float = 10.0) -> None:
        """shutdown + exit, then wait for the process (killed if it lingers)."""
        try:
            await self.request("shutdown", None, timeout)
            self.notify("exit", None)
            await asyncio.wait_for(self.proc.wait(), timeout)
        except (LspError, ServerDied, TimeoutError, asyncio.TimeoutError, ConnectionError):
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        self._reader.cancel()
