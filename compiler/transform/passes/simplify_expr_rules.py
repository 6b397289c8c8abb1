"""The rewrite rules of SimplifyExpr (simplify_expr.py), one small class per rule.

Each rule looks at one call whose arguments are already simplified and typed, and
returns what replaces it, or None.  A rule builds its new nodes with their spans set
(never filling spans in place) and with the type the op's relation gives, so the next
rule can read it.  The walker rejects a replacement whose type differs from the call's.

Span conventions shared by every rule:

* the node that replaces the matched pattern takes `collapsed(entry, inputs)`, the
  SequentialSpan of every expression from the pattern's root down to its inputs
  (`SIBuilder(entry, inputs).create_span()`);
* any other new node takes the span of the old node it stands for (a folded constant:
  the spans of the constants it folds);
* a rule that answers with an existing expression (`x * 1` -> `x`) leaves that
  expression as it is, span included.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Sequence

import numpy as np

from ...ir.attrs import Attrs, FloatImm, IntImm
from ...ir.dtypes import kind_and_bits
from ...ir.expr import Call, Constant, Expr, Op, op
from ...ir.span import AnySpan, sequential
from ...ir.types import TensorType
from ...ops import get_op
from ...ops.registry import BROADCAST
from ..fold_budget import fold_cost, max_fold_bytes
from ..infra import PassContext
from ..si_builder import collect_spans

# --- looking at expressions ------------------------------------------------------------


def op_name(e: Expr) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def tensor_type(e: Expr) -> TensorType | None:
    return e.ty if isinstance(e.ty, TensorType) else None


def static_shape(t: TensorType | None) -> tuple[int, ...] | None:
    """The shape as plain ints, or None when a dimension is unknown (`?`, a size var)."""
    if t is None:
        return None
    out = []
    for d in t.shape:
        if isinstance(d, bool) or not isinstance(d, (int, IntImm)):
            return None
        out.append(int(d))
    return tuple(out)


def same_type(a: Any, b: Any) -> bool:
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        sa, sb = static_shape(a), static_shape(b)
        if sa is not None and sb is not None:
            return sa == sb and a.dtype == b.dtype
    return a is not None and a == b


def attrs_of(call: Call) -> Any:
    """The call's normalised attributes, or None when the op or its attributes are bad."""
    opdef = get_op(op_name(call) or "")
    if opdef is None:
        return None
    try:
        return opdef.normalize_attrs(call.attrs)
    except Exception:  # noqa: BLE001 -- the type checker reports bad attributes
        return None


def constant_value(e: Expr) -> float | None:
    """The value of a constant holding one number (shape () or all ones), else None."""
    if not isinstance(e, Constant) or e.data is None:
        return None
    data = np.asarray(e.data)
    if data.size != 1 or any(d != 1 for d in data.shape) or data.dtype.kind not in "iuf":
        return None
    return float(data.reshape(-1)[0])


def keeps_shape(x: Expr, other: Expr, call: Call) -> bool:
    """Whether `call(x, other)` has x's very type, so that x can stand for it: equal types,
    and either static shapes or an `other` that never broadcasts x (all dimensions 1,
    rank at most x's)."""
    tx, to = tensor_type(x), tensor_type(other)
    if tx is None or not same_type(tx, call.ty):
        return False
    if static_shape(tx) is not None:
        return True
    so = static_shape(to)
    return so is not None and len(so) <= tx.ndim and all(d == 1 for d in so)


# --- building expressions --------------------------------------------------------------


def _ir(value: Any) -> Any:
    """A Python value as the parser holds attribute values."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        return IntImm(int(value))
    if isinstance(value, float):
        return FloatImm(value)
    if isinstance(value, (tuple, list)):
        return tuple(_ir(v) for v in value)
    return value


def make_call(name: str, args: Sequence[Expr], attrs: dict[str, Any] | Attrs | None = None, *,
              span: AnySpan | None) -> Call:
    """A new call with its span, and its type when the op's relation gives one."""
    ir_attrs = attrs if isinstance(attrs, Attrs) else Attrs({k: _ir(v) for k, v in (attrs or {}).items()})
    ty = None
    opdef = get_op(name)
    if opdef is not None and all(a.ty is not None for a in args):
        try:
            ty = opdef.infer([a.ty for a in args], ir_attrs)
        except Exception:  # noqa: BLE001 -- no type: the walker then refuses the rewrite
            ty = None
    return Call(op(name), tuple(args), ir_attrs, span=span, ty=ty)


