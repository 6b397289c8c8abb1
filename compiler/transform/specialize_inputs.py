"""specialize_inputs: @main's inputs with `?` dimensions take the shapes of the arrays a run
is given, so that a model exported with a dynamic batch (or image size) builds and runs
compiled for those arrays, as `relaylens import --shape` would have imported it.

    module, diagnostics = specialize_inputs(module, {"input": (2, 3, 224, 224)}, origin="--input")

Each parameter of @main named in `shapes` whose written type is a tensor with `?`
dimensions gets a new annotation with the given extents (its dtype and known extents are
the caller's to have checked: run.py's match_inputs); other names are left alone.  The
module is typed again at once, so extents that do not fit together (two inputs that share
a batch given 2 and 3; an image too small for its kernel) are one error at the first such
input's declaration, with the type error as a note at its place, and nothing is
specialised.

Spans: each new parameter keeps the old one's span, and so does every expression rebuilt
around it; @main's type is dropped (the pipeline types the module again).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from ..diagnostics import Diagnostic, Severity
from ..ir.expr import Expr, Function, Var
from ..ir.functor import ExprMutator
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..printer.types import print_type
from ..typing import infer_types

SOURCE = "inputs"


def specialize_inputs(module: IRModule, shapes: Mapping[str, tuple[int, ...]], *,
                      origin: str = "--input") -> tuple[IRModule, list[Diagnostic]]:
    """(`module` with @main's `?` dimensions of the parameters named in `shapes` fixed,
    errors); on an error the module comes back unchanged."""
    if not shapes or "main" not in module:
        return module, []
    main = module["main"]
    fixed: dict[Var, Var] = {}
    for param in main.params:
        ty = param.type_annotation
        if param.name in shapes and isinstance(ty, TensorType) and not ty.is_static:
            shape = tuple(int(d) for d in shapes[param.name])
            fixed[param] = replace(param, type_annotation=TensorType(shape, ty.dtype), ty=None)
    if not fixed:
        return module, []
    body = _Rename(fixed).visit(main.body)
    specialised = replace(main, params=tuple(fixed.get(p, p) for p in main.params), body=body, ty=None)
    out = module.with_functions({module.global_vars["main"]: specialised})
    errors = [d for d in infer_types(out) if d.is_error]
    if not errors:
        return out, []
    first = next(iter(fixed))
    given = ", ".join(f"%{p.name}: {print_type(v.type_annotation)}" for p, v in fixed.items())
    return module, [Diagnostic(
        f"the shapes {origin} gives ({given}) do not fit @main together: {errors[0].message}",
        first.span, Severity.ERROR, source=SOURCE, notes=((errors[0].span, "here, with those shapes"),))]


class _Rename(ExprMutator):
    def __init__(self, fixed: dict[Var, Var]) -> None:
        super().__init__()
        self.fixed = fixed

    def visit_var(self, var: Var) -> Expr:
        return self.fixed.get(var, var)

    def visit_function(self, func: Function) -> Expr:
        rebuilt = self.rebuild(func)
        return func if rebuilt is func else replace(rebuilt, params=func.params)
