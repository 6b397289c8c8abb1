"""Relay programs for the numerics tests (test_numerics.py) and docs/cli.md's examples.

    lstm_text(steps=35, hidden=32, features=16, dtype="float32")   an unrolled LSTM: per step
        gates = dense(x_t, W_ih) + dense(h, W_hh) + b; i, f, o = sigmoid; g = tanh;
        c = f*c + i*g; h = o*tanh(c); returns h after the last step
    BATCH_NORM_TEXT                               conv2d + batch_norm + relu with every
                                                  parameter free (variances among them)
    miscompiled_tanh                              a fixture: the test-only fault of a wrong
                                                  tanh kernel (import it into a test module)
"""

from __future__ import annotations

import pytest

from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.ops import get_op

BATCH_NORM_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 3, 3), float32], %w: Tensor[(4, 4, 1, 1), float32], %gamma: Tensor[(4), float32],
          %beta: Tensor[(4), float32], %mean: Tensor[(4), float32], %var: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0]);
  %1 = nn.batch_norm(%0, %gamma, %beta, %mean, %var);
  %2 = %1.0;
  nn.relu(%2)
}
"""


def lstm_text(steps: int = 35, hidden: int = 32, features: int = 16, dtype: str = "float32") -> str:
    """The unrolled LSTM as Relay text, one `%N = ...;` per expression."""
    h4 = 4 * hidden
    lines = ['#[version = "0.0.5"]',
             f"def @main(%x: Tensor[({steps}, 1, {features}), {dtype}], %w_ih: Tensor[({h4}, {features}), {dtype}], "
             f"%w_hh: Tensor[({h4}, {hidden}), {dtype}], %bias: Tensor[({h4}), {dtype}], "
             f"%h0: Tensor[(1, {hidden}), {dtype}], %c0: Tensor[(1, {hidden}), {dtype}]) {{"]
    n = 0

    def let(expr: str) -> str:
        nonlocal n
        lines.append(f"  %{n} = {expr};")
        n += 1
        return f"%{n - 1}"

    h, c = "%h0", "%c0"
    for t in range(steps):
        x_t = let(f"strided_slice(%x, begin=[{t}, 0, 0], end=[{t + 1}, 1, {features}], strides=[1, 1, 1])")
        x_t = let(f"reshape({x_t}, newshape=[1, {features}])")
        gates = let(f"add(nn.dense({x_t}, %w_ih, units={h4}), nn.dense({h}, %w_hh, units={h4}))")
        gates = let(f"nn.bias_add({gates}, %bias)")
        parts = let(f"split({gates}, indices_or_sections=4, axis=1)")
        i = let(f"sigmoid({parts}.0)")
        f = let(f"sigmoid({parts}.1)")
        g = let(f"tanh({parts}.2)")
        o = let(f"sigmoid({parts}.3)")
        c = let(f"add(multiply({f}, {c}), multiply({i}, {g}))")
        h = let(f"multiply({o}, tanh({c}))")
    lines.append(f"  {h}")
    lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def miscompiled_tanh(monkeypatch):
    """A test-only fault: tanh's compute rule computes sigmoid, so every kernel holding a tanh
    is wrong while the interpreter (numpy) is right."""
    opdef = get_op("tanh")
    assert opdef.compute is not None

    def wrong(x, attrs, out_type):
        return te.compute(x.shape, lambda *i: te.intrinsic("sigmoid", x[i]), "T_tanh")

    monkeypatch.setattr(opdef, "compute", wrong)
    # the kernel cache on disk keys kernels by the compiler's sources, not by a patch made
    # here: a wrong kernel must not be stored for the tests that follow
    monkeypatch.setenv("RELAYLENS_NO_CACHE", "1")
