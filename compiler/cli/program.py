"""What `run` and `profile` both do before anything runs: read FILE, fill the constants
printed without their metadata, bind the weights, and match or draw the inputs.

    program = load_program(args, weights, err)     # None after reporting errors (exit 1)
    name, text, module, params, inputs, everything = program

`args` needs `file`, `inputs` (the `--input NAME=FILE.npy` list) and `seed`.  The weights
(`params`) are bound as relay.build(mod, params) binds them; `inputs` are the arguments of
the compiled @main (the parameters left), `everything` those of @main as written (for the
interpreter).  A missing or ill-fitting input raises `UsageError`; weights that do not fit
@main, and a function parameter (an ONNX node imported with --allow-unsupported), are
errors in the input.  Random inputs come from compiler/random_inputs.py.
"""

from __future__ import annotations

import argparse
from typing import Sequence, TextIO

import numpy as np

from ..check import check_text
from ..diagnostics import Diagnostic
from ..interpreter import Value, value_text
from ..interpreter.values import type_mismatch, type_text
from ..ir.expr import Function, Var
from ..ir.types import FuncType, TensorType, TupleType
from ..parser import parse
from ..parser.result import is_unknown_constants_warning
from ..random_data import RULE, find_roles
from ..random_inputs import InputError, draw_inputs
from ..transform.bind_params import bind_params_by_name
from ..transform.specialize_inputs import SOURCE as SHAPES_SOURCE
from ..unknown_values import fill_unknown_constants
from .array_files import load_array
from .build_options import ParamsFile
from .common import PROG, UsageError, read_source, render, report


def load_program(args: argparse.Namespace, weights: ParamsFile, err: TextIO):
    """(name, text, module, weights to bind, arguments of the compiled @main, arguments of
    @main as written) for `args.file`, its weights and `--input`s (or random inputs from
    `args.seed`); None after reporting errors in the input.  `run` and `profile` share it."""
    name, text, bad_encoding = read_source(args.file)
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return None
    result = parse(text, name)
    if any(is_unknown_constants_warning(d) for d in result.diagnostics):  # printed without its metadata
        result = check_text(text, name)  # their types, from ty= comments or their use
    report(result.diagnostics, name, err)
    if any(d.is_error for d in result.diagnostics):
        return None
    module, filled = fill_unknown_constants(result.module, args.seed)  # the same values the build draws
    report(filled, name, err)
    if any(d.is_error for d in filled):
        return None
    if "main" not in module:
        print(render(Diagnostic("there is no @main to run"), name), file=err)
        return None
    arguments = bind_and_match(module, name, args, weights, err)
    if arguments is None:
        return None
    return (name, text, module, *arguments)



def bind_and_match(module, name: str, args: argparse.Namespace, weights: ParamsFile, err: TextIO):
    """(the weights to bind, the arguments of the compiled @main, the arguments of @main as
    written) from the weights archive and `--input`s, or random inputs; None after reporting
    weights that do not fit @main (bind_params_by_name's diagnostics, exit 1)."""
    main = module["main"]
    given = load_inputs(main, args.inputs or [])
    params = weights.read().without(given)  # an --input wins
    weights.announce(len(params), err)
    _, errors = bind_params_by_name(module, params, origin=weights.path or "params")  # as the build will
    if errors:
        report(errors, name, err)
        return None
    free = [p for p in main.params if p.name not in params]
    opaque = [p for p in free if isinstance(p.type_annotation, FuncType)]
    if opaque:  # not an input a user forgot: nothing can give it
        report([Diagnostic(f"%{p.name} is a function parameter ({type_text(p.type_annotation)}), which no "
                           "--input or weights can give: @main cannot run (an ONNX node imported with "
                           "--allow-unsupported stands in this way until its op is supported)", p.span)
                for p in opaque], name, err)
        return None
    if not args.inputs:
        inputs, notes = random_inputs(free, args.seed, find_roles(module))
        if notes:  # nothing left to give: no note
            print(f"{PROG}: note: no inputs given; using random inputs (seed {args.seed}):", file=err)
            print(f"  {RULE}", file=err)
            for line in notes:
                print(f"  {line}", file=err)
    else:
        inputs = match_inputs(free, given)
    supplied = iter(inputs)
    return params, inputs, [params[p.name] if p.name in params else next(supplied) for p in main.params]


def given_shapes(module, params: dict, inputs: Sequence) -> dict[str, tuple[int, ...]]:
    """The shape of the argument of each input of @main whose type has `?` dimensions (an
    ONNX model exported with a dynamic batch): the build takes these extents
    (driver.compile's `input_shapes`), checked to fit @main together."""
    free = [p for p in module["main"].params if p.name not in params]
    return {p.name: tuple(value.shape) for p, value in zip(free, inputs)
            if isinstance(p.type_annotation, TensorType) and not p.type_annotation.is_static
            and isinstance(value, np.ndarray)}


