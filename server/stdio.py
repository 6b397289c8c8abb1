"""The protocol over stdin and stdout, read on the event loop.

pygls's own `start_io` reads stdin in a worker thread, one executor round trip for each
header line and each body: three thread hand-offs per message, which on two shared
cores cost a hover 0.4-1 ms of its 0.8-1.6 ms (median).  Here stdin is a pipe read by
the event loop (`connect_read_pipe`), and pygls's own message loop (`run_async`) reads
it like a TCP stream, as pygls's `start_tcp` does.  When stdin is not a pipe (a regular
file, say, which the event loop cannot watch) or the platform's loop cannot read pipes,
pygls's threaded reader is used.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading

from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer

log = logging.getLogger("relaylens.server")
STREAM_LIMIT = 1 << 30  # one message may be a whole document


def start_stdio(server: LanguageServer) -> None:
    """Serve on stdin/stdout until the client says exit or closes stdin."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    server._stop_event = threading.Event()  # pygls's shutdown() sets it; run_async checks it

    async def run() -> bool:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=STREAM_LIMIT)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        except (ValueError, OSError, NotImplementedError) as err:
            log.info("stdin cannot be read on the event loop (%s): reading it in a thread", err)
            return False
        server.protocol.set_writer(StdoutWriter(stdout))
        try:
            await run_async(stop_event=server._stop_event, reader=reader, protocol=server.protocol,
                            logger=log, error_handler=server.report_server_error)
        except asyncio.IncompleteReadError:
            pass  # the client closed stdin in the middle of a message
        return True

    served = True
    try:
        served = asyncio.run(run())
    except BrokenPipeError:
        log.error("the connection to the client is lost; stopping")
    except (KeyboardInterrupt, SystemExit):  # SystemExit: pygls's answer to `exit`
        pass
    finally:
        if served:
            server.shutdown()
    if not served:
        server.start_io(stdin, stdout)
