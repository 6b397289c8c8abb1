"""Relay programs for the numerics tests (test_numerics.py) and docs/cli.md's examples.

    lstm_text(steps=35, hidden=32, features=16)   an unrolled LSTM: per step
        gates = dense(x_t, W_ih) + dense(h, W_hh) + b; i, f, o = sigmoid; g = tanh;
        c = f*c + i*g; h = o*tanh(c); returns h after the last step
    BATCH_NORM_TEXT                               conv2d + batch_norm + relu with every
                                                  parameter free (variances among them)
"""

from __future__ import annotations

BATCH_NORM_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 3, 3), float32], %w: Tensor[(4, 4, 1, 1), float32], %gamma: Tensor[(4), float32],
          %beta: Tensor[(4), float32], %mean: Tensor[(4), float32], %var: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0]);
  %1 = nn.batch_norm(%0, %gamma, %beta, %mean, %var);
  %2 = %1.0;
  nn.relu(%2)
}
"""


def lstm_text(steps: int = 35, hidden: int = 32, features: int = 16) -> str:
    """The unrolled LSTM as Relay text, one `%N = ...;` per expression."""
    h4 = 4 * hidden
    lines = ['#[version = "0.0.5"]',
             f"def @main(%x: Tensor[({steps}, 1, {features}), float32], %w_ih: Tensor[({h4}, {features}), float32], "
             f"%w_hh: Tensor[({h4}, {hidden}), float32], %bias: Tensor[({h4}), float32], "
             f"%h0: Tensor[(1, {hidden}), float32], %c0: Tensor[(1, {hidden}), float32]) {{"]
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
