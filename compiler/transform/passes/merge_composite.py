"""MergeComposite: group the expressions each pattern of a table matches into composite functions.

As TVM's pass (src/relay/transforms/merge_composite.cc): for every global function (not
an external or primitive one), the patterns of the table are applied one after the
other, in the table's order, each over the result of the one before; every match
becomes a call of a function literal with the attributes

    PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_", Composite="mynpu.conv2d_bias_relu"

(how matches are grouped, and which are dropped: patterns/partition.py).  The table comes
from the config (`relay.byoc.patterns`, `--patterns FILE`); a composite is named
`<target>.<def name>` with a target (`relay.byoc.targets`, `--target`), else by the def
name, unless the def writes `Composite="..."`.  Without a table the pass changes nothing
and says so; errors in the table are diagnostics at their place in the table's file.

Expects: typed input (required: InferType).  Guarantees: typed output; every call of the
input is either kept or inside exactly one composite function.

Spans: an expression moved into a composite keeps its span; the composite function's
span covers its expressions; the call replacing a group carries their SequentialSpan.
"""

from __future__ import annotations

import dataclasses

from ...diagnostics import Diagnostic, Severity
from ...ir.expr import Function
from ...ir.module import IRModule
from ...typing import infer_types
from ..infra import FunctionPass, PassContext, register_pass
from ..patterns import PatternTable, byoc_options, partition


@register_pass
class MergeComposite(FunctionPass):
    name = "MergeComposite"
    opt_level = 0
    required = ("InferType",)

    def __init__(self, table: PatternTable | None = None, target: str | None = None) -> None:
        self.table = table
        self.target = target
        self.diagnostics: list[Diagnostic] = []

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        opts = byoc_options(ctx)
        self.diagnostics = list(opts.diagnostics)
        self._table = self.table or opts.table
        self._target = self.target or opts.target
        if self._table is None:
            self.diagnostics.append(Diagnostic("MergeComposite has no pattern table (give --patterns FILE)",
                                               None, Severity.WARNING, source="byoc"))
            return mod
        if not self._table.ok:
            return mod
        out = super().run(mod, ctx)
        if out is not mod:
            self.diagnostics.extend(infer_types(out))
        return out

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        body = func.body
        for entry in self._table.entries:
            body = partition(entry, body, entry.composite_name(self._target))
        return func if body is func.body else dataclasses.replace(func, body=body)
