"""`relaylens`: the command-line face of the compiler.

    relaylens check FILE...                       diagnostics, compiler style
    relaylens print FILE [--spans] [--types] [-o OUT]   the normalised text
    relaylens run FILE [--interp|--check] [--input NAME=FILE.npy ...] [--params P.npz] [-o OUT.npz]
                                                  run @main compiled (or the reference interpreter)
    relaylens build FILE [--passes A,B] [--print-after-all]   the pass pipeline (build_cli.py)
    relaylens explain FILE:LINE:COL               what the passes made of one expression
    relaylens import MODEL.onnx [-o OUT.relay]    an ONNX model as Relay text + params (frontend/onnx)
    relaylens serve [--tcp --port N]              the language server (stdio, or 127.0.0.1)

Exit status: 0 clean (warnings allowed), 1 errors in the input, 2 usage errors (bad
arguments, a file that cannot be read or written), 3 an internal error (a bug in
RelayLens; set RELAYLENS_TRACEBACK=1 to see where).  No input ever produces a Python
traceback.  `-` names standard input, reported as `<stdin>`.

Diagnostics go to stderr, rendered by `Diagnostic.render()`; only `print` and `run` write to
stdout.  Every file a command writes is checked and written by outputs.py (never an
input, never two outputs on one path, an existing file only with `--force`).  Later stages (`build`, `run`, `import`, `serve`) add one subparser each here.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import Sequence, TextIO

from .diagnostics import Diagnostic, Severity
from .ir.span import Source, Span

PROG = "relaylens"
STDIN = "-"
STDIN_NAME = "<stdin>"

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Reported as `relaylens: MESSAGE`, exit status 2."""


# --- reading input ------------------------------------------------------------------


def read_source(path: str) -> tuple[str, str, Diagnostic | None]:
    """(name, text, encoding error) for a path or `-`.

    A file that cannot be opened raises `UsageError`.  Bytes that are not UTF-8 are an
    error *in the input*, reported at the first bad byte like any other diagnostic; the
    text is then decoded with replacement characters so that the error can be shown.
    """
    name = STDIN_NAME if path == STDIN else path
    try:
        if path == STDIN and sys.stdin is None:
            raise UsageError("cannot read -: there is no standard input")
        data = sys.stdin.buffer.read() if path == STDIN else Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark is not text
        data = data[3:]
    try:
        return name, data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        offset = len(data[: exc.start].decode("utf-8"))  # code points before the bad byte
        source = Source(name, text)
        message = f"invalid UTF-8 byte 0x{data[exc.start]:02x}: RelayLens reads UTF-8 text only"
        return name, text, Diagnostic(message, Span(source, offset, offset + 1), source="encoding")


def render(diag: Diagnostic, name: str) -> str:
    """A diagnostic as the compiler prints it; one without a location names the file."""
    text = diag.render()
    return text if diag.location() is not None else f"{name}: {text}"


def report(diagnostics: Sequence[Diagnostic], name: str, err: TextIO) -> None:
    """In the order the stage gives them (the parser sorts by position)."""
    for diag in diagnostics:
        print(render(diag, name), file=err)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# --- subcommands ----------------------------------------------------------------------


def _parse(text: str, name: str):
    from .parser import parse  # imported late: `relaylens --help` needs no grammar

    return parse(text, name)


def _check(text: str, name: str):
    from .check import check_text  # parse, names, types

    return check_text(text, name)


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    errors = warnings = files_reported = 0
    status = EXIT_OK
    for path in args.files:
        try:
            name, text, bad_encoding = read_source(path)
        except UsageError as exc:
            print(f"{PROG}: {exc}", file=err)
            status = EXIT_USAGE
            continue
        diagnostics = [bad_encoding] if bad_encoding else _check(text, name).diagnostics
        report(diagnostics, name, err)
        file_errors = sum(d.severity == Severity.ERROR for d in diagnostics)
        file_warnings = sum(d.severity == Severity.WARNING for d in diagnostics)
        errors += file_errors
        warnings += file_warnings
        files_reported += bool(file_errors or file_warnings)
    if errors or warnings:
        counts = [_plural(n, w) for n, w in ((errors, "error"), (warnings, "warning")) if n]
        print(f"{', '.join(counts)} in {_plural(files_reported, 'file')}", file=err)
    if errors and status == EXIT_OK:
        status = EXIT_ERRORS
    return status


