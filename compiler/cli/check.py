"""`relaylens check FILE...`: parse, resolve and type each file; report its diagnostics on
stderr, then one line counting them (`2 errors, 1 warning in 2 files`).  A clean run prints
nothing.  Every file is checked even when one cannot be read; the status is the most
severe any file gave (2 for an unreadable file, else 1 for errors)."""

from __future__ import annotations

import argparse
from typing import TextIO

from ..check import check_text
from ..diagnostics import Severity
from ..transform.patterns.table_check import table_check
from .common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, PROG, UsageError, plural, read_source, report


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "check",
        help="parse and resolve files, report diagnostics",
        description="Parse and resolve each FILE and report its diagnostics on stderr.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a .relay file, or - for stdin")
    parser.set_defaults(run=run)


def _diagnostics(text: str, name: str) -> list:
    """The file's diagnostics; a pattern table's as a table (docs/byoc.md)."""
    checked = check_text(text, name)
    as_table = table_check(checked.module, checked.diagnostics, text)
    return checked.diagnostics if as_table is None else as_table


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    errors = warnings = files_reported = 0
    status = EXIT_OK
    for path in args.files:
        try:
            name, text, bad_encoding = read_source(path)
        except UsageError as exc:
            print(f"{PROG}: {exc}", file=err)
            status = EXIT_USAGE
            continue
        diagnostics = [bad_encoding] if bad_encoding else _diagnostics(text, name)
        report(diagnostics, name, err)
        file_errors = sum(d.severity == Severity.ERROR for d in diagnostics)
        file_warnings = sum(d.severity == Severity.WARNING for d in diagnostics)
        errors += file_errors
        warnings += file_warnings
        files_reported += bool(file_errors or file_warnings)
    if errors or warnings:
        counts = [plural(n, w) for n, w in ((errors, "error"), (warnings, "warning")) if n]
        print(f"{', '.join(counts)} in {plural(files_reported, 'file')}", file=err)
    if errors and status == EXIT_OK:
        status = EXIT_ERRORS
    return status