def make_constant(data: Any, dtype: str, *, span: AnySpan | None) -> Constant | None:
    info = kind_and_bits(dtype)
    if info is None or info[0] == "bfloat":
        return None
    array = np.asarray(data, dtype=dtype)
    return Constant(array, span=span, ty=TensorType(tuple(array.shape), dtype))


def fold(name: str, a: Constant, b: Constant) -> Constant | None:
    """`name(a, b)` evaluated now (TVM folds these with FoldConstantExpr); None when the
    result would be bigger than both operands and than the folding budget (fold_budget.py)."""
    if a.data is None or b.data is None or a.ty is None or b.ty is None:
        return None
    cost = fold_cost(name, Attrs(), [a.data, b.data])
    largest = max(np.asarray(a.data).nbytes, np.asarray(b.data).nbytes)
    if cost is None or cost > max(largest, max_fold_bytes(PassContext.current())):
        return None
    try:
        value = get_op(name).evaluate([np.asarray(a.data), np.asarray(b.data)])
        ty = get_op(name).infer([a.ty, b.ty])
    except Exception:  # noqa: BLE001 -- leave the pattern alone
        return None
    return Constant(np.asarray(value), span=origin(a.span, b.span), ty=ty)


def collapsed(entry: Expr, inputs: Sequence[Expr]) -> AnySpan | None:
    """Every span of the matched pattern, root to inputs (exclusive): what
    `SIBuilder(entry, inputs).create_span()` gives, also when there are no inputs."""
    return collect_spans(entry, inputs) if PassContext.current().si_builder_enabled else None


def origin(*spans: AnySpan | None) -> AnySpan | None:
    """The span of a new node standing for old ones (None with `ir.enable_si_builder` off)."""
    return sequential(*spans) if PassContext.current().si_builder_enabled else None


# --- dtypes ----------------------------------------------------------------------------

_SIGNIFICAND = {16: 11, 32: 24, 64: 53}  # IEEE binary16/32/64, implicit bit included


def dtype_range(dtype: str) -> tuple[float, float] | None:
    info = kind_and_bits(dtype)
    if info is None:
        return None
    kind, bits = info
    if kind == "int":
        return (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1) - 1)
    if kind == "uint":
        return (0.0, 2.0 ** bits - 1)
    if kind == "float" and bits in _SIGNIFICAND:
        big = float(np.finfo(f"float{bits}").max)
        return (-big, big)
    return None


def exact_integers(dtype: str) -> float | None:
    """The largest magnitude up to which a float dtype holds every integer."""
    info = kind_and_bits(dtype)
    if info is None or info[0] != "float" or info[1] not in _SIGNIFICAND:
        return None
    return 2.0 ** _SIGNIFICAND[info[1]]


def is_lossless_cast(src: str, dst: str) -> bool:
    """Whether every value of `src` is exactly a value of `dst`.

    Stricter than TVM's IsWidenCast, which also accepts int -> uint of the same width
    (negative values wrap) and int -> float whose significand is too short (int32 ->
    float32 rounds above 2**24): a cast chain through those changes values, so we keep it.
    """
    a, b = kind_and_bits(src), kind_and_bits(dst)
    if a is None or b is None:
        return False
    (ka, ba), (kb, bb) = a, b
    if "bfloat" in (ka, kb):
        return ka == kb and ba <= bb
    if ka == kb:
        return ba <= bb
    if ka == "uint" and kb == "int":
        return ba < bb
    if ka in ("int", "uint") and kb == "float":
        limit = exact_integers(dst)
        return limit is not None and 2.0 ** (ba - (ka == "int")) <= limit
    return False


def lossless_on_range(src: str, lo: float, hi: float, dst: str) -> bool:
    """Whether casting the values of `src` that lie in [lo, hi] to `dst` keeps them all."""
    if is_lossless_cast(src, dst):
        return True
    a, b = kind_and_bits(src), kind_and_bits(dst)
    rng, out = dtype_range(src), dtype_range(dst)
    if a is None or b is None or rng is None or a[0] not in ("int", "uint"):
        return False  # a float clipped to a range still has fractions a cast would drop
    lo, hi = max(lo, rng[0]), min(hi, rng[1])
    if b[0] in ("int", "uint"):
        return out is not None and out[0] <= lo and hi <= out[1]
    limit = exact_integers(dst)
    return limit is not None and max(abs(lo), abs(hi)) <= limit


# --- the rules -------------------------------------------------------------------------


