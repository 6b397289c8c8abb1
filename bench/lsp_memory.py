"""Language-server memory: the resident size of RelayLens's server and build worker after a
model is opened and built, as an editor leaves them.

    python bench/lsp_memory.py [--inputs resnet50-typed,...] [--edits N] [--json out.json]

For each input (bench/lsp_latency.py's: `resnet50-typed` is bench/build.py's ResNet-50,
typed and buildable, needs onnx), a fresh server as an editor starts it (builds on): the
input opened, its build awaited (`relaylens/buildFinished`), the code lenses asked for
(they read the build), then N one-character edits (`--edits`, 5; each undone by a second
edit once its diagnostics came, then the build of the undone text awaited), then the
lenses again.  Then, for the server
process and the worker (`relaylens/status` gives its pid): VmRSS, and the peak VmHWM
(from /proc/PID/status).  The goal of issue 16: server + worker ≤ 150 MB on the typed
ResNet-50.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from lsp_client import LspClient  # noqa: E402 -- bench/ is not a package

_spec = importlib.util.spec_from_file_location("bench_lsp_latency", HERE / "lsp_latency.py")
latency = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = latency  # dataclasses look it up
_spec.loader.exec_module(latency)  # type: ignore[union-attr]

GOAL_MB = 150.0


async def measure(text: str, edits: int, timeout: float) -> dict:
    logs = Path(tempfile.mkdtemp(prefix="lsp-memory-"))
    client = await LspClient.start([sys.executable, "-m", "relaylens.server"], logs / "server.log")
    out: dict = {"notes": []}
    try:
        caps = await client.initialize({"build": {"enabled": True}})
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
            await client.received(built, sent, timeout)
        if edits:
            await client.request("textDocument/codeLens", {"textDocument": {"uri": doc.uri}})
        time.sleep(0.5)
        status = await client.request("relaylens/status", None)
        for who, pid in (("server", client.pid), ("worker", (status.get("worker") or {}).get("pid"))):
            found = latency.memory_mb(pid)
            if found is None:
                out["notes"].append(f"no {who} process to measure")
            else:
                out[who] = {"rss_mb": round(found[0], 1), "peak_mb": round(found[1], 1)}
    finally:
        await client.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", default="resnet50-typed", help=f"comma-separated, of {', '.join(latency.INPUTS)}")
    ap.add_argument("--edits", type=int, default=5, help="valid one-character edits after the first build")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one answer or build")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.inputs.split(",") if k.strip()]
    unknown = [k for k in keys if k not in latency.INPUTS]
    if unknown:
        ap.error(f"unknown input(s) {', '.join(unknown)}; choose from {', '.join(latency.INPUTS)}")
    before = latency.load()
    results = {}
    print("| input | lines | server RSS (peak) | build worker RSS (peak) | both (peaks) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for key in keys:
        text = latency.load_input(key)
        found = results[key] = asyncio.run(measure(text, args.edits, args.timeout))
        cells = [f"{found[w]['rss_mb']:.0f} MB ({found[w]['peak_mb']:.0f})" if w in found else "—"
                 for w in ("server", "worker")]
        both = sum(found[w]["rss_mb"] for w in ("server", "worker") if w in found)
        peaks = sum(found[w]["peak_mb"] for w in ("server", "worker") if w in found)
        print(f"| {latency.LABELS[key]} | {text.count(chr(10)):,} | {cells[0]} | {cells[1]} | "
              f"{both:.0f} MB ({peaks:.0f}) |")
        if key == "resnet50-typed":
            found["goal"] = "met" if peaks <= GOAL_MB else "MISSED"
            print(f"\n- server + worker ≤ {GOAL_MB:g} MB on the typed ResNet-50: {both:.0f} MB resident, "
                  f"peaks {peaks:.0f} MB: {found['goal']} (judged on the peaks)")
        for note in found["notes"]:
            print(f"- {latency.LABELS[key]}: {note}")
        print(f"- {latency.LABELS[key]}: build {found.get('build')}, {found.get('lenses')} lenses")
    print(f"\n{args.edits} edits after the first build; load average before {before}, after {latency.load()}, "
          f"on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps({"edits": args.edits, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
