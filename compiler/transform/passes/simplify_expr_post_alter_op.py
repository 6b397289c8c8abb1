"""SimplifyExprPostAlterOp: the clean-up rules of SimplifyExpr that TVM runs after AlterOpLayout.

TVM's `SimplifyExprPostAlterOp` (src/relay/transforms/simplify_expr.cc) is SimplifyExpr
with six of its rewrites, tried in this order at every call until none applies:

* EliminateIdentity: `x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`, `x / 1` -> `x` when the
  call has x's type;
* SimplifyReshape: consecutive reshapes -> one reshape to the static result shape;
* SimplifySameCast: a cast to x's own dtype -> x;
* SimplifyConsecutiveCast: `cast(cast(x, D1), D2)` -> `cast(x, D2)` when the first cast
  loses nothing;
* SimplifyClipAndConsecutiveCast: casts after a clip that keep every clipped value go;
* SimplifyClip: a clip whose bounds hold the whole dtype goes.

Not included, as in TVM: the like-op concretizations, SimplifyAdd, SimplifyRSqrt, the
transpose rules, FullElementwise, SwitchAddMultiply, SimplifyAdjacentMultiplyOrAdd, the
dequantize rules and SimplifyBinomial.  The rules and the walker are SimplifyExpr's own
(simplify_expr.py, simplify_expr_rules.py), so each rule behaves exactly as there,
including where it is stricter than TVM's.

Expects: typed input (required: InferType).  Guarantees: as SimplifyExpr, for these
rules: same type, same values.

Spans: as SimplifyExpr: a replacement built from a matched pattern carries the
SequentialSpan of the pattern's expressions, root first; a rewrite to an existing
expression (`x * 1` -> `x`) leaves x with its own span.
"""

from __future__ import annotations

from ..infra import register_pass
from .simplify_expr import SimplifyExpr
from .simplify_expr_rules import (
    EliminateIdentity,
    Rule,
    SimplifyClip,
    SimplifyClipAndConsecutiveCast,
    SimplifyConsecutiveCast,
    SimplifyReshape,
    SimplifySameCast,
)

POST_ALTER_OP_RULES: tuple[Rule, ...] = (
    EliminateIdentity(),
    SimplifyReshape(),
    SimplifySameCast(),
    SimplifyConsecutiveCast(),
    SimplifyClipAndConsecutiveCast(),
    SimplifyClip(),
)


@register_pass
class SimplifyExprPostAlterOp(SimplifyExpr):
    name = "SimplifyExprPostAlterOp"
    opt_level = 0
    required = ("InferType",)

    def __init__(self, rules: tuple[Rule, ...] = POST_ALTER_OP_RULES) -> None:
        super().__init__(rules)
