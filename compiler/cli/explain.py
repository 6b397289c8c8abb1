"""`relaylens explain FILE:LINE:COL [--params P.npz | --no-params] [--config KEY=JSON ...]`:
what became of one expression.  `relaylens explain module.ll:LINE`: the way back, from a
line of LLVM IR (as `build -o` writes it) to the Relay line its `!dbg` location names, then
the same answer for the expression there.

Builds FILE as `build` does (weights bound first, build_options.py) down to LLVM IR, in one
driver.compile() call, and prints: the expression's frontend layers and type, each pass
that changed it, the fused function it ended in and, when that function lowered, its LLVM
function, its lines in module.ll (as `build -o` writes it), the instruction lines that
compute the expression and the frontend layers compiled into it.  A function that could
not be lowered says `not lowered:` and why; that is part of the answer, not an error of
the command (only errors before lowering are reported, and end in status 1).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TextIO

from ..driver import compile
from ..lower.artifacts import source_map
from ..lower.codegen.llvm_map import function_ranges, line_locations, source_file
from ..ir.expr import Var
from ..printer import print_type
from ..provenance import layouts_moved, preparation
from .build_options import add_build_options, disk_cache, params_file, pass_config, terminal_progress
from .common import EXIT_ERRORS, EXIT_OK, UsageError, read_source, report

_WHERE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+)$")
_IR_WHERE = re.compile(r"^(?P<file>.+\.ll):(?P<line>\d+)$")


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "explain",
        help="what the passes made of the expression at FILE:LINE:COL",
        description="Build FILE and print, for the expression at LINE:COL, each pass that changed it, "
                    "what it became, the fused function it ended in and its frontend layers; then lower "
                    "the build and print that function's LLVM function and its lines in module.ll "
                    "(as build -o DIR writes it).",
    )
    parser.add_argument("where", metavar="FILE:LINE:COL | MODULE.ll:LINE")
    add_build_options(parser, "bind the parameters of @main named in FILE.npz as constants "
                              "(default: FILE's .npz beside it, if any)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    ir = _IR_WHERE.match(args.where)
    if ir is not None:
        args.where = _relay_location(ir["file"], int(ir["line"]), out)
    m = _WHERE.match(args.where)
    if m is None:
        raise UsageError(f"expected FILE:LINE:COL or MODULE.ll:LINE, got {args.where!r}")
    config = pass_config(args.config)
    weights = params_file(m["file"], args)
    name, text, bad_encoding = read_source(m["file"])
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return EXIT_ERRORS
    line, col = int(m["line"]), int(m["col"])
    if line < 1 or col < 1:
        raise UsageError(f"{args.where}: LINE and COL start at 1")
    lines = text.split("\n")
    if line <= len(lines) and col > len(lines[line - 1]) + 1:
        raise UsageError(f"{args.where}: line {line} has {len(lines[line - 1])} characters")
    params = weights.load(err)
    with terminal_progress(err) as progress:
        result = compile(text, name, params=params, params_origin=weights.path or "params", config=config,
                         stop_after="llvm", progress=progress, disk_cache=disk_cache(args))
    lowering = result.lowered.diagnostics if result.lowered is not None else []
    report([d for d in result.diagnostics if d.is_error and not any(d is e for e in lowering)], name, err)
    if not result.snapshots:
        return EXIT_ERRORS
    prov = result.provenance
    key = None
    if prov.source is not None:
        start, end = prov.source.offset(line, 1), prov.source.offset(line + 1, 1)
        key = prov.key_on_line(prov.source.offset(line, col), start, end if end > start else len(prov.source.text))
    if key is None:
        raise UsageError(f"no expression at {name}:{line}:{col}")
    out.write(explain_text(prov, key, name, result.lowered))
    return EXIT_OK


def _relay_location(ir_path: str, ir_line: int, out: TextIO) -> str:
    """FILE:LINE:COL of the Relay expression that LLVM IR line `ir_line` of `ir_path`
    computes (its `!dbg` location; for a line without one, the nearest located line above
    it in the same function), after printing the step taken."""
    name, text, bad_encoding = read_source(ir_path)
    if bad_encoding is not None:
        raise UsageError(f"cannot read {ir_path}: not UTF-8 text")
    located = line_locations(text)
    function = next((f for f, (first, last) in function_ranges(text).items() if first <= ir_line <= last), None)
    if function is None:
        raise UsageError(f"{name}:{ir_line} is not inside a function")
    first, _ = function_ranges(text)[function]
    at = next((n for n in range(ir_line, first - 1, -1) if n in located), None)
    if at is None:
        raise UsageError(f"{name}:{ir_line}: no Relay location at or above this line in @{function}")
    found = source_file(text)
    if found is None:
        raise UsageError(f"{name} names no source file in its debug information")
    relay = _find_source(Path(ir_path), *found)
    line, col = located[at]
    via = "" if at == ir_line else f" (line {at}, the nearest above with a location)"
    out.write(f"{name}:{ir_line} in @{function}{via} -> {relay}:{line}:{col}\n")
    return f"{relay}:{line}:{col}"


def _find_source(ir_path: Path, filename: str, directory: str) -> str:
    """The Relay file a DIFile names: as written (from its directory), else beside the IR
    file (a build directory moved, or built from another folder)."""
    for candidate in (Path(directory) / filename, ir_path.parent / filename, ir_path.parent / Path(filename).name):
        if candidate.is_file():
            return str(candidate)
    raise UsageError(f"{ir_path} was built from {filename} (in {directory}), which is not there; "
                     "explain FILE:LINE:COL on the Relay file instead")


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
        lines.append(f"  type: {print_type(node.ty)}")
    if prov.parameter(key) is not None:
        return "\n".join(lines + _parameter_lines(prov, key, lowered)) + "\n"
    if isinstance(node, Var):  # a binder: no pass traces it; a let's value speaks for it
        value = prov.let_value(key)
        if not source.text.startswith("%", key[0]):  # a binder of no name: `ref_write(%r, 1f); ...`
            lines.append("  not traced through the passes (calls, tuples, projections, constants and functions are)")
            return "\n".join(lines) + "\n"
        if value is None or isinstance(prov.source_node(value), Var):  # `let %a = %b`: no further
            lines.append("  a variable: no pass traces a binder; explain an expression that reads it")
            return "\n".join(lines) + "\n"
        line, col = source.location(value[0])
        lines.append(f"  bound by let to the expression at {name}:{line}:{col}, which follows")
        return "\n".join(lines) + "\n" + explain_text(prov, value, name, lowered)
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
    reason = prov.fusion_reason(key)
    if fused is not None:
        lines.append(f"  fused into: {fused[0]} ({prov.display_name(fused[1])})")
    if reason:
        lines.append(f"  why: {reason}")
    movers = prov.movers(key)
    if movers:
        hint = " (a weight bound from an .npz is put in its layout once, at build time)" if any(m for m, _, _ in movers) else ""
        lines.append(f"  at every run, beside it{hint}:")
        lines += [f"    {mover}: {prov.display_name(func)}{' of ' + moved if moved else ''}{layouts_moved(func)}"
                  for moved, mover, func in movers]
    if fused is not None and lowered is not None:
        lines += _llvm_lines(lowered, fused[0], (start_line, start_col))
    return "\n".join(lines) + "\n"


def _parameter_lines(prov, key, lowered) -> list[str]:
    """A parameter stays one through every pass: what it is, the kernels that read it at
    every run, each with the kernels that put it in the shape or layout it reads it in
    (Provenance.readers) and its LLVM function."""
    lines = [f"  parameter of {prov.parameter(key)}: no pass removes or rewrites it; each run passes it in"]
    readers = prov.readers(key)
    if not readers:
        lines.append(f"  read by no kernel: {prov.parameter(key)} itself uses it (a condition, a call, a tuple, its result)")
    for name, func, via in readers:
        lines.append(f"  read at every run by: {name} ({prov.display_name(func)})")
        lines += [f"    after {v}: {preparation(f)}" for v, f in via]
        if lowered is not None:
            lines += ["  " + line for line in _llvm_lines(lowered, name, (0, 0)) if "frontend layers" not in line]
    if any(via for _, _, via in readers):
        lines.append("  (a weight bound from an .npz is a constant instead: what prepares it runs once, at build time)")
    return lines


def _llvm_lines(lowered, fused_name: str, where: tuple[int, int]) -> list[str]:
    """The fused function's LLVM function and its lines in module.ll (the file `relaylens
    build FILE -o DIR` writes: the same lowering, so the same lines), how many of its
    instruction lines carry the expression's location `where` (Relay line, column), and
    the frontend layers compiled into it; or why it was not lowered."""
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
