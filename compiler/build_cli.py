"""`relaylens build` and `relaylens explain`: the pass pipeline and provenance on the
command line (registered by cli.py, which owns reading files and reporting).

    relaylens build FILE [--emit relay|llvm|llvm-opt|schedule] [-o DIR] [--force] [--passes A,B,C]
                         [--print-after-all] [--opt-level 0..4]
    relaylens explain FILE:LINE:COL

`build` prints the final module (with types and spans); `--print-after-all` prints every
snapshot, each under a `// after PASS` banner.  `--emit llvm` (or `llvm-opt`, `schedule`)
lowers every fused function and prints its LLVM IR (after O3; schedule records); `-o DIR`
writes every artefact of the build (lower/artifacts.py), staged and then moved into DIR
under the rule of outputs.py (a previous build's own unchanged files are refreshed,
anything else in DIR needs `--force`).  On a terminal, progress goes to
stderr pass by pass, then fused function by fused function; piped, the command is quiet.

`explain` prints what became of one expression: its frontend layers and type, each pass
that changed it, the fused function it ended in and, when the build lowers, that
function's LLVM function, its lines in module.ll (as `build -o` writes it), the
instruction lines that compute the expression and the frontend layers compiled into it.
"""

from __future__ import annotations

import argparse
import re
import shutil
from typing import TextIO

from .cli import EXIT_ERRORS, EXIT_OK, UsageError, read_source, report


def _progress(err: TextIO):
    if not (hasattr(err, "isatty") and err.isatty()):
        return None
    count = [0]

    def show(step: str) -> None:
        count[0] += 1
        err.write(f"\r\033[K[{count[0]}] {step}")
        err.flush()

    return show


EMIT = ("relay", "llvm", "llvm-opt", "schedule")


