"""The protocol over TCP on 127.0.0.1: one client, one session, for local debugging.

pygls's `start_tcp` hands every new connection the one session: a second client takes
over the first one's answers and progress, and the first gets nothing more.  Here the
first connection is the session; a connection made while it lasts is closed at once
(and the server says so on stderr); when the session ends (the client says exit, or
closes the connection) the server stops, as it does when stdin closes.  There is no
authentication: anyone on this machine can connect, so this is for debugging only.
The exit status and `ending` are as on stdio (stdio.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from typing import Awaitable, Callable

from pygls.lsp.server import LanguageServer

from .framing import CHUNK, serve_stream

log = logging.getLogger("relaylens.server")
HOST = "127.0.0.1"


def start_tcp(server: LanguageServer, port: int, ending: Callable[[], Awaitable[None]]) -> int:
    """Listen on 127.0.0.1:`port` and serve the first client until its session ends; the
    exit status."""
    server._stop_event = threading.Event()  # pygls's shutdown() sets it; serve_stream checks it

    async def run() -> None:
        ended = asyncio.get_running_loop().create_future()
        session: list[str] = []  # the peer being served

        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            peer = _peer(writer)
            if session or ended.done():
                log.warning("refused a connection from %s: the server serves one client at a "
                            "time, and %s is connected", peer, session[0] if session else "another")
                writer.write(_frame({"jsonrpc": "2.0", "method": "window/showMessage", "params": {
                    "type": 1, "message": f"RelayLens serves one client at a time; {session[0] if session else 'another'} "
                                          "is connected"}}))
                writer.close()
                return
            session.append(peer)
            log.info("serving %s", peer)
            server.protocol.set_writer(writer)
            try:
                await serve_stream(lambda: reader.read(CHUNK), server.protocol, server._stop_event)
            except ConnectionError as err:
                log.error("the connection to %s is lost (%s); stopping", peer, err)
            finally:  # SystemExit (pygls's answer to `exit`) goes on, out of asyncio.run
                writer.close()
                if not ended.done():
                    ended.set_result(None)

        listener = await asyncio.start_server(connected, HOST, port)
        bound = ", ".join("%s:%d" % sock.getsockname()[:2] for sock in listener.sockets)
        print(f"relaylens: serving LSP on {bound}: one client, no authentication "
              "(for local debugging only)", file=sys.stderr, flush=True)
        async with listener:
            await ended
        await ending()

    status = 0
    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    except SystemExit as exc:  # pygls's answer to `exit`
        status = exc.code if isinstance(exc.code, int) else 0
    finally:
        server.shutdown()
    return status


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _peer(writer: asyncio.StreamWriter) -> str:
    address = writer.get_extra_info("peername")
    return "%s:%d" % address[:2] if isinstance(address, tuple) else str(address)
