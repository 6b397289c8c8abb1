"""What the kernel cache on disk saves: a cold build against a build of a model built before.

    python bench/cache.py [--models resnet50,mobilenet,gpt2] [--json out.json]

The models are bench/build.py's (ONNX graphs written with onnx.helper, imported and
printed as typed Relay text).  Per model, each build with a fresh `JIT` and
`LoweringCache` (nothing in memory), one run each:
  * cold: an empty cache directory (the build writes every kernel into it);
  * warm, this process: the same text, the directory the cold build filled;
  * warm, another process: a new Python process builds the same text (what the check and
    passes made is read from the cache too: compiler/passes_cache.py), timed inside the
    process as the others are, and as wall time with the interpreter's start;
  * edited, another process: the text with a line inserted above the first binding
    (every kernel moves: debug information re-pointed; the check and passes run again);
  * the editor's build (to optimised LLVM IR, no machine code), cold and warm;
  * with the weights bound, as `relaylens run` binds the .npz an import wrote beside the
    text (written before the other builds; read as the CLI reads it, as weights whose
    digests are memoised under the archive's stat: compiler/weights_digests.py): cold, and
    another process building the same text with the same weights (the kept build brings
    what the passes made of the weights: compiler/passes_cache.py).
Times are of `driver.compile()`, split into check + passes and lowering, each after a
collection of what the builds before it left in cycles (the editor's build worker collects
after every build: server/slow/worker.py; uncollected, ResNet-50's builds left GPT-2's
warm build in the same process a collection of 60,000 objects, 184-277 ms).  The cache
directory is temporary and removed at the end.  Run on an idle machine: the load average
is printed first, with NOT IDLE when something else runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build import LABELS, LINE_ABOVE, MODELS, WARM_UP, load_model, load_note, machine, machine_lines, ms  # noqa: E402


def timed_build(text: str, name: str, directory: str | None, stop_after: str = "machine_code",
                params_file: str | None = None) -> dict:
    """One `compile()` with nothing in memory, the weights of `params_file` (an .npz, read
    before the clock starts as `relaylens run` reads it: `archive_weights`) bound; seconds
    (total, check + passes, lowering) and cache counts."""
    from relaylens.compiler.driver import compile
    from relaylens.compiler.lower.disk_cache import DiskCache
    from relaylens.compiler.lower.pipeline import LoweringCache
    from relaylens.compiler.lower.runtime.jit import JIT
    from relaylens.compiler.weights_digests import archive_weights

    disk = DiskCache(directory) if directory is not None else None
    params = archive_weights(params_file, lambda path: dict(np.load(path))) if params_file else None
    jit, marks = JIT(), {}
    gc.collect()  # what the builds before left in cycles, as the editor's worker collects after each build
    start = time.perf_counter()
    result = compile(text, name, params=params, cache=LoweringCache(), jit=jit, disk_cache=disk,
                     stop_after=stop_after, progress=lambda step: marks.setdefault(step.stage, time.perf_counter()))
    done = time.perf_counter()
    if not result.ok or result.lowered is None:
        raise SystemExit(f"error: {name} does not build")
    lowering = marks.get("llvm", done)
    return {"total": done - start, "passes": lowering - start, "lowering": done - lowering,
            "hits": disk.hits if disk else 0, "misses": disk.misses if disk else 0,
            "functions": len(result.lowered.functions)}


def in_another_process(text: str, name: str, directory: str, params_file: str | None = None) -> dict:
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        from cache import timed_build
        print(json.dumps(timed_build(sys.stdin.read(), {name!r}, {directory!r}, params_file={params_file!r})))
    """)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script], input=text, capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["wall"] = time.perf_counter() - start
    return figures


def measure(key: str) -> dict:
    model = load_model(key)
    name = f"{key}.relay"
    imported = tempfile.TemporaryDirectory(prefix="relaylens-bench-weights-")
    weights = str(Path(imported.name) / "weights.npz")  # as an import wrote it, before any build
    np.savez(weights, **model.params)
    with tempfile.TemporaryDirectory(prefix="relaylens-bench-cache-") as directory:
        cold = timed_build(model.text, name, directory)
        warm = timed_build(model.text, name, directory)
        other = in_another_process(model.text, name, directory)
        edited = in_another_process(LINE_ABOVE.apply(model.text), name, directory)
    with tempfile.TemporaryDirectory(prefix="relaylens-bench-cache-") as directory:
        editor_cold = timed_build(model.text, name, directory, stop_after="llvm")
        editor_warm = timed_build(model.text, name, directory, stop_after="llvm")
        size = sum(p.stat().st_size for p in Path(directory).iterdir())
    with imported, tempfile.TemporaryDirectory(prefix="relaylens-bench-cache-") as directory:
        bound_cold = timed_build(model.text, name, directory, params_file=weights)
        bound_other = in_another_process(model.text, name, directory, params_file=weights)
    return {"cold": cold, "warm": warm, "other process": other, "edited, other process": edited,
            "editor cold": editor_cold, "editor warm": editor_warm, "editor entries bytes": size,
            "weights bound, cold": bound_cold, "weights bound, other process": bound_other}


def table(figures: dict[str, dict]) -> list[str]:
    out = ["Build with nothing in memory, ms (one run each):", "",
           "| model | build | hits / misses | check + passes | lowering | total | of cold |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for key, f in figures.items():
        for label, cold_label in (("cold", "cold"), ("warm", "cold"), ("other process", "cold"),
                                  ("edited, other process", "cold"), ("editor cold", "editor cold"), ("editor warm", "editor cold"),
                                  ("weights bound, cold", "weights bound, cold"),
                                  ("weights bound, other process", "weights bound, cold")):
            b = f[label]
            share = b["total"] / f[cold_label]["total"]
            wall = f" (process: {ms(b['wall'])})" if "wall" in b else ""
            out.append(f"| {LABELS[key]} | {label} | {b['hits']} / {b['misses']} | {ms(b['passes'])} | "
                       f"{ms(b['lowering'])} | {ms(b['total'])}{wall} | {share:.0%} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {', '.join(MODELS)}")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.models.split(",") if k.strip()]
    if not keys or any(k not in MODELS for k in keys):
        ap.error(f"choose models from {', '.join(MODELS)}")
    load = load_note()
    print(f"Before the run: {load}", file=sys.stderr)
    timed_build(WARM_UP, "warm_up.relay", None)  # grammar, LLVM targets, libgomp: once per process
    figures = {}
    for key in keys:
        figures[key] = measure(key)
        print(f"  measured {LABELS[key]}", file=sys.stderr, flush=True)
    print("\n".join(table(figures)))
    print(f"\nMachine ({load} before the run):\n" + "\n".join(machine_lines(machine())))
    if args.json:
        args.json.write_text(json.dumps({"bench": "cache", "load": load, "models": figures}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
