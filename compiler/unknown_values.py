"""Values for constants whose values are unknown, drawn from a seed, so that text printed
without its metadata (`meta[relay.Constant][i]` and no `#[metadata]` section) still runs.

    module, diagnostics = fill_unknown_constants(checked_module, seed=0)

The module must be typed (check.py): a constant is filled with an array of its type (its
`ty=` comment, or the type inference gave it from its use; typing/unknown_constants.py).
One whose type is still unknown cannot be filled: it is an error at the constant, and the
module comes back unchanged.  Otherwise one warning names the seed.

Values are deterministic: a function of the seed, the constant's index `i` in
`meta[relay.Constant][i]`, its type and its role, never of the order of the walk.  They are
drawn by what the constant is used as (random_data.py: weights scaled by fan-in, variances
and gammas positive near 1, means and biases small, indices within the axis they index),
so a CNN's activations stay finite.
"""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np

from .diagnostics import Diagnostic, Severity
from .ir.expr import Constant, Expr
from .ir.functor import ExprMutator
from .ir.module import IRModule
from .ir.types import TensorType
from .printer.types import print_type
from .random_data import OTHER, Role, draw, find_roles
from .typing.unknown_constants import unknown_constants


def _key(node: Expr) -> object:
    """One key per value: the metadata entry, or the node (a constant a pass made, a variable)."""
    meta = getattr(node, "meta", None)
    return meta if meta is not None else node


def draw_constant(seed: int, index: int, ty: TensorType, role: Role = OTHER) -> np.ndarray:
    """The value of unknown constant `index` of type `ty` (static) for `seed`."""
    key = zlib.crc32(f"{print_type(ty)}|{role.name}".encode())
    return draw(np.random.default_rng([seed & 0xFFFFFFFF, index, key]), ty, role)


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
    roles = find_roles(module, key=_key)
    arrays: dict[object, np.ndarray] = {}  # one array per entry, shared by its references
    values: dict[Constant, Constant] = {}
    for position, const in enumerate(unknown):
        key = _key(const)
        if key not in arrays:
            index = const.meta.index if const.meta is not None else position
            arrays[key] = draw_constant(seed, index, const.ty, roles.get(key, OTHER))
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
