"""`relaylens print FILE [--spans] [--types] [-o OUT] [--force]`: the module printed back in
TVM's style.  A file with errors prints nothing (status 1); a type error still prints,
without the types it lacks.  OUT is checked by outputs.py first: `--force` lets it replace
an existing file, FILE itself included (formatting in place)."""

from __future__ import annotations

import argparse
from typing import TextIO

from ..check import check_text
from ..parser import parse
from ..printer import print_module
from .common import EXIT_ERRORS, EXIT_OK, STDIN, read_source, report
from .outputs import OutputPlan, write_text


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "print",
        help="print a file in normalised (TVM) style",
        description="Parse FILE and print it back in TVM's style.",
    )
    parser.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    parser.add_argument("--spans", action="store_true", help="add span= comments (source origins)")
    parser.add_argument("--types", action="store_true", help="infer types and add ty= comments")
    parser.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")
    parser.add_argument("--force", action="store_true", help="allow OUT to replace an existing file, even FILE itself")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.output not in (None, STDIN):
        plan = OutputPlan.of([args.file], force=args.force, replace_inputs=True)
        plan.add(args.output, f"-o {args.output}")
        plan.check()
    name, text, bad_encoding = read_source(args.file)
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return EXIT_ERRORS
    result = check_text(text, name) if args.types else parse(text, name)
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
