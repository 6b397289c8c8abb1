"""Recurrent layers: LSTM, GRU and RNN, unrolled over the sequence as TVM's frontend
unrolls them (Relay has no recurrent op): one cell of ordinary ops per time step and
direction, every expression with the node's span.

For each direction d, the input's products with W[d] are one `nn.dense` over the whole
sequence (seq x batch rows), plus both biases; each step then takes its rows (`take`),
adds `nn.dense(h, R[d])` and applies the cell (gates split along axis 1, in ONNX's
orders: LSTM i, o, f, c; GRU z, r, h).  The reverse direction walks the steps backwards
and writes its outputs back in time order.  Y stacks the steps' h (seq, directions,
batch, hidden; layout=1 puts batch first), Y_h and Y_c the last ones.  With the weights
initializers, FoldConstant folds the per-direction slices of W, R and B.

Supported as ONNX defines them: bidirectional, initial_h / initial_c, LSTM peepholes P
and input_forget, GRU linear_before_reset, clip (applied to the gates' inputs, not to
the cell state LSTM's h reads, as onnxruntime applies it),
layout (opset 14), and the activations Sigmoid, Tanh, Relu, HardSigmoid, LeakyRelu,
ThresholdedRelu, ScaledTanh, Affine, Elu, Softsign and Softplus with their
activation_alpha / activation_beta (consumed in order by the activations that take
them, defaults where the list runs out, as onnxruntime reads them).  sequence_lens is
accepted when every length is the whole sequence (shorter sequences would need a mask
per step); the sequence length must be known before run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...ir.expr import Expr
from .builder import call, const, dtype, item, make_tuple, scalar, static_shape
from .context import NodeContext
from .convert_activation import elu, hard_sigmoid, leaky_relu, softplus, softsign, thresholded_relu
from .errors import NodeError
from .registry import converter

Activation = Callable[[Expr], Expr]


def _scaled(f: Callable[[Expr], Expr], alpha: float, beta: float) -> Activation:
    return lambda x: call("multiply", scalar(alpha, x), f(call("multiply", x, scalar(beta, x))))


# name -> (defaults of (alpha, beta) it takes, the function given them); convert_activation.py's
ACTIVATIONS: dict[str, tuple[tuple[float, ...], Callable[..., Activation]]] = {
    "Sigmoid": ((), lambda: lambda x: call("sigmoid", x)),
    "Tanh": ((), lambda: lambda x: call("tanh", x)),
    "Relu": ((), lambda: lambda x: call("nn.relu", x)),
    "Softsign": ((), lambda: softsign),
    "Softplus": ((), lambda: softplus),
    "LeakyRelu": ((0.01,), lambda a: lambda x: leaky_relu(x, a)),
    "ThresholdedRelu": ((1.0,), lambda a: lambda x: thresholded_relu(x, a)),
    "Elu": ((1.0,), lambda a: lambda x: elu(x, a)),
    "HardSigmoid": ((0.2, 0.5), lambda a, b: lambda x: hard_sigmoid(x, a, b)),
    "Affine": ((1.0, 0.0), lambda a, b: lambda x: call("add", call("multiply", x, scalar(a, x)), scalar(b, x))),
    "ScaledTanh": ((1.0, 1.0), lambda a, b: _scaled(lambda y: call("tanh", y), a, b)),
}


@dataclass(frozen=True)
class Kind:
    gates: int
    defaults: tuple[str, ...]  # the activations of one direction


KINDS = {"LSTM": Kind(4, ("Sigmoid", "Tanh", "Tanh")), "GRU": Kind(3, ("Sigmoid", "Tanh")),
         "RNN": Kind(1, ("Tanh",))}


def _activations(ctx: NodeContext, kind: Kind, directions: int) -> list[list[Activation]]:
    """One list of the cell's functions per direction."""
    names = list(ctx.attrs.strings("activations", ()))
    per = len(kind.defaults)
    if not names:
        names = list(kind.defaults) * directions
    if len(names) != per * directions:
        raise NodeError(f"activations lists {len(names)} functions; {ctx.op_type} with {directions} "
                        f"direction(s) takes {per * directions}")
    alphas = list(ctx.attrs.floats("activation_alpha", ()))
    betas = list(ctx.attrs.floats("activation_beta", ()))
    made: list[Activation] = []
    for name in names:
        found = next((v for k, v in ACTIVATIONS.items() if k.lower() == name.lower()), None)
        if found is None:
            raise NodeError(f"activation {name} is not supported ({', '.join(ACTIVATIONS)})")
        defaults, make = found
        args = []
        for k, default in enumerate(defaults):
            given = alphas if k == 0 else betas
            args.append(given.pop(0) if given else default)
        made.append(make(*args))
    return [made[d * per:(d + 1) * per] for d in range(directions)]


