"""`relaylens profile`: where the time of a compiled run goes, per kernel, Relay line and layer.

    relaylens profile FILE [--params P.npz | --no-params] [--input NAME=FILE.npy ...] [--seed N]
                           [--runs N] [--threads N] [--peak GFLOPS] [-o TRACE.json] [--force]
                           [--compare MODEL.onnx [--compare-by layer|kernel]]

FILE is built by driver.compile() and run as `relaylens run` runs it (the same weights,
inputs and random inputs: run.py's `load_program`), once to warm up and then `--runs`
times with every kernel call timed inside the compiled entry (compiler/profile/).  The
table goes to stdout, slowest kernel first; `-o` writes a Chrome trace (Perfetto,
chrome://tracing) with one slice per kernel call; `--compare` runs onnxruntime's own
profiler on MODEL.onnx with the same inputs and prints, per ONNX layer, our time beside
onnxruntime's (compiler/profile/compare.py: its graph optimisations off, so that its nodes
keep the file's names).  `--compare-by kernel` instead runs onnxruntime optimised, as a
user runs it, and prints each of our kernels beside the node(s) of onnxruntime's optimised
graph that compute the same ONNX nodes (compiler/profile/compare_optimized.py).

Generated code runs only on this command (and run), never on open.  Exit status as for
every command: 1 for errors in the program, 2 for usage errors (a bad input, an unwritable
trace, a model onnxruntime cannot load or run on these inputs).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from ..diagnostics import Diagnostic
from ..driver import compile
from ..interpreter import InterpreterError
from ..lower.runtime.jit import JIT, default_num_threads
from ..profile.compare import CompareError, RunRefused, compare_table, named_inputs, onnxruntime_profile
from ..profile.compare_optimized import kernel_table, optimized_profile
from ..profile.peak import given_peak, machine_peak
from ..profile.profiler import profile
from ..profile.table import profile_table
from ..profile.trace import chrome_trace
from .build_options import add_build_options, disk_cache, params_file, pass_config, terminal_progress
from .common import EXIT_ERRORS, EXIT_OK, UsageError, render, report
from .outputs import OutputPlan, write_files
from .program import given_names, given_shapes, load_program, static_shapes_note

DEFAULT_RUNS = 10


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "profile",
        help="time every kernel of a compiled run, mapped to Relay lines and ONNX layers",
        description="Build FILE, run it once to warm up and then --runs times with every fused-function "
                    "call timed inside the compiled entry, and print the kernels slowest first with the "
                    "Relay lines and ONNX layers compiled into each.",
    )
    parser.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    parser.add_argument("--input", dest="inputs", action="append", metavar="NAME=FILE.npy",
                        help="the value of parameter %%NAME (repeatable); none: random inputs from --seed")
    add_build_options(parser, "weights to bind, keyed by parameter name (default: FILE's .npz beside it, "
                              "if any)")
    parser.add_argument("--seed", type=_count(0), default=0, metavar="N", help="seed of random inputs (0)")
    parser.add_argument("--runs", type=_count(1), default=DEFAULT_RUNS, metavar="N",
                        help=f"timed runs after the warm-up (default {DEFAULT_RUNS})")
    parser.add_argument("--threads", type=_count(1), default=None, metavar="N",
                        help="threads of the parallel loops (default RELAYLENS_NUM_THREADS, else the CPUs)")
    parser.add_argument("--peak", type=_positive, default=None, metavar="GFLOPS",
                        help="the machine's peak instead of the estimate from its vector width and clock")
    parser.add_argument("-o", "--output", metavar="TRACE.json", help="write a Chrome trace (Perfetto)")
    parser.add_argument("--force", action="store_true", help="allow TRACE.json to replace an existing file")
    parser.add_argument("--compare", metavar="MODEL.onnx",
                        help="also profile MODEL.onnx with onnxruntime and compare per ONNX layer")
    parser.add_argument("--compare-by", choices=("layer", "kernel"), default="layer",
                        help="layer: per ONNX layer, onnxruntime unoptimised (default); kernel: per kernel of "
                             "ours, beside onnxruntime's optimised nodes that compute the same layers")
    parser.set_defaults(run=run)


def _count(least: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"expected an integer >= {least}, got {text!r}")
        return value
    return parse


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    config = pass_config(args.config)
    weights = params_file(args.file, args)
    plan = None
    if args.output is not None:
        specs = [spec.partition("=")[2] or None for spec in args.inputs or []]
        plan = OutputPlan.of([args.file, weights.path, args.compare, *specs], force=args.force)
        plan.add(args.output, f"-o {args.output}")
        plan.check()
    if args.compare is not None and not Path(args.compare).is_file():
        raise UsageError(f"--compare {args.compare}: no such file")
    threads = args.threads or default_num_threads()
    program = load_program(args, weights, err)
    if program is None:
        return EXIT_ERRORS
    name, text, module, params, inputs, _everything = program
    with terminal_progress(err) as progress:
        built = compile(text, name, params=params, params_origin=weights.path or "params", config=config,
                        progress=progress, unknown_seed=args.seed, jit=JIT(threads), disk_cache=disk_cache(args),
                        input_shapes=given_shapes(module, params, inputs))
    report([d for d in built.diagnostics if d.is_error], name, err)
    if built.executable is None:
        static_shapes_note(module, params, inputs, built, err)
        return EXIT_ERRORS
    peak = given_peak(args.peak) if args.peak else machine_peak(threads)
    try:
        prof = profile(built, inputs, runs=args.runs, peak=peak, threads=threads)
    except InterpreterError as exc:
        print(render(exc.diagnostic("run"), name), file=err)
        return EXIT_ERRORS
    except MemoryError as exc:
        print(render(Diagnostic(f"not enough memory to run @main ({exc})"), name), file=err)
        return EXIT_ERRORS
    print(profile_table(prof), file=out)
    if args.compare is not None:
        by_kernel = args.compare_by == "kernel"
        try:
            theirs = (optimized_profile if by_kernel else onnxruntime_profile)(
                args.compare, named_inputs(built, inputs), runs=args.runs, threads=threads)
        except RunRefused as exc:
            given = given_names(module["main"], args.inputs or [])
            drawn = [n for n in named_inputs(built, inputs) if n not in given]
            hint = (f"; {', '.join(drawn)} {'was' if len(drawn) == 1 else 'were'} drawn at random (--seed "
                    f"{args.seed}): give real values with --input NAME=FILE.npy") if drawn else ""
            raise UsageError(f"{exc}{hint}") from None
        except CompareError as exc:
            raise UsageError(str(exc)) from None
        print("", file=out)
        print(kernel_table(prof, theirs) if by_kernel else compare_table(prof, theirs),
              file=out)
    if args.output is not None:
        document = json.dumps(chrome_trace(prof), indent=None).encode()
        write_files({Path(args.output): lambda f: f.write(document)})
    return EXIT_OK

