"""Compile time beside TVM: the same ONNX file to machine code, RelayLens and TVM's Relax.

    python bench/tvm_compile.py [--models resnet50,mobilenet] [--runs 3] [--tvm-python PATH]

TVM removed Relay after v0.19, so the TVM that installs today (apache-tvm 0.27) compiles
ONNX through Relax: `relax.frontend.onnx.from_onnx` (weights bound), then `tvm.compile`
with its default pipeline for an `llvm` target naming this CPU (untuned: legalize, fuse,
default TIR schedules, LLVM).  It lives in a virtualenv of its own, named by --tvm-python
or TVM_PYTHON (default /tmp/tvmvenv/bin/python); without it the benchmark says how to make
one and stops with status 0:

    python3 -m venv /tmp/tvmvenv && /tmp/tvmvenv/bin/pip install apache-tvm onnx numpy

Each side runs in a fresh process per run (a cold build: nothing compiled before, the
persistent kernel cache off), timed from inside after its imports:
  * RelayLens: `import_onnx` and printing the Relay text (what `relaylens import` does),
    then `compile()` of that text with the weights bound (`relaylens build`'s driver: parse,
    check, the relay.build passes, lowering every fused function to machine code, several
    at once in forked workers: RELAYLENS_COMPILE_JOBS, default the CPUs);
  * TVM: `from_onnx`, then `tvm.compile`.
Median of --runs runs, the two sides alternating, with the load average before each run;
beside the ratio of the medians, the paired ratio: the median of each run's ours ÷ the
TVM build right after it (the VM's speed drifts within minutes, bench/run.py's pairs).
Beside the wall-clock seconds, the CPU seconds of the same span (user + system, of every
thread of the process and of the worker processes it forked and reaped): under load,
where wall-clock seconds stretch with whatever else runs, the CPU seconds move far less.
The models are bench/build.py's (seeded weights), written to a temporary ONNX file.
RelayLens's sources are byte-compiled first (`compileall`, into their `__pycache__`), as
pip leaves an installed package and as TVM's is: with PYTHONDONTWRITEBYTECODE set and an
editable install, the modules a build imports when first used (the passes, the lowering)
were compiled from source inside the timed span in every run, 0.19 CPU s of its serial part.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build  # noqa: E402  (bench/build.py: the models, the machine, the load)

INSTALL = "python3 -m venv /tmp/tvmvenv && /tmp/tvmvenv/bin/pip install apache-tvm onnx numpy"

CPU = """
import resource
def cpu_seconds():  # this process's threads and its children that ended (forked workers)
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
"""

OURS = CPU + """
import json, sys, time
import onnx
from relaylens.compiler.driver import compile
from relaylens.compiler.frontend.onnx import import_onnx
from relaylens.compiler.printer import print_module
model = onnx.load(sys.argv[1])
cpu_start, start = cpu_seconds(), time.perf_counter()
imported = import_onnx(model)
text = print_module(imported.module, spans=True, types=True)
imported_at = time.perf_counter()
result = compile(text, "model.relay", params=imported.params)
done = time.perf_counter()
assert result.ok and result.lowered.executable is not None, [d.render() for d in result.diagnostics]
print(json.dumps({"frontend": imported_at - start, "compile": done - imported_at, "cpu": cpu_seconds() - cpu_start,
                  "kernels": len(result.lowered.functions)}))
"""

THEIRS = CPU + """
import json, os, sys, time
import onnx, tvm
from tvm.relax.frontend.onnx import from_onnx
model = onnx.load(sys.argv[1])
target = tvm.target.Target({"kind": "llvm", "mcpu": sys.argv[2], "num-cores": os.cpu_count()})
cpu_start, start = cpu_seconds(), time.perf_counter()
mod = from_onnx(model, keep_params_in_input=False)
imported_at = time.perf_counter()
tvm.compile(mod, target=target)
done = time.perf_counter()
print(json.dumps({"frontend": imported_at - start, "compile": done - imported_at, "cpu": cpu_seconds() - cpu_start,
                  "version": tvm.__version__}))
"""


def total(run: dict) -> float:
    """Import and compile, seconds (one run's, or the medians')."""
    return run["frontend"] + run["compile"]


def run_side(python: str, script: str, *args: str) -> dict:
    env = {**os.environ, "RELAYLENS_NO_CACHE": "1"}
    done = subprocess.run([python, "-c", script, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"error: {python} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenet", help="comma-separated, from bench/build.py's models")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tvm-python", default=os.environ.get("TVM_PYTHON", "/tmp/tvmvenv/bin/python"))
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    probe = subprocess.run([args.tvm_python, "-c", "import tvm.relax"], capture_output=True, text=True) \
        if Path(args.tvm_python).is_file() else None
    if probe is None or probe.returncode != 0:
        print(f"skipped: no TVM at {args.tvm_python} (TVM_PYTHON or --tvm-python). To make one:\n  {INSTALL}")
        return 0
    build.require("onnx")
    import llvmlite.binding as llvm
    import onnx

    import relaylens.compiler

    cpu = llvm.get_host_cpu_name()
    for folder in relaylens.compiler.__path__:  # as an installed package has them (the docstring)
        compileall.compile_dir(folder, quiet=1)
    figures: dict[str, dict] = {}
    lines = ["| model | RelayLens frontend | RelayLens compile | RelayLens total | TVM from_onnx | TVM compile "
             "| TVM total | total ÷ TVM (medians; paired) | RelayLens CPU | TVM CPU | CPU ÷ TVM |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.models.split(","):
            path = Path(tmp) / f"{key}.onnx"
            onnx.save(build.ONNX_MODELS[key](), path)
            runs: dict[str, list[dict]] = {"ours": [], "tvm": []}
            for i in range(args.runs):
                print(f"{key} run {i + 1}: {build.load_note()}", file=sys.stderr)
                runs["ours"].append(run_side(sys.executable, OURS, str(path)))
                runs["tvm"].append(run_side(args.tvm_python, THEIRS, str(path), cpu))
            med = {side: {k: statistics.median(r[k] for r in rs) for k in ("frontend", "compile", "cpu")}
                   for side, rs in runs.items()}
            ours, tvm = (total(med[s]) for s in ("ours", "tvm"))
            paired = statistics.median(total(a) / total(b) for a, b in zip(runs["ours"], runs["tvm"]))
            figures[key] = {"median": med, "runs": runs}
            lines.append(f"| {build.LABELS[key]} | {med['ours']['frontend']:.2f} s | {med['ours']['compile']:.2f} s "
                         f"| {ours:.2f} s | {med['tvm']['frontend']:.2f} s | {med['tvm']['compile']:.2f} s "
                         f"| {tvm:.2f} s | {ours / tvm:.2f}x; {paired:.2f}x | {med['ours']['cpu']:.2f} s | {med['tvm']['cpu']:.2f} s "
                         f"| {med['ours']['cpu'] / med['tvm']['cpu']:.2f}x |")
    print("\n".join(lines))
    print(f"\nTVM {runs['tvm'][0]['version']} (Relax, untuned, target llvm -mcpu={cpu}); "
          f"RelayLens with RELAYLENS_COMPILE_JOBS={os.environ.get('RELAYLENS_COMPILE_JOBS', 'unset (the CPUs)')}; "
          f"median of {args.runs}; {build.load_note()}")
    print("\n".join(build.machine_lines(build.machine())))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
