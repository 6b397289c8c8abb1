"""What every subcommand shares: exit codes, `UsageError`, reading a source, reporting
diagnostics.

    name, text, bad_encoding = read_source(path)    # `-` is standard input, named <stdin>
    report(diagnostics, name, err)                  # compiler style, in the stage's order

Exit status: 0 clean (warnings allowed), 1 errors in the input, 2 usage errors (bad
arguments, a file that cannot be read or written), 3 an internal error (a bug in
RelayLens).  A command raises `UsageError` for the second kind; `main` (cli/__init__.py)
turns it into `relaylens: MESSAGE` and status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence, TextIO

from ..diagnostics import Diagnostic
from ..ir.span import Source, Span

PROG = "relaylens"
STDIN = "-"
STDIN_NAME = "<stdin>"

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Reported as `relaylens: MESSAGE`, exit status 2."""


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


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
