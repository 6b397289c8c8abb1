"""How long RelayLens's relay.build pipeline takes, and what span propagation costs.

    python bench/passes.py [--runs N] [--emit resnet50|gpt2]

Inputs: two generated, fully typed models, because the corpus copies (ResNet-50 005.relay,
GPT-2 002.relay) lack the `#[metadata]` table their weights live in.  The weights here
are parameters of @main, as `relay.build` sees a model whose params are not bound.
  * ResNet-50: torchvision's layout, 1x3x224x224 input; conv2d + batch_norm + relu
    stem and 16 bottleneck blocks [3, 4, 6, 3] with their downsample convolutions,
    global average pool, dense + bias_add to 1,000 classes.
  * GPT-2 (small): token and position embeddings (`take`, the positions an `arange`),
    12 layers of layer norm spelled out as mean/subtract/power/sqrt/divide, attention
    through dense, split, reshape, transpose, batch_matmul, a causal mask and softmax,
    and a tanh-GELU MLP; 128 tokens; the LM head a dense against the embedding.
Every call and projection carries a frontend span comment, as TVM's ONNX importer
writes them (`span=layer3.1/conv2/Conv:0:0`), so span propagation has work to do.  The
text is written once, read and type-checked, and printed back with `ty=` and `span=`
comments: that printed text is the input (`--emit` shows it).

For each model, median of N runs (default 3):
  * parse + check: `check_text` (parse, resolve, infer types), what the build starts from;
  * each pass of RELAY_BUILD_PIPELINE in the order it runs at opt_level 3, including the
    InferType runs a pass requires (marked "req."), timed by a pass instrument;
  * the pipeline in all, with PassContext config {"ir.enable_si_builder": False} and
    True (RelayLens's default): the difference is what recording provenance costs.  Off
    and on runs alternate, so drift on a shared machine hits both alike, and the cost
    quoted under the table is the median of the paired ratios.  (FuseOps
    covers its members' spans either way; with the flag off it has fewer to cover.)
  * `compile(stop_after="passes")` end to end, as the CLI and the language server run it: check, the
    pipeline with a snapshot after every pass, and naming the fused functions;
  * memory: in a separate untimed run under tracemalloc, what the final module holds
    once everything else is dropped, and the peak the pipeline adds to the checked input.
Each timed run starts from a freshly checked module; the garbage collector stays on.
With spans on, the final module must keep the span invariant (`spanless`), else a
warning is printed.  Run on an idle machine (a test suite beside it moves the figures
by 10-30%) and paste the table and the machine into README.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Callable

from relaylens.compiler.build import make_pipeline
from relaylens.compiler.driver import compile
from relaylens.compiler.check import check_text
from relaylens.compiler.ir import Call, Function, Op
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext
from relaylens.compiler.transform.infra import PassInstrument, Sequential
from relaylens.compiler.transform.span_check import spanless

HERE = Path(__file__).resolve().parent
MODELS = ("resnet50", "gpt2")
LABELS = {"resnet50": "ResNet-50", "gpt2": "GPT-2"}


# --- generated models ---------------------------------------------------------------------


class Writer:
    """Relay text, one `%N = ...;` binding per call, every one with a span comment."""

    def __init__(self) -> None:
        self.params: list[str] = []
        self.lines: list[str] = []

    def param(self, name: str, shape: tuple[int, ...], dtype: str = "float32") -> str:
        dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
        self.params.append(f"%{name}: Tensor[({dims}), {dtype}]")
        return f"%{name}"

    def __call__(self, expr: str, span: str) -> str:
        self.lines.append(f"  %{len(self.lines)} = {expr} /* span={span}:0:0 */;")
        return f"%{len(self.lines) - 1}"

    def text(self, result: str) -> str:
        params = ",\n    ".join(self.params)
        body = "\n".join([*self.lines, f"  {result}"])
        return f'#[version = "0.0.5"]\ndef @main(\n    {params}\n) {{\n{body}\n}}\n'


def resnet50() -> str:
    w = Writer()
    x = w.param("input", (1, 3, 224, 224))

    def conv_bn(x: str, prefix: str, conv: str, bn: str, cin: int, cout: int, k: int, stride: int = 1) -> str:
        pname = (prefix + conv).replace(".", "_").replace("/", "_")
        weight = w.param(f"{pname}_weight", (cout, cin, k, k))
        pad = k // 2
        y = w(f"nn.conv2d({x}, {weight}, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}],"
              f" channels={cout}, kernel_size=[{k}, {k}])", f"{prefix}{conv}/Conv")
        bname = (prefix + bn).replace(".", "_").replace("/", "_")
        stats = [w.param(f"{bname}_{s}", (cout,)) for s in ("weight", "bias", "running_mean", "running_var")]
        y = w(f"nn.batch_norm({y}, {', '.join(stats)}, epsilon=1e-05f)", f"{prefix}{bn}/BatchNormalization")
        return w(f"{y}.0", f"{prefix}{bn}/BatchNormalization")

    x = conv_bn(x, "", "conv1", "bn1", 3, 64, 7, 2)
    x = w(f"nn.relu({x})", "relu/Relu")
    x = w(f"nn.max_pool2d({x}, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])", "maxpool/MaxPool")
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), start=1):
        for b in range(blocks):
            p = f"layer{stage}.{b}/"
            stride = 2 if b == 0 and stage > 1 else 1
            y = conv_bn(x, p, "conv1", "bn1", cin, width, 1)
            y = w(f"nn.relu({y})", f"{p}relu/Relu")
            y = conv_bn(y, p, "conv2", "bn2", width, width, 3, stride)
            y = w(f"nn.relu({y})", f"{p}relu_1/Relu")
            y = conv_bn(y, p, "conv3", "bn3", width, width * 4, 1)
            short = conv_bn(x, p, "downsample.0", "downsample.1", cin, width * 4, 1, stride) if b == 0 else x
            y = w(f"add({y}, {short})", f"{p}Add")
            x = w(f"nn.relu({y})", f"{p}relu_2/Relu")
            cin = width * 4
    x = w(f"nn.global_avg_pool2d({x})", "avgpool/GlobalAveragePool")
    x = w(f"nn.batch_flatten({x})", "Flatten")
    x = w(f"nn.dense({x}, {w.param('fc_weight', (1000, 2048))}, units=1000)", "fc/Gemm")
    x = w(f"nn.bias_add({x}, {w.param('fc_bias', (1000,))})", "fc/Gemm")
    return w.text(x)


def gpt2(layers: int = 12, tokens: int = 128, d: int = 768, heads: int = 12, vocab: int = 50257) -> str:
    w = Writer()
    hd = d // heads
    ids = w.param("input_ids", (1, tokens), "int64")
    wte = w.param("wte", (vocab, d))
    wpe = w.param("wpe", (1024, d))
    mask = w.param("causal_mask", (1, 1, tokens, tokens))
    masked = w.param("causal_mask_fill", (1, 1, tokens, tokens))

    def layer_norm(x: str, p: str) -> str:
        mean = w(f"mean({x}, axis=[-1], keepdims=True)", f"{p}/ReduceMean")
        c = w(f"subtract({x}, {mean})", f"{p}/Sub")
        sq = w(f"power({c}, 2f)", f"{p}/Pow")
        var = w(f"mean({sq}, axis=[-1], keepdims=True)", f"{p}/ReduceMean_1")
        var = w(f"add({var}, 1e-05f)", f"{p}/Add")
        std = w(f"sqrt({var})", f"{p}/Sqrt")
        y = w(f"divide({c}, {std})", f"{p}/Div")
        y = w(f"multiply({y}, {w.param(p.replace('.', '_').replace('/', '_') + '_weight', (d,))})", f"{p}/Mul")
        return w(f"add({y}, {w.param(p.replace('.', '_').replace('/', '_') + '_bias', (d,))})", f"{p}/Add_1")

    def linear(x: str, p: str, n_in: int, n_out: int, shape: str) -> str:
        name = p.replace(".", "_").replace("/", "_")
        y = w(f"reshape({x}, newshape=[-1, {n_in}])", f"{p}/Reshape")
        y = w(f"nn.dense({y}, {w.param(name + '_weight', (n_out, n_in))}, units={n_out})", f"{p}/MatMul")
        y = w(f"add({y}, {w.param(name + '_bias', (n_out,))})", f"{p}/Add")
        return w(f"reshape({y}, newshape={shape})", f"{p}/Reshape_1")

    pos = w(f"arange(0i64, {tokens}i64, 1i64, dtype=\"int64\")", "Range")
    pos = w(f"expand_dims({pos}, axis=0)", "Unsqueeze")
    x = w(f"take({wte}, {ids}, axis=0)", "wte/Gather")
    x = w(f"add({x}, {w(f'take({wpe}, {pos}, axis=0)', 'wpe/Gather')})", "Add")
    seq3 = f"[1, {tokens}, {d}]"
    for i in range(layers):
        h = f"h.{i}"
        a = layer_norm(x, f"{h}/ln_1")
        qkv = linear(a, f"{h}/attn/c_attn", d, 3 * d, f"[1, {tokens}, {3 * d}]")
        parts = w(f"split({qkv}, indices_or_sections=[{d}, {2 * d}], axis=2)", f"{h}/attn/Split")
        heads4 = f"[1, {tokens}, {heads}, {hd}]"
        q = w(f"{parts}.0", f"{h}/attn/Split")
        q = w(f"reshape({q}, newshape={heads4})", f"{h}/attn/Reshape")
        q = w(f"transpose({q}, axes=[0, 2, 1, 3])", f"{h}/attn/Transpose")
        q = w(f"reshape({q}, newshape=[-1, {tokens}, {hd}])", f"{h}/attn/MatMul")
        k = w(f"{parts}.1", f"{h}/attn/Split")
        k = w(f"reshape({k}, newshape={heads4})", f"{h}/attn/Reshape_1")
        k = w(f"transpose({k}, axes=[0, 2, 3, 1])", f"{h}/attn/Transpose_1")
        k = w(f"reshape({k}, newshape=[-1, {hd}, {tokens}])", f"{h}/attn/MatMul")
        k = w(f"transpose({k}, axes=[0, 2, 1])", f"{h}/attn/MatMul")
        s = w(f"nn.batch_matmul({q}, {k}, out_dtype=\"float32\", transpose_b=True)", f"{h}/attn/MatMul")
        s = w(f"reshape({s}, newshape=[1, {heads}, {tokens}, {tokens}])", f"{h}/attn/MatMul")
        s = w(f"divide({s}, {float(hd) ** 0.5:g}f)", f"{h}/attn/Div")
        s = w(f"multiply({s}, {mask})", f"{h}/attn/Mul")
        s = w(f"subtract({s}, {masked})", f"{h}/attn/Sub")
        s = w(f"nn.softmax({s}, axis=3)", f"{h}/attn/Softmax")
        v = w(f"{parts}.2", f"{h}/attn/Split")
        v = w(f"reshape({v}, newshape={heads4})", f"{h}/attn/Reshape_2")
        v = w(f"transpose({v}, axes=[0, 2, 1, 3])", f"{h}/attn/Transpose_2")
        v = w(f"reshape({v}, newshape=[-1, {tokens}, {hd}])", f"{h}/attn/MatMul_1")
        v = w(f"transpose({v}, axes=[0, 2, 1])", f"{h}/attn/MatMul_1")
        s = w(f"reshape({s}, newshape=[-1, {tokens}, {tokens}])", f"{h}/attn/MatMul_1")
        o = w(f"nn.batch_matmul({s}, {v}, out_dtype=\"float32\", transpose_b=True)", f"{h}/attn/MatMul_1")
        o = w(f"reshape({o}, newshape=[1, {heads}, {tokens}, {hd}])", f"{h}/attn/MatMul_1")
        o = w(f"transpose({o}, axes=[0, 2, 1, 3])", f"{h}/attn/Transpose_3")
        o = w(f"reshape({o}, newshape={seq3})", f"{h}/attn/Reshape_3")
        o = linear(o, f"{h}/attn/c_proj", d, d, seq3)
        x = w(f"add({x}, {o})", f"{h}/Add")
        m = layer_norm(x, f"{h}/ln_2")
        m = linear(m, f"{h}/mlp/c_fc", d, 4 * d, f"[1, {tokens}, {4 * d}]")
        cube = w(f"power({m}, 3f)", f"{h}/mlp/act/Pow")
        g = w(f"multiply({cube}, 0.044715f)", f"{h}/mlp/act/Mul")
        g = w(f"add({m}, {g})", f"{h}/mlp/act/Add")
        g = w(f"multiply({g}, 0.797885f)", f"{h}/mlp/act/Mul_1")
        g = w(f"tanh({g})", f"{h}/mlp/act/Tanh")
        g = w(f"add({g}, 1f)", f"{h}/mlp/act/Add_1")
        half = w(f"multiply({m}, 0.5f)", f"{h}/mlp/act/Mul_2")
        g = w(f"multiply({half}, {g})", f"{h}/mlp/act/Mul_3")
        m = linear(g, f"{h}/mlp/c_proj", 4 * d, d, seq3)
        x = w(f"add({x}, {m})", f"{h}/Add_1")
    x = layer_norm(x, "ln_f")
    x = w(f"reshape({x}, newshape=[-1, {d}])", "lm_head/MatMul")
    x = w(f"nn.dense({x}, {wte}, units={vocab})", "lm_head/MatMul")
    return w.text(w(f"reshape({x}, newshape=[1, {tokens}, {vocab}])", "lm_head/MatMul"))


def typed_text(model: str) -> str:
    """The model written out, checked, and printed back with `ty=` and `span=` comments."""
    raw = {"resnet50": resnet50, "gpt2": gpt2}[model]()
    checked = check_text(raw, f"{model}.relay")
    errors = [d for d in checked.diagnostics if d.is_error]
    if errors:
        raise SystemExit(f"error: the generated {model} does not check: {errors[0].render()}")
    return print_module(checked.module, spans=True, types=True)


# --- timing -------------------------------------------------------------------------------


class PassTimer(PassInstrument):
    """(pass name, required by another pass?, seconds) for every leaf pass, in order."""

    def __init__(self, pipeline: Sequential) -> None:
        self.listed = {id(p) for p in pipeline.passes}
        self.times: list[tuple[str, bool, float]] = []
        self._start: list[float] = []

    def run_before_pass(self, mod, p) -> None:
        self._start.append(time.perf_counter())

    def run_after_pass(self, mod, p) -> None:
        elapsed = time.perf_counter() - self._start.pop()
        if not isinstance(p, Sequential):
            self.times.append((p.name, id(p) not in self.listed, elapsed))


def run_pipeline(mod, spans: bool):
    with PassContext(opt_level=3, config={"ir.enable_si_builder": spans}):
        return make_pipeline()(mod)


def timed_pipeline(text: str, spans: bool) -> tuple[float, list[tuple[str, bool, float]], tuple[int, int, int]]:
    """(seconds, per-pass times, census of the final module) of one pipeline run on a
    freshly checked module."""
    mod = check_text(text, "bench.relay").module
    timer = PassTimer(pipeline := make_pipeline())
    gc.collect()
    start = time.perf_counter()
    with PassContext(opt_level=3, config={"ir.enable_si_builder": spans}, instruments=[timer]):
        out = pipeline(mod)
    return time.perf_counter() - start, timer.times, census(out)


def median_s(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def memory_mib(text: str, spans: bool) -> tuple[float, float]:
    """(what the final module holds once the input module and everything else is
    dropped, the peak the pipeline adds over the checked input), in MiB."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        mod = check_text(text, "bench.relay").module
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = run_pipeline(mod, spans)
        peak = tracemalloc.get_traced_memory()[1]
        del mod
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        del out
        return (held - base) / 2**20, (peak - before) / 2**20
    finally:
        tracemalloc.stop()


