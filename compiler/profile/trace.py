"""A profile as a Chrome trace (Trace Event Format: Perfetto, chrome://tracing).

    json.dump(chrome_trace(prof), f)

An object `{"displayTimeUnit": "ms", "traceEvents": [...], "otherData": {...}}`:

- `ph: "M"` events naming the process (the source) and its one thread ("kernels");
- per run, one complete event (`ph: "X"`, cat "run") from the first kernel's start to the
  last one's end, and inside it one complete event per kernel call (cat "kernel"), named
  by the fused function's display name, with `args`: the kernel's symbol, the run, its
  Relay lines and layers (each with its share of the call's time, in %), GFLOP and MB.

`ts` and `dur` are microseconds (floats: the clock is read in ns), `ts` counted from the
first call of the first counted run.  Kernel calls run one after the other on the
calling thread (their parallel loops fork and join inside), so the slices nest properly.
tests/schemas/chrome_trace.schema.json is the JSON schema of exactly what this writes.
"""

from __future__ import annotations

from typing import Any

from .profiler import Profile

PID, TID = 1, 1


def chrome_trace(prof: Profile) -> dict[str, Any]:
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": PID, "tid": TID, "name": "process_name", "args": {"name": f"relaylens {prof.name}"}},
        {"ph": "M", "pid": PID, "tid": TID, "name": "thread_name", "args": {"name": "kernels"}},
    ]
    if not prof.events:
        return _document(prof, events)
    origin = min(start for _, _, start, _ in prof.events)
    runs: dict[int, list[int]] = {}
    for run, site, start, end in prof.events:
        bounds = runs.setdefault(run, [start, end])
        bounds[0], bounds[1] = min(bounds[0], start), max(bounds[1], end)
        events.append({
            "ph": "X", "pid": PID, "tid": TID, "cat": "kernel", "name": site.display_name,
            "ts": (start - origin) / 1e3, "dur": (end - start) / 1e3,
            "args": {
                "kernel": site.kernel,
                "run": run,
                "lines": {str(k): round(100 * f, 1) for k, f in site.shares.lines.items() if k is not None},
                "layers": {k: round(100 * f, 1) for k, f in site.shares.layers.items() if k is not None},
                "gflop": site.flops / 1e9,
                "mbytes": site.bytes / 1e6,
            },
        })
    for run, (start, end) in sorted(runs.items()):
        events.append({"ph": "X", "pid": PID, "tid": TID, "cat": "run", "name": f"run {run}",
                       "ts": (start - origin) / 1e3, "dur": (end - start) / 1e3, "args": {"run": run}})
    return _document(prof, events)


def _document(prof: Profile, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"displayTimeUnit": "ms", "traceEvents": events,
            "otherData": {"source": prof.name, "mode": prof.mode, "runs": prof.runs, "threads": prof.threads,
                          "attribution": "a kernel's time shared among its lines and layers by their FLOPs",
                          "peak": prof.peak.derivation}}
