"""Element-wise unary ops (reference §7.3): math functions, rounding, predicates, clip,
cast, the `*_like` constructors and `fixed_point_multiply`.

Each rule reads its input at the output position; the semantics are those of the numpy
computes in `compiler/ops/elemwise.py` (rounding ops copy integers, `round` takes halves
away from zero).  The `fast_*` ops (what the FastMath pass makes of exp, tanh and erf)
compute TVM-style approximations on float32 and float16 (through float32), with the error
bounds of te/mathfuncs.py; on float64 they are exact.
"""

from __future__ import annotations

from .. import expr as te
from .registry import register_compute

# op -> intrinsic, for the float-only math functions
_MATH = {"sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "log": "log", "log2": "log2",
         "log10": "log10", "sqrt": "sqrt", "rsqrt": "rsqrt", "erf": "erf", "sin": "sin", "cos": "cos",
         "tan": "tan", "atan": "atan"}

_ROUNDING = ("floor", "ceil", "round", "trunc")


def _map(name: str, x: te.Tensor, fn) -> te.Tensor:
    """`fn` applied to every element of `x`."""
    return te.compute(x.shape, lambda *i: fn(x[i]), f"T_{name}")


def _intrinsic_rule(name: str, intrinsic: str) -> None:
    @register_compute(name)
    def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
        return _map(name, x, lambda v: te.intrinsic(intrinsic, v))


for _name, _intrinsic in _MATH.items():
    _intrinsic_rule(_name, _intrinsic)


def fast(name: str, v: te.PrimExpr) -> te.PrimExpr:
    """The fast approximation of intrinsic `name` ("exp", "tanh", "erf") of v (computed in
    float32 for float16; mathfuncs.py), the exact intrinsic on float64."""
    return te.intrinsic(name if v.dtype == "float64" else f"fast_{name}", v)


def _fast_rule(name: str, intrinsic: str) -> None:
    @register_compute(name)
    def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
        return _map(name, x, lambda v: fast(intrinsic, v))


for _intrinsic in ("exp", "tanh", "erf"):
    _fast_rule(f"fast_{_intrinsic}", _intrinsic)


def _rounding_rule(name: str) -> None:
    @register_compute(name)
    def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
        """Integers are already whole: a copy."""
        return _map(name, x, lambda v: te.intrinsic(name, v) if te.is_float(x.dtype) else v)


for _name in _ROUNDING:
    _rounding_rule(_name)


@register_compute("copy")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _map("copy", x, lambda v: v)


@register_compute("negative")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _map("negative", x, lambda v: te.intrinsic("neg", v))


@register_compute("abs")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """Unsigned values (and bools) are their own magnitude."""
    signed = te.is_float(x.dtype) or te.is_signed(x.dtype)
    return _map("abs", x, lambda v: te.abs(v) if signed else v)


@register_compute("sign")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """1, -1, or x itself where it is neither above nor below 0 (zero, NaN); unsigned
    values: min(x, 1)."""
    if not (te.is_float(x.dtype) or te.is_signed(x.dtype)):
        return _map("sign", x, lambda v: te.minimum(v, 1))
    return _map("sign", x, lambda v: te.select(te.gt(v, 0), 1, te.select(te.lt(v, 0), -1, v)))


def _predicate_rule(name: str, on_integers: bool) -> None:
    @register_compute(name)
    def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
        """Integers are never NaN nor infinite."""
        if te.is_float(x.dtype):
            return _map(name, x, lambda v: te.intrinsic(name, v))
        return te.compute(x.shape, lambda *i: te.const(on_integers, "bool"), f"T_{name}")


_predicate_rule("isnan", False)
_predicate_rule("isinf", False)
_predicate_rule("isfinite", True)


@register_compute("logical_not")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _map("logical_not", x, lambda v: te.intrinsic("not", v))


@register_compute("bitwise_not")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """x xor all ones: te's `not` is logical (evaluate.py), xor is bitwise on integers."""
    ones = True if x.dtype == "bool" else (-1 if te.is_signed(x.dtype) else (1 << te.bits(x.dtype)) - 1)
    return _map("bitwise_not", x, lambda v: te.binary("xor", v, te.const(ones, x.dtype)))


def _integer_bound(value: float, dtype: str) -> int:
    """A float bound for integers of `dtype`: truncated (numpy clips in float, then the
    result is cast back) and kept within the dtype's range."""
    width = te.bits(dtype)
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if te.is_signed(dtype) else (0, (1 << width) - 1)
    return int(min(max(value, lo), hi))


@register_compute("clip")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    if te.is_float(x.dtype):
        lo, hi = te.const(attrs.a_min, x.dtype), te.const(attrs.a_max, x.dtype)
    else:
        lo, hi = (te.const(_integer_bound(v, x.dtype), x.dtype) for v in (attrs.a_min, attrs.a_max))
    return _map("clip", x, lambda v: te.minimum(te.maximum(v, lo), hi))


@register_compute("cast")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _map("cast", x, lambda v: te.cast(v, attrs.dtype))


def _constant_like(name: str, value: int) -> None:
    @register_compute(name)
    def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
        return te.compute(x.shape, lambda *i: te.const(value, x.dtype), f"T_{name}")


_constant_like("zeros_like", 0)
_constant_like("ones_like", 1)


@register_compute("full_like")
def _(x: te.Tensor, fill: te.Tensor, attrs, out_type) -> te.Tensor:
    """The scalar fill converted to data's dtype."""
    return te.compute(x.shape, lambda *i: te.cast(fill[()], x.dtype), "T_full_like")


@register_compute("fixed_point_multiply")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """x * multiplier in int64, then shifted right by 31 - shift rounding to nearest (or
    left when that is negative), and cast back."""
    total = 31 - attrs.shift

    def scale(v: te.PrimExpr) -> te.PrimExpr:
        wide = te.cast(v, "int64") * attrs.multiplier
        if total > 0:
            return te.binary("shr", wide + (1 << (total - 1)), total)
        return te.binary("shl", wide, -total)

    return _map("fixed_point_multiply", x, lambda v: te.cast(scale(v), x.dtype))
