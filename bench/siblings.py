"""Another benchmark script of this folder as a module (bench/ holds scripts, not a
package): `run_module()` is bench/run.py, loaded once under the name `bench_run`, with
bench/build.py as its `B`."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def run_module():
    spec = importlib.util.spec_from_file_location("bench_run", HERE / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module