class Rule:
    """One rewrite: `rewrite(call)` returns what replaces `call`, or None.

    `ops` names the operators whose calls the rule looks at (empty: every call)."""

    ops: ClassVar[tuple[str, ...]] = ()

    def rewrite(self, call: Call) -> Expr | None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__


class ConcretizeLike(Rule):
    """`zeros_like(y)` -> `zeros(shape=S, dtype=D)`, likewise ones_like, full_like,
    reshape_like, broadcast_to_like, when the result type is static (it drops the
    dependency on y)."""

    ops = ("zeros_like", "ones_like", "full_like", "reshape_like", "broadcast_to_like")

    def rewrite(self, call: Call) -> Expr | None:
        ty = tensor_type(call)
        shape = static_shape(ty)
        if shape is None or len(call.args) != (1 if op_name(call) in ("zeros_like", "ones_like") else 2):
            return None
        data = call.args[0]
        name, args, attrs = {
            "zeros_like": lambda: ("zeros", (), {"shape": shape, "dtype": ty.dtype}),
            "ones_like": lambda: ("ones", (), {"shape": shape, "dtype": ty.dtype}),
            "full_like": lambda: ("full", (call.args[1],), {"shape": shape, "dtype": ty.dtype}),
            "reshape_like": lambda: ("reshape", (data,), {"newshape": shape}),
            "broadcast_to_like": lambda: ("broadcast_to", (data,), {"shape": shape}),
        }[op_name(call)]()
        return make_call(name, args, attrs, span=collapsed(call, call.args))


class SimplifyAdd(Rule):
    """`add(x, x)` -> `multiply(x, 2)`."""

    ops = ("add",)

    def rewrite(self, call: Call) -> Expr | None:
        x, y = call.args
        ty = tensor_type(call)
        if x is not y or ty is None:
            return None
        span = collapsed(call, [x])
        two = make_constant(2, ty.dtype, span=span)
        return None if two is None else make_call("multiply", (x, two), span=span)


class SimplifyRSqrt(Rule):
    """`divide(n, sqrt(x))` -> `multiply(n, rsqrt(x))` (the rsqrt takes the sqrt's span)."""

    ops = ("divide",)

    def rewrite(self, call: Call) -> Expr | None:
        num, den = call.args
        if op_name(den) != "sqrt":
            return None
        x = den.args[0]
        rsqrt = make_call("rsqrt", (x,), span=origin(den.span))
        return make_call("multiply", (num, rsqrt), span=collapsed(call, [num, x]))


class EliminateIdentity(Rule):
    """`x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`, `x / 1` -> `x`, when the call has x's
    type (the 0 or 1 broadcasts nothing).  0 and 1 are a constant holding one number, or
    zeros/ones/zeros_like/ones_like."""

    ops = ("add", "subtract", "multiply", "divide")

    def rewrite(self, call: Call) -> Expr | None:
        name = op_name(call)
        unit = 0.0 if name in ("add", "subtract") else 1.0
        sides = (0, 1) if name in ("add", "multiply") else (0,)  # x on the left, or either
        for i in sides:
            x, other = call.args[i], call.args[1 - i]
            if self.is_unit(other, unit) and keeps_shape(x, other, call):
                return x
        return None

    @staticmethod
    def is_unit(e: Expr, unit: float) -> bool:
        name = op_name(e)
        if name is not None:
            return name in (("zeros", "zeros_like") if unit == 0.0 else ("ones", "ones_like"))
        return constant_value(e) == unit


class SimplifyReshape(Rule):
    """`reshape(reshape(x))` (or contrib_reverse_reshape) -> `reshape(x, newshape=S)`, S the
    static result shape."""

    ops = ("reshape", "contrib_reverse_reshape")

    def rewrite(self, call: Call) -> Expr | None:
        inner = call.args[0]
        shape = static_shape(tensor_type(call))
        if op_name(inner) not in self.ops or shape is None:
            return None
        x = inner.args[0]
        return make_call("reshape", (x,), {"newshape": shape}, span=collapsed(call, [x]))


def permutation(call: Call) -> list[int] | None:
    """The axes of a transpose, or of a layout_transform that only permutes (same axes,
    no blocks): result axis i is input axis perm[i]."""
    data = tensor_type(call.args[0])
    attrs = attrs_of(call)
    if data is None or attrs is None:
        return None
    n = data.ndim
    if op_name(call) == "transpose":
        if attrs.axes is None:
            return list(range(n - 1, -1, -1))
        perm = [a + n if a < 0 else a for a in attrs.axes]
        return perm if sorted(perm) == list(range(n)) else None
    src, dst = attrs.src_layout, attrs.dst_layout
    if not (src.isalpha() and src.isupper() and len(src) == n and sorted(src) == sorted(dst)):
        return None
    return [src.index(c) for c in dst]


