"""`relaylens run`: run @main of a file on numpy inputs.

    relaylens run FILE [--interp | --check] [--input NAME=FILE.npy ...] [--params P.npz | --no-params]
                       [--config KEY=JSON ...] [--seed N] [-o OUT.npz] [--force] [--no-cache]

By default the file is built by driver.compile() (relay.build's passes, lowering, machine
code) and run compiled; `--interp` runs the reference interpreter instead, and `--check`
runs both and compares each output as compiler/numerics/compare.py does (NaN equals NaN at
the same place; a tolerance per dtype, float32 1e-5 + 1e-4 * max|reference|; the worst element's
index and both values), exit 1 when one differs, after bisecting the kernels to the first
whose outputs differ from the reference on the same inputs (run_numerics.py).  Any run
whose output holds NaN or an infinity that the inputs did not says which expression made
the first one (its line:col, layer and, compiled, its fused function).

Weights are bound as relay.build(mod, params) binds them (build_options.py): the arrays of
`--params` (or of FILE's `<stem>.npz`) named like parameters of @main become constants
before the passes, so the compiled executable takes only the remaining parameters, the
real inputs.  The interpreter (`--interp`, and `--check`'s reference) runs the module as
written, on the weights and the inputs together, so both see the same numbers.  An array
that names no parameter, or does not fit its parameter's type, is an error (exit 1); an
`--input` wins over an array of the same name (that parameter is then an input).

Inputs are matched to the remaining parameters by name (`%x` takes `--input x=x.npy`).
Each must fit the parameter's annotated type (dtype exactly, every known dimension).
Given no `--input` at all, every remaining parameter gets a random value drawn from
`--seed` by its role (random_data.py: a batch-norm variance or gamma uniform(0.5, 1.5), a
mean or bias small, a weight scaled by its fan-in, indices below the size of the axis they
index, other floats normal(0, 1), other integers in [0, 10), booleans fair coins), and a
note on stderr gives the seed, the rule, and each parameter with its role.  `--params` may
give some of them: the rest are drawn.

The result goes to stdout (`output: Tensor[...]` then the values), or with `-o` to an
.npz archive: a tensor result under the key `output`, a tuple's fields under
`output.0`, `output.1`, ... (nested: `output.1.0`).  A path ending in `.npy` gets a plain
.npy file, as `np.save` writes it, when the result is one tensor (a result of several
tensors is a usage error there: one .npy holds one array).  OUT.npz is checked by outputs.py before
anything runs: never an input, an existing file only with `--force`.  Arrays are read by
array_files.py (headers checked before allocating, native byte order).

Exit status as for every command: 1 for errors in the program (syntax, types, weights that
do not fit, an op without a lowering, or a run-time error shown at its span), 2 for usage
errors (a bad or missing input, a file that cannot be read or written).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

import numpy as np

from ..diagnostics import Diagnostic
from ..driver import compile
from ..interpreter import Interpreter, InterpreterError, Value, value_text
from ..numerics import find_nonfinite_compiled, find_nonfinite_interpreted
from .build_options import add_build_options, disk_cache, params_file, pass_config, terminal_progress
from .common import EXIT_ERRORS, EXIT_OK, UsageError, render, report
from .outputs import OutputPlan, write_files
from .program import given_shapes, load_program, random_inputs, static_shapes_note  # noqa: F401 -- random_inputs: tests draw as run does
from .run_numerics import check_outputs, warn_nonfinite


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "run",
        help="run @main on numpy inputs",
        description="Run @main of FILE on inputs matched to its parameters by name, its weights bound "
                    "first. With no --input at all, random inputs are drawn from --seed.",
    )
    parser.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    parser.add_argument("--input", dest="inputs", action="append", metavar="NAME=FILE.npy",
                        help="the value of parameter %%NAME (repeatable)")
    add_build_options(parser, "weights to bind, keyed by parameter name (default: FILE's .npz beside it, "
                              "if any)")
    parser.add_argument("--interp", action="store_true", help="use the reference interpreter")
    parser.add_argument("--check", action="store_true",
                        help="run compiled code and the interpreter, report the largest error per output")
    parser.add_argument("--seed", type=_natural, default=0, metavar="N",
                        help="seed of random inputs, and of the values of constants printed without their metadata (0)")
    parser.add_argument("-o", "--output", metavar="OUT.npz", help="write the outputs to an .npz archive")
    parser.add_argument("--force", action="store_true", help="allow OUT.npz to replace an existing file")
    parser.set_defaults(run=run)


def _natural(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.interp and args.check:
        raise UsageError("--interp and --check exclude each other (--check runs both)")
    config = pass_config(args.config)
    weights = params_file(args.file, args)
    if args.output is not None:
        specs = [spec.partition("=")[2] or None for spec in args.inputs or []]
        plan = OutputPlan.of([args.file, weights.path, *specs], force=args.force)
        plan.add(args.output, f"-o {args.output}")
        plan.check()
    program = load_program(args, weights, err)
    if program is None:
        return EXIT_ERRORS
    name, text, module, params, inputs, everything = program

    try:
        if args.interp:
            value = Interpreter(module).call("main", everything)
            warn_nonfinite(value, everything, lambda: find_nonfinite_interpreted(module, everything), name, err)
        else:
            with terminal_progress(err) as progress:
                built = compile(text, name, params=params, params_origin=weights.path or "params", config=config,
                                progress=progress, unknown_seed=args.seed, disk_cache=disk_cache(args),
                                input_shapes=given_shapes(module, params, inputs))
            report([d for d in built.diagnostics if d.is_error], name, err)
            if built.executable is None:
                static_shapes_note(module, params, inputs, built, err)
                return EXIT_ERRORS
            value = built.executable.run(*inputs)
            warn_nonfinite(value, everything, lambda: find_nonfinite_compiled(built, inputs), name, err)
            if args.check and not check_outputs(module, everything, value, built, inputs, name, err):
                return EXIT_ERRORS
    except InterpreterError as exc:
        print(render(exc.diagnostic("run"), name), file=err)
        return EXIT_ERRORS
    except MemoryError as exc:  # a program whose buffers do not fit: an error in the input
        print(render(Diagnostic(f"not enough memory to run @main ({exc})"), name), file=err)
        return EXIT_ERRORS
    outputs = flatten(value)
    if args.output is not None:
        write_outputs(args.output, outputs, value)
    else:
        print_outputs(outputs, out)
    return EXIT_OK


# --- outputs ----------------------------------------------------------------------------


def flatten(value: Value, name: str = "output") -> list[tuple[str, Value]]:
    """(key, value) pairs: a tensor as `output`, tuple fields as `output.0`, `output.1.0`...
    Anything else stays one entry (it cannot be saved, only shown)."""
    if isinstance(value, tuple):
        found: list[tuple[str, Value]] = []
        for i, field in enumerate(value):
            found.extend(flatten(field, f"{name}.{i}"))
        return found
    return [(name, value)]


def write_outputs(path: str, outputs: list[tuple[str, Value]], value: Value) -> None:
    bad = [(k, v) for k, v in outputs if not isinstance(v, np.ndarray)]
    if bad:
        key, v = bad[0]
        raise UsageError(f"cannot write the result to {path}: {key} is {value_text(v)}; only tensors "
                         f"and tuples of tensors can be saved (run without -o to see it)")
    arrays = dict(outputs)
    if Path(path).suffix.lower() == ".npy":
        if len(arrays) != 1:
            raise UsageError(f"cannot write the result to {path}: an .npy file holds one array and the result "
                             f"has {len(arrays)} ({', '.join(arrays)}); give -o a path ending in .npz")
        [array] = arrays.values()
        write_files({Path(path): lambda f: np.save(f, array, allow_pickle=False)})
        return
    write_files({Path(path): lambda f: np.savez(f, **arrays)})  # a file object: numpy adds no .npz suffix


def print_outputs(outputs: list[tuple[str, Value]], out: TextIO) -> None:
    if not outputs:
        print("output: ()", file=out)
    for key, v in outputs:
        if isinstance(v, np.ndarray):
            print(f"{key}: {value_text(v)}", file=out)
            text = str(v[()]) if v.ndim == 0 else np.array2string(v, threshold=1000, edgeitems=4)
            print(text, file=out)
        else:
            print(f"{key}: {value_text(v)}", file=out)
