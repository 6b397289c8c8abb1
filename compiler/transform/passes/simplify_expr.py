"""SimplifyExpr: small algebraic and layout simplifications, as TVM's SimplifyExpr.

Rewrites, one named rule each (simplify_expr_rules.py), tried in TVM's order at every
call until none applies:

* ConcretizeLike: `zeros_like(y)`, `ones_like`, `full_like`, `reshape_like`,
  `broadcast_to_like` with a static result type -> `zeros(shape=..)` and kin;
* SimplifyAdd: `x + x` -> `x * 2`;  SimplifyRSqrt: `n / sqrt(x)` -> `n * rsqrt(x)`;
* EliminateIdentity: `x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`, `x / 1` -> `x`, only
  when the call has x's type (a 0/1 that broadcasts x to a larger shape, or another
  dtype, stays);
* SimplifyReshape: consecutive reshapes -> one reshape to the static result shape;
* SimplifyTranspose / SimplifyNoOpTranspose: consecutive transposes (or permuting
  layout_transforms) compose into one transpose; an identity permutation disappears;
* SimplifySameCast: a cast to x's own dtype -> x;  SimplifyConsecutiveCast:
  `cast(cast(x, D1), D2)` -> `cast(x, D2)` when the first cast loses nothing;
* FullElementwise: `op(x, full(c))` -> `op(x, c)` for broadcasting ops;
* SwitchAddMultiply: `(x + c1) * c2` -> `x * c2 + c1 * c2`; SimplifyAdjacentMultiplyOrAdd:
  `(x * c1) * c2` -> `x * (c1 * c2)`, the same for add (constants folded);
* SimplifyClipAndConsecutiveCast: casts after a clip that keep every clipped value go;
  SimplifyClip: a clip whose bounds hold the whole dtype goes.

Not done (TVM has them): SimplifyBinomial, the dequantize-then-arg* rules (no qnn ops
here), rank-changing layout_transform folding in SimplifyTranspose, concretizing
collapse_sum_like and cast_like.  Where TVM's rule changes values we are stricter (see
`is_lossless_cast` and SimplifyClipAndConsecutiveCast); `x + 0` still turns -0.0 into x,
as in TVM.

Expects: typed input (required: InferType); a call without a type is left alone.
Guarantees: the result has the same type and, up to float rounding of the folded
constants and rsqrt, the same values.  Every rewrite keeps the call's type (the walker
refuses a rule whose replacement types differently); new nodes carry the type their
op's relation gives.

Spans: the expression that replaces a matched pattern takes the SequentialSpan of every
expression of the pattern, root first (`SIBuilder(root, inputs).create_span()`): the
transpose made from `transpose(transpose(x))` carries both transposes' spans.  Other new
nodes take the span of the node they stand for (the rsqrt, the sqrt's; a folded constant,
its constants').  When the result is an expression that already exists (`x * 1` -> `x`),
x keeps its own span and the removed call's origins are gone: TVM cannot record this
either (its rewrite returns x itself), and we do not write the multiply's origin onto x,
which may be shared and did not come from it.  The pass snapshots before and after are
where such a removal shows.
"""

from __future__ import annotations

from ...ir.expr import Call, Expr, Function
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ...ops import get_op
from ..infra import FunctionPass, PassContext, register_pass
from .simplify_expr_rules import RULES, Rule, op_name, same_type

MAX_REWRITES_PER_CALL = 32  # guards: the rules shrink the graph, so a few always suffice
MAX_ROUNDS = 10


class Simplifier(ExprMutator):
    """Rebuilds bottom-up; at each call, applies the first rule that fires, then tries
    again on the result until no rule fires."""

    def __init__(self, rules: tuple[Rule, ...] = RULES) -> None:
        super().__init__()
        self.by_op: dict[str, list[Rule]] = {}
        self.any_op: list[Rule] = []
        for rule in rules:
            for name in rule.ops:
                self.by_op.setdefault(name, []).append(rule)
            if not rule.ops:
                self.any_op.append(rule)
        self.fired: dict[str, int] = {}  # rule name -> times applied (for tests and stats)

    def visit_call(self, call: Call) -> Expr:
        expr: Expr = self.rebuild(call)
        for _ in range(MAX_REWRITES_PER_CALL):
            if not isinstance(expr, Call):
                break
            out = self.rewrite_once(expr)
            if out is None:
                break
            expr = out
        return expr

    def rewrite_once(self, call: Call) -> Expr | None:
        name = op_name(call)
        if name is None or call.ty is None:
            return None
        opdef = get_op(name)
        if opdef is not None and opdef.inputs is not None and len(call.args) != len(opdef.inputs):
            return None
        for rule in (*self.by_op.get(name, ()), *self.any_op):
            out = rule.rewrite(call)
            if out is None or out is call or not same_type(out.ty, call.ty):
                continue
            self.fired[type(rule).__name__] = self.fired.get(type(rule).__name__, 0) + 1
            return out
        return None


@register_pass
class SimplifyExpr(FunctionPass):
    name = "SimplifyExpr"
    opt_level = 0
    required = ("InferType",)

    def __init__(self, rules: tuple[Rule, ...] = RULES) -> None:
        self.rules = rules
        self.fired: dict[str, int] = {}

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.fired = {}
        return super().run(mod, ctx)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        # A rule may build new calls below its result (SwitchAddMultiply's x * c2) that
        # another rule could simplify: walk again until a walk changes nothing, as TVM
        # repeats its rewrites until a fixed point.
        for _ in range(MAX_ROUNDS):
            simplifier = Simplifier(self.rules)
            out = simplifier.visit(func)
            for rule, n in simplifier.fired.items():
                self.fired[rule] = self.fired.get(rule, 0) + n
            if out is func:
                break
            func = out
        return func
