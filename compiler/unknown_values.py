"""Values for constants whose values are unknown, drawn from a seed, so that text printed
without its metadata (`meta[relay.Constant][i]` and no `#[metadata]` section) still runs.

    module, diagnostics = fill_unknown_constants(checked_module, seed=0)

The module must be typed (check.py): a constant is filled with an array of its type (its
`ty=` comment, or the type inference gave it from its use; typing/unknown_constants.py).
One whose type is still unknown cannot be filled: it is an error at the constant, and the
module comes back unchanged.  Otherwise one warning names the seed.

Values are deterministic: a function of the seed, the constant's index `i` in
`meta[relay.Constant][i]` and its type, never of the order of the walk.  They are chosen to
keep a CNN's activations finite, by what the constant is used as:

  a weight (conv, dense, matmul operand 1)   normal(0, 1/sqrt(fan_in)), fan_in = size / shape[0]
  batch_norm gamma, moving_var              uniform(0.5, 1.5)  (positive: var is under a sqrt)
  any other float                           normal(0, 0.1)
  an integer                                0 or 1 (safe as an index into anything non-empty)
  a bool                                    true or false
"""

from __future__ import annotations

import math
import zlib
from dataclasses import replace

import numpy as np

from .diagnostics import Diagnostic, Severity
from .ir.expr import Call, Constant, Expr, Op
from .ir.functor import ExprMutator, children
from .ir.module import IRModule
from .ir.types import TensorType
from .printer.types import print_type
from .typing.unknown_constants import unknown_constants

WEIGHT_OPS = frozenset({"nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv1d_transpose", "nn.conv2d_transpose",
                        "nn.dense", "nn.matmul", "nn.batch_matmul"})


def _key(const: Constant) -> object:
    """One key per value: the metadata entry, or the node for a constant a pass made."""
    return const.meta if const.meta is not None else const


def _roles(module: IRModule) -> dict[object, str]:
    """What each unknown value (`_key`) is used as: "weight", "positive" or absent (other)."""
    roles: dict[object, str] = {}
    seen: set[int] = set()
    for func in module.functions.values():
        stack: list[Expr] = [func]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, Call) and isinstance(node.op, Op):
                for i, arg in enumerate(node.args):
                    if isinstance(arg, Constant) and arg.data is None:
                        if node.op.name in WEIGHT_OPS and i == 1:
                            roles.setdefault(_key(arg), "weight")
                        elif node.op.name == "nn.batch_norm" and i in (1, 4):
                            roles.setdefault(_key(arg), "positive")
            stack.extend(c for c in children(node) if isinstance(c, Expr))
    return roles


def draw(seed: int, index: int, ty: TensorType, role: str | None = None) -> np.ndarray:
    """The value of unknown constant `index` of type `ty` (static) for `seed`."""
    key = zlib.crc32(f"{print_type(ty)}|{role}".encode())
    rng = np.random.default_rng([seed & 0xFFFFFFFF, index, key])
    shape = tuple(int(d) for d in ty.shape)
    dtype = np.dtype(ty.dtype) if ty.dtype != "bool" else np.dtype(bool)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 2, shape).astype(dtype)
    if role == "positive":
        values = rng.uniform(0.5, 1.5, shape)
    elif role == "weight" and shape:
        fan_in = max(1, math.prod(shape) // max(1, shape[0]))
        values = rng.normal(0.0, 1.0 / math.sqrt(fan_in), shape)
    else:
        values = rng.normal(0.0, 0.1, shape)
    return values.astype(dtype)


def fill_unknown_constants(module: IRModule, seed: int) -> tuple[IRModule, list[Diagnostic]]:
    """`module` with every unknown constant given a value drawn from `seed` (see the module
    docstring), and the diagnostics: one warning naming the seed, or an error at each
    constant whose type is unknown (then the module is returned as it was)."""
    unknown = unknown_constants(module)
    if not unknown:
        return module, []
    errors = [Diagnostic(f"{c.meta or 'this constant'} has no value and no known type, so `run` cannot "
                         f"fill it; write its type in a /* ty=... */ comment", c.span, Severity.ERROR,
                         source="metadata")
              for c in unknown if not (isinstance(c.ty, TensorType) and c.ty.is_static)]
    if errors:
        return module, errors
    roles = _roles(module)
    arrays: dict[object, np.ndarray] = {}  # one array per entry, shared by its references
    values: dict[Constant, Constant] = {}
    for position, const in enumerate(unknown):
        key = _key(const)
        if key not in arrays:
            index = const.meta.index if const.meta is not None else position
            arrays[key] = draw(seed, index, const.ty, roles.get(key))
        values[const] = replace(const, data=arrays[key])
    filled = _Fill(values)
    new = {gv: filled.visit(func) for gv, func in module.functions.items()}
    warning = Diagnostic(f"{len(unknown)} constant{'s' * (len(unknown) != 1)} of unknown value "
                         f"filled with random values from seed {seed}: the output is not the model's",
                         unknown[0].span, Severity.WARNING, source="metadata")
    return module.with_functions(new), [warning]


class _Fill(ExprMutator):
    def __init__(self, values: dict[Constant, Constant]) -> None:
        super().__init__()
        self.values = values

    def visit_constant(self, const: Constant) -> Expr:
        return self.values.get(const, const)