def cmd_build(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .build import build_text
    from .printer import print_module

    if args.emit not in EMIT:
        raise UsageError(f"--emit {args.emit}: expected one of {', '.join(EMIT)}")
    passes = [p.strip() for p in args.passes.split(",") if p.strip()] if args.passes else None
    if args.output:
        from .lower.artifacts import FILES
        from .outputs import OutputPlan

        plan = OutputPlan.of([args.file], force=args.force)
        plan.add_build_dir(args.output, FILES, f"-o {args.output}")
        plan.check()
    name, text, bad_encoding = read_source(args.file)
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return EXIT_ERRORS
    progress = _progress(err)
    result = build_text(text, name, passes=passes, opt_level=args.opt_level, progress=progress)
    lowered = None
    if result.ok and result.snapshots and (args.output or args.emit != "relay"):
        from .lower.pipeline import lower_build

        lowered = lower_build(result, progress=progress)
        result.diagnostics.extend(lowered.diagnostics)
    if progress is not None:
        err.write("\r\033[K")
    report(result.diagnostics, name, err)
    if not result.snapshots:
        return EXIT_ERRORS
    if args.output and lowered is not None and lowered.ok:
        from .lower.artifacts import FILES, write_build
        from .outputs import commit_build_dir, staging_dir

        staged = staging_dir(args.output)
        try:
            names = [p.name for p in write_build(result, lowered, staged)]
        except OSError as exc:
            shutil.rmtree(staged, ignore_errors=True)
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        written = commit_build_dir(staged, args.output, names, FILES)
        err.write(f"wrote {', '.join(str(p) for p in written)}\n")
    if args.emit != "relay":
        if lowered is None or not lowered.ok:
            return EXIT_ERRORS
        out.write(_emitted(lowered, args.emit))
        return EXIT_OK if result.ok else EXIT_ERRORS
    if args.output:
        return EXIT_OK if result.ok else EXIT_ERRORS
    shown = result.snapshots if args.print_after_all else result.snapshots[-1:]
    for i, snap in enumerate(shown):
        if args.print_after_all:
            status = "" if snap.changed else " (unchanged)"
            out.write(f"{'' if i == 0 else chr(10)}// after {snap.pass_name}{status}\n")
        out.write(print_module(snap.module, spans=True, types=True))
        out.write("\n")
    return EXIT_OK if result.ok else EXIT_ERRORS


def _emitted(lowered, emit: str) -> str:
    if emit == "llvm":
        return lowered.llvm_ir
    if emit == "llvm-opt":
        return lowered.optimized_ir
    return "\n".join(f.schedule.record_text() for f in lowered.functions.values())


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
    progress = _progress(err)
    result = build_text(text, name, progress=progress)
    prov = key = lowered = None
    if result.snapshots:
        prov = Provenance(result)
        offset = prov.source.offset(line, col) if prov.source is not None else None
        key = prov.key_at(offset) if offset is not None else None
    if key is not None and result.ok and prov.fused_function(key) is not None:
        from .lower.pipeline import lower_build

        lowered = lower_build(result, progress=progress)
    if progress is not None:
        err.write("\r\033[K")
    report([d for d in result.diagnostics if d.is_error], name, err)
    if not result.snapshots:
        return EXIT_ERRORS
    if key is None:
        raise UsageError(f"no expression at {name}:{line}:{col}")
    out.write(explain_text(prov, key, name, lowered))
    return EXIT_OK


def explain_text(prov, key, name: str, lowered=None) -> str:
    """What became of the source expression `key`: its layers and type, every pass that
    changed it, its fused function and, given the build `lowered` (pipeline.Lowered), that
    function in LLVM IR (see `_llvm_lines`)."""
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
        if lowered is not None:
            lines += _llvm_lines(lowered, fused[0], (start_line, start_col))
    return "\n".join(lines) + "\n"


def _llvm_lines(lowered, fused_name: str, where: tuple[int, int]) -> list[str]:
    """The fused function's LLVM function and its lines in module.ll (the file `relaylens
    build FILE -o DIR` writes: the same lowering, so the same lines), how many of its
    instruction lines carry the expression's location `where` (Relay line, column), and
    the frontend layers compiled into it; or why it was not lowered."""
    from .lower.artifacts import source_map

    errors = [d for d in lowered.diagnostics if d.is_error]
    if errors:
        return [f"  not lowered: {errors[0].message}"]
    entry = next((f for f in source_map(lowered, lowered.llvm_ir, lowered.optimized_ir)["functions"]
                  if f["name"] == fused_name), None)
    if entry is None:
        return []
    llvm = entry["llvm"]
    lines = [f"  LLVM function: @{fused_name}, module.ll lines {llvm['first_line']}-{llvm['last_line']}"]
    own = sorted(int(n) for n, loc in llvm["lines"].items() if tuple(loc) == where)
    if own:
        counted = f"{len(own)} instruction lines compute" if len(own) > 1 else "1 instruction line computes"
        lines.append(f"    {counted} this expression (the first at line {own[0]})")
    if entry["layers"]:
        lines.append(f"    frontend layers compiled into it: {', '.join(entry['layers'])}")
    return lines


def _first_line(text: str, width: int = 90) -> str:
    first = text.split("\n", 1)[0]
    return first if len(first) <= width else first[: width - 1] + "…"


def _opt_level(text: str) -> int:
    """An argparse type: TVM's opt_level, 0 to 4."""
    if text.strip() not in ("0", "1", "2", "3", "4"):
        raise argparse.ArgumentTypeError(f"expected 0, 1, 2, 3 or 4 (as TVM), got {text!r}")
    return int(text)


def add_commands(commands) -> None:
    build = commands.add_parser(
        "build",
        help="run the pass pipeline (relay.build at opt_level 3 by default)",
        description="Check FILE, run the pass pipeline and print the result.",
    )
    build.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    build.add_argument("--emit", default="relay", metavar="KIND",
                       help="what to print: relay (default), llvm, llvm-opt (after O3), schedule")
    build.add_argument("-o", "--output", metavar="DIR",
                       help="write module.relay, module.ll, module.opt.ll, graph.json, params.npz, "
                            "schedules.txt and map.json into DIR")
    build.add_argument("--passes", metavar="A,B,C", help="run these passes instead of relay.build's")
    build.add_argument("--print-after-all", action="store_true", help="print the module after every pass")
    build.add_argument("--opt-level", type=_opt_level, default=3, metavar="N",
                       help="the PassContext opt_level, 0 to 4 as in TVM (3)")
    build.add_argument("--force", action="store_true",
                       help="allow DIR's files to be replaced even when relaylens build did not write them")
    build.set_defaults(run=cmd_build)

    explain = commands.add_parser(
        "explain",
        help="what the passes made of the expression at FILE:LINE:COL",
        description="Build FILE and print, for the expression at LINE:COL, each pass that changed it, "
                    "what it became, the fused function it ended in and its frontend layers; then lower "
                    "the build and print that function's LLVM function and its lines in module.ll "
                    "(as build -o DIR writes it).",
    )
    explain.add_argument("where", metavar="FILE:LINE:COL")
    explain.set_defaults(run=cmd_explain)
