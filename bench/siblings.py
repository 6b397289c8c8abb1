"""Another benchmark script of this folder as a module (bench/ holds scripts, not a
package): `run_module()` is bench/run.py, loaded once under the name `bench_run`, with
bench/build.py as its `B`; `timed_model` builds one of its models for the profiler's
timed entry (steps.py, layers.py)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def run_module():
    spec = importlib.util.spec_from_file_location("bench_run", HERE / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@dataclass
class TimedModel:
    model: Any  # bench/build.py's Model
    result: Any  # driver.compile's result: its snapshots, provenance
    lowering: Any  # the build's lowering: its executable and JIT
    timed: Any  # compiler/lower/runtime/timing.py's TimedEntry over the executable
    feeds: dict  # the ONNX graph's inputs
    inputs: list  # the compiled @main's arguments (what binding the weights left)


def timed_model(key: str, threads: int) -> TimedModel:
    """bench/run.py's model `key`, built with its weights bound, ready for the timed entry."""
    from relaylens.compiler.lower.runtime.timing import TimedEntry

    R = run_module()
    model = R.B.load_model(key)
    result, lowering = R.compile_text(model.text, f"{model.key}.relay", threads, params=model.params)
    feeds = R.model_inputs(model)
    by_param = {model.inputs[name]: value for name, value in feeds.items()}
    inputs = [by_param[p.name] for p in result.snapshots[0].module["main"].params]
    return TimedModel(model, result, lowering, TimedEntry(lowering.executable, lowering.jit), feeds, inputs)
