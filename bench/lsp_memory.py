"""Language-server memory: the resident size of RelayLens's server and build worker after a
model is opened and built, as an editor leaves them.

    python bench/lsp_memory.py [--inputs resnet50-typed,...] [--edits N] [--idle-exit S | --no-idle]
                               [--json out.json]

For each input (bench/lsp_latency.py's: `resnet50-typed` is bench/build.py's ResNet-50,
typed and buildable, needs onnx), under a first comment line of this run's own (so that it
is built, its kernels from the disk cache, not answered from a report kept by an earlier
run), a fresh server as an editor starts it (builds on): the input opened, its build awaited (`relaylens/buildFinished`), the code lenses asked for
(they read the build), then N one-character edits (`--edits`, 5; each undone by a second
edit once its diagnostics came, then the build of the undone text awaited), then the
lenses again.  Then, once the worker has used no CPU for a second (`settle`: it frees what
a build used after sending its report), for the server process and the worker
(`relaylens/status` gives its pid): VmRSS, and the peak VmHWM (from /proc/PID/status):
"after the builds".  Then the idle state: the worker exits after
the server's `worker.idleExitSeconds` (its default, 60 s, or `--idle-exit S`; `--no-idle`
skips this part, for a server without the idle exit), the lenses and the module.ll,
module.opt.ll and FuseOps snapshot views are asked for again (answered from the kept report,
without a worker), and the server is measured once more: "idle", the worker 0 MB.  Last,
one more edit, whose build starts a worker again: its time from didChange (debounce, the
worker's start and imports, the build, the kernels from the persistent cache) beside the
edits' builds in the running worker.
The goal of issue 16: server + worker ≤ 150 MB on the typed ResNet-50; the table gives
both states, and the peaks (each process's VmHWM, summed: they need not coincide).

Beside RSS, a second table splits each measure by /proc/PID/smaps_rollup: PSS (a page
shared by N processes counts 1/N in each, so the PSS of the two sums to what they hold
together; pages shared with other programs on the machine, such as libpython, are split
with them too), USS (the pages of this process alone), anonymous (the heap: what the
process made) and file-backed (library code and data, clean pages of the page cache that
the kernel may drop and read again).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from lsp_client import LspClient  # noqa: E402 -- bench/ is not a package

_spec = importlib.util.spec_from_file_location("bench_lsp_latency", HERE / "lsp_latency.py")
latency = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = latency  # dataclasses look it up
_spec.loader.exec_module(latency)  # type: ignore[union-attr]

GOAL_MB = 150.0


async def measure(text: str, edits: int, timeout: float, idle_exit: float | None, idle: bool) -> dict:
    logs = Path(tempfile.mkdtemp(prefix="lsp-memory-"))
    client = await LspClient.start([sys.executable, "-m", "relaylens.server"], logs / "server.log")
    out: dict = {"notes": []}
    options: dict = {"build": {"enabled": True}}
    if idle_exit is not None:
        options["worker"] = {"idleExitSeconds": idle_exit}
    elif not idle:
        options["worker"] = {"idleExitSeconds": 0}  # kept, as before the idle exit
    try:
        caps = await client.initialize(options)
        doc = latency.Document(client, "file:///tmp/lsp-bench/input.relay", "relay", text,
                               latency._incremental(caps))
        version = 1
        built = client.expect("relaylens/buildFinished", lambda p: p.get("version") == 1)
        waiting, sent = doc.open()
        await client.received(waiting, sent, timeout)
        params, seconds = await client.received(built, sent, timeout)
        out["build"] = {"state": params.get("state"), "seconds": round(seconds, 2)}
        lenses = await client.request("textDocument/codeLens", {"textDocument": {"uri": doc.uri}})
        out["lenses"] = len(lenses or ())
        for spot in latency.edit_spots(text, edits):
            original = doc.lines[spot.line][spot.character]
            for char in ("0", original):  # an edit (which may not type), then undone
                version += 1
                built = client.expect("relaylens/buildFinished", lambda p, v=version: p.get("version") == v)
                waiting, sent = doc.replace(spot, char)
                await client.received(waiting, sent, timeout)
            params, seconds = await client.received(built, sent, timeout)
            out.setdefault("rebuild_s", []).append(round(params.get("seconds") or 0, 2))
        if edits:
            await client.request("textDocument/codeLens", {"textDocument": {"uri": doc.uri}})
        time.sleep(0.5)
        status = await client.request("relaylens/status", None)
        out["settled_s"] = settle((status.get("worker") or {}).get("pid"))
        for who, pid in (("server", client.pid), ("worker", (status.get("worker") or {}).get("pid"))):
            found = latency.memory_mb(pid)
            if found is None:
                out["notes"].append(f"no {who} process to measure")
            else:
                out[who] = {"rss_mb": round(found[0], 1), "peak_mb": round(found[1], 1), **smaps_mb(pid)}
        if idle:
            out["idle"] = await _idle_state(client, doc.uri, version, status, timeout)
            if "note" not in out["idle"]:
                spot = latency.edit_spots(text, 1)[0]  # one edit: its build starts a worker again
                version += 1
                built = client.expect("relaylens/buildFinished", lambda p, v=version: p.get("version") == v)
                waiting, sent = doc.replace(spot, "0")
                await client.received(waiting, sent, timeout)
                params, seconds = await client.received(built, sent, timeout)
                out["idle"]["next_build"] = {"state": params.get("state"), "seconds": round(seconds, 2),
                                             "worker_s": round(params.get("seconds") or 0, 2)}
    finally:
        await client.close()
    return out


async def _idle_state(client: LspClient, uri: str, version: int, status: dict, timeout: float) -> dict:
    """Wait for the worker's idle exit, read the build's views again, measure the server."""
    exits = (status.get("worker") or {}).get("idleExits", 0)
    seconds = (status.get("worker") or {}).get("idleExitSeconds") or 0
    start = time.monotonic()
    while True:
        worker = (await client.request("relaylens/status", None)).get("worker") or {}
        if worker.get("idleExits", 0) > exits and worker.get("pid") is None:
            break
        if time.monotonic() - start > seconds + 30:
            return {"note": f"the worker did not exit when idle ({worker})"}
        await asyncio.sleep(0.5)
    waited = time.monotonic() - start
    lenses = await client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    views = {}
    for name in ("module.ll", "module.opt.ll"):
        found = await client.request("relaylens/virtualDocument",
                                     {"uri": f"relaylens:/llvm/{name}?uri={quote(uri, safe='')}&version={version}"})
        views[name] = len((found or {}).get("text", ""))
    snapshots = await client.request("relaylens/snapshots", {"uri": uri})
    fuse = next((p for p in (snapshots or {}).get("passes", ()) if p["name"] == "FuseOps"), None)
    if fuse is not None:
        views["FuseOps"] = len((await client.request("relaylens/virtualDocument", {"uri": fuse["uri"]}) or {}).get("text", ""))
    time.sleep(0.5)
    worker = (await client.request("relaylens/status", None)).get("worker") or {}
    found = latency.memory_mb(client.pid)
    return {"waited_s": round(waited, 1), "lenses": len(lenses or ()), "view_chars": views,
            "worker_pid": worker.get("pid"),
            "server": {"rss_mb": round(found[0], 1), "peak_mb": round(found[1], 1), **smaps_mb(client.pid)}
            if found else None}


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (/proc/PID/stat), or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(pid: int | None, quiet: float = 1.0, limit: float = 30.0) -> float:
    """Wait until the worker has used no CPU for `quiet` seconds (its last build's answer is
    sent before it frees what the build used and unmaps LLVM's code: on a busy machine, at
    its lower priority, that can take seconds), at most `limit`; the seconds waited."""
    start = time.monotonic()
    if pid is None:
        return 0.0
    last = cpu_seconds(pid)
    while last is not None and time.monotonic() - start < limit:
        time.sleep(quiet)
        now = cpu_seconds(pid)
        if now == last:
            break
        last = now
    return round(time.monotonic() - start, 1)


ROLLUP = {"Pss": "pss_mb", "Anonymous": "anon_mb"}  # smaps_rollup fields, as kept


def smaps_mb(pid: int) -> dict:
    """PSS, USS, anonymous and file-backed resident MB of a process (/proc/PID/smaps_rollup),
    or {} where there is none."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return {}
    kb = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[2] == "kB":
            kb[parts[0].rstrip(":")] = int(parts[1])
    if "Rss" not in kb:
        return {}
    found = {key: round(kb.get(field, 0) / 1024, 1) for field, key in ROLLUP.items()}
    found["uss_mb"] = round((kb.get("Private_Clean", 0) + kb.get("Private_Dirty", 0)) / 1024, 1)
    found["file_mb"] = round((kb["Rss"] - kb.get("Anonymous", 0)) / 1024, 1)
    return found