class SimplifyTranspose(Rule):
    """`transpose(transpose(x))` (either may be a permuting layout_transform) ->
    `transpose(x, axes=composed)`, or x itself when the composition is the identity."""

    ops = ("transpose", "layout_transform")

    def rewrite(self, call: Call) -> Expr | None:
        inner = call.args[0]
        if op_name(inner) not in self.ops:
            return None
        outer_perm, inner_perm = permutation(call), permutation(inner)
        if outer_perm is None or inner_perm is None or len(outer_perm) != len(inner_perm):
            return None
        axes = [inner_perm[j] for j in outer_perm]
        x = inner.args[0]
        if axes == list(range(len(axes))):
            return x
        return make_call("transpose", (x,), {"axes": axes}, span=collapsed(call, [x]))


class SimplifyNoOpTranspose(Rule):
    """`transpose(x, axes=[0, 1, ..])` and `layout_transform(x, L, L)` -> x."""

    ops = ("transpose", "layout_transform")

    def rewrite(self, call: Call) -> Expr | None:
        attrs = attrs_of(call)
        if attrs is not None and op_name(call) == "layout_transform" and attrs.src_layout == attrs.dst_layout:
            return call.args[0]
        perm = permutation(call)
        return call.args[0] if perm is not None and perm == list(range(len(perm))) else None


class SimplifySameCast(Rule):
    """`cast(x, dtype=D)` -> x when x already has dtype D."""

    ops = ("cast",)

    def rewrite(self, call: Call) -> Expr | None:
        x = call.args[0]
        tx, ty = tensor_type(x), tensor_type(call)
        return x if tx is not None and ty is not None and tx.dtype == ty.dtype else None


class SimplifyConsecutiveCast(Rule):
    """`cast(cast(x, D1), D2)` -> `cast(x, D2)` when the first cast loses nothing
    (`is_lossless_cast`)."""

    ops = ("cast",)

    def rewrite(self, call: Call) -> Expr | None:
        inner = call.args[0]
        if op_name(inner) != "cast":
            return None
        x = inner.args[0]
        tx, t1, t2 = tensor_type(x), tensor_type(inner), tensor_type(call)
        if None in (tx, t1, t2) or not is_lossless_cast(tx.dtype, t1.dtype):
            return None
        return make_call("cast", (x,), {"dtype": t2.dtype}, span=collapsed(call, [x]))


def fill_value(e: Expr) -> tuple[Any, tuple[Expr, ...]] | None:
    """(value, inputs) of a tensor every element of which is one known number: full with
    a constant fill value, full_like, ones, ones_like, zeros, zeros_like."""
    name = op_name(e)
    if name in ("zeros", "zeros_like", "ones", "ones_like"):
        return (0 if name.startswith("zeros") else 1), e.args
    if name in ("full", "full_like"):
        fill = e.args[-1]
        if isinstance(fill, Constant) and fill.data is not None and np.ndim(fill.data) == 0:
            return np.asarray(fill.data).item(), e.args[:-1]
    return None


class FullElementwise(Rule):
    """`op(x, full(c))` -> `op(x, c)` (either side) for a broadcasting op, when the result
    has x's type: the full tensor becomes the scalar constant it is made of.  The new
    constant takes the span of the full call (and of its fill value)."""

    def rewrite(self, call: Call) -> Expr | None:
        opdef = get_op(op_name(call) or "")
        if opdef is None or opdef.pattern != BROADCAST or len(call.args) != 2:
            return None
        for i in (0, 1):
            full, x = call.args[i], call.args[1 - i]
            found = fill_value(full)
            tf = tensor_type(full)
            if found is None or tf is None or not keeps_shape(x, full, call):
                continue
            value, inputs = found
            scalar = make_constant(value, tf.dtype, span=collapsed(full, inputs))
            if scalar is None:
                continue
            args = (scalar, x) if i == 0 else (x, scalar)
            return make_call(op_name(call), args, call.attrs, span=call.span)
        return None


def _constant_operand(call: Call) -> tuple[Expr, Constant] | None:
    """(x, c) of a binary call with one constant operand c and a non-constant x."""
    a, b = call.args
    if isinstance(b, Constant) and not isinstance(a, Constant):
        return a, b
    if isinstance(a, Constant) and not isinstance(b, Constant):
        return b, a
    return None


