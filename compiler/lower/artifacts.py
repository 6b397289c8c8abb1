"""`relaylens build FILE -o DIR`: everything a build made, as files.

    DIR/module.relay     the module after the last pass (types and spans in comments)
    DIR/module.ll        LLVM IR of every fused function and the entry, unoptimised
    DIR/module.opt.ll    the same after O3 for this CPU
    DIR/graph.json       the execution plan in TVM's graph-executor format (dataflow @main)
    DIR/params.npz       the constants the plan passes to kernels (`p0`, `p1`, ... as in graph.json)
    DIR/schedules.txt    every fused function's schedule record, step by step
    DIR/map.json         fused function -> LLVM line ranges -> Relay spans (see `source_map`)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..ir.deferred import resolved
from ..ir.span import Span, node_layers
from ..printer import print_module
from .codegen.llvm_map import function_ranges, line_locations

# Every file `write_build` may write (graph.json and params.npz only for a planned @main).
FILES = ("module.relay", "module.ll", "module.opt.ll", "graph.json", "params.npz", "schedules.txt", "map.json")


def write_build(build, lowered, directory: str | Path) -> list[Path]:
    """Write the files above; returns their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put(name: str, text: str) -> None:
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)

    put("module.relay", print_module(build.module, spans=True, types=True) + "\n")
    llvm_ir, optimized = lowered.llvm_ir, lowered.optimized_ir
    put("module.ll", llvm_ir)
    put("module.opt.ll", optimized)
    put("schedules.txt", "\n".join(f.schedule_text for f in lowered.functions.values()))
    exe = lowered.executable
    if exe is not None and exe.plan is not None:
        put("graph.json", exe.plan.graph_json() + "\n")
        path = out / "params.npz"
        np.savez(path, **{f"p{k}": resolved(c) for k, c in enumerate(exe.plan.constants)})
        written.append(path)
    put("map.json", json.dumps(source_map(lowered, llvm_ir, optimized), indent=1) + "\n")
    return written


def source_map(lowered, llvm_ir: str, optimized: str) -> dict[str, Any]:
    """For each fused function: its Relay span(s) and frontend layers, its line range in
    module.ll and module.opt.ll, and for every instruction line the Relay line:col."""
    ranges, opt_ranges = function_ranges(llvm_ir), function_ranges(optimized)
    lines, opt_lines = line_locations(llvm_ir), line_locations(optimized)
    functions = []
    for name, fn in lowered.functions.items():
        entry: dict[str, Any] = {"name": name, "relay": _spans(fn.func.span), "layers": _layers(fn.func.span)}
        for key, rng, locs in (("llvm", ranges, lines), ("llvm_opt", opt_ranges, opt_lines)):
            first, last = _function_lines(name, rng)
            entry[key] = {"first_line": first, "last_line": last,
                          "lines": {str(n): list(locs[n]) for n in range(first, last + 1) if n in locs}}
        functions.append(entry)
    return {"source": lowered.source_name, "functions": functions}


def _function_lines(name: str, ranges: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """The lines of a kernel with its outlined parallel bodies (`name.par0`, ...)."""
    spans = [r for fn, r in ranges.items() if fn == name or fn.startswith(name + ".")]
    if not spans:
        return 0, -1
    return min(a for a, _ in spans), max(b for _, b in spans)


def _spans(span) -> list[dict[str, Any]]:
    if span is None:
        return []
    out = []
    for o in span.origins():
        if isinstance(o, Span):
            (line, col), (end_line, end_col) = o.source.location(o.start), o.source.location(o.end)
            out.append({"file": o.name, "line": line, "col": col, "end_line": end_line, "end_col": end_col})
    return out


def _layers(span) -> list[str]:
    if span is None:
        return []
    return node_layers(o.name for o in span.origins() if not isinstance(o, Span) and o.line == 0)
