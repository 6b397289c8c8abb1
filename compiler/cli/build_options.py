"""The options of every command that builds (`build`, `run`, `explain`): the weights bound
before the pipeline, the PassContext's config, and progress on a terminal.

    --params FILE.npz   bind @main's parameters named in FILE.npz as constants, as
                        relay.build(mod, params) does (driver.compile(params=...))
    --no-params         bind nothing, not even the archive found beside FILE
    --config KEY=JSON   one PassContext option (repeatable), e.g.
                        --config relay.FuseOps.max_depth=1
    --no-cache          neither read nor write the kernel cache on disk (lower/disk_cache.py;
                        RELAYLENS_NO_CACHE=1 does the same for every command)

`build` also takes the BYOC options (docs/byoc.md), which are PassContext options too:

    --patterns FILE     a pattern table in Relay text (relay.byoc.patterns), read here
    --target T[,U]      the external compilers, in priority order (relay.byoc.targets)
    --target-ops A,B    ops the first target takes one by one (relay.byoc.ops)

Without either params option, `<stem>.npz` beside FILE (model.npz for model.relay, as
`relaylens import` writes them) is bound when it exists, and the command says so once on
stderr.  An archive that cannot be read, `--params` with `--no-params`, and a `--config`
that is not KEY=JSON are usage errors (exit 2); arrays that do not fit @main are the
driver's diagnostics (exit 1).  A RELAYLENS_CACHE_SIZE that does not read is a usage
error too.
"""

from __future__ import annotations

import argparse
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, TextIO

import numpy as np

from ..diagnostics import Diagnostic, Severity
from ..driver import Step
from ..ir.span import Source, Span
from ..lower.disk_cache import ENV_SIZE, DiskCache, environment_cache
from ..transform.patterns.directive import build_directive
from ..weights_digests import Weights, archive_weights
from .array_files import load_archive
from .common import PROG, STDIN, UsageError, plural


def add_build_options(parser: argparse.ArgumentParser, params_help: str) -> None:
    parser.add_argument("--params", metavar="FILE.npz", help=params_help)
    parser.add_argument("--no-params", action="store_true",
                        help="bind no parameters (not even FILE's .npz beside it)")
    parser.add_argument("--config", action="append", metavar="KEY=JSON",
                        help="a PassContext option (repeatable), e.g. relay.FuseOps.max_depth=1")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the kernel cache on disk (see relaylens cache --info)")


def disk_cache(args: argparse.Namespace) -> DiskCache | None:
    """The kernel cache on disk the build uses: None for --no-cache or RELAYLENS_NO_CACHE."""
    if args.no_cache:
        return None
    try:
        return environment_cache()
    except ValueError as exc:
        raise UsageError(f"{ENV_SIZE}: {exc}") from None


# --- weights ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamsFile:
    """Where a command's weights come from: the archive, and whether the user named it."""

    path: str | None  # None: bind nothing
    found: bool = False  # `<stem>.npz` beside FILE, not named by --params

    def read(self) -> Weights:
        """name → array (read-only); a leading `%` of a name is dropped (`%w` and `w` name
        %w).  Their digests, for a kept build's key, come from the disk cache while the
        archive's stat holds (weights_digests.py)."""
        if self.path is None:
            return Weights({})
        what = f"{self.path} (found beside the input; --no-params ignores it)" if self.found else f"--params {self.path}"
        return archive_weights(self.path, lambda path: {key.lstrip("%"): array
                                                        for key, array in load_archive(path, what).items()})

    def load(self, err: TextIO) -> Weights:
        """`read`, then `announce`: what a command that binds the weights does first."""
        params = self.read()
        self.announce(len(params), err)
        return params

    def announce(self, count: int, err: TextIO) -> None:
        """Say, once and before the binding (whose errors it explains), that an archive the
        user did not name is bound."""
        if self.found and count:
            print(f"{PROG}: binding {plural(count, 'parameter')} from {self.path}", file=err)