def cmd_print(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .outputs import OutputPlan, write_text
    from .printer import print_module

    if args.output not in (None, STDIN):
        plan = OutputPlan.of([args.file], force=args.force, replace_inputs=True)
        plan.add(args.output, f"-o {args.output}")
        plan.check()
    name, text, bad_encoding = read_source(args.file)
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return EXIT_ERRORS
    result = _check(text, name) if args.types else _parse(text, name)
    report(result.diagnostics, name, err)
    if any(d.is_error and d.source != "types" for d in result.diagnostics):
        return EXIT_ERRORS  # a type error still prints (without the types it lacks)
    printed = print_module(result.module, spans=args.spans, types=args.types)
    if not printed.endswith("\n"):
        printed += "\n"
    if args.output in (None, STDIN):
        out.write(printed)
    else:
        write_text(args.output, printed)
    return EXIT_OK


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.port is not None and not args.tcp:
        raise UsageError("--port needs --tcp")
    if args.tcp and not 0 < (args.port or 0) < 65536:
        raise UsageError("--tcp needs --port N (1-65535)")
    from ..server.server import serve  # imported late: pygls is only needed here

    serve(tcp=args.tcp, port=args.port or 0)
    return EXIT_OK


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .run import run_command  # imported late: numpy and the op library load here

    return run_command(args, out, err)


# --- the parser and the driver --------------------------------------------------------


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("relaylens")
    except PackageNotFoundError:
        return "unknown"


def _natural(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Compiler and language tools for TVM's Relay IR text format.",
        epilog="Exit status: 0 clean, 1 errors in the input, 2 usage error, 3 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = commands.add_parser(
        "check",
        help="parse and resolve files, report diagnostics",
        description="Parse and resolve each FILE and report its diagnostics on stderr.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="a .relay file, or - for stdin")
    check.set_defaults(run=cmd_check)

    print_ = commands.add_parser(
        "print",
        help="print a file in normalised (TVM) style",
        description="Parse FILE and print it back in TVM's style.",
    )
    print_.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    print_.add_argument("--spans", action="store_true", help="add span= comments (source origins)")
    print_.add_argument("--types", action="store_true", help="infer types and add ty= comments")
    print_.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")
    print_.add_argument("--force", action="store_true", help="allow OUT to replace an existing file, even FILE itself")
    print_.set_defaults(run=cmd_print)

    run = commands.add_parser(
        "run",
        help="run @main on numpy inputs",
        description="Run @main of FILE on inputs matched to its parameters by name. With no "
                    "input at all, random inputs are drawn from --seed.",
    )
    run.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    run.add_argument("--input", dest="inputs", action="append", metavar="NAME=FILE.npy",
                     help="the value of parameter %%NAME (repeatable)")
    run.add_argument("--params", metavar="FILE.npz", help="values of parameters, keyed by name")
    run.add_argument("--interp", action="store_true", help="use the reference interpreter")
    run.add_argument("--check", action="store_true",
                     help="run compiled code and the interpreter, report the largest error per output")
    run.add_argument("--seed", type=_natural, default=0, metavar="N", help="seed of random inputs (0)")
    run.add_argument("-o", "--output", metavar="OUT.npz", help="write the outputs to an .npz archive")
    run.add_argument("--force", action="store_true", help="allow OUT.npz to replace an existing file")
    run.set_defaults(run=cmd_run)

    from .build_cli import add_commands  # build, explain

    add_commands(commands)

    from .frontend.onnx.command import add_command as add_import  # import

    add_import(commands)

    serve = commands.add_parser(
        "serve",
        help="run the language server",
        description="Run the Relay language server on stdio, or on TCP at 127.0.0.1.",
    )
    serve.add_argument("--tcp", action="store_true", help="listen on TCP (127.0.0.1 only)")
    serve.add_argument("--port", type=int, metavar="N", help="the TCP port")
    serve.set_defaults(run=cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `relaylens` console script and `python -m relaylens.compiler`."""
    args = build_parser().parse_args(argv)  # exits 2 itself on bad usage
    out, err = sys.stdout, sys.stderr
    try:
        status = args.run(args, out, err)
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


if __name__ == "__main__":
    sys.exit(main())
