"""`relaylens graph FILE [--after PASS] [-o OUT.json|OUT.html|OUT.svg] [--mapping MAP.json]
[--patterns FILE --target T[,U] [--target-ops A,B]]`: the dataflow graph of the module after
a pass (docs/graph.md).

Builds FILE through the pass pipeline (weights bound first, as `build` does:
build_options.py), in one driver.compile(stop_after="passes") call, and writes the graph
of the snapshot after PASS (compiler/graph/snapshots.py says how a pass is named; default:
after the whole pipeline).  With a BYOC pattern table and target (the options of `build`,
or the model's own `// relaylens: --patterns FILE --target T` line, docs/byoc.md) the four
BYOC passes run first, as `build` and the editor run them, so `--after PartitionGraph`
shows the partitioned module, each external function a group of its own:

    .json (or no -o: standard output)   Model Explorer's graph JSON, every global function
    .svg                                @main laid out in layers, groups as boxes
    .html                               the SVG in a page of its own: click, collapse, zoom

`--mapping MAP.json` also writes which nodes of the snapshot before PASS became which
nodes after it (Model Explorer's sync-navigation file, compiler/graph/mapping.py).
Drawing prints the layout's time on stderr.  Errors in FILE, or no function to draw: status 1; an unknown pass,
an unknown output kind, an output the rule of outputs.py refuses: status 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from ..diagnostics import Diagnostic
from ..driver import compile
from ..graph.explorer_json import graph_collection
from ..graph.html import graph_html
from ..graph.mapping import node_mapping, sync_navigation
from ..graph.model import module_graphs
from ..graph.snapshots import UnknownPass, snapshot_index
from ..graph.svg import graph_svg
from ..build import relay_build_passes
from ..transform.patterns.options import BYOC_PASSES
from .build_options import (add_build_options, add_byoc_options, byoc_config, directive_byoc, params_file, pass_config,
                            terminal_progress)
from .common import EXIT_ERRORS, EXIT_OK, STDIN, UsageError, read_source, report
from .outputs import OutputPlan, write_files

KINDS = (".json", ".svg", ".html")


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "graph",
        help="the dataflow graph after a pass, as Model Explorer JSON, SVG or HTML",
        description="Build FILE through the pass pipeline and write the graph of the module after PASS: "
                    "Model Explorer's graph JSON (.json, or stdout without -o), a layered drawing (.svg), "
                    "or a self-contained page (.html).",
    )
    parser.add_argument("file", metavar="FILE", help="a .relay file, or - for stdin")
    parser.add_argument("--after", metavar="PASS",
                        help="the pass (FuseOps; FoldConstant#2 for a second run; a snapshot number; input); "
                             "default: after the whole pipeline")
    parser.add_argument("-o", "--output", metavar="OUT", help="OUT.json, OUT.svg or OUT.html (default: JSON on stdout)")
    parser.add_argument("--mapping", metavar="MAP.json",
                        help="also write which nodes before PASS became which after it (Model Explorer's "
                             "sync-navigation file)")
    parser.add_argument("--force", action="store_true", help="allow the outputs to replace existing files")
    add_build_options(parser, "bind the parameters of @main named in FILE.npz as constants "
                              "(default: FILE's .npz beside it, if any)")
    add_byoc_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    kind = Path(args.output).suffix.lower() if args.output not in (None, STDIN) else ".json"
    if kind not in KINDS:
        raise UsageError(f"-o {args.output}: expected a file ending in {', '.join(KINDS)}")
    if args.mapping is not None and not args.after:
        raise UsageError("--mapping needs --after PASS (the pass whose before and after it maps)")
    if args.patterns is not None and args.target is None:
        raise UsageError("--patterns needs --target (the target whose regions the partitioned graph shows)")
    config = byoc_config(args, pass_config(args.config))
    weights = params_file(args.file, args)
    plan = OutputPlan.of([args.file, weights.path, args.patterns], force=args.force)
    if args.output not in (None, STDIN):
        plan.add(args.output, f"-o {args.output}")
    if args.mapping is not None:
        plan.add(args.mapping, f"--mapping {args.mapping}")
    plan.check()
    name, text, bad_encoding = read_source(args.file)
    if bad_encoding is not None:
        report([bad_encoding], name, err)
        return EXIT_ERRORS
    directed, problems = directive_byoc(args, name, text, config)
    if problems:
        report(problems, name, err)
        return EXIT_ERRORS
    # partitioned first, as partition_for_<target> runs before relay.build (build.py does the same)
    passes = [*BYOC_PASSES, *relay_build_passes()] if directed or args.target is not None else None
    params = weights.load(err)
    with terminal_progress(err) as progress:
        result = compile(text, name, params=params, params_origin=weights.path or "params", config=config,
                         passes=passes, stop_after="passes", progress=progress)
    report(result.diagnostics, name, err)
    if not result.ok or not result.snapshots:
        return EXIT_ERRORS
    try:
        index = snapshot_index([s.pass_name for s in result.snapshots], args.after)
    except UnknownPass as exc:
        raise UsageError(f"--after {args.after}: {exc}") from None
    snap = result.snapshots[index]
    graphs = module_graphs(snap.module)
    if not graphs:  # type definitions only (corpus 091), or only primitive functions
        report([Diagnostic("nothing to draw: the module defines no function (primitive functions are "
                           "drawn inside the functions that call them)")], name, err)
        return EXIT_ERRORS
    title = f"{name} after {snap.pass_name} (#{index})" if index else f"{name} (input)"
    if kind == ".json":
        body = json.dumps(graph_collection(graphs, title), indent=1) + "\n"
    else:
        main = graphs[0]
        body, seconds = graph_html(main, title, text) if kind == ".html" else graph_svg(main)
        print(f"relaylens: laid out {len(main.nodes)} nodes of @{main.id} in {seconds:.2f} s", file=err)
    writers = {}
    if args.output in (None, STDIN):
        out.write(body)
    else:
        writers[Path(args.output)] = _text(body)
    if args.mapping is not None:
        before = module_graphs(result.snapshots[max(index - 1, 0)].module)
        entries = [e for b, a in zip(before, graphs) if b.id == a.id for e in node_mapping(b, a)]
        writers[Path(args.mapping)] = _text(json.dumps(sync_navigation(entries), indent=1) + "\n")
    if writers:
        write_files(writers)
    return EXIT_OK


def _text(body: str):
    return lambda f: f.write(body.encode("utf-8"))
