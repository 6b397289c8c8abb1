"""LLVM types and scalar operations of tensor-expression dtypes.

`reg_type` is a dtype's type in registers (bool is i1), `mem_type` in memory (bool is
i8).  `binary`, `cast` and `call` emit one scalar operation with the emitter's builder.
Integer division and remainder never trap: a zero divisor acts as 1 and `MIN / -1` wraps,
as the numpy reference does.  Float arithmetic is exact IEEE steps except in an
accumulation (`em.contract`), where a*b+c may fuse into an FMA.

`exp`, `tanh`, `erf`, `sigmoid`, `softmax_exp` (softmax's) and the fast
approximations `fast_exp`, `fast_tanh`, `fast_erf` on float32 (and float16, through
float32) are inlined as straight-line arithmetic (te/mathfuncs.py, with their error
bounds), which the loop vectoriser widens into SIMD code; on float64 they stay calls to
LLVM's intrinsics or libm (the fast ones are the exact ones there, `softmax_exp`
2^64 exp(x)).
"""

from __future__ import annotations

import functools
from typing import Any

import llvmlite.ir as ir

from ..errors import LoweringError
from ..te import expr as te
from ..te.mathfuncs import INLINED, SOFTMAX_EXP_SCALE

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

# float intrinsics that LLVM has (lowered to libm calls or instructions where needed)
# (the loop vectoriser widens these; the backend calls libm per lane where needed)
_LLVM_MATH = {"exp": "exp", "log": "log", "log2": "log2", "log10": "log10", "sqrt": "sqrt",
              "sin": "sin", "cos": "cos", "tan": "tan", "atan": "atan", "tanh": "tanh",
              "floor": "floor", "ceil": "ceil", "round": "round", "trunc": "trunc", "abs": "fabs"}
# float functions called in libm where they are not inlined; loops calling them do not
# vectorise
LIBM = ("erf",)
INLINED_DTYPES = ("float32", "float16")


def calls_libm(name: str, src: str) -> bool:
    """Whether `call` emits a libm call for intrinsic `name` on an argument of `src`."""
    return name.removeprefix("fast_") in LIBM and not (name in INLINED and src in INLINED_DTYPES)


# --------------------------------------------------------------------------- types


@functools.cache
def reg_type(dtype: str) -> ir.Type:
    """The LLVM type of a value of `dtype` in registers (bool is i1)."""
    if dtype == "float16":
        return ir.HalfType()
    if dtype == "float32":
        return ir.FloatType()
    if dtype == "float64":
        return ir.DoubleType()
    if dtype in te.INTS or dtype in te.UINTS or dtype == "bool":
        return ir.IntType(te.bits(dtype))
    raise LoweringError(f"LLVM code generation: unsupported dtype {dtype}")


def mem_type(dtype: str) -> ir.Type:
    """The LLVM type of an element of `dtype` in memory (bool is i8)."""
    return I8 if dtype == "bool" else reg_type(dtype)


def elem_bytes(dtype: str) -> int:
    return 1 if dtype == "bool" else te.bits(dtype) // 8


@functools.lru_cache(maxsize=1 << 12)
def index_constant(k: int) -> ir.Constant:
    """The i64 constant `k`, one object per value (llvmlite's constants are not changed
    once made): unrolled loops and index sums ask for the same few again and again."""
    return ir.Constant(I64, int(k))


def constant(value: Any, dtype: str) -> ir.Constant:
    typ = reg_type(dtype)
    if te.is_float(dtype):
        return ir.Constant(typ, float(value))
    if dtype == "bool":
        return ir.Constant(I1, 1 if value else 0)
    n = typ.width
    v = int(value) & ((1 << n) - 1)
    return ir.Constant(typ, v - (1 << n) if v >= 1 << (n - 1) else v)


def declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


# --------------------------------------------------------------------------- scalar operations


def _intrinsic(module: ir.Module, name: str, typ: ir.Type, arity: int = 1) -> ir.Function:
    """`llvm.<name>` on `typ`, a scalar or a vector (`llvm.maximum.v16f32`)."""
    lanes = ""
    if isinstance(typ, ir.VectorType):
        lanes = f"v{typ.count}"
        typ_name = str(typ.element)
    else:
        typ_name = str(typ)
    suffix = lanes + ({"half": "f16", "float": "f32", "double": "f64"}.get(typ_name) or typ_name)
    return declare(module, f"llvm.{name}.{suffix}", typ, [typ] * arity)


