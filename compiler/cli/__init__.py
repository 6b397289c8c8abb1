"""`relaylens`: the command-line face of the compiler, one module per subcommand.

    relaylens check FILE...                        check.py     diagnostics, compiler style
    relaylens print FILE [--spans] [--types]       print_.py    the normalised text
    relaylens run FILE [--interp|--check] ...      run.py       @main compiled (or interpreted)
    relaylens build FILE [--emit KIND] [-o DIR]    build.py     the pass pipeline, LLVM IR, artefacts
    relaylens explain FILE:LINE:COL                explain.py   what the passes made of one expression
    relaylens graph FILE [--after PASS] [-o OUT]   graph.py     the dataflow graph after a pass (JSON, SVG, HTML)
    relaylens import MODEL.onnx [-o OUT.relay]     import_.py   an ONNX model as Relay text + params
    relaylens profile FILE [--runs N] [-o T.json]  profile.py   where the time goes: kernels, lines, layers
    relaylens serve [--tcp --port N]               serve.py     the language server
    relaylens cache [--info | --clear]             cache.py     the kernel cache on disk

Shared by them, and importing none of them: common.py (exit codes, `UsageError`, reading
a source, reporting diagnostics), build_options.py (`--params`, `--no-params`, `--config`,
progress), outputs.py (the rule for every file a command writes), array_files.py (.npy and
.npz files read safely).  Every build goes through driver.compile().  Each subcommand
module has `add_parser(commands)`, which registers it with its `run(args, out, err) -> int`;
this module assembles the parser and runs the command.  A command line whose first word
is a command imports that command's module alone (`build_parser(command)`): `relaylens
run` no longer imports the profiler, the graph views and `explain` (their modules, the
profiler's comparison with onnxruntime, html: 40-45 ms of a process's start at load 3-4).

Exit status: 0 clean (warnings allowed), 1 errors in the input, 2 usage errors (bad
arguments, a file that cannot be read or written), 3 an internal error (a bug in
RelayLens; set RELAYLENS_TRACEBACK=1 to see where).  No input ever produces a Python
traceback.  `-` names standard input, reported as `<stdin>`.  Diagnostics go to stderr;
only `print`, `run`, `profile`, `build` and `explain` write results to stdout (`import` and
`graph` without -o).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import Sequence

from ..version import RELEASE
from .common import EXIT_ERRORS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, PROG, UsageError

__all__ = ["main", "build_parser", "UsageError", "EXIT_OK", "EXIT_ERRORS", "EXIT_USAGE", "EXIT_INTERNAL"]

SUBCOMMANDS = ("check", "print_", "run", "profile", "build", "explain", "graph", "import_", "serve", "cache")  # modules, in --help's order


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of `command` alone when it names one."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Compiler and language tools for TVM's Relay IR text format.",
        epilog="Exit status: 0 clean, 1 errors in the input, 2 usage error, 3 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {RELEASE}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    module = command + "_" if command in ("print", "import") else command
    for name in (module,) if module in SUBCOMMANDS else SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `relaylens` console script and `python -m relaylens.compiler`."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)  # exits 2 itself on bad usage
    out, err = sys.stdout, sys.stderr
    try:
        status = args.run(args, out, err)
        if not out.closed:  # (the language server closes stdout at the protocol's exit)
            out.flush()
        return status
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=err)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `relaylens print big.relay | head`: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 -- the one place that turns a bug into a message
        detail = str(exc)
        detail = detail if len(detail) <= 200 else detail[:200] + "..."
        print(f"{PROG}: internal error: {type(exc).__name__}: {detail}", file=err)
        if os.environ.get("RELAYLENS_TRACEBACK"):
            traceback.print_exc(file=err)
        else:
            print(f"{PROG}: this is a bug in RelayLens; set RELAYLENS_TRACEBACK=1 for details",
                  file=err)
        return EXIT_INTERNAL