def static_shapes_note(module, params: dict, inputs: Sequence, built, err: TextIO) -> None:
    """After a compiled build that failed, though it took the shape of each input with `?`
    dimensions from its argument (`given_shapes`): when lowering still met `?` dimensions
    (shapes computed at run time), what to do, once per such input (lowering wrote an
    error at every kernel it reaches).  Nothing when the shapes did not fit @main (that
    error says it all)."""
    if any(d.source == SHAPES_SOURCE for d in built.diagnostics):
        return
    for name, shape in given_shapes(module, params, inputs).items():
        ty = next(p.type_annotation for p in module["main"].params if p.name == name)
        dims = ",".join(str(d) for d in shape)
        print(f"{PROG}: note: %{name} is {type_text(ty)}: the build took its --input's shape ({dims}), and "
              f"still met dimensions known only at run time; re-import the model with --shape {name}={dims} "
              f"(the importer then fixes the shapes computed from it), or run it with --interp", file=err)


def unknown_inputs_note(built, err: TextIO) -> None:
    """After `relaylens build` met `?` dimensions in lowering (an error at every kernel
    they reach), once per input of @main whose type has them (an ONNX model exported
    with a dynamic batch): how to fix them, as `static_shapes_note` says for `run`."""
    if not built.snapshots or not any(d.is_error and d.message.endswith("lowering needs static shapes")
                                      for d in built.diagnostics):
        return
    for p in built.snapshots[0].module["main"].params:
        ty = p.type_annotation
        if isinstance(ty, TensorType) and not ty.is_static:
            dims = ",".join(str(d) if isinstance(d, int) else "1" for d in ty.shape)
            print(f"{PROG}: note: %{p.name} is {type_text(ty)}: compiled code needs static shapes; re-import "
                  f"the model with --shape {p.name}={dims} (a number for each ?), or give an array of the "
                  f"shape you want to `relaylens run` or `profile` with --input {p.name}=FILE.npy", file=err)


def _param_list(main: Function) -> str:
    return ", ".join("%" + p.name for p in main.params) or "none"


def load_inputs(main: Function, specs: list[str]) -> dict[str, tuple[np.ndarray, str]]:
    """name → (array, the file it came from), one per `--input NAME=FILE.npy`."""
    names = {p.name for p in main.params}
    given: dict[str, tuple[np.ndarray, str]] = {}
    for spec in specs:
        key, sep, path = spec.partition("=")
        key = key.strip().lstrip("%")
        if not sep or not key or not path:
            raise UsageError(f"--input expects NAME=FILE.npy, got {spec!r}")
        key = _as_printed(key, names)
        if key not in names:
            raise UsageError(f"--input {spec}: @main has no parameter %{key} "
                             f"(its parameters: {_param_list(main)})")
        given[key] = (load_array(path, f"--input {key}={path}"), path)
    return given


def given_names(main: Function, specs: list[str]) -> set[str]:
    """The parameters of `main` that `--input NAME=FILE.npy` specs (checked by
    `load_inputs`) name, as `load_inputs` reads them."""
    names = {p.name for p in main.params}
    return {_as_printed(spec.partition("=")[0].strip().lstrip("%"), names) for spec in specs}


def _as_printed(key: str, names: set[str]) -> str:
    """The parameter `key` names: itself, or for a name that does not start with a letter
    or `_` (an ONNX input `0`, as PyTorch 1.x named them), the `v0` that the importer and
    the printer make of it; `--input 0=x.npy` was refused with '@main has no parameter %0'."""
    if key in names or (key[0].isascii() and (key[0].isalpha() or key[0] == "_")):
        return key
    return "v" + key if "v" + key in names else key


def match_inputs(params: Sequence[Var], given: dict[str, tuple[np.ndarray, str]]) -> list[np.ndarray]:
    """The arguments for `params` (@main's parameters not bound), in order; a missing or
    ill-fitting input is a UsageError."""
    missing = [p for p in params if p.name not in given]
    if missing:
        lines = [f"  %{p.name}: {_type_of(p)}" for p in missing]
        raise UsageError(
            f"missing input{'s' if len(missing) != 1 else ''} for @main:\n" + "\n".join(lines) + "\n"
            f"pass --input NAME=FILE.npy (or bind it with --params FILE.npz); with no --input at all, "
            f"random inputs are used")
    arrays = []
    for param in params:
        array, origin = given[param.name]
        ty = param.type_annotation
        if isinstance(ty, TupleType):
            raise UsageError(f"input %{param.name} has type {type_text(ty)}: only tensor parameters "
                             f"can be given from .npy files")
        if type_mismatch(array, ty) is not None:
            raise UsageError(f"input %{param.name} from {origin} is {value_text(array)}, but @main "
                             f"expects %{param.name}: {type_text(ty)}")
        arrays.append(array)
    return arrays


def _type_of(param: Var) -> str:
    return type_text(param.type_annotation) if param.type_annotation is not None else "(no type annotation)"


def random_inputs(params: Sequence[Var], seed: int,
                  roles: dict | None = None) -> tuple[list[Value], list[str]]:
    """A random value per parameter of `params`, drawn in order by its role in `roles`
    (random_inputs.py, random_data.py); and a line per parameter.  One that cannot be drawn
    is a UsageError."""
    try:
        return draw_inputs(params, seed, roles)
    except InputError as err:
        hint = f"; pass --input {err.param}=FILE.npy" if err.given else ""
        raise UsageError(f"{err}{hint}") from None