def binary(em, op: str, x: ir.Value, y: ir.Value, dtype: str, flags: tuple[str, ...] = ()) -> ir.Value:
    """`x op y` for operands of `dtype` (comparisons give i1); `flags` (`nsw`, `nuw`) for
    an integer add, sub or mul the caller knows does not wrap."""
    b = em.builder
    if te.is_float(dtype):
        return _float_binary(em, op, x, y, dtype)
    signed = te.is_signed(dtype)
    if dtype == "bool":
        op = {"add": "or", "mul": "and", "sub": "xor"}.get(op, op)
    elif signed:
        folded = _fold_signed(op, x, y)
        if folded is not None:
            return folded
    if op in ("add", "sub", "mul"):
        return {"add": b.add, "sub": b.sub, "mul": b.mul}[op](x, y, flags=flags)
    simple = {"and": b.and_, "or": b.or_, "xor": b.xor}
    if op in simple:
        return simple[op](x, y)
    if op in te.COMPARISONS:
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[op]
        return (b.icmp_signed if signed else b.icmp_unsigned)(symbol, x, y)
    if op in ("min", "max", "max_nnan"):
        cmp = (b.icmp_signed if signed else b.icmp_unsigned)("<" if op == "min" else ">", x, y)
        return b.select(cmp, x, y)
    if op in ("div", "floordiv", "floormod", "truncmod"):
        return _int_division(b, op, x, y, signed)
    if op in ("shl", "shr"):
        width = ir.Constant(x.type, x.type.width)
        too_far = b.icmp_unsigned(">=", y, width)
        if op == "shl":
            return b.select(too_far, ir.Constant(x.type, 0), b.shl(x, y))
        if signed:
            return b.ashr(x, b.select(too_far, ir.Constant(x.type, x.type.width - 1), y))
        return b.select(too_far, ir.Constant(x.type, 0), b.lshr(x, y))
    if op == "pow":
        return _int_pow(em, x, y, signed)
    raise LoweringError(f"LLVM code generation: binary op {op} on {dtype}")


CONTRACTED = {"add": lambda b: b.fadd, "sub": lambda b: b.fsub, "mul": lambda b: b.fmul}


