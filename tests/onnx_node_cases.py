"""The ONNX backend node test cases, regenerated offline, and one way to run a case.

The onnx wheel ships the generators of its ~1,900 node tests (`onnx.backend.test.case.node`)
but not their data, so we write the data once per onnx version into a cache:

    $XDG_CACHE_HOME/relaylens/onnx-node-cases-<onnx version>-<format>/   (default ~/.cache/...)
        index.json                          one entry per case (below), written last
        <case>/model.onnx
        <case>/test_data_set_0/input_<k>.npy, output_<k>.npy

An index entry is `{"name", "ops", "atol", "data"}`: `ops` are the op types of the graph
(and of functions it defines), `atol` the case's absolute tolerance, `data` is false for the cases whose inputs
or outputs are not numpy tensors (sequences, optionals, maps, strings, bfloat16, float8,
4-bit integers), which get no data files.
Generation takes about ten seconds; the cache is built in a temporary directory beside
its final place and renamed into it, so concurrent runs never see half a cache.
`RELAYLENS_ONNX_CASES` names another directory to use.

`run_case(case)` imports one case with the ONNX frontend, runs it with the reference
interpreter (or, with `compiled=True`, builds, lowers and runs it as compiled code) and
compares every output; it returns `None` when they match, else a line saying what went
wrong.  `expected_failure(name, compiled)` says why the cases known to fail on a path do
(EXPECTED_FAILURES on both paths, INTERPRETER_FAILURES and COMPILED_FAILURES on one).
tests/test_onnx_node.py and tests/onnx_coverage.py share all of this.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NUMPY_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64", "complex128"}
CACHE_FORMAT = 3  # bumped when the layout below changes
FLOAT_RTOL = 1e-5  # float32 and wider; LOOSER and COMPILED_LOOSER list the cases that need more, and why
FLOAT16_RTOL = 2e-3  # two units in the last place (see test_onnx_node.py)


@dataclass(frozen=True)
class NodeCase:
    name: str
    ops: tuple[str, ...]
    atol: float
    data: bool
    path: Path

    def arrays(self, kind: str) -> list[np.ndarray]:
        folder = self.path / "test_data_set_0"
        count = len(list(folder.glob(f"{kind}_*.npy")))
        return [np.load(folder / f"{kind}_{k}.npy", allow_pickle=False) for k in range(count)]


def cache_dir() -> Path:
    import onnx

    override = os.environ.get("RELAYLENS_ONNX_CASES")
    if override:
        return Path(override)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "relaylens" / f"onnx-node-cases-{onnx.__version__}-{CACHE_FORMAT}"


def load_cases() -> list[NodeCase]:
    """Every node case, generating the cache first if needed."""
    root = cache_dir()
    if not (root / "index.json").is_file():
        _generate(root)
    entries = json.loads((root / "index.json").read_text())
    return [NodeCase(e["name"], tuple(e["ops"]), e["atol"], e["data"], root / e["name"]) for e in entries]


def supported_cases() -> list[NodeCase]:
    """The cases with data whose every op the frontend supports."""
    from relaylens.compiler.frontend.onnx import supported_ops

    supported = set(supported_ops())
    return [c for c in load_cases() if c.data and set(c.ops) <= supported]


def _generate(root: Path) -> None:
    import onnx.backend.test.case.node as node_cases

    root.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # the generators overflow casts and divide by zero on purpose
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            cases = node_cases.collect_testcases()
    work = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
    try:
        index = [_write_case(work, case) for case in cases if case.kind == "node"]
        (work / "index.json").write_text(json.dumps(index, indent=0))
        try:
            os.replace(work, root)
        except OSError:  # another run finished first: use its cache
            if not (root / "index.json").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write_case(work: Path, case) -> dict:
    model = case.model
    folder = work / case.name
    folder.mkdir()
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    tensors = all(v.type.HasField("tensor_type") for v in (*model.graph.input, *model.graph.output))
    if tensors:
        inputs, outputs = case.data_sets[0]
        arrays = {f"{kind}_{k}.npy": _as_array(value)
                  for kind, values in (("input", inputs), ("output", outputs)) for k, value in enumerate(values)}
        tensors = all(a.dtype.name in NUMPY_DTYPES for a in arrays.values())
    if tensors:
        data = folder / "test_data_set_0"
        data.mkdir()
        for file, array in arrays.items():
            np.save(data / file, array, allow_pickle=False)
    ops = {n.op_type for n in model.graph.node}
    for function in model.functions:
        ops |= {n.op_type for n in function.node}
    return {"name": case.name, "ops": sorted(ops), "atol": case.atol, "data": tensors}


def _as_array(value) -> np.ndarray:
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


# --- what is known to fail -------------------------------------------------------------

EXPECTED_FAILURES = {  # on both paths
    r"test_(batchnorm_.*_training_mode|training_dropout.*)":
        "training mode: the frontend imports inference graphs",
    r"test_bitshift_right_int(8|32)_(negative_shift|shift_ge_width)":
        "signed right shifts by amounts outside [0, bit width) are not modelled (x // 2^y)",
    r"test_convtranspose_3d": "the op library has no 3-D transposed convolution",
    r"test_maxpool_with_argmax_.*": "MaxPool's Indices output has no Relay op",
    r"test_resize_downsample_scales_(cubic|linear)(_A_n0p5_exclude_outside|_align_corners)?":
        "image.resize2d maps coordinates by output/input extent, ONNX by the given scale; they differ "
        "when extent x scale is fractional",
    r"test_resize_.*_antialias": "antialiased resizing has no Relay op",
    r"test_resize_.*_half_pixel_symmetric": "image.resize2d has no half_pixel_symmetric mode",
    r"test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric":
        "image.resize2d takes TVM's index-division shortcut for whole upscale factors, which floors",
    r"test_(de)?quantizelinear_blocked.*": "blocked quantization (block_size > 0) is refused at the node",
    r"test_wrap_pad": "nn.pad has no wrap mode",
    r"test_deform_conv_with_mask_bias": "nn.deformable_conv2d has no mask (modulated deformable convolution)",
    r"test_roialign_mode_max": "ONNX's max mode takes the largest of each point's four weighted neighbours; "
                               "vision.roi_align (TVM, torchvision) the largest interpolated point",
    r"test_gridsample_volumetric_.*": "image.grid_sample's 3-D form is refused at the node (no compute rule)",
}

INTERPRETER_FAILURES = {  # the op library's numpy semantics fail; the compiled kernels do what ONNX wants
    r"test_bitshift_left_int(8|32)_negative_shift":
        "x << y is imported as x * 2^y, and numpy refuses integers to negative powers (the compiled "
        "power gives 0)",
    r"test_reduce_(max|min|log_sum_exp)_empty_set(_bool)?":
        "numpy's max/min fail on an empty reduction (the compiled reductions start from -inf/+inf, "
        "False/True, as ONNX wants)",
}

COMPILED_FAILURES = {  # the interpreter runs these, the lowering cannot
    r"test_range_(float16_type_positive_delta|float_type_positive_delta|int32_type_negative_delta)"
    r"|test_(blackman|hamming|hann)window(_symmetric)?_expanded"
    r"|test_constantofshape_(float_ones|int_zeros|int_shape_zero)":
        "the output shape depends on input values (Range's limits, a window's size, ConstantOfShape's "
        "shape): dynamic shapes are not lowered",
}

LOOSER = {  # case → (rtol, why), on both paths
    "test_averagepool_2d_ceil_last_window_starts_on_pad": (1e-3, "its outputs are written with 4 digits"),
    "test_roialign_aligned_false": (1e-3, "its outputs are written with 4 digits"),
    "test_roialign_aligned_true": (1e-3, "its outputs are written with 4 digits"),
    "test_gridsample_bicubic": (1e-3, "its outputs are written with 4 digits"),
}

COMPILED_LOOSER = {  # case → (rtol, atol, why): compiled float32 arithmetic rounds in its own order
    "test_layer_normalization_4d_axis1": (
        None, 1e-6, "x - mean cancels: a mean one unit in the last place away from numpy's is an "
                    "absolute error of 2.4e-7 (1.7e-4 relative) at an output near zero"),
    "test_nllloss_NCd1d2d3d4d5_mean_weight_expanded": (
        5e-5, None, "a float32 sum of 6,480 terms in loop order, not numpy's pairwise order "
                    "(2.1e-5 relative)"),
}


def expected_failure(name: str, compiled: bool = False) -> str | None:
    """Why a case with supported ops is known to fail on that path, or None."""
    tables = (EXPECTED_FAILURES, COMPILED_FAILURES if compiled else INTERPRETER_FAILURES)
    for table in tables:
        for pattern, reason in table.items():
            if re.fullmatch(pattern, name):
                return reason
    return None


def tolerance(name: str, compiled: bool = False) -> tuple[float | None, float | None]:
    """(rtol, atol) for a case on a path; None where the default holds (compare's rtol,
    the case's atol)."""
    if compiled and name in COMPILED_LOOSER:
        rtol, atol, _ = COMPILED_LOOSER[name]
        return rtol, atol
    looser = LOOSER.get(name)
    return (looser[0] if looser else None), None


# --- running one case ------------------------------------------------------------------------


class CaseProblem(Exception):
    """What stopped a case, as the one line run_case returns."""


def run_case(case: NodeCase, *, compiled: bool = False, jit=None, cache=None) -> str | None:
    """None if our import and run reproduce the case's outputs, else what went wrong.

    The run is the reference interpreter, or with `compiled` relay.build's passes, the
    lowering (compiler/lower/pipeline.lower_build) and the compiled executable; `jit` and
    `cache` (a LoweringCache) may be shared between cases to save compile time.  The
    tolerances come from `tolerance(case.name, compiled)`."""
    from relaylens.compiler.interpreter import InterpreterError, interpret
    from relaylens.compiler.lower.errors import LoweringError

    try:
        module, args = import_case(case)
        with np.errstate(all="ignore"):
            if compiled:
                result = compile_module(module, case.name, jit, cache).run(*args)
            else:
                result = interpret(module, *args)
    except CaseProblem as exc:
        return str(exc)
    except (InterpreterError, LoweringError) as exc:
        return f"run: {exc.message}"
    got = list(result) if isinstance(result, tuple) else [result]
    expected = case.arrays("output")
    if len(got) != len(expected):
        return f"compare: {len(got)} outputs, expected {len(expected)}"
    rtol, atol = tolerance(case.name, compiled)
    for k, (g, e) in enumerate(zip(got, expected)):
        problem = compare(np.asarray(g), e, rtol, case.atol if atol is None else max(atol, case.atol))
        if problem:
            return f"compare: output {k}: {problem}"
    return None


class SharedCompiler:
    """A JIT and a LoweringCache shared by up to `batch` compiled cases, then fresh ones.

    Sharing saves compile time (two kernels in three are cache hits across cases);
    renewing bounds memory, since a JIT keeps the machine code of every module it loaded
    until it is dropped (about 1 MB each: all cases on one JIT peak at 2.2 GB, batches of
    250 at under 1 GB, in the same time)."""

    def __init__(self, batch: int = 250) -> None:
        self.batch = batch
        self.used = batch
        self.jit = self.cache = None

    def take(self):
        """(jit, cache) for the next case."""
        from relaylens.compiler.lower.runtime.jit import JIT
        from relaylens.compiler.lower.pipeline import LoweringCache

        if self.used >= self.batch:
            self.jit, self.cache, self.used = JIT(), LoweringCache(), 0
        self.used += 1
        return self.jit, self.cache


def import_case(case: NodeCase):
    """(the typed module, @main's arguments) of a case; CaseProblem if it does not import.

    Many cases feed what Relay takes as an attribute (Reshape's shape, Slice's starts,
    Resize's scales...) as a graph input; a real exporter writes those as constants.  When
    the import says such a value must be known before run time, that input (or the integer
    graph inputs it is computed from) are bound to the case's values as initializers and the
    import is tried again."""
    import onnx

    from relaylens.compiler.frontend.onnx import OnnxImportError, import_onnx
    from relaylens.compiler.typing import infer_types

    model = onnx.load(case.path / "model.onnx")
    values = dict(zip((i.name for i in model.graph.input), case.arrays("input")))
    while True:
        try:
            imported = import_onnx(model)
            break
        except OnnxImportError as exc:
            names = [n for n in feeding_inputs(model, exc.needs_value)
                     if n == exc.needs_value or values[n].dtype.kind in "iu"]
            if not names:
                raise CaseProblem(f"import: {exc}") from None
            for name in names:
                model = bind_input(model, name, values[name])
    errors = [d for d in infer_types(imported.module) if d.is_error]
    if errors:
        raise CaseProblem(f"types: {errors[0].message}")
    given = {imported.inputs[name]: value for name, value in values.items() if name in imported.inputs}
    main = imported.module["main"]
    return imported.module, [given[p.name] if p.name in given else imported.params[p.name] for p in main.params]


def compile_module(module, name: str, jit=None, cache=None):
    """The executable of a typed module: built, lowered, compiled; CaseProblem if a step fails."""
    from relaylens.compiler.build import build_module
    from relaylens.compiler.lower.pipeline import lower_build

    built = build_module(module, name=name)
    errors = [d.message for d in built.diagnostics if d.is_error]
    if errors:
        raise CaseProblem(f"build: {errors[0]}")
    lowered = lower_build(built, jit=jit, cache=cache)
    errors = [d.message for d in lowered.diagnostics if d.is_error]
    if errors:
        raise CaseProblem(f"lower: {'; '.join(errors)}")
    if lowered.executable is None:
        raise CaseProblem("lower: no executable (the module has no @main)")
    return lowered.executable


def feeding_inputs(model, tensor: str | None) -> list[str]:
    """The graph inputs `tensor` is computed from (itself, if it is one)."""
    inputs = {i.name for i in model.graph.input} - {t.name for t in model.graph.initializer}
    producers = {out: node for node in model.graph.node for out in node.output}
    found, stack, seen = [], [tensor] if tensor else [], set()
    while stack:
        name = stack.pop()
        if name in seen or not name:
            continue
        seen.add(name)
        if name in inputs:
            found.append(name)
        elif name in producers:
            stack.extend(producers[name].input)
    return found


def bind_input(model, name: str, value: np.ndarray):
    """A copy of `model` in which graph input `name` is an initializer holding `value`."""
    from onnx import numpy_helper

    bound = type(model)()
    bound.CopyFrom(model)
    kept = [i for i in bound.graph.input if i.name != name]
    del bound.graph.input[:]
    bound.graph.input.extend(kept)
    bound.graph.initializer.append(numpy_helper.from_array(value, name))
    return bound


def compare(got: np.ndarray, expected: np.ndarray, rtol: float | None, atol: float) -> str | None:
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    if expected.dtype.kind not in "fc":
        return None if np.array_equal(got, expected) else f"values differ ({_first_difference(got, expected)})"
    tolerance = rtol if rtol is not None else (FLOAT16_RTOL if expected.dtype == np.float16 else FLOAT_RTOL)
    if np.allclose(got, expected, rtol=tolerance, atol=atol, equal_nan=True):
        return None
    return f"values differ beyond rtol={tolerance} ({_first_difference(got, expected)})"


def _first_difference(got: np.ndarray, expected: np.ndarray) -> str:
    with np.errstate(all="ignore"):
        diff = got != expected
        if expected.dtype.kind == "f":
            diff &= ~(np.isnan(got) & np.isnan(expected))
    where = np.argwhere(diff)
    if not len(where):
        return "no difference found"
    index = tuple(int(i) for i in where[0])
    return f"at {index}: {got[index]!r} vs {expected[index]!r}"
