"""bind_params_by_name: weights given beside a model become constants of @main, as
`relay.build(mod, params=...)` does before its pipeline (TVM's `bind_params_by_name`).

    module, diagnostics = bind_params_by_name(module, {"conv1.weight": array}, origin="model.npz")

Each array named like a parameter of @main replaces every use of that parameter with one
`Constant`, and the parameter leaves @main's signature: the compiled executable then takes
only the real inputs, and FoldConstant and the passes after it see the weights.  Arrays
are checked against the parameter's written type first; a wrong shape or dtype, a name
@main has no parameter for, or a name two parameters share (TVM refuses those too) is an
error naming the parameter, both types and `origin`, and nothing is bound.  Parameters
with no array stay parameters.

Spans: the constant takes the parameter's span (where it was declared), so what the passes
make of the weight still points at the model's text.  @main's type is dropped: the
pipeline types the module again before its first pass.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Mapping

import numpy as np

from ..diagnostics import Diagnostic, Severity
from ..ir.expr import Constant, Expr, Function, Var
from ..ir.functor import ExprMutator
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..printer.types import print_type

SOURCE = "params"


def bind_params_by_name(module: IRModule, params: Mapping[str, np.ndarray], *,
                        origin: str = "params") -> tuple[IRModule, list[Diagnostic]]:
    """(`module` with @main's named parameters bound to `params`, errors); on any error the
    module comes back unchanged."""
    if not params:
        return module, []
    if "main" not in module:
        return module, [_error(f"{origin}: there is no @main to bind parameters of", None)]
    main = module["main"]
    by_name = {p.name: p for p in main.params}
    twice = [name for name, n in Counter(p.name for p in main.params).items() if n > 1 and name in params]
    errors = [_error(f"{origin}: @main has more than one parameter named %{name}", by_name[name].span)
              for name in twice]
    known = ", ".join(f"%{p.name}" for p in main.params) or "none"
    constants: dict[Var, Constant] = {}
    for name, value in params.items():
        var = by_name.get(name)
        if var is None:
            errors.append(_error(f"{origin}: {name!r} is not a parameter of @main (its parameters: {known})", None))
            continue
        array = np.asarray(value)
        given = TensorType(tuple(int(d) for d in array.shape), str(array.dtype))
        declared = var.type_annotation or var.ty
        if isinstance(declared, TensorType) and not _fits(declared, given):
            errors.append(_error(f"parameter %{name} is {print_type(declared)} but {origin} gives {print_type(given)}",
                                 var.span))
            continue
        constants[var] = Constant(array, span=var.span, ty=given)
    if errors:
        return module, errors
    bound = _Bind(constants).visit(main)
    kept = tuple(p for p in main.params if p not in constants)
    bound = replace(bound, params=kept, ty=None)
    return module.with_functions({module.global_vars["main"]: bound}), []


class _Bind(ExprMutator):
    def __init__(self, constants: dict[Var, Constant]) -> None:
        super().__init__()
        self.constants = constants

    def visit_var(self, var: Var) -> Expr:
        return self.constants.get(var, var)

    def visit_function(self, func: Function) -> Expr:
        rebuilt = self.rebuild(func)
        if rebuilt is func:
            return func
        return replace(rebuilt, params=func.params)  # a parameter is never replaced by its value


def _fits(declared: TensorType, given: TensorType) -> bool:
    """Whether an array of type `given` may stand for a parameter declared `declared`: the
    same dtype and rank, every static dimension equal (`?` takes any extent)."""
    return (declared.dtype == given.dtype and declared.ndim == given.ndim
            and all(not isinstance(d, int) or d == g for d, g in zip(declared.shape, given.shape)))


def _error(message: str, span) -> Diagnostic:
    return Diagnostic(message, span, Severity.ERROR, source=SOURCE)