def _float_min_max(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """min or max propagating NaN from either side: a NaN if x is NaN, else x if it is
    smaller (larger) than y, else y (so y when they compare equal: -0 and +0 are equal,
    as for numpy's comparisons; and y's NaN).  The inner select is one instruction where
    the target has one (x86 `maxps`), and against a number (relu, clip) it is the whole
    operation: y if y is greater (less), else x, NaN included; LLVM's `maximum`
    intrinsic orders -0 below +0 as well, which costs six dependent instructions on x86
    (a pooling window is a chain of them).  x's NaN is replaced by a constant NaN (its
    payload not kept): were it x, LLVM would merge the two selects into one on the `or`
    of the two compares, four instructions and three steps of latency on x86 (a branch
    when scalar: a row max's last step), not three and two (`maxps`, `cmpunordps`,
    `blendvps`).  A row max so (issue 15): softmax over 1x12x128x128 0.149 -> 0.136 ms
    (1 thread, A/B, load 6), ResNet-50's 3x3 max pool 1.09 -> 1.03."""
    symbol = "<" if op == "min" else ">"
    if isinstance(x, ir.Constant) and not isinstance(y, ir.Constant):
        x, y = y, x
    if isinstance(y, ir.Constant) and y.constant == y.constant:  # a number: only x can be NaN
        return b.select(b.fcmp_ordered(symbol, y, x), y, x)  # one maxps (minps) with y first
    better = b.select(b.fcmp_ordered(symbol, x, y), x, y)
    return b.select(b.fcmp_unordered("uno", x, x), ir.Constant(x.type, float("nan")), better)


def _float_binary(em, op: str, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    b = em.builder
    if op in CONTRACTED:
        return CONTRACTED[op](b)(x, y, flags=("contract",) if em.contract else ())
    simple = {"div": b.fdiv, "truncmod": b.frem}
    if op in simple:
        return simple[op](x, y)
    if op in te.COMPARISONS:
        if op == "ne":
            return b.fcmp_unordered("!=", x, y)
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=="}[op]
        return b.fcmp_ordered(symbol, x, y)
    if op in ("min", "max"):
        return _float_min_max(b, op, x, y)
    if op == "max_nnan":  # te/expr.py: one maxps, NaN not looked for
        return b.select(b.fcmp_ordered(">", x, y), x, y)
    if op == "pow":
        exponent = _small_whole(y)
        if exponent is not None:
            return _float_pow_by_multiplying(b, x, exponent)
        return b.call(_intrinsic(em.module, "pow", x.type, 2), [x, y])
    if op == "floordiv":
        return b.call(_intrinsic(em.module, "floor", x.type), [b.fdiv(x, y)])
    if op == "floormod":
        r = b.frem(x, y)
        zero = ir.Constant(x.type, 0.0)
        wrong_sign = b.and_(b.fcmp_ordered("!=", r, zero),
                            b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", y, zero)))
        return b.select(wrong_sign, b.fadd(r, y), r)
    raise LoweringError(f"LLVM code generation: binary op {op} on {dtype}")


def _small_whole(y: ir.Value) -> int | None:
    """The exponent 1, 2, 3 or 4 when `y` is that constant (a scalar, or a vector of it)."""
    if not isinstance(y, ir.Constant):
        return None
    value = y.constant
    if isinstance(value, (list, tuple)):
        values = {getattr(v, "constant", v) for v in value}
        value = values.pop() if len(values) == 1 else None
    return int(value) if isinstance(value, float) and value in (1.0, 2.0, 3.0, 4.0) else None


def _float_pow_by_multiplying(b: ir.IRBuilder, x: ir.Value, n: int) -> ir.Value:
    """x ** n for n in 1..4 as products (GPT-2's `x ** 3` in GELU): a libm or vector pow
    call per element otherwise, 16 scalar calls for a 16-lane vector.  x*x is pow's
    correctly rounded result; x*x*x and (x*x)*(x*x) round twice, within 2 ulp of numpy's;
    signs, zeros, infinities and NaN come out as pow's."""
    if n == 1:
        return x
    square = b.fmul(x, x)
    return {2: square, 3: b.fmul(square, x), 4: b.fmul(square, square)}[n]


def _fold_signed(op: str, x: ir.Value, y: ir.Value) -> ir.Value | None:
    """`x op y` on signed integers when it needs no instruction: both constants (folded
    as the instruction computes them, wrapping), or an identity (x+0, x-0, x*1, x*0, x//1,
    x%1): index arithmetic of unrolled loops is mostly that."""
    cx = x.constant if isinstance(x, ir.Constant) and isinstance(x.constant, int) else None
    cy = y.constant if isinstance(y, ir.Constant) and isinstance(y.constant, int) else None
    if cx is not None and cy is not None:
        value = _fold_constants(op, cx, cy)
        if value is None:
            return None
        if isinstance(value, bool):
            return ir.Constant(I1, int(value))
        width = x.type.width
        value &= (1 << width) - 1
        return ir.Constant(x.type, value - (1 << width) if value >= 1 << (width - 1) else value)
    if op == "add" and cx == 0 or op == "mul" and cx == 1:
        return y
    if op in ("add", "sub") and cy == 0 or op in ("mul", "div", "floordiv") and cy == 1:
        return x
    if op == "mul" and (cx == 0 or cy == 0) or op in ("floormod", "truncmod") and cy == 1:
        return ir.Constant(x.type, 0)
    return None


def _fold_constants(op: str, a: int, b: int) -> int | bool | None:
    """`a op b` for the operations `binary` folds (None for the others); division as
    `_int_division` defines it for a zero or -1 divisor."""
    if op in ("div", "floordiv", "floormod", "truncmod"):
        if b == 0:
            return a if op in ("div", "floordiv") else 0
        if b == -1:
            return -a if op in ("div", "floordiv") else 0
        trunc_q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return {"div": trunc_q, "truncmod": a - trunc_q * b, "floordiv": a // b, "floormod": a % b}[op]
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "and": lambda: a & b,
            "or": lambda: a | b, "xor": lambda: a ^ b, "min": lambda: min(a, b), "max": lambda: max(a, b),
            "lt": lambda: a < b, "le": lambda: a <= b, "gt": lambda: a > b, "ge": lambda: a >= b,
            "eq": lambda: a == b, "ne": lambda: a != b}.get(op, lambda: None)()


def _int_division(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    """Truncating/floor division and remainders that never trap: divisor 0 acts as 1
    (quotient x, remainder 0); signed `x / -1` is the wrapped negation.  A constant
    divisor other than 0 and -1 needs no guard."""
    typ = x.type
    zero, one = ir.Constant(typ, 0), ir.Constant(typ, 1)
    if isinstance(y, ir.Constant) and isinstance(y.constant, int) and y.constant not in (0, -1):
        return _constant_division(b, op, x, y, signed)
    if not signed:
        safe = b.select(b.icmp_unsigned("==", y, zero), one, y)
        return b.udiv(x, safe) if op in ("div", "floordiv") else b.urem(x, safe)
    minus_one = b.icmp_signed("==", y, ir.Constant(typ, -1))
    safe = b.select(b.or_(b.icmp_signed("==", y, zero), minus_one), one, y)
    q, r = b.sdiv(x, safe), b.srem(x, safe)
    if op in ("floordiv", "floormod"):
        adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, safe), zero))
        if op == "floordiv":
            q = b.select(adjust, b.sub(q, one), q)
        else:
            r = b.select(adjust, b.add(r, safe), r)
    if op in ("div", "floordiv"):
        return b.select(minus_one, b.sub(zero, x), q)
    return b.select(minus_one, zero, r)


def _constant_division(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    """`_int_division` by a constant that is neither 0 nor -1 (nothing can trap)."""
    if not signed:
        return b.udiv(x, y) if op in ("div", "floordiv") else b.urem(x, y)
    if op == "div":
        return b.sdiv(x, y)
    r = b.srem(x, y)
    if op == "truncmod":
        return r
    zero = ir.Constant(x.type, 0)
    # the remainder has the divisor's sign after adjusting: it differs when r != 0 and signs differ
    adjust = b.icmp_signed("<" if y.constant > 0 else ">", r, zero)
    if op == "floormod":
        return b.select(adjust, b.add(r, y), r)
    q = b.sdiv(x, y)
    return b.select(adjust, b.sub(q, ir.Constant(x.type, 1)), q)


def _int_pow(em, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    """x ** y by repeated squaring (wrapping); a negative exponent gives the truncated
    reciprocal (1 for x = 1, ±1 for x = -1, else 0)."""
    b, typ = em.builder, x.type
    zero, one = ir.Constant(typ, 0), ir.Constant(typ, 1)
    exponent = b.select(b.icmp_signed("<", y, zero), zero, y) if signed else y
    pre = b.block
    header = em.fn.append_basic_block("pow.loop")
    done = em.fn.append_basic_block("pow.end")
    b.branch(header)
    b.position_at_end(header)
    result, base, e = b.phi(typ), b.phi(typ), b.phi(typ)
    odd = b.icmp_unsigned("!=", b.and_(e, one), zero)
    result2 = b.select(odd, b.mul(result, base), result)
    base2 = b.mul(base, base)
    e2 = b.lshr(e, one)
    b.cbranch(b.icmp_unsigned("!=", e2, zero), header, done)
    for phi, start, step in ((result, one, result2), (base, x, base2), (e, exponent, e2)):
        phi.add_incoming(start, pre)
        phi.add_incoming(step, header)
    b.position_at_end(done)
    # e = 0 runs the loop once with an even exponent: result stays 1
    value = result2
    if signed:
        is_one = b.icmp_signed("==", x, one)
        is_minus_one = b.icmp_signed("==", x, ir.Constant(typ, -1))
        odd_y = b.icmp_unsigned("!=", b.and_(y, one), zero)
        reciprocal = b.select(is_one, one, b.select(is_minus_one, b.select(odd_y, ir.Constant(typ, -1), one), zero))
        value = b.select(b.icmp_signed("<", y, zero), reciprocal, value)
    return value


def cast(b: ir.IRBuilder, x: ir.Value, src: str, dst: str) -> ir.Value:
    """`x` of `src` as `dst`; `x` may be a vector (then so is the result)."""
    if src == dst:
        return x
    to = reg_type(dst)
    if isinstance(x.type, ir.VectorType):
        if dst == "bool" or src == "bool":
            raise LoweringError(f"LLVM code generation: a vector cast from {src} to {dst}")
        to = ir.VectorType(to, x.type.count)
    if dst == "bool":
        if te.is_float(src):
            return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if te.is_float(src) and te.is_float(dst):
        return b.fpext(x, to) if te.bits(dst) > te.bits(src) else b.fptrunc(x, to)
    if te.is_float(src):
        return b.fptosi(x, to) if te.is_signed(dst) else b.fptoui(x, to)
    if te.is_float(dst):
        return b.sitofp(x, to) if te.is_signed(src) else b.uitofp(x, to)
    if te.bits(dst) < te.bits(src):
        return b.trunc(x, to)
    if te.bits(dst) > te.bits(src):
        return b.sext(x, to) if te.is_signed(src) else b.zext(x, to)
    return x


def call(em, name: str, args: list[ir.Value], src: str, dtype: str) -> ir.Value:
    """A math intrinsic on an argument of dtype `src`, giving `dtype`."""
    b, x = em.builder, args[0]
    if name == "fma":
        return b.call(_intrinsic(em.module, "fma", x.type, 3), args)
    if name == "reinterpret":
        return b.bitcast(x, reg_type(dtype))
    if name == "not":
        return b.not_(x)
    if name == "neg":
        return b.fneg(x) if te.is_float(src) else b.sub(ir.Constant(x.type, 0), x)
    if name in ("isnan", "isinf", "isfinite"):
        if not te.is_float(src):
            return ir.Constant(I1, 1 if name == "isfinite" else 0)
        if name == "isnan":
            return b.fcmp_unordered("uno", x, x)
        magnitude = b.call(_intrinsic(em.module, "fabs", x.type), [x])
        inf = ir.Constant(x.type, float("inf"))
        return b.fcmp_ordered("==" if name == "isinf" else "!=", magnitude, inf)
    if not te.is_float(src):
        if name in ("floor", "ceil", "round", "trunc") or (name == "abs" and not te.is_signed(src)):
            return x
        if name == "abs":
            return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.sub(ir.Constant(x.type, 0), x), x)
        # a float function of an integer: computed in float64
        return cast(b, call(em, name, [cast(b, x, src, "float64")], "float64", "float64"), "float64", dtype)
    if name in INLINED and src in INLINED_DTYPES:
        f32 = ir.FloatType()
        y = em.inline(INLINED[name], x if src == "float32" else b.fpext(x, f32))
        return y if src == "float32" else b.fptrunc(y, x.type)
    if name.startswith("fast_"):  # float64: the exact function
        return call(em, name.removeprefix("fast_"), args, src, dtype)
    if name == "softmax_exp":  # float64: 2^64 exp(x), NaN kept
        return b.fmul(call(em, "exp", args, src, dtype), ir.Constant(x.type, SOFTMAX_EXP_SCALE))
    if name in _LLVM_MATH:
        return b.call(_intrinsic(em.module, _LLVM_MATH[name], x.type), [x])
    if name == "rsqrt":
        return b.fdiv(ir.Constant(x.type, 1.0), b.call(_intrinsic(em.module, "sqrt", x.type), [x]))
    if name == "sigmoid":
        e = b.call(_intrinsic(em.module, "exp", x.type), [b.fneg(x)])
        return b.fdiv(ir.Constant(x.type, 1.0), b.fadd(ir.Constant(x.type, 1.0), e))
    if name in LIBM and src == "float64":  # float32 and float16 are inlined above
        return b.call(declare(em.module, name, x.type, [x.type]), [x])
    raise LoweringError(f"LLVM code generation: intrinsic {name} on {src}")