def _direction(ctx: NodeContext, d: int, k: int) -> Expr | None:
    """Input k's slice for direction d (the first axis dropped), or None when absent."""
    value = ctx.optional(k)
    return None if value is None else call("take", value, const(d, "int32"), axis=0)


def _clipped(f: Activation, clip: float | None) -> Activation:
    if clip is None:
        return f
    return lambda x: f(call("clip", x, a_min=-clip, a_max=clip))


@converter("LSTM", "GRU", "RNN")
def _(ctx: NodeContext) -> list[Expr | None]:
    kind = KINDS[ctx.op_type]
    x = ctx.input(0)
    if ctx.attrs.int("layout", 0):
        x = call("transpose", x, axes=(1, 0, 2))
    seq, batch, _ = static_shape(x, "the input X")
    hidden = ctx.attrs.int("hidden_size", None) or static_shape(ctx.input(2), "R")[-1]
    direction = ctx.attrs.string("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise NodeError(f"direction={direction} is not supported (forward, reverse or bidirectional)")
    directions = 2 if direction == "bidirectional" else 1
    _check_lengths(ctx, seq)
    clip = ctx.attrs.float("clip", None)
    functions = _activations(ctx, kind, directions)
    ys, hs, cs = [], [], []
    for d in range(directions):
        backward = direction == "reverse" or d == 1
        gates = [_clipped(f, clip) for f in functions[d]]
        if ctx.op_type == "LSTM":
            gates[2] = functions[d][2]  # h(C_t): the cell state is not clipped (onnxruntime's reading)
        h_steps, h, c = _unroll(ctx, kind, d, x, seq, batch, hidden, backward, gates)
        ys.append(call("stack", make_tuple(h_steps), axis=0))
        hs.append(h)
        cs.append(c)
    y = call("stack", make_tuple(ys), axis=1)  # (seq, directions, batch, hidden)
    y_h = call("stack", make_tuple(hs), axis=0)
    y_c = call("stack", make_tuple(cs), axis=0) if ctx.op_type == "LSTM" else None
    if ctx.attrs.int("layout", 0):
        y = call("transpose", y, axes=(2, 0, 1, 3))
        y_h = call("transpose", y_h, axes=(1, 0, 2))
        y_c = None if y_c is None else call("transpose", y_c, axes=(1, 0, 2))
    outs = [y, y_h, y_c][:3 if ctx.op_type == "LSTM" else 2]
    return [o if ctx.wants(k) else None for k, o in enumerate(outs)]


def _check_lengths(ctx: NodeContext, seq: int) -> None:
    lengths = ctx.maybe_value(4, "sequence_lens")
    if lengths is not None and not np.all(lengths == seq):
        raise NodeError(f"sequence_lens {lengths.tolist()} shorter than the sequence ({seq}) are not "
                        f"supported: every length must be the whole sequence")


def _unroll(ctx: NodeContext, kind: Kind, d: int, x: Expr, seq: int, batch: int, hidden: int,
            backward: bool, functions: list[Activation]) -> tuple[list[Expr], Expr, Expr | None]:
    """The steps' h in time order, and the last h and c of direction d."""
    gates = kind.gates
    w, r = _direction(ctx, d, 1), _direction(ctx, d, 2)
    b = _direction(ctx, d, 3)
    rows = call("reshape", x, newshape=(seq * batch, -1))
    xw = call("nn.dense", rows, w, units=gates * hidden)
    r_bias = None  # R's biases, when they cannot join W's (GRU's h gate under linear_before_reset)
    if b is not None:
        parts = call("split", b, indices_or_sections=2, axis=0)
        w_bias, r_bias = item(parts, 0), item(parts, 1)
        xw = call("add", xw, w_bias)
        if not (ctx.op_type == "GRU" and ctx.attrs.int("linear_before_reset", 0)):
            xw, r_bias = call("add", xw, r_bias), None
    xw = call("reshape", xw, newshape=(seq, batch, gates * hidden))
    h = _direction(ctx, d, 5)
    h = call("zeros", shape=(batch, hidden), dtype=dtype(x)) if h is None else h
    c = None
    if ctx.op_type == "LSTM":
        c = _direction(ctx, d, 6)
        c = call("zeros", shape=(batch, hidden), dtype=dtype(x)) if c is None else c
    steps = range(seq - 1, -1, -1) if backward else range(seq)
    outs: dict[int, Expr] = {}
    for t in steps:
        xt = call("take", xw, const(t, "int32"), axis=0)  # (batch, gates * hidden)
        if ctx.op_type == "LSTM":
            h, c = _lstm_cell(ctx, d, xt, h, c, r, hidden, functions)
        elif ctx.op_type == "GRU":
            h = _gru_cell(ctx, xt, h, r, r_bias, hidden, functions)
        else:
            h = functions[0](call("add", xt, call("nn.dense", h, r, units=hidden)))
        outs[t] = h
    return [outs[t] for t in range(seq)], h, c


def _lstm_cell(ctx: NodeContext, d: int, xt: Expr, h: Expr, c: Expr, r: Expr, hidden: int,
               functions: list[Activation]) -> tuple[Expr, Expr]:
    f, g, act_h = functions
    z = call("add", xt, call("nn.dense", h, r, units=4 * hidden))
    parts = call("split", z, indices_or_sections=4, axis=1)
    i_in, o_in, f_in, c_in = (item(parts, k) for k in range(4))
    p = _direction(ctx, d, 7)
    peep = None
    if p is not None:
        pieces = call("split", p, indices_or_sections=3, axis=0)
        peep = [item(pieces, k) for k in range(3)]  # i, o, f
        i_in = call("add", i_in, call("multiply", peep[0], c))
        f_in = call("add", f_in, call("multiply", peep[2], c))
    i = f(i_in)
    forget = call("subtract", scalar(1, i), i) if ctx.attrs.int("input_forget", 0) else f(f_in)
    c_new = call("add", call("multiply", forget, c), call("multiply", i, g(c_in)))
    if peep is not None:
        o_in = call("add", o_in, call("multiply", peep[1], c_new))
    h_new = call("multiply", f(o_in), act_h(c_new))
    return h_new, c_new


def _gru_cell(ctx: NodeContext, xt: Expr, h: Expr, r: Expr, r_bias: Expr | None, hidden: int,
              functions: list[Activation]) -> Expr:
    """r_bias is given only under linear_before_reset, where h's part multiplies by the reset
    gate (the other biases are in xt already)."""
    f, g = functions
    pieces = call("split", xt, indices_or_sections=3, axis=1)
    xz, xr, xh = (item(pieces, k) for k in range(3))
    rs = call("split", r, indices_or_sections=3, axis=0)
    r_zr = call("concatenate", make_tuple([item(rs, 0), item(rs, 1)]), axis=0)
    r_h = item(rs, 2)
    hzr = call("nn.dense", h, r_zr, units=2 * hidden)
    if r_bias is not None:
        bs = call("split", r_bias, indices_or_sections=3, axis=0)
        hzr = call("add", hzr, call("concatenate", make_tuple([item(bs, 0), item(bs, 1)]), axis=0))
    hz_hr = call("split", hzr, indices_or_sections=2, axis=1)
    z = f(call("add", xz, item(hz_hr, 0)))
    reset = f(call("add", xr, item(hz_hr, 1)))
    if ctx.attrs.int("linear_before_reset", 0):
        hr = call("nn.dense", h, r_h, units=hidden)
        if r_bias is not None:
            hr = call("add", hr, item(bs, 2))
        hh = call("multiply", reset, hr)
    else:
        hh = call("nn.dense", call("multiply", reset, h), r_h, units=hidden)
    candidate = g(call("add", xh, hh))
    return call("add", call("multiply", call("subtract", scalar(1, z), z), candidate), call("multiply", z, h))