def census(mod) -> tuple[int, int, int]:
    """(operator calls, Primitive=1 functions, expressions that lost their span) in a module."""
    calls = prims = 0
    for func in mod.functions.values():
        for node in post_order(func):
            calls += isinstance(node, Call) and isinstance(node.op, Op)
            prims += isinstance(node, Function) and node.is_primitive
    return calls, prims, len(spanless(mod))


def _parse_bench():
    spec = importlib.util.spec_from_file_location("bench_parse", HERE / "parse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="timed runs per model and setting (median)")
    ap.add_argument("--emit", choices=MODELS, help="print a generated model and stop")
    args = ap.parse_args(argv)
    if args.emit:
        sys.stdout.write(typed_text(args.emit))
        return 0

    columns: list[tuple[str, bool]] = [(m, s) for m in MODELS for s in (False, True)]
    texts = {m: typed_text(m) for m in MODELS}
    check_s = {m: median_s(lambda: check_text(texts[m], "bench.relay"), args.runs) for m in MODELS}
    totals: dict[tuple[str, bool], float] = {}
    per_pass: dict[tuple[str, bool], list[tuple[str, bool, float]]] = {}
    memory: dict[tuple[str, bool], tuple[float, float]] = {}
    build_s: dict[tuple[str, bool], float] = {}
    span_cost: dict[str, float] = {}  # median of (on / off - 1) over the paired runs
    shape: dict[str, tuple[int, int, int, int]] = {}
    for model in MODELS:
        runs: dict[bool, list] = {False: [], True: []}
        builds: dict[bool, list[float]] = {False: [], True: []}
        for i in range(args.runs):  # interleaved, in alternating order, so drift hits both alike
            for spans in ((False, True) if i % 2 == 0 else (True, False)):
                runs[spans].append(timed_pipeline(texts[model], spans))
                start = time.perf_counter()
                compile(texts[model], "bench.relay", config={"ir.enable_si_builder": spans}, stop_after="passes")
                builds[spans].append(time.perf_counter() - start)
        for spans in (False, True):
            col, done = (model, spans), runs[spans]
            totals[col] = statistics.median(r[0] for r in done)
            per_pass[col] = [(name, req, statistics.median(r[1][i][2] for r in done))
                             for i, (name, req, _) in enumerate(done[0][1])]
            memory[col] = memory_mib(texts[model], spans)
            build_s[col] = statistics.median(builds[spans])
        calls_in = census(check_text(texts[model], "bench.relay").module)[0]
        calls_out, prims, lost = runs[True][0][2]
        if lost:
            print(f"warning: with spans on, {lost} expressions of the final {LABELS[model]} have no span",
                  file=sys.stderr)
        shape[model] = (texts[model].count("\n"), calls_in, calls_out, prims)
        span_cost[model] = statistics.median(on[0] / off[0] - 1 for off, on in zip(runs[False], runs[True]))
        print(f"  measured {LABELS[model]}", file=sys.stderr, flush=True)

    head = " | ".join(f"{LABELS[m]} spans {'on' if s else 'off'}" for m, s in columns)
    rows = [f"| step | {head} |", "| --- |" + " ---: |" * len(columns)]
    rows.append("| parse + check | " + " | ".join(ms(check_s[m]) for m, _ in columns) + " |")
    steps = per_pass[columns[0]]
    for i, (name, req, _) in enumerate(steps):
        label = f"{i + 1:>2}. {name}" + (" (req.)" if req else "")
        rows.append(f"| {label} | " + " | ".join(ms(per_pass[c][i][2]) for c in columns) + " |")
    rows.append("| **pipeline** | " + " | ".join(f"**{ms(totals[c])}**" for c in columns) + " |")
    rows.append("| parse + check + pipeline | "
                + " | ".join(ms(check_s[c[0]] + totals[c]) for c in columns) + " |")
    rows.append("| compile() to the passes (the CLI's and the server's path) | "
                + " | ".join(ms(build_s[c]) for c in columns) + " |")
    rows.append("| memory: final module / pipeline peak (MiB) | "
                + " | ".join(f"{memory[c][0]:,.1f} / {memory[c][1]:,.1f}" for c in columns) + " |")

    print("Times in ms, median of %d runs; per-pass rows in the order the passes run at opt_level 3." % args.runs)
    print()
    print("\n".join(rows))
    print()
    for m in MODELS:
        lines, calls_in, calls_out, prims = shape[m]
        cost = span_cost[m] * 100
        print(f"- {LABELS[m]}: {lines:,} lines of typed text, {calls_in:,} operator calls in,"
              f" {calls_out:,} out in {prims:,} primitive functions; span propagation costs {cost:+.1f}%"
              " of the pipeline time (median over paired off/on runs).")
    print("\nMachine:\n" + "\n".join(_parse_bench().machine()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
