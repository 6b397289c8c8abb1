"""A profile as text: the kernel table, slowest first, then the time per ONNX layer.

    print(profile_table(prof), file=out)

Each kernel row: rank, display name, calls per run, median ms and [least–most] of a run,
% of the run (end-to-end, the median), GFLOP/s and % of the peak (peak.py), bytes moved
(cost.py: each buffer once) and GB/s; under it the Relay lines and layers compiled into
it, with their share of its time.  The footer says how much of the run the kernels
account for, how layers were attributed, and how the peak was estimated.
"""

from __future__ import annotations

from .profiler import KernelRow, Profile

NAME_WIDTH = 52
LAYERS_SHOWN = 4  # per kernel row; the rest are counted
LAYER_ROWS = 25  # rows of the per-layer table


def profile_table(prof: Profile) -> str:
    run = prof.run_ns or 1.0
    out = [f"{prof.name}: {prof.runs} run{'s' if prof.runs != 1 else ''} after a warm-up, "
           f"{prof.threads} thread{'s' if prof.threads != 1 else ''}, "
           f"{'AOT entry' if prof.mode == 'aot' else 'interpreter with compiled kernels'}"]
    out.extend(f"note: {n}" for n in prof.notes)
    if not prof.rows:
        out.append("note: @main calls no kernel (it returns its inputs or constants): there is nothing to time")
    header = (f"{'#':>3}  {'fused function':<{NAME_WIDTH}} {'calls':>5} {'ms':>9} {'[min–max]':>19} "
              f"{'%run':>5} {'GFLOP/s':>8} {'%peak':>6} {'MB':>8} {'GB/s':>7}")
    out += ["", header, "-" * len(header)]
    for k, row in enumerate(prof.rows, 1):
        out.append(_row(k, row, run, prof.peak.gflops))
        out.append(" " * 5 + _where(row))
    out.append("-" * len(header))
    kernels = prof.kernel_ns
    flops = sum(r.flops for r in prof.rows)
    out.append(f"     {'all kernels (the sum of the rows)':<{NAME_WIDTH}} {sum(r.calls for r in prof.rows):>5g} {kernels / 1e6:>9.4f} "
               f"{'':>19} {100 * kernels / run:>5.1f} {flops / kernels if kernels else 0:>8.1f} "
               f"{100 * (flops / kernels) / prof.peak.gflops if kernels else 0:>6.1f}")
    out += ["", f"end-to-end: {prof.run_ns / 1e6:.3f} ms median per run (the entry called from Python), "
                f"{prof.entry_ns / 1e6:.3f} ms from the first kernel's start to the last one's end; "
                f"per run, the kernels take {100 * prof.covered('entry'):.1f}% of the latter and "
                f"{100 * prof.covered('call'):.1f}% of the former (medians)"]
    layers = {k: v for k, v in prof.layers.items() if k is not None}
    if layers:
        out += ["", "time per ONNX layer (a kernel's time shared among its layers by their FLOPs):"]
        ranked = sorted(prof.layers.items(), key=lambda kv: -kv[1])
        for layer, ns in ranked[:LAYER_ROWS]:
            out.append(f"  {ns / 1e6:>9.4f} ms {100 * ns / run:>5.1f}%  {layer or '(no layer)'}")
        if len(ranked) > LAYER_ROWS:
            out.append(f"  ... {len(ranked) - LAYER_ROWS} more")
    out += ["", "attribution: a kernel's time is shared among the Relay lines and layers compiled into it by "
                "each one's share of the kernel's FLOPs (by elements written in kernels without arithmetic).",
            f"peak: {prof.peak.derivation}."]
    return "\n".join(out)


def _row(k: int, row: KernelRow, run: float, peak: float) -> str:
    name = row.display_name if len(row.display_name) <= NAME_WIDTH else row.display_name[: NAME_WIDTH - 1] + "…"
    spread = f"[{row.low / 1e6:.4f}–{row.high / 1e6:.4f}]"
    return (f"{k:>3}  {name:<{NAME_WIDTH}} {row.calls:>5g} {row.ns / 1e6:>9.4f} {spread:>19} "
            f"{100 * row.ns / run:>5.1f} {row.gflops:>8.1f} {100 * row.gflops / peak if peak else 0:>6.1f} "
            f"{row.bytes / 1e6:>8.2f} {row.gbytes:>7.1f}")


def _where(row: KernelRow) -> str:
    lines = sorted(line for line in row.lines if line is not None)
    text = f"{row.kernel} · lines {_ranges(lines)}" if lines else f"{row.kernel} · no source line"
    layers = sorted(((k, v) for k, v in row.layers.items() if k is not None), key=lambda kv: -kv[1])
    if layers:
        shown = ", ".join(f"{name} {100 * ns / row.ns if row.ns else 0:.0f}%" for name, ns in layers[:LAYERS_SHOWN])
        more = f" and {len(layers) - LAYERS_SHOWN} more" if len(layers) > LAYERS_SHOWN else ""
        text += f" · {shown}{more}"
    return text


def _ranges(lines: list[int]) -> str:
    """1, 2, 3, 7 -> "1-3, 7"."""
    parts: list[str] = []
    start = prev = None
    for n in lines + [None]:
        if start is not None and (n is None or n != prev + 1):
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = None
        if n is not None and start is None:
            start = n
        prev = n
    return ", ".join(parts)
