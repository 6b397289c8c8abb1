"""InferType: (re)compute the type of every expression.

Expects: any module.  Guarantees: every expression whose type can be known has it in
`ty`.  Type errors do not stop the pipeline here; they are kept on the pass
(`diagnostics`) for the driver to report.

A module whose functions and type definitions are, object for object, those of the
module the last InferType typed, with no inference anywhere since (typing_generation),
already holds exactly the types this run would write: the run is skipped and gives the
diagnostics of that one.  (Passes that change nothing are followed by the InferType the
next pass requires: half of relay.build's InferType runs.)  The op calls of a module that
did change take their result types from the relation memo of typing/infer.py when the
call's attributes and argument types are those of an earlier inference.

Spans: untouched (no expression is rebuilt; types are filled in place).
"""

from __future__ import annotations

from ...diagnostics import Diagnostic
from ...ir.module import IRModule
from ...typing import infer_types, typing_generation
from ..infra import ModulePass, PassContext, register_pass

# (generation, functions, type definitions, diagnostics) of the module typed last
_last: tuple[int, dict, dict, list[Diagnostic]] | None = None


def _already_typed(mod: IRModule) -> list[Diagnostic] | None:
    """The diagnostics of the last InferType if `mod` is what it typed and nothing typed
    anything since; else None."""
    if _last is None:
        return None
    generation, functions, types, diagnostics = _last
    if generation != typing_generation() or functions.keys() != mod.functions.keys() \
            or types.keys() != mod.type_definitions.keys():
        return None
    if any(functions[gv] is not f for gv, f in mod.functions.items()):
        return None
    if any(types[t] is not d for t, d in mod.type_definitions.items()):
        return None
    return diagnostics


@register_pass
class InferType(ModulePass):
    name = "InferType"
    opt_level = 0

    def __init__(self) -> None:
        self.diagnostics: list = []

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        global _last
        known = _already_typed(mod)
        if known is not None:
            self.diagnostics = list(known)
            return mod
        self.diagnostics = infer_types(mod)
        _last = (typing_generation(), dict(mod.functions), dict(mod.type_definitions), list(self.diagnostics))
        return mod
