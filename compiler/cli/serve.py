"""`relaylens serve [--tcp --port N]`: the language server, on stdio or on TCP at
127.0.0.1 (relaylens.server)."""

from __future__ import annotations

import argparse
from typing import TextIO

from .common import UsageError


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "serve",
        help="run the language server",
        description="Run the Relay language server on stdio, or on TCP at 127.0.0.1.",
    )
    parser.add_argument("--tcp", action="store_true", help="listen on TCP (127.0.0.1 only)")
    parser.add_argument("--port", type=int, metavar="N", help="the TCP port")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.port is not None and not args.tcp:
        raise UsageError("--port needs --tcp")
    if args.tcp and not 0 < (args.port or 0) < 65536:
        raise UsageError("--tcp needs --port N (1-65535)")
    # imported here, deliberately: pygls and the server load only when they are served
    from ...server.server import serve

    return serve(tcp=args.tcp, port=args.port or 0)
