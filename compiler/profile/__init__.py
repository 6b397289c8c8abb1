"""The profiler: where the time of a compiled run goes, mapped through spans to the Relay
lines and ONNX layers compiled into each kernel (docs/profile.md).

    profiler.py     run N times, every kernel call timed inside the AOT entry; per kernel,
                    line and layer (the timing itself: lower/runtime/timing.py)
    cost.py         FLOPs per op call (one rule per op) and bytes per kernel
    attribution.py  a kernel's time shared among its lines and layers by FLOPs
    peak.py         the machine's peak GFLOP/s, estimated and explained
    table.py        the text table;  trace.py  the Chrome trace
    compare.py      onnxruntime's profile of the ONNX model, joined by node name
"""