def params_file(file: str, args: argparse.Namespace) -> ParamsFile:
    """The archive `--params` names, else `<stem>.npz` beside `file` if it exists, unless
    `--no-params`.  Nothing is read yet."""
    if args.params is not None and args.no_params:
        raise UsageError("--params and --no-params exclude each other")
    if args.params is not None:
        return ParamsFile(args.params)
    if args.no_params or file == STDIN:
        return ParamsFile(None)
    beside = Path(file).with_suffix(".npz")
    if beside == Path(file) or not beside.is_file():
        return ParamsFile(None)
    return ParamsFile(str(beside), found=True)


# --- PassContext config -------------------------------------------------------------------


def pass_config(specs: list[str] | None) -> dict[str, Any]:
    """`KEY=JSON` options as the PassContext's config; a later KEY wins."""
    config: dict[str, Any] = {}
    for spec in specs or []:
        key, sep, value = spec.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--config expects KEY=JSON, got {spec!r}")
        try:
            config[key] = json.loads(value)
        except ValueError as exc:
            raise UsageError(f"--config {key}: {value!r} is not JSON ({exc}); a string needs quotes, "
                             f"as in {key}='\"text\"'") from None
    return config


# --- BYOC -------------------------------------------------------------------------------


def add_byoc_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--patterns", metavar="FILE", help="a BYOC pattern table in Relay text (MergeComposite)")
    parser.add_argument("--target", metavar="T[,U]", help="external compilers for AnnotateTarget, in priority order")
    parser.add_argument("--target-ops", metavar="A,B", help="ops the first --target takes one by one (AnnotateTarget)")


def byoc_config(args: argparse.Namespace, config: dict[str, Any]) -> dict[str, Any]:
    """`config` with the BYOC options added; an unreadable pattern file is a usage error."""
    if args.patterns is not None:
        try:
            text = Path(args.patterns).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or exc
            raise UsageError(f"--patterns {args.patterns}: cannot read it ({why})") from None
        config["relay.byoc.patterns"] = {"name": args.patterns, "text": text}
    if args.target is not None:
        targets = [t.strip() for t in args.target.split(",") if t.strip()]
        if not targets:
            raise UsageError("--target needs at least one name")
        config["relay.byoc.targets"] = targets
    if args.target_ops is not None:
        if args.target is None:
            raise UsageError("--target-ops needs --target (the target that takes them)")
        config["relay.byoc.ops"] = [o.strip() for o in args.target_ops.split(",") if o.strip()]
    return config


def directive_byoc(args: argparse.Namespace, name: str, text: str,
                   config: dict[str, Any]) -> tuple[bool, list[Diagnostic]]:
    """A model's own `// relaylens: --patterns FILE --target T [--target-ops A,B]` line
    (docs/byoc.md, "In the editor"), when the command line gives no BYOC option: its options
    go into `config` (the table's path relative to the model's folder), and True says the
    build partitions.  What the line gets wrong is an error at the line (exit 1)."""
    if args.patterns is not None or args.target is not None or args.target_ops is not None:
        return False, []
    found = build_directive(text)
    if found is None:
        return False, []
    span = Span(Source(name, text), found.start, found.end)
    if found.problems:
        return False, [Diagnostic(message, span, Severity.ERROR, source="byoc") for _, _, message in found.problems]
    if found.patterns is not None:
        path = Path(found.patterns) if name in (STDIN, "-") else Path(name).parent / found.patterns
        try:
            table = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or exc
            return False, [Diagnostic(f"relaylens directive: --patterns {found.patterns}: cannot read {path} ({why})",
                                      span, Severity.ERROR, source="byoc")]
        config["relay.byoc.patterns"] = {"name": str(path), "text": table}
    config["relay.byoc.targets"] = found.targets
    if found.ops:
        config["relay.byoc.ops"] = found.ops
    return True, []


# --- progress ----------------------------------------------------------------------------


@contextmanager
def terminal_progress(err: TextIO) -> Iterator[Any]:
    """A `progress` for driver.compile() that shows each step (`pass FoldConstant`,
    `lowering 3/17 NAME`) on one status line of `err`, cleared at the end; None when `err`
    is not a terminal (piped, the command is quiet)."""
    if not (hasattr(err, "isatty") and err.isatty()):
        yield None
        return
    shown = [False]

    def show(step: Step) -> None:
        err.write(f"\r\033[K{step}")
        err.flush()
        shown[0] = True

    try:
        yield show
    finally:
        if shown[0]:
            err.write("\r\033[K")
            err.flush()
