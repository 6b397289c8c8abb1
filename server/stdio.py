"""The protocol over stdin and stdout, read on the event loop.

pygls's own `start_io` reads stdin in a worker thread, one executor round trip for each
header line and each body: three thread hand-offs per message, which on two shared
cores cost a hover 0.4-1 ms of its 0.8-1.6 ms (median).  Here stdin is a pipe read by
the event loop (`connect_read_pipe`) in chunks, cut into messages by framing.py (which
also answers framing errors, as pygls's loop does not).  When stdin is not a pipe (a
regular file, say, which the event loop cannot watch) or the platform's loop cannot
read pipes, the chunks are read in a thread instead.

The status is the protocol's: 0 after `shutdown` then `exit`, 1 for an `exit` without
`shutdown` (pygls's `sys.exit`), 0 when the client closes stdin.  `ending` runs on the
event loop when stdin ends, before the loop stops (the `exit` notification has its own
handler for that, as pygls leaves the loop at once after it).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import Awaitable, Callable

from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from .framing import CHUNK, serve_stream

log = logging.getLogger("relaylens.server")


def start_stdio(server: LanguageServer, ending: Callable[[], Awaitable[None]]) -> int:
    """Serve on stdin/stdout until the client says exit or closes stdin; the exit status."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    server._stop_event = threading.Event()  # pygls's shutdown() sets it; serve_stream checks it

    async def run() -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=CHUNK)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
            read = lambda: reader.read(CHUNK)  # noqa: E731
        except (ValueError, OSError, NotImplementedError) as err:
            log.info("stdin cannot be read on the event loop (%s): reading it in a thread", err)
            read = lambda: loop.run_in_executor(None, stdin.read1, CHUNK)  # noqa: E731
        server.protocol.set_writer(StdoutWriter(stdout))
        await serve_stream(read, server.protocol, server._stop_event)
        await ending()

    status = 0
    try:
        asyncio.run(run())
    except BrokenPipeError:
        log.error("the connection to the client is lost; stopping")
    except KeyboardInterrupt:
        pass
    except SystemExit as exc:  # pygls's answer to `exit`
        status = exc.code if isinstance(exc.code, int) else 0
    finally:
        server.shutdown()
    return status
