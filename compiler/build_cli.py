"""`relaylens build` and `relaylens explain`: the pass pipeline and provenance on the
command line (registered by cli.py, which owns reading files and reporting).

    relaylens build FILE --emit relay [--passes A,B,C] [--print-after-all] [--opt-level N]
    relaylens explain FILE:LINE:COL

`build` prints the final module (with types and spans); `--print-after-all` prints every
snapshot, each under a `// after PASS` banner.  On a terminal, progress goes to stderr
pass by pass; piped, the command is quiet.
"""

from __future__ import annotations

import argparse
import re
from typing import TextIO

from .cli import EXIT_ERRORS, EXIT_OK, UsageError, read_source, report


def _progress(err: TextIO):
    if not (hasattr(err, "isatty") and err.isatty()):
        return None
    count = [0]

    def show(pass_name: str) -> None:
        count[0] += 1
        err.write(f"\r\033[K[{count[0]}] {pass_name}")
        err.flush()

    return show


def cmd_build(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .build import build_text
    from .printer import print_module

    if args.emit != "relay":
        raise UsageError(f"--emit {args.emit}: only 'relay' is available (LLVM comes with lowering)")
    passes = [p.strip() for p in args.passes.split(",") if p.strip()] if args.passes else None
    name, text, bad_encoding = read_source(args.file)
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return EXIT_ERRORS
    progress = _progress(err)
    result = build_text(text, name, passes=passes, opt_level=args.opt_level, progress=progress)
    if progress is not None:
        err.write("\r\033[K")
    report(result.diagnostics, name, err)
    if not result.snapshots:
        return EXIT_ERRORS
    shown = result.snapshots if args.print_after_all else result.snapshots[-1:]
    for i, snap in enumerate(shown):
        if args.print_after_all:
            status = "" if snap.changed else " (unchanged)"
            out.write(f"{'' if i == 0 else chr(10)}// after {snap.pass_name}{status}\n")
        out.write(print_module(snap.module, spans=True, types=True))
        out.write("\n")
    return EXIT_OK if result.ok else EXIT_ERRORS


_WHERE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+)$")


def cmd_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .build import build_text
    from .provenance import Provenance

    m = _WHERE.match(args.where)
    if m is None:
        raise UsageError(f"expected FILE:LINE:COL, got {args.where!r}")
    name, text, bad_encoding = read_source(m["file"])
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return EXIT_ERRORS
    line, col = int(m["line"]), int(m["col"])
    result = build_text(text, name)
    report([d for d in result.diagnostics if d.is_error], name, err)
    if not result.snapshots:
        return EXIT_ERRORS
    prov = Provenance(result)
    offset = prov.source.offset(line, col) if prov.source is not None else None
    key = prov.key_at(offset) if offset is not None else None
    if key is None:
        raise UsageError(f"no expression at {name}:{line}:{col}")
    out.write(explain_text(prov, key, name))
    return EXIT_OK


def explain_text(prov, key, name: str) -> str:
    source = prov.source
    start_line, start_col = source.location(key[0])
    node = prov.source_node(key)
    lines = [f"{name}:{start_line}:{start_col}: {_first_line(source.text[key[0]:key[1]])}"]
    layers = prov.layers(key)
    if layers:
        lines.append(f"  frontend layer{'s' * (len(layers) > 1)}: {', '.join(layers)}")
    if node is not None and node.ty is not None:
        from .printer import print_type

        lines.append(f"  type: {print_type(node.ty)}")
    changes = prov.changes(key)
    if not changes:
        lines.append("  no pass changed it")
    for stage, nodes in changes:
        if not nodes:
            lines.append(f"  after {stage.pass_name} (#{stage.index}): gone (folded or removed)")
            continue
        lines.append(f"  after {stage.pass_name} (#{stage.index}):")
        for n in nodes[:4]:
            at, text = stage.snippet(n)
            lines.append(f"    line {at}: {text}" if at else f"    {type(n).__name__}")
        if len(nodes) > 4:
            lines.append(f"    … and {len(nodes) - 4} more")
    fused = prov.fused_function(key)
    if fused is not None:
        lines.append(f"  fused into: {fused[0]}")
    return "\n".join(lines) + "\n"


def _first_line(text: str, width: int = 90) -> str:
    first = text.split("\n", 1)[0]
    return first if len(first) <= width else first[: width - 1] + "…"


def add_commands(commands) -> None:
    build = commands.add_parser(
        "build",
        help="run the pass pipeline (relay.build at opt_level 3 by default)",
        description="Check FILE, run the pass pipeline and print the result.",
    )
    build.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    build.add_argument("--emit", default="relay", metavar="KIND", help="what to print: relay")
    build.add_argument("--passes", metavar="A,B,C", help="run these passes instead of relay.build's")
    build.add_argument("--print-after-all", action="store_true", help="print the module after every pass")
    build.add_argument("--opt-level", type=int, default=3, metavar="N", help="the PassContext opt_level (3)")
    build.set_defaults(run=cmd_build)

    explain = commands.add_parser(
        "explain",
        help="what the passes made of the expression at FILE:LINE:COL",
        description="Build FILE and print, for the expression at LINE:COL, each pass that changed it, "
                    "what it became, the fused function it ended in and its frontend layers.",
    )
    explain.add_argument("where", metavar="FILE:LINE:COL")
    explain.set_defaults(run=cmd_explain)
