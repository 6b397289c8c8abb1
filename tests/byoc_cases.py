"""What the BYOC pass tests share: run passes on Relay text with a pattern table and a
target, compare with the expected Relay text structurally, and compare values.

    out = run_byoc(BEFORE, ["MergeComposite"], patterns=TABLE, targets=["mynpu"])
    assert_module(out, EXPECTED)          # structural equality, global names included
    assert_same_values(BEFORE, out)       # the reference interpreter, random inputs

Every run also checks what every pass must keep: no pass error, the span invariant
(transform/span_check.py) and a module that typechecks.
"""

from __future__ import annotations

import numpy as np

from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.ir.module import IRModule
from relaylens.compiler.ir.structural_equal import assert_structural_equal
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.parser import parse
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

HEADER = '#[version = "0.0.5"]\n'


def parse_typed(text: str, name: str = "t.relay") -> IRModule:
    parsed = parse(HEADER + text, name)
    assert [d.message for d in parsed.diagnostics if d.is_error] == []
    assert infer_types(parsed.module) == []
    return parsed.module


def byoc_config(patterns: str | None = None, targets: list[str] | None = None,
                ops: list[str] | dict | None = None) -> dict:
    config: dict = {}
    if patterns is not None:
        config["relay.byoc.patterns"] = {"name": "table.relay", "text": patterns}
    if targets is not None:
        config["relay.byoc.targets"] = targets
    if ops is not None:
        config["relay.byoc.ops"] = ops
    return config


def run_byoc(before: str | IRModule, passes: list[str], **options) -> IRModule:
    mod = parse_typed(before) if isinstance(before, str) else before
    with PassContext(opt_level=3, config=byoc_config(**options)):
        for name in passes:
            p = get_pass(name)
            mod = p(mod)
            errors = [d.message for d in getattr(p, "diagnostics", ()) if d.is_error]
            assert errors == [], f"{name}: {errors}"
    assert spanless(mod) == [], "every expression a pass makes from expressions with spans has a span"
    assert infer_types(mod) == [], "the output must typecheck"
    return mod


def assert_module(out: IRModule, expected: str) -> None:
    assert_structural_equal(out, parse_typed(expected, "expected.relay"))


def random_inputs(mod: IRModule, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    args = []
    for p in mod["main"].params:
        ty = p.type_annotation
        assert isinstance(ty, TensorType)
        args.append(rng.standard_normal([int(d) for d in ty.shape]).astype(ty.dtype))
    return args


def assert_same_values(before: str | IRModule, after: IRModule) -> None:
    mod = parse_typed(before) if isinstance(before, str) else before
    args = random_inputs(mod)
    want = Interpreter(mod).call("main", args)
    got = Interpreter(after).call("main", args)
    for w, g in zip(_leaves(want), _leaves(got)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _leaves(value):
    if isinstance(value, tuple):
        for v in value:
            yield from _leaves(v)
    else:
        yield np.asarray(value)


# A conv2d + bias_add + relu, then exp and add + relu: what the CLI, graph and server BYOC tests
# partition with NPU_TABLE (two composites, one op left to the host)
NPU_MODEL_BODY = """def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = exp(%2);
  %4 = add(%3, %2);
  nn.relu(%4)
}
"""
NPU_TABLE = """def @conv2d_bias_relu(%x, %w, %b) {
  %0 = nn.conv2d(%x, %w);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}
def @add_relu(%x, %y) { nn.relu(add(%x, %y)) }
"""
