"""`relaylens build`: the pass pipeline, its LLVM IR and every artefact, on the command line.

    relaylens build FILE [--emit relay|llvm|llvm-opt|schedule] [-o DIR] [--force] [--passes A,B,C]
                         [--print-after-all] [--opt-level 0..4] [--params P.npz | --no-params]
                         [--config KEY=JSON ...] [--no-cache] [--patterns FILE --target T [--target-ops A,B]]

One driver.compile() call, stopping as early as the request allows: after the passes for
the printed module, at LLVM IR for `--emit llvm|llvm-opt|schedule`, at machine code for
`-o DIR` (graph.json and params.npz come from the executable's plan).  The weights are
bound first (build_options.py: `--params`, or FILE's `<stem>.npz`), as relay.build does.
A model whose `// relaylens: --patterns FILE --target T` line names a BYOC table (and no
BYOC option on the command line) is partitioned first, as the editor builds it (docs/byoc.md).

`build` prints the final module (with types and spans); `--print-after-all` prints every
snapshot, each under a `// after PASS` banner.  `--emit` prints the LLVM IR (after O3 for
`llvm-opt`) or the schedule records instead; `-o DIR` writes every artefact of the build
(lower/artifacts.py), staged and then moved into DIR under the rule of outputs.py (a
previous build's own unchanged files are refreshed, anything else in DIR needs `--force`).
On a terminal, progress goes to stderr step by step; piped, the command is quiet.
"""

from __future__ import annotations

import argparse
import shutil
from typing import TextIO

from ..driver import compile
from ..lower.artifacts import FILES, write_build
from ..printer import print_module
from ..build import relay_build_passes
from ..transform.patterns.options import BYOC_PASSES
from .build_options import (add_build_options, add_byoc_options, byoc_config, directive_byoc, disk_cache, params_file, pass_config,
                            terminal_progress)
from .common import EXIT_ERRORS, EXIT_OK, UsageError, read_source, report
from .program import unknown_inputs_note
from .outputs import OutputPlan, commit_build_dir, staging_dir

EMIT = ("relay", "llvm", "llvm-opt", "schedule")


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "build",
        help="run the pass pipeline (relay.build at opt_level 3 by default)",
        description="Check FILE, bind its weights, run the pass pipeline and print the result.",
    )
    parser.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    parser.add_argument("--emit", default="relay", metavar="KIND",
                        help="what to print: relay (default), llvm, llvm-opt (after O3), schedule")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="write module.relay, module.ll, module.opt.ll, graph.json, params.npz, "
                             "schedules.txt and map.json into DIR")
    parser.add_argument("--passes", metavar="A,B,C", help="run these passes instead of relay.build's")
    parser.add_argument("--print-after-all", action="store_true", help="print the module after every pass")
    parser.add_argument("--opt-level", type=_opt_level, default=3, metavar="N",
                        help="the PassContext opt_level, 0 to 4 as in TVM (3)")
    add_build_options(parser, "bind the parameters of @main named in FILE.npz as constants "
                              "(default: FILE's .npz beside it, if any)")
    add_byoc_options(parser)
    parser.add_argument("--force", action="store_true",
                        help="allow DIR's files to be replaced even when relaylens build did not write them")
    parser.set_defaults(run=run)


def _opt_level(text: str) -> int:
    """An argparse type: TVM's opt_level, 0 to 4."""
    if text.strip() not in ("0", "1", "2", "3", "4"):
        raise argparse.ArgumentTypeError(f"expected 0, 1, 2, 3 or 4 (as TVM), got {text!r}")
    return int(text)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.emit not in EMIT:
        raise UsageError(f"--emit {args.emit}: expected one of {', '.join(EMIT)}")
    passes = [p.strip() for p in args.passes.split(",") if p.strip()] if args.passes else None
    config = byoc_config(args, pass_config(args.config))
    weights = params_file(args.file, args)
    if args.output:
        plan = OutputPlan.of([args.file, weights.path], force=args.force)
        plan.add_build_dir(args.output, FILES, f"-o {args.output}")
        plan.check()
    name, text, bad_encoding = read_source(args.file)
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return EXIT_ERRORS
    partitioned, problems = directive_byoc(args, name, text, config)
    if problems:
        report(problems, name, err)
        return EXIT_ERRORS
    if partitioned and passes is None:  # as partition_for_<target> runs before relay.build
        passes = [*BYOC_PASSES, *relay_build_passes(args.opt_level)]
    params = weights.load(err)
    stop_after = "machine_code" if args.output else "passes" if args.emit == "relay" else "llvm"
    with terminal_progress(err) as progress:
        result = compile(text, name, params=params, params_origin=weights.path or "params", passes=passes,
                         opt_level=args.opt_level, config=config, stop_after=stop_after, progress=progress,
                         disk_cache=disk_cache(args),
                         schedule_texts=bool(args.output) or args.emit == "schedule")  # written: made in parallel
    report(result.diagnostics, name, err)
    if not result.snapshots:
        return EXIT_ERRORS
    unknown_inputs_note(result, err)
    lowered = result.lowered
    if args.output and lowered is not None and lowered.ok:
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
    return "\n".join(f.schedule_text for f in lowered.functions.values())