class SwitchAddMultiply(Rule):
    """`(x + c1) * c2` -> `x * c2 + (c1 * c2)`, the product folded (the form FoldScaleAxis
    wants).  The new multiply takes the old multiply's span."""

    ops = ("multiply",)

    def rewrite(self, call: Call) -> Expr | None:
        outer = _constant_operand(call)
        if outer is None or op_name(outer[0]) != "add":
            return None
        add, c2 = outer
        inner = _constant_operand(add)
        if inner is None:
            return None
        x, c1 = inner
        folded = fold("multiply", c1, c2)
        if folded is None:
            return None
        scaled = make_call("multiply", (x, c2), span=origin(call.span))
        return make_call("add", (scaled, folded), span=collapsed(call, [x]))


class SimplifyAdjacentMultiplyOrAdd(Rule):
    """`(x * c1) * c2` -> `x * (c1 * c2)` and `(x + c1) + c2` -> `x + (c1 + c2)`, the
    constants folded."""

    ops = ("multiply", "add")

    def rewrite(self, call: Call) -> Expr | None:
        name = op_name(call)
        outer = _constant_operand(call)
        if outer is None or op_name(outer[0]) != name:
            return None
        inner = _constant_operand(outer[0])
        if inner is None:
            return None
        x, c1 = inner
        folded = fold(name, c1, outer[1])
        if folded is None:
            return None
        return make_call(name, (x, folded), span=collapsed(call, [x]))


class SimplifyClipAndConsecutiveCast(Rule):
    """`cast(..cast(clip(x, lo, hi))..)`: the casts nearest the clip that keep every value
    in [lo, hi] go; the first one that may change a value, and every cast after it, stay.
    When all go, one cast to the final dtype remains unless the clip already has it.

    TVM drops every cast whose dtype holds [lo, hi], also casts after one that changed
    values, and casts of float data to int (dropping fractions): we keep those.
    """

    ops = ("cast",)

    def rewrite(self, call: Call) -> Expr | None:
        chain = [call]  # outermost first
        while op_name(chain[-1].args[0]) == "cast":
            chain.append(chain[-1].args[0])
        clip = chain[-1].args[0]
        tclip, attrs = tensor_type(clip), None
        if op_name(clip) == "clip":
            attrs = attrs_of(clip)
        if tclip is None or attrs is None or any(tensor_type(c) is None for c in chain):
            return None
        casts = chain[::-1]  # innermost first
        drop = 0
        while drop < len(casts) and lossless_on_range(tclip.dtype, attrs.a_min, attrs.a_max,
                                                      casts[drop].ty.dtype):
            drop += 1
        if drop == 0:
            return None
        if drop == len(casts):
            if call.ty.dtype == tclip.dtype:
                return clip
            if len(casts) == 1:
                return None  # cast(clip) is already as short as it gets
            return make_call("cast", (clip,), {"dtype": call.ty.dtype}, span=collapsed(call, [clip]))
        # The lowest cast kept stands for the casts dropped below it too.
        out: Expr = replace(casts[drop], args=(clip,),
                            span=origin(*(c.span for c in reversed(casts[: drop + 1]))))
        for c in casts[drop + 1:]:
            out = replace(c, args=(out,))
        return out


class SimplifyClip(Rule):
    """`clip(x, lo, hi)` -> x when [lo, hi] holds every value of x's dtype."""

    ops = ("clip",)

    def rewrite(self, call: Call) -> Expr | None:
        ty, attrs = tensor_type(call), attrs_of(call)
        rng = dtype_range(ty.dtype) if ty is not None else None
        if rng is None or attrs is None:
            return None
        return call.args[0] if attrs.a_min <= rng[0] and attrs.a_max >= rng[1] else None


# In TVM's order: the walker tries them in turn at each call until none applies.
RULES: tuple[Rule, ...] = (
    ConcretizeLike(),
    SimplifyAdd(),
    SimplifyRSqrt(),
    EliminateIdentity(),
    SimplifyReshape(),
    SimplifyTranspose(),
    SimplifyNoOpTranspose(),
    SimplifySameCast(),
    SimplifyConsecutiveCast(),
    FullElementwise(),
    SwitchAddMultiply(),
    SimplifyAdjacentMultiplyOrAdd(),
    SimplifyClipAndConsecutiveCast(),
    SimplifyClip(),
)
