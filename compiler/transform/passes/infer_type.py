"""InferType: (re)compute the type of every expression.

Expects: any module.  Guarantees: every expression whose type can be known has it in
`ty`.  Type errors do not stop the pipeline here; they are kept on the pass
(`diagnostics`) for the driver to report.

Spans: untouched (no expression is rebuilt; types are filled in place).
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...typing import infer_types
from ..infra import ModulePass, PassContext, register_pass


@register_pass
class InferType(ModulePass):
    name = "InferType"
    opt_level = 0

    def __init__(self) -> None:
        self.diagnostics: list = []

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.diagnostics = infer_types(mod)
        return mod
