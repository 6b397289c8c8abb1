"""The server process ends as the protocol says, whenever the client ends the session,
and takes its build worker with it.

- `shutdown` then `exit`: status 0, at once, even when `exit` comes while the worker is
  still being started (Python 3.11's asyncio hung forever cancelling a process start:
  the server never exited).
- `exit` without `shutdown`: status 1 (the protocol's "exit" notification).
- stdin closed without either (the editor was killed): status 0, the worker gone too.
- As `relaylens serve`: the same status and nothing on stderr (the CLI flushed the
  stdout that pygls had closed at `exit`, and reported an internal error).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_raw import TIMEOUT, RawServer

BUILDS = {"build": {"enabled": True}}


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _gone(pid: int, timeout: float = TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def _worker(server: RawServer) -> int:
    """The build worker's pid, once the server has started it."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        children = _children(server.proc.pid)
        if children:
            return children[0]
        time.sleep(0.02)
    raise AssertionError(f"no build worker started\n{server.describe()}")


def _ended(server: RawServer) -> int:
    try:
        return server.proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        raise AssertionError(f"the server did not exit within {TIMEOUT} s\n{server.describe()}")


@pytest.mark.parametrize("wait_for_worker", [False, True], ids=["worker-starting", "worker-running"])
def test_shutdown_then_exit_ends_the_server_and_its_worker(wait_for_worker: bool) -> None:
    server = RawServer.start()
    server.initialize(options=BUILDS)
    worker = _worker(server) if wait_for_worker else None
    server.answer(server.request("shutdown"))
    server.notify("exit")
    assert _ended(server) == 0, server.describe()
    if worker is not None:
        assert _gone(worker), f"the build worker {worker} outlived the server"


def test_exit_without_shutdown_is_status_1() -> None:
    server = RawServer.start()
    server.initialize()
    server.notify("exit")
    assert _ended(server) == 1, server.describe()


def test_stdin_closed_ends_the_server_and_its_worker() -> None:
    server = RawServer.start()
    server.initialize(options=BUILDS)
    worker = _worker(server)
    server.proc.stdin.close()
    assert _ended(server) == 0, server.describe()
    assert _gone(worker), f"the build worker {worker} outlived the server"


def test_relaylens_serve_exits_0_and_says_nothing(tmp_path: Path) -> None:
    err = tmp_path / "stderr"
    with open(err, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "relaylens.compiler", "serve"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr)
    server = RawServer(proc, err)
    server.initialize(options=BUILDS)
    _worker(server)
    server.answer(server.request("shutdown"))
    server.notify("exit")
    assert _ended(server) == 0, server.describe()
    assert err.read_text() == ""
