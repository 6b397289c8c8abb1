"""FoldConstant: evaluate what is already known, as TVM's constant folder does.

Rewrites, bottom-up:

* a call of an operator whose arguments are all constants (a constant, a tuple of such,
  either possibly wrapped in `on_device`) becomes its value, computed by the reference
  interpreter with the op library's numpy semantics: a constant, or a tuple of constants
  for a tuple result.  Left alone, as TVM leaves them: calls with no arguments (folding
  `zeros(shape=...)` would only grow the module), calls of anything but an operator,
  stateful ops (`nn.dropout`, `memory.kill`, `vm.invoke_tvm_op`), non-computational ones
  (`on_device`, `call_lowered`, `memory.*`, `vm.*`), `device_copy`, qnn ops (unless
  `fold_qnn`), ops the interpreter cannot run (unknown, no compute, or rejected by their
  type relation), and every call inside a `Primitive=1` function;
* `shape_of`, `vm.shape_of` and `ndarray_size` of anything whose shape is static (a
  constant, a typed expression, or a variable annotated with a static tensor type) become
  constants, whatever the argument's value;
* `if` on a constant condition becomes the branch taken (TVM reads the condition's first
  element);
* a projection `(a, b).0` of a tuple literal becomes the field (`on_device((a, b)).0`
  becomes `on_device(a)`);
* `let %x = <constant>; body` becomes `body` with the constant in place of `%x`.
* a call whose arguments are constants some of which have unknown values (text printed
  without its metadata: `Constant` with no data) becomes an unknown constant of the call's
  type (the type InferType gave it, else the op's relation on the constants' types); not
  folded when that type is not a static tensor type or a tuple of them.

Within a budget (fold_budget.py): the PassContext option `relay.FoldConstant.max_bytes`
bounds the bytes of new constants one run creates (default 64 MiB plus twice the
module's own constants); a deferred value (below) that only the next deferred fold reads
is given back, so a weight's chain of layout steps costs what its last step keeps.  A call whose result would go over it is not evaluated at all:
it stays as it was, with a warning at it in the pass's `diagnostics`, which the build
reports.

Values computed when first read (`fold_later`, ir/deferred.py): a call of DEFERRED_OPS
(layout transforms, transposes, reshapes, Winograd's weight transform, element-wise
scaling) whose result is DEFER_BYTES or more becomes a constant of the type its
relation gives, whose value is computed, as it would be now, by the first reader of
`Constant.data`: in a build, the executable's thread while the kernels are lowered on
every core (ResNet-50: 129 folds of its weights; the serial part of a cold build 0.49 ->
0.28 CPU s, 37,000 -> 3,300 first touches of memory).

Expects: any module; types (from an earlier InferType) only let shape_of fold more.
Guarantees: no call above has all-constant arguments any more.  New constants have `ty`
None until the next InferType.  (TVM deviation: ndarray_size of a scalar folds to 1, the
op library's value, where TVM wrote 0.)

Spans: a folded constant (or tuple of constants, known or unknown) takes the
SequentialSpan of everything it replaces: the call and its constant arguments (`SIBuilder` collapse, call first).  The
branch an `if` keeps takes the SequentialSpan of the branch and the `if` (a variable,
or a branch also used elsewhere, keeps its own span: it cannot be copied).  A constant
field taken out of a tuple takes the spans of the projection, the tuple and the field.
An inlined let-bound constant keeps its own span.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import math

import numpy as np

from ...diagnostics import Diagnostic, Severity
from ...interpreter import Interpreter, InterpreterError
from ...ir.deferred import Deferred
from ...ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from ...ir.functor import ExprMutator, children, post_order
from ...ir.module import IRModule
from ...ir.types import TensorType, TupleType
from ...ops import get_op
from ...ops.relation_memo import normalized
from ...support import contiguous
from ..fold_budget import FoldBudget, max_fold_bytes, value_of
from ..infra import FunctionPass, PassContext, register_pass
from ..si_builder import SIBuilder, collect_spans

STATEFUL = {"nn.dropout", "memory.kill", "vm.invoke_tvm_op"}
NON_COMPUTATIONAL = {"on_device", "call_lowered", "memory.alloc_storage", "memory.alloc_tensor",
                     "memory.kill", "vm.shape_of", "vm.invoke_tvm_op", "vm.reshape_tensor"}
SHAPE_OPS = {"shape_of", "vm.shape_of", "ndarray_size"}  # folded from the shape alone, or not at all
NOT_FOLDED = {"device_copy", *SHAPE_OPS}
# Folded into deferred constants (fold_later) from DEFER_BYTES on: ops whose numpy compute
# cannot fail once their relation accepts the arguments, which fold weights into layouts.
DEFERRED_OPS = {"layout_transform", "transpose", "reshape", "expand_dims", "squeeze", "multiply", "add",
                "subtract", "nn.contrib_conv2d_winograd_weight_transform"}
DEFER_BYTES = 64 << 10
_NUMPY_DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64", "bool"}


# --- what counts as a constant ---------------------------------------------------------


def is_on_device(expr: Expr) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "on_device" \
        and len(expr.args) == 1


def ignoring_on_device(expr: Expr) -> Expr:
    return expr.args[0] if is_on_device(expr) else expr


def is_simple_constant(expr: Expr) -> bool:
    inner = ignoring_on_device(expr)
    return isinstance(inner, Constant) and inner.known


def is_unknown_constant(expr: Expr) -> bool:
    """A constant whose value is not known (text printed without its metadata)."""
    inner = ignoring_on_device(expr)
    if isinstance(inner, Tuple):
        return all(is_complex_constant(f) or is_unknown_constant(f) for f in inner.fields) \
            and any(is_unknown_constant(f) for f in inner.fields)
    return isinstance(inner, Constant) and not inner.known


def unknown_value(ty: Any) -> Expr | None:
    """The folded value of a call on unknown constants: an unknown constant of the call's
    type (a tuple of them for a tuple type); None when the type is not a complete tensor
    type (then the call is left alone)."""
    if isinstance(ty, TensorType) and ty.is_static:
        return Constant(None, ty=ty)
    if isinstance(ty, TupleType):
        fields = tuple(unknown_value(f) for f in ty.fields)
        return None if any(f is None for f in fields) else Tuple(fields, ty=ty)
    return None


def _constant_type(expr: Expr) -> Any:
    inner = ignoring_on_device(expr)
    if isinstance(inner, Tuple):
        fields = tuple(_constant_type(f) for f in inner.fields)
        return None if any(f is None for f in fields) else TupleType(fields)
    if isinstance(inner, Constant):
        if not inner.known:
            return inner.ty
        return TensorType(inner.shape, inner.dtype)
    return None


def _relation_type(call: Call) -> Any:
    """The type of an op call on constants by the op's relation (for a call made since the
    last InferType), or None."""
    opdef = get_op(call.op.name)
    args = [_constant_type(a) for a in call.args]
    if opdef is None or opdef.type_relation is None or any(a is None for a in args):
        return None
    try:
        attrs = opdef.normalize_attrs(call.attrs)
        return opdef.type_relation(args, attrs) if opdef.inputs is None else opdef.type_relation(*args, attrs)
    except Exception:  # noqa: BLE001 -- rejected by its relation: not folded
        return None


def is_complex_constant(expr: Expr) -> bool:
    if is_simple_constant(expr):
        return True
    inner = ignoring_on_device(expr)
    return isinstance(inner, Tuple) and all(is_complex_constant(f) for f in inner.fields)


def _stripped(expr: Expr) -> Expr:
    """A constant argument without its on_device wrappers (they do nothing to the value)."""
    inner = ignoring_on_device(expr)
    if isinstance(inner, Tuple):
        return Tuple(tuple(_stripped(f) for f in inner.fields))
    return inner


def _as_expr(value: Any) -> Expr | None:
    """An interpreter value as constants: a tensor (C-contiguous: a transpose's view is
    copied once here, aligned, not by every build that plans or keeps it), or a tuple of
    them (else None)."""
    if isinstance(value, np.ndarray):
        return Constant(contiguous(value))
    if isinstance(value, tuple):
        fields = tuple(_as_expr(v) for v in value)
        return None if any(f is None for f in fields) else Tuple(fields)
    return None


def _static_shape(expr: Expr) -> tuple[tuple[int, ...], str] | None:
    inner = ignoring_on_device(expr)
    if isinstance(inner, Constant) and inner.known:
        return inner.shape, inner.dtype
    ty = expr.ty if expr.ty is not None or not isinstance(inner, Var) else inner.type_annotation
    if isinstance(ty, TensorType) and ty.is_static:
        return tuple(int(d) for d in ty.shape), ty.dtype
    return None


# --- the rules ---------------------------------------------------------------------------


def fold_shape_op(original: Call) -> Expr | None:
    """shape_of / vm.shape_of / ndarray_size of a statically shaped argument."""
    if len(original.args) != 1:
        return None
    known = _static_shape(original.args[0])
    if known is None:
        return None
    shape, dtype = known
    try:
        stand_in = np.broadcast_to(np.zeros((), dtype), shape)  # the shape, no memory
    except TypeError:
        return None
    opdef = get_op(original.op.name)
    if opdef is None or opdef.numpy_compute is None:
        return None
    try:
        value = opdef.evaluate([stand_in], original.attrs)
    except Exception:  # noqa: BLE001 -- attributes the op rejects: leave the call
        return None
    return _as_expr(np.asarray(value))


def fold_call(call: Call, interpreter: Interpreter) -> Expr | None:
    """The value of an op call whose arguments are all constants."""
    probe = Call(call.op, tuple(_stripped(a) for a in call.args), call.attrs, call.type_args,
                 span=call.span)
    try:
        return _as_expr(interpreter.evaluate(probe))
    except InterpreterError:  # no compute, rejected by its relation, failed: not folded
        return None
    except Exception:  # noqa: BLE001 -- a bug in an op's relation must not stop the pipeline
        return None


def fold_later(call: Call) -> Expr | None:
    """`call` as a constant whose value is computed when first read (ir/deferred.py):
    an op of DEFERRED_OPS on constants, whose relation accepts them and whose result is
    a static tensor of DEFER_BYTES or more (a weight in a kernel's layout); else None,
    and the call is folded now.  The value is what `fold_call` would compute: the op's
    numpy compute, C-contiguous and aligned; arguments deferred themselves are read
    without being kept (`Deferred.transient`)."""
    opdef = get_op(call.op.name)
    if call.op.name not in DEFERRED_OPS or opdef is None or opdef.numpy_compute is None \
            or not all(is_simple_constant(a) for a in call.args):
        return None
    ty = _relation_type(call)
    if not isinstance(ty, TensorType) or not ty.is_static or ty.dtype not in _NUMPY_DTYPES:
        return None
    shape = tuple(int(d) for d in ty.shape)
    if math.prod(shape) * np.dtype(ty.dtype).itemsize < DEFER_BYTES:
        return None
    args = tuple(ignoring_on_device(a) for a in call.args)
    attrs = normalized(opdef, call.attrs)
    name, dtype = call.op.name, ty.dtype

    def compute() -> np.ndarray:
        values = [a.raw.transient() if isinstance(a.raw, Deferred) else a.data for a in args]
        with np.errstate(all="ignore"):
            out = np.asarray(opdef.numpy_compute(values, attrs) if opdef.inputs is None
                             else opdef.numpy_compute(*values, attrs))
        if out.shape != shape or str(out.dtype) != dtype:  # its relation said otherwise
            raise ValueError(f"{name}: its numpy compute made {out.dtype}{list(out.shape)}, its type "
                             f"relation {dtype}{list(shape)} (a bug in the operator library)")
        return contiguous(out)

    return Constant(Deferred(shape, dtype, name, call.attrs, args, compute))


def _budget_values(args: tuple[Expr, ...]) -> list[Any]:
    """The arguments' values as the folding budget reads them (their shapes): a deferred
    one as a stand-in of its shape and dtype, not computed."""
    stripped = [_stripped(a) for a in args]
    return [np.broadcast_to(np.zeros((), a.dtype), a.shape) if isinstance(a, Constant) and isinstance(a.raw, Deferred)
            else value_of(a) for a in stripped]


def _keeps_identity(expr: Expr) -> bool:
    """Expressions that are referred to by identity and so cannot take a new span."""
    return isinstance(expr, (Var, GlobalVar, Op, Constructor))


# --- the walker ------------------------------------------------------------------------------


class _Folder(ExprMutator):
    def __init__(self, module: IRModule, budget: FoldBudget, *, fold_qnn: bool = False,
                 fold_calls: bool = True) -> None:
        super().__init__()
        self.module = module
        self.budget = budget
        self.diagnostics: list[Diagnostic] = []
        self.fold_qnn = fold_qnn
        self.fold_calls = fold_calls  # False inside a primitive function
        self.interpreter = Interpreter(module)
        self.let_values: dict[Var, Expr] = {}
        self.root: Expr | None = None
        self._uses: dict[Expr, int] | None = None

    def fold(self, expr: Expr) -> Expr:
        self.root = expr
        return self.visit(expr)

    def children(self, expr: Expr):
        if isinstance(expr, Let):  # the value first, so its uses see what it became
            self.let_values[expr.var] = expr.value
            return (expr.value, expr.var, expr.body)
        if self.fold_calls and isinstance(expr, Function) and expr.is_primitive:
            return ()  # visit_function folds it on its own
        return children(expr)

    # lets: a constant value replaces its variable everywhere
    def visit_var(self, var: Var) -> Expr:
        value = self.let_values.get(var)
        if value is not None and value in self.memo and is_simple_constant(self.memo[value]):
            return self.memo[value]
        return var

    def visit_let(self, let: Let) -> Expr:
        if is_simple_constant(self.result(let.value)):
            return self.result(let.body)
        return self.rebuild(let)

    def visit_function(self, func: Function) -> Expr:
        if self.fold_calls and func.is_primitive:
            return _Folder(self.module, self.budget, fold_qnn=self.fold_qnn, fold_calls=False).fold(func)
        return self.rebuild(func)

    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        if not new.args:
            return original  # as TVM: folding `zeros(shape=...)` would only grow the module
        if not self.fold_calls:
            return new  # inside a primitive function (TVM returns the call as it was)
        if not isinstance(new.op, Op) or new.op.name in STATEFUL:
            return new
        name = new.op.name
        if name in SHAPE_OPS:
            folded = fold_shape_op(original)
            if folded is not None:
                return SIBuilder(original).recursively_fill_span(folded)
        if name in NON_COMPUTATIONAL or name in NOT_FOLDED:
            return new
        if name.startswith("qnn.") and not self.fold_qnn:
            return new
        if not all(is_complex_constant(a) for a in new.args):
            if all(is_complex_constant(a) or is_unknown_constant(a) for a in new.args):
                folded = unknown_value(original.ty or _relation_type(new))
                if folded is not None:
                    return SIBuilder(collect_spans(new)).recursively_fill_span(folded)
            return new
        refusal = self.budget.refusal(name, new.attrs, _budget_values(new.args))
        if refusal is not None:  # over the budget: not computed at all
            self.diagnostics.append(Diagnostic(f"FoldConstant: {refusal}", original.span, Severity.WARNING,
                                               source="FoldConstant"))
            return new
        folded = fold_later(new)
        if folded is not None:
            self._refund_intermediates(original, new, folded)
        else:
            folded = fold_call(new, self.interpreter)
        if folded is None:
            return new
        return SIBuilder(collect_spans(new)).recursively_fill_span(folded)

    def _refund_intermediates(self, original: Call, new: Call, folded: Constant) -> None:
        """`folded` is deferred: the deferred arguments this run made and nothing else
        uses are read only while it is computed (`Deferred.transient`), never kept, so
        the budget gets their cost back (fold_budget.FoldBudget.refund)."""
        self.budget.charged(folded.raw)
        for before, arg in zip(original.args, new.args):
            arg = ignoring_on_device(arg)
            if isinstance(arg, Constant) and isinstance(arg.raw, Deferred) and self._use_count(before) == 1:
                self.budget.refund(arg.raw)

    def visit_if(self, original: If) -> Expr:
        new = self.rebuild(original)
        cond = ignoring_on_device(new.cond)
        if not isinstance(cond, Constant) or cond.data is None or cond.data.size == 0:
            return new
        taken, before = (new.true_branch, original.true_branch) if cond.data.flat[0] \
            else (new.false_branch, original.false_branch)
        return self._respanned(taken, before, SIBuilder([taken.span, original.span]).create_span())

    def visit_tuple_get_item(self, original: TupleGetItem) -> Expr:
        new = self.rebuild(original)
        wrapper = new.tuple_value if is_on_device(new.tuple_value) else None
        tup = ignoring_on_device(new.tuple_value)
        if not isinstance(tup, Tuple) or not 0 <= new.index < len(tup.fields):
            return new
        field = tup.fields[new.index]
        if isinstance(field, Constant):  # a value: a copy may carry where it was taken from
            span = SIBuilder([new.span, new.tuple_value.span, tup.span, field.span]).create_span()
            field = replace(field, span=span) if span is not None else field
        return replace(wrapper, args=(field,), ty=None) if wrapper is not None else field

    def _respanned(self, new: Expr, before: Expr, span: Any) -> Expr:
        """`new` carrying `span`, when it is safe to copy: not a variable, and (unless a
        constant, which is a value) not used anywhere else."""
        if span is None or _keeps_identity(new) or new.span == span:
            return new
        if not isinstance(new, Constant) and self._use_count(before) > 1:
            return new
        return replace(new, span=span)

    def _use_count(self, expr: Expr) -> int:
        if self._uses is None:
            uses: dict[Expr, int] = {}
            for node in post_order(self.root):
                for child in children(node):
                    uses[child] = uses.get(child, 0) + 1
            self._uses = uses
        return self._uses.get(expr, 0)


@register_pass
class FoldConstant(FunctionPass):
    name = "FoldConstant"
    opt_level = 2

    def __init__(self, fold_qnn: bool = False) -> None:
        self.fold_qnn = fold_qnn
        self.diagnostics: list[Diagnostic] = []  # calls the budget kept from being folded
        self._budget = FoldBudget(0)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.diagnostics = []
        self._budget = FoldBudget(max_fold_bytes(ctx, mod))  # one budget for the whole run
        return super().run(mod, ctx)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        folder = _Folder(mod, self._budget, fold_qnn=self.fold_qnn)
        out = folder.fold(func)
        self.diagnostics += folder.diagnostics
        return out


def fold_expression(expr: Expr, mod: IRModule, ctx: PassContext) -> Expr:
    """`expr` folded on its own, as this pass folds it in place (DynamicToStatic folds the
    arguments of a dynamic call one by one, as TVM does)."""
    return _Folder(mod, FoldBudget(max_fold_bytes(ctx, mod))).fold(expr)