def split_table(key: str, found: dict) -> list[str]:
    """The second table's rows for one input: each process and state by smaps_rollup."""
    rows = []
    states = [("after the builds", {w: found.get(w) for w in ("server", "worker")})]
    if (found.get("idle") or {}).get("server"):
        states.append(("idle, the worker gone", {"server": found["idle"]["server"]}))
    for state, processes in states:
        both = {m: 0.0 for m in ("rss_mb", "pss_mb", "uss_mb", "anon_mb", "file_mb")}
        for who, got in processes.items():
            if not got or "pss_mb" not in got:
                continue
            rows.append(f"| {latency.LABELS[key]} | {state} | {who} | " +
                        " | ".join(f"{got[m]:.0f}" for m in both) + " |")
            for m in both:
                both[m] += got[m]
        if len(processes) > 1:
            rows.append(f"| | {state} | **both** | " + " | ".join(f"{v:.0f}" for v in both.values()) + " |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", default="resnet50-typed", help=f"comma-separated, of {', '.join(latency.INPUTS)}")
    ap.add_argument("--edits", type=int, default=5, help="valid one-character edits after the first build")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one answer or build")
    ap.add_argument("--idle-exit", type=float, help="the server's worker.idleExitSeconds (default: its own, 60)")
    ap.add_argument("--no-idle", action="store_true", help="keep the worker (idleExitSeconds 0); no idle state")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.inputs.split(",") if k.strip()]
    unknown = [k for k in keys if k not in latency.INPUTS]
    if unknown:
        ap.error(f"unknown input(s) {', '.join(unknown)}; choose from {', '.join(latency.INPUTS)}")
    before = latency.load()
    results = {}
    print("| input | lines | state | server RSS (peak) | build worker RSS (peak) | both (peaks) |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    for key in keys:
        # a text of this run's own: its first build is built (kernels from the disk cache), not
        # answered from the report an earlier run kept (server/slow/report_cache.py)
        text = f"// bench/lsp_memory.py run {os.getpid()}-{time.time_ns()}\n" + latency.load_input(key)
        found = results[key] = asyncio.run(measure(text, args.edits, args.timeout, args.idle_exit,
                                                   not args.no_idle))
        cells = [f"{found[w]['rss_mb']:.0f} MB ({found[w]['peak_mb']:.0f})" if w in found else "—"
                 for w in ("server", "worker")]
        both = sum(found[w]["rss_mb"] for w in ("server", "worker") if w in found)
        peaks = sum(found[w]["peak_mb"] for w in ("server", "worker") if w in found)
        print(f"| {latency.LABELS[key]} | {text.count(chr(10)):,} | after the builds | {cells[0]} | {cells[1]} | "
              f"{both:.0f} MB ({peaks:.0f}) |")
        idle = found.get("idle") or {}
        if idle.get("server"):
            server = idle["server"]
            print(f"| | | idle, the worker gone ({idle['waited_s']:.0f} s) | {server['rss_mb']:.0f} MB "
                  f"({server['peak_mb']:.0f}) | 0 | {server['rss_mb']:.0f} MB |")
        if key == "resnet50-typed":
            steady = idle["server"]["rss_mb"] if idle.get("server") else both
            found["goal"] = {"idle": "met" if steady <= GOAL_MB else "MISSED",
                             "peaks": "met" if peaks <= GOAL_MB else "MISSED"}
            print(f"\n- server + worker ≤ {GOAL_MB:g} MB on the typed ResNet-50: "
                  f"{steady:.0f} MB resident when idle: {found['goal']['idle']}; {both:.0f} MB right after "
                  f"the builds; peaks {peaks:.0f} MB: {found['goal']['peaks']}")
        if idle.get("note"):
            print(f"- {latency.LABELS[key]}: {idle['note']}")
        elif idle:
            print(f"- {latency.LABELS[key]}: idle: {idle['lenses']} lenses, views {idle['view_chars']} chars, "
                  f"worker pid {idle['worker_pid']}")
            if idle.get("next_build"):
                nb = idle["next_build"]
                print(f"- {latency.LABELS[key]}: the next edit's build, in a new worker: {nb['state']}, "
                      f"{nb['seconds']:.1f} s from didChange (the worker's build {nb['worker_s']:.1f} s; "
                      f"the edits' builds before, in the running worker: {found.get('rebuild_s')} s)")
        for note in found["notes"]:
            print(f"- {latency.LABELS[key]}: {note}")
        print(f"- {latency.LABELS[key]}: build {found.get('build')}, {found.get('lenses')} lenses; "
              f"measured after the worker settled ({found.get('settled_s')} s)")
        split = split_table(key, found)
        if split:
            print("\n| input | state | process | RSS MB | PSS | USS | anonymous | file-backed |")
            print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
            print("\n".join(split))
    print(f"\n{args.edits} edits after the first build; load average before {before}, after {latency.load()}, "
          f"on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps({"edits": args.edits, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
