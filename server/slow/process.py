"""The worker process as the server sees it: start it, send it messages, read its
answers on the event loop, notice when it dies.

    worker = WorkerProcess(on_message, on_exit)
    worker.send(("build", job, uri, version, text, weights))   # starts the process if needed
    worker.pid, worker.state                          # "stopped" | "starting" | "ready" | "stopping" | "broken"
    worker.retire()                                   # idle: let it exit; the next send starts another
    await worker.closed()                             # the server ends: kill it and wait until it is gone

`on_message(message)` gets every message of `frames.py`; `on_exit(code, was_ready)` is
called once per process that ended, with its exit status (negative: killed by that
signal).  Messages sent while the process is starting wait in a backlog; when a process
ends, what it had not been sent is dropped (the caller resends what it still wants).
Starting fails three times in a row (the process dies before saying "ready") →
"broken": nothing more is started, and `on_exit` is told.

`retire()` is the idle exit (builds.py decides when): the worker's stdin is closed, so it
finishes what it was doing and exits (killed after RETIRE_SECONDS if it does not); that is
no crash, `on_exit` is not called.  A message sent meanwhile waits in the backlog, and the
next process starts as soon as this one is gone.  `runs` counts the processes started, so
the caller can tell whether what a process kept (the worker's snapshots) is still there.

`closed()` is for the server's end, and is awaited before the event loop stops: a process
still being started when the loop cancels its tasks would hang the server (Python 3.11's
asyncio waits forever for the pipes of a process whose start was cancelled), so the start
is let finish, and the new process killed, first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from typing import Callable

from . import frames

log = logging.getLogger("relaylens.server")
COMMAND = (sys.executable, "-m", "relaylens.server.slow.worker")
MAX_FAILED_STARTS = 3
RETIRE_SECONDS = 10.0  # a retired worker that has not exited by then is killed
CLOSE_SECONDS = 5.0  # the longest the server's end waits for the worker to be gone


class WorkerProcess:
    def __init__(self, on_message: Callable[[tuple], None],
                 on_exit: Callable[[int | None, bool], None]) -> None:
        self.on_message = on_message
        self.on_exit = on_exit
        self.state = "stopped"
        self.pid: int | None = None
        self.restarts = 0
        self.failed_starts = 0
        self.runs = 0  # processes started
        self.retired = 0  # processes that exited when idle (retire)
        self.last_active = time.monotonic()  # the last message sent or received
        self._proc: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task | None = None  # _run of the current process
        self._backlog: list[bytes] = []
        self._closing = False
        self.env: dict[str, str] = {}  # set in the worker's environment over the server's (from the next start)

    def send(self, message: tuple) -> bool:
        """Queue a message for the worker (starting it if needed); False when broken."""
        if self.state == "broken" or self._closing:
            return False
        data = frames.encode(message)
        self.last_active = time.monotonic()
        if self.state == "ready" and self._proc is not None and self._proc.stdin is not None:
            try:
                self._proc.stdin.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # it died: the reader notices and reports
            return True
        self._backlog.append(data)
        self.start()
        return True

    def start(self) -> None:
        """Start the process unless it runs (or is starting)."""
        if self.state in ("starting", "ready", "stopping", "broken") or self._closing:
            return  # a retiring process: the next starts when it is gone (_ended)
        self.state = "starting"
        self.runs += 1
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *COMMAND, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                env={**os.environ, **self.env} if self.env else None)
        except OSError as err:
            log.error("cannot start the build worker: %s", err)
            self._ended(None, False)
            return
        self._proc, self.pid = proc, proc.pid
        if self._closing:  # the server ended while it started
            proc.kill()
        ready = False
        try:
            while True:
                header = await proc.stdout.readexactly(frames.HEADER)
                message = frames.decode(await proc.stdout.readexactly(frames.decode_length(header)))
                self.last_active = time.monotonic()
                if message[0] == "ready":
                    ready = True
                    self._ready(proc)
                try:
                    self.on_message(message)
                except Exception:  # noqa: BLE001 -- the server's bug: log it, keep reading
                    log.exception("handling %s from the build worker failed", message[0])
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the process ended
        except Exception:  # noqa: BLE001 -- a garbled stream: stop this worker, start afresh
            log.exception("bad message from the build worker; stopping it")
            proc.kill()
        code = await proc.wait()
        self._ended(code, ready)

    def _ready(self, proc: asyncio.subprocess.Process) -> None:
        self.state = "ready"
        self.failed_starts = 0
        backlog, self._backlog = self._backlog, []
        for data in backlog:
            proc.stdin.write(data)

    def _ended(self, code: int | None, was_ready: bool) -> None:
        self._proc, self.pid = None, None
        if self.state == "stopping" and not self._closing:  # retired: not a crash
            self.state = "stopped"
            self.retired += 1
            if self._backlog:  # sent while it was leaving: the next process takes it
                self.start()
            return
        self._backlog.clear()
        if self._closing:
            self.state = "stopped"
            return
        if was_ready:
            self.state = "stopped"
            self.restarts += 1
        else:
            self.failed_starts += 1
            self.state = "broken" if self.failed_starts >= MAX_FAILED_STARTS else "stopped"
        self.on_exit(code, was_ready)

    def retire(self) -> bool:
        """Let an idle worker exit (its stdin closed); False when none is ready to."""
        proc = self._proc
        if self.state != "ready" or proc is None or proc.stdin is None or self._closing:
            return False
        self.state = "stopping"
        proc.stdin.close()
        asyncio.get_running_loop().call_later(RETIRE_SECONDS, self._kill_if_running, proc)
        return True

    def _kill_if_running(self, proc: asyncio.subprocess.Process) -> None:
        if proc is self._proc and proc.returncode is None:
            log.warning("the retired build worker %s did not exit; killing it", proc.pid)
            proc.kill()

    def kill(self) -> None:
        """Kill the running process (a stalled build); `on_exit` follows as for a crash."""
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()

    def close(self) -> None:
        """Stop the worker for good (server shutdown).  Once: a second kill of a process
        that died meanwhile would reap it behind asyncio's back (Popen.send_signal polls
        first), and asyncio would log "Unknown child process"."""
        if self._closing:
            return
        self._closing = True
        self._backlog.clear()
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()

    async def closed(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop the worker for good, and wait until its process (even one being started)
        is gone."""
        self.close()
        task = self._task
        if task is not None and not task.done() and task is not asyncio.current_task():
            await asyncio.wait({task}, timeout=timeout)
