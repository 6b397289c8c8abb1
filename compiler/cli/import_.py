"""`relaylens import`: an ONNX model in, Relay text and its params out.

    relaylens import MODEL.onnx [-o OUT.relay] [--params OUT.npz] [--shape NAME=D1,D2,...]
                                [--allow-unsupported] [--types] [--force]

The text carries a `span=` comment on every expression naming its ONNX node; the
initializers go to an .npz archive keyed by parameter name (default: beside OUT, with
the suffix .npz), where `relaylens run/build/explain OUT.relay` find and bind it.  Without
`-o` the text goes to stdout and `--params` is needed if the model has initializers.
Both outputs are checked together by outputs.py before either is written: never the
model or its external data, never one path for both, an existing file only with `--force`.

Exit status as for every command: 1 when the model cannot be imported (the message names
the node, its op and the opset, or the tensor whose data is bad or missing), 2 for usage
errors (a model file that cannot be read, an output refused or unwritable, a bad
`--shape`, no onnx package).  The frontend (compiler/frontend/onnx, through its public
names) and the onnx package load only when the command runs: onnx is an optional
dependency, and the frontend knows nothing of the CLI.
"""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path
from typing import BinaryIO, TextIO

import numpy as np

from ..printer import print_module
from .common import EXIT_ERRORS, EXIT_OK, UsageError
from .outputs import OutputPlan, write_files


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "import",
        help="import an ONNX model as Relay text (with its params)",
        description="Convert MODEL (ONNX) to Relay text whose every expression names the ONNX node "
                    "it came from (span= comments), and write its initializers to an .npz archive.",
    )
    parser.add_argument("model", metavar="MODEL", help="an .onnx file")
    parser.add_argument("-o", "--output", metavar="OUT.relay", help="write the text here instead of stdout")
    parser.add_argument("--params", metavar="OUT.npz",
                        help="where to write the initializers (default: OUT with the suffix .npz)")
    parser.add_argument("--shape", dest="shapes", action="append", metavar="NAME=D1,D2,...",
                        help="the shape of graph input NAME (repeatable); ? keeps a dimension unknown")
    parser.add_argument("--allow-unsupported", action="store_true",
                        help="import nodes that cannot be converted as calls of opaque parameters")
    parser.add_argument("--types", action="store_true", help="add ty= comments as well")
    parser.add_argument("--force", action="store_true", help="allow OUT.relay and OUT.npz to replace existing files")
    parser.set_defaults(run=run)


def parse_shape(spec: str) -> tuple[str, tuple[int | None, ...]]:
    """`x=1,3,224,224` → ("x", (1, 3, 224, 224)); `?` is an unknown dimension (None)."""
    name, sep, dims = spec.rpartition("=")
    if not sep or not name:
        raise UsageError(f"--shape expects NAME=D1,D2,..., got {spec!r}")
    found: list[int | None] = []
    for text in (d.strip() for d in dims.split(",")) if dims.strip() else ():
        if text == "?":
            found.append(None)
        elif text.isdigit():
            found.append(int(text))
        else:
            raise UsageError(f"--shape {spec}: {text!r} is not a dimension (a number or ?)")
    return name, tuple(found)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    shapes = dict(parse_shape(s) for s in args.shapes or [])
    to_file = args.output not in (None, "-")
    params_path = args.params or (str(Path(args.output).with_suffix(".npz")) if to_file else None)
    params_flag = f"--params {args.params}" if args.params else f"the default --params {params_path}"
    try:
        open(args.model, "rb").close()
    except OSError as exc:
        raise UsageError(f"cannot read {args.model}: {exc.strerror or exc}") from None
    try:  # imported here, deliberately: onnx is optional, needed by this command alone
        from ..frontend.onnx import OnnxImportError, import_onnx, load_model_with_files
    except ImportError as exc:
        raise UsageError(f"relaylens import needs the onnx package ({exc}); install it with "
                         f"pip install 'relaylens[onnx]'") from None

    try:
        model, data_files = load_model_with_files(args.model)
    except OnnxImportError as exc:
        print(f"{args.model}: error: {exc.message}", file=err)
        return EXIT_ERRORS
    plan = OutputPlan.of([args.model, *data_files], force=args.force)
    if to_file:
        plan.add(args.output, f"-o {args.output}")
    if args.params:
        plan.add(args.params, params_flag)
    plan.check()  # before the conversion, for what is known before it
    try:
        imported = import_onnx(model, shapes, allow_unsupported=args.allow_unsupported)
    except OnnxImportError as exc:
        print(f"{args.model}: error: {exc.message}", file=err)
        return EXIT_ERRORS
    if imported.params and params_path is None:
        raise UsageError(f"{args.model} has {len(imported.params)} initializers: give --params OUT.npz "
                         f"(or -o OUT.relay to write them beside it)")
    if imported.params and not args.params:
        plan.add(params_path, params_flag)
        plan.check()
    for node in imported.stand_ins:
        print(f"{args.model}: warning: node '{node}' is imported as an opaque call (--allow-unsupported)",
              file=err)
    text = print_module(imported.module, spans=True, types=args.types)
    if not text.endswith("\n"):
        text += "\n"
    files = {}
    if to_file:
        files[Path(args.output)] = lambda f: f.write(text.encode("utf-8"))
    if imported.params:
        files[Path(params_path)] = lambda f: _write_params(f, imported.params)
    write_files(files)  # all or nothing
    if not to_file:
        out.write(text)
    return EXIT_OK


def _write_params(f: BinaryIO, params: dict) -> None:
    """An .npz archive as `np.savez` writes one; written member by member because a
    parameter may be called `file` or `allow_pickle`, which `np.savez(**params)` takes."""
    with zipfile.ZipFile(f, "w") as archive:
        for name, array in params.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
