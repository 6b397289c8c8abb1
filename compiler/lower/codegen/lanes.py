"""Vectorized loops emitted as LLVM vector instructions, one instruction for all lanes.

A `vectorized` loop of W iterations (W even, from 2 to 64) whose body is straight-line
stores (unrolled loops among them: a pooling window) becomes its body once, on `<W x T>`
values, instead of a scalar loop with `llvm.loop.vectorize` metadata that O3's loop
vectoriser widens: the same code comes out, without handing LLVM a loop per register of
a tile (a blocked convolution's tile has one per accumulator), which is most of what O3
spends its time on.  ResNet-50's max pool (NCHW8c, 8 positions of a 3x3 window side by
side, each read behind a padding guard) was 72 such loops: O3 took 0.5-0.7 s on it (SLP
vectoriser and InstCombine), 0.2-0.3 s as vector code.  A width that is not a power of
two is one vector per power of two in it, largest first, lanes `first` to `first + width
- 1` each (llvm.py `_vector_pieces`, as it cuts the loops it would leave to the
vectoriser): MobileNet v2's two NCHW12c convolutions, a loop of 8 and one of 4 for each of
their accumulators, took 0.65 CPU s of LLVM each, 0.05 s as vectors of 8 and 4 (outputs
bit-identical, the kernels' run time 0.99-1.00x).

Lane by lane, with v the loop variable:

* an expression that does not use v is emitted once, as a scalar (the emitter's
  ordinary path), and broadcast where it meets a vector;
* a buffer read or write at an index `base + c*v` (c a constant, by `affine_stride`) is
  one vector load or store when c is 1, else W scalar accesses (a strided epilogue store,
  as the loop vectoriser scalarises it); the base is the index emitted with v = first;
* arithmetic, comparisons, casts and selects of vectors are the same instructions on
  vector types (scalar.py's `binary`, `cast`; min and max as its compare and select);
  shifts of int32 lanes by a constant are vector shifts, and, or and xor of integer lanes
  bitwise ones (tanh's copied sign);
* a float32 `exp`, `tanh`, `erf`, `sigmoid`, `log` or FastMath `fast_*` call is its expansion
  (te/mathfuncs.py `INLINED`, as scalar.py inlines it) emitted on vectors, in exact IEEE
  steps (no FMA contraction inside, as for the scalar expansion): the expansion is built
  of arithmetic, selects, casts and the calls `floor`, `abs`, `neg`, `isnan`,
  `reinterpret` and `fma` (its explicit fused multiply-adds), which have vector forms
  (LLVM's intrinsics on vector types, `fneg`, an unordered compare, `bitcast`);

The iterations run all at once, statement by statement: the loop vectoriser's legality
(`llvm._vectorizable`: a written buffer is read only where the same iteration writes it)
makes that the loop's result.  A select whose side reads memory (a padding guard) on a
condition that is the same on every lane is a branch, as in scalar code.  Anything
else — such a select on a condition that differs between lanes (its lanes may not be
loaded), an index not affine in v, another call (a libm one: `erf` on float64), integer
division on lanes, bool or float16 data — is left to the loop vectoriser (`lane_plan`
says None).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from ..schedule.loopnest import For, Seq, Stmt, Store
from ..te import expr as te
from ..te.mathfuncs import INLINED
from .scalar import I32, I64, binary, call, cast, elem_bytes, index_constant, mem_type, reg_type
from .decided import condition_decided

_CHILDREN = te.CHILDREN_BY_TYPE
_I32_ZERO = ir.Constant(I32, 0)

MAX_LANES = 64
LANE_DTYPES = ("float32", "float64", "int32", "int64")  # of what lanes load, store and compute
LANE_FLOAT_OPS = ("add", "sub", "mul", "div", "min", "max", "max_nnan", "lt", "le", "gt", "ge", "eq", "ne")
LANE_INT_OPS = ("add", "sub", "mul", "min", "max", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor")
LANE_SHIFTS = ("shl", "shr")  # of int32 lanes by a constant within the width
LANE_CALLS = ("floor", "abs", "neg", "isnan", "reinterpret")  # float32 calls with vector forms


@dataclass
class LanePlan:
    """A widenable loop's stores, and which of its expressions read the loop variable
    (by node id): worked out once, used each time the loop is emitted."""

    stores: list[Store]
    body: Stmt  # the loop's body: those stores, in order, and the unrolled loops around them
    uses: dict[int, bool]
    expansions: dict[int, tuple[te.Var, te.PrimExpr]]  # an inlined call's (variable, expansion), by id


def lane_plan(s: For) -> LanePlan | None:
    """The plan of `s` (a loop the loop vectoriser may widen) as vector code, or None
    when it cannot be (see the module doc)."""
    w = s.extent
    if not (2 <= w <= MAX_LANES and w % 2 == 0):
        return None
    stores = _stores(s.body)
    if stores is None:
        return None
    plan = LanePlan(stores, s.body, {}, {})
    seen: dict[int, bool] = {}
    for st in stores:
        if st.buffer.dtype not in LANE_DTYPES or affine_stride(st.index, s.var, plan.uses) in (None, 0):
            return None
        if not _supported(st.value, s.var, plan, seen):
            return None
    return plan


def _stores(body) -> list[Store] | None:
    """The stores of a straight-line body, each once (an unrolled loop's body counts once:
    its variable is not the lanes'), or None when the body has other statements."""
    if isinstance(body, Store):
        return [body]
    if isinstance(body, For) and body.kind == "unrolled":
        return _stores(body.body)
    if isinstance(body, Seq):
        found: list[Store] = []
        for one in body.stmts:
            more = _stores(one)
            if more is None:
                return None
            found += more
        return found
    return None


def uses_var(e: te.PrimExpr, var: te.Var, memo: dict[int, bool]) -> bool:
    """Whether `e` reads `var` (memoised by node id in `memo`).  A loop over the children
    read from te's table, not `any` over a generator of `te.children(e)`: called some
    240,000 times over ResNet-50's kernels, as regions end (emitted.py)."""
    found = memo.get(id(e))
    if found is None:
        found = e is var
        if not found:
            kids = _CHILDREN.get(type(e))
            if kids is not None:
                for k in kids(e):
                    if uses_var(k, var, memo):
                        found = True
                        break
        memo[id(e)] = found
    return found


def affine_stride(e: te.PrimExpr, var: te.Var, uses: dict[int, bool]) -> int | None:
    """c when integer expression `e` is `base + c*var` with `base` free of `var`, else None."""
    if not uses_var(e, var, uses):
        return 0
    if e is var:
        return 1
    if isinstance(e, te.Binary) and e.op in ("add", "sub"):
        a, b = affine_stride(e.a, var, uses), affine_stride(e.b, var, uses)
        if a is None or b is None:
            return None
        return a + b if e.op == "add" else a - b
    if isinstance(e, te.Binary) and e.op == "mul":
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, te.Const):
                c = affine_stride(x, var, uses)
                return None if c is None else c * int(y.value)
    return None


def same_expr(a: te.PrimExpr, b: te.PrimExpr) -> bool:
    """Structural equality of two expressions (variables by identity)."""
    if a is b:
        return True
    if type(a) is not type(b) or a.dtype != b.dtype or isinstance(a, (te.Var, te.IterVar)):
        return False
    if isinstance(a, te.Const):
        return a.value == b.value
    if isinstance(a, te.Binary) and a.op != b.op or isinstance(a, te.Call) and a.name != b.name \
            or isinstance(a, te.BufferLoad) and a.buffer is not b.buffer:
        return False
    kids_a, kids_b = te.children(a), te.children(b)
    return len(kids_a) == len(kids_b) and all(same_expr(x, y) for x, y in zip(kids_a, kids_b))


def _supported(e: te.PrimExpr, var: te.Var, plan: LanePlan, seen: dict[int, bool]) -> bool:
    """Whether every node of `e` that reads `var` has a vector form (see the module doc)."""
    key, uses = id(e), plan.uses
    if key in seen:
        return seen[key]
    if not uses_var(e, var, uses):
        ok = True
    elif e.dtype not in LANE_DTYPES and not (e.dtype == "bool" and isinstance(e, (te.Binary, te.Call))):
        ok = False
    elif e is var:
        ok = True
    elif isinstance(e, te.BufferLoad):
        ok = e.buffer.dtype in LANE_DTYPES and affine_stride(e.index, var, uses) not in (None, 0)
    elif isinstance(e, te.Binary):
        if e.op in LANE_SHIFTS:
            ok = e.a.dtype == "int32" and _shift_amount(e) is not None and _supported(e.a, var, plan, seen)
        else:
            ops = LANE_FLOAT_OPS if te.is_float(e.a.dtype) else LANE_INT_OPS
            ok = e.a.dtype in LANE_DTYPES and e.op in ops and \
                _supported(e.a, var, plan, seen) and _supported(e.b, var, plan, seen)
    elif isinstance(e, te.Cast):
        ok = e.value.dtype in LANE_DTYPES and _supported(e.value, var, plan, seen)
    elif isinstance(e, te.Select):
        # a side that reads memory is read only where the condition holds: lane by lane
        # that would take a masked load; a condition the same on every lane is a branch
        ok = (not uses_var(e.cond, var, uses) or not any(_reads(x) for x in (e.a, e.b))) and \
            all(_supported(x, var, plan, seen) for x in (e.cond, e.a, e.b))
    elif isinstance(e, te.Call) and len(e.args) == 1 and e.args[0].dtype == "float32":
        if e.name in INLINED and e.dtype == "float32":
            v = te.Var("v", "float32")
            body = INLINED[e.name](v)
            uses[id(v)] = True  # every node of the expansion that reads v reads the lanes
            plan.expansions[key] = (v, body)
            ok = _supported(e.args[0], var, plan, seen) and _supported(body, v, plan, seen)
        else:
            ok = e.name in LANE_CALLS and (e.name != "reinterpret" or e.dtype == "int32") and \
                _supported(e.args[0], var, plan, seen)
    elif isinstance(e, te.Call) and e.name == "fma" and e.dtype in ("float32", "float64"):
        ok = all(_supported(a, var, plan, seen) for a in e.args)
    elif isinstance(e, te.Call) and e.name == "reinterpret" and e.args[0].dtype == "int32":
        ok = e.dtype == "float32" and _supported(e.args[0], var, plan, seen)
    else:
        ok = False
    seen[key] = ok
    return ok


def _shift_amount(e: te.Binary) -> int | None:
    """The constant a shift moves its int32 lanes by, when within the width."""
    b = e.b
    if isinstance(b, te.Const) and 0 <= int(b.value) < 32:
        return int(b.value)
    return None


def _reads(e: te.PrimExpr) -> bool:
    return isinstance(e, te.BufferLoad) or any(_reads(k) for k in te.children(e))


class Lanes:
    """Emits one widenable loop through an emitter (llvm._Emitter) `em`."""

    def __init__(self, em, s: For, plan: LanePlan, first: int, width: int) -> None:
        self.em, self.var, self.plan = em, s.var, plan
        self.first, self.width = first, width  # the lanes v = first, ..., first + width - 1
        self.uses = plan.uses

    def emit(self) -> None:
        with self.em.region(rebinds=self.var):
            self.em.vars[id(self.var)] = index_constant(self.first)  # the bases: every index at the first lane
            self.statement(self.plan.body)

    def statement(self, s) -> None:
        """The loop's body in order: an unrolled loop's body once per iteration, in a region
        of its own (its variable a constant there, as the scalar emitter unrolls)."""
        em = self.em
        if isinstance(s, Seq):
            for one in s.stmts:
                self.statement(one)
        elif isinstance(s, For):
            em.bind_extent(s.var, s.extent)
            for k in range(s.extent):
                with em.region(rebinds=s.var):
                    em.vars[id(s.var)] = index_constant(k)
                    self.statement(s.body)
            em.vars.pop(id(s.var), None)
            em.extents.pop(id(s.var), None)
        else:
            with em.at(s.loc):
                self.store(s)

    def store(self, st: Store) -> None:
        em = self.em
        em.contract = em.accumulates(st)
        try:
            value = self.splat(self.value(st.value))
        finally:
            em.contract = False
        base = em.expr(st.index)
        stride = affine_stride(st.index, self.var, self.uses)
        b, align = em.builder, elem_bytes(st.buffer.dtype)
        if stride == 1:
            b.store(value, em.address(st.buffer, base), align=align)
        else:
            for k in range(self.width):
                lane = b.extract_element(value, ir.Constant(I32, k))
                b.store(lane, em.address(st.buffer, self.index(base, k * stride)), align=align)
        em.emitted.stored(st.buffer)

    def index(self, base: ir.Value, offset: int) -> ir.Value:
        if isinstance(base, ir.Constant):
            return index_constant(base.constant + offset)
        return self.em.builder.add(base, index_constant(offset)) if offset else base

    def value(self, e: te.PrimExpr) -> ir.Value:
        """`e` over every lane: a vector, or a scalar when `e` does not read the loop variable."""
        em = self.em
        if not uses_var(e, self.var, self.uses):
            return em.expr(e)
        key = self.key(e)
        found = em.emitted.get(key)
        if found is None:
            with em.at(e.loc):
                found = self._value(e)
            em.emitted.put(key, e, found, em.reads_memory(e))
        return found

    def key(self, e: te.PrimExpr) -> tuple[int, int, int, int]:
        """What the lanes of `e` are emitted under (emitted.py: the keys)."""
        return id(self.var), self.first, self.width, id(e) + self.em.contract

    def _value(self, e: te.PrimExpr) -> ir.Value:
        em, b, w = self.em, self.em.builder, self.width
        if e is self.var:
            return ir.Constant(ir.VectorType(I64, w), list(range(self.first, self.first + w)))
        if isinstance(e, te.BufferLoad):
            base = em.expr(e.index)
            stride = affine_stride(e.index, self.var, self.uses)
            typ = mem_type(e.dtype)
            if stride == 1:
                return em.load(e.buffer, base, ir.VectorType(typ, w), w)
            vector = ir.Constant(ir.VectorType(typ, w), None)
            for k in range(w):
                lane = em.load(e.buffer, self.index(base, k * stride), typ)
                vector = b.insert_element(vector, lane, ir.Constant(I32, k))
            return vector
        if isinstance(e, te.Binary) and e.op in LANE_SHIFTS:
            x = self.splat(self.value(e.a))
            amount = ir.Constant(x.type, [_shift_amount(e)] * w)
            return b.shl(x, amount) if e.op == "shl" else b.ashr(x, amount)
        if isinstance(e, te.Binary):
            x, y = self.splat(self.value(e.a)), self.splat(self.value(e.b))
            return binary(em, e.op, x, y, e.a.dtype)
        if isinstance(e, te.Call):
            return self.call(e)
        if isinstance(e, te.Cast):
            return cast(b, self.value(e.value), e.value.dtype, e.dtype)
        if isinstance(e, te.Select):
            if not uses_var(e.cond, self.var, self.uses):
                known = condition_decided(em, e.cond)  # a guard the loops' bounds decide
                if known is not None:
                    return self.value(e.a if known else e.b)
                cond = em.expr(e.cond)
                if isinstance(cond, ir.Constant):  # a constant: only its side (llvm.py `select`)
                    return self.value(e.a if cond.constant else e.b)
            if not uses_var(e.cond, self.var, self.uses) and (em.reads_memory(e.a) or em.reads_memory(e.b)):
                return self.branches(e)
            cond, x, y = self.value(e.cond), self.value(e.a), self.value(e.b)
            if any(isinstance(v.type, ir.VectorType) for v in (cond, x, y)):
                x, y = self.splat(x), self.splat(y)
            return b.select(cond, x, y)
        raise AssertionError(f"lane_plan let through {type(e).__name__}")

    def call(self, e: te.Call) -> ir.Value:
        """A float32 call on every lane: an inlined function's expansion, in exact IEEE
        steps, `fma`, or one of LANE_CALLS."""
        em, b = self.em, self.em.builder
        if e.name == "fma":
            return call(em, "fma", [self.splat(self.value(a)) for a in e.args], e.dtype, e.dtype)
        x = self.splat(self.value(e.args[0]))
        expansion = self.plan.expansions.get(id(e))
        if expansion is not None:
            v, body = expansion
            contract, em.contract = em.contract, False
            try:
                with em.region(rebinds=v):  # v is this call's argument: another call's after it
                    em.emitted.put(self.key(v), v, x, False)
                    return self.splat(self.value(body))
            finally:
                em.contract = contract
        if e.name == "reinterpret":
            return b.bitcast(x, ir.VectorType(reg_type(e.dtype), self.width))
        return call(em, e.name, [x], e.args[0].dtype, e.dtype)

    def branches(self, e: te.Select) -> ir.Value:
        """A select on one condition for every lane whose sides read memory: a branch to
        the side taken (a padding guard: the other side's lanes may lie outside the
        buffer), its vector, and a phi."""
        em, b = self.em, self.em.builder
        cond = em.expr(e.cond)
        then_bb, else_bb = em.fn.append_basic_block("select.then"), em.fn.append_basic_block("select.else")
        merge_bb = em.fn.append_basic_block("select.end")
        b.cbranch(cond, then_bb, else_bb)
        arms = []
        for block, side in ((then_bb, e.a), (else_bb, e.b)):
            with em.region():
                b.position_at_end(block)
                value = self.splat(self.value(side))
                arms.append((value, b.block))
                b.branch(merge_bb)
        b.position_at_end(merge_bb)
        phi = b.phi(arms[0][0].type)
        for value, block in arms:
            phi.add_incoming(value, block)
        return phi

    def splat(self, x: ir.Value) -> ir.Value:
        """`x` on every lane (a vector stays as it is): one broadcast of a value where it
        dominates (the emitter's `numbered`, as index operations)."""
        if isinstance(x.type, ir.VectorType):
            return x
        em, width = self.em, self.width
        parts = em.splat_parts.get((id(x.type), width))
        if parts is None:  # the vector type and the zero constants a broadcast is made of, once each
            vec = ir.VectorType(x.type, width)
            parts = em.splat_parts[(id(x.type), width)] = (
                vec, ir.Constant(vec, None), ir.Constant(ir.VectorType(I32, width), None), x.type)
        vec, zeros, mask = parts[:3]
        if isinstance(x, ir.Constant) and not isinstance(x.constant, (list, tuple)):
            return ir.Constant(vec, [x.constant] * width)
        key = ("splat", id(x), width)
        found = em.numbered.get(key)
        if found is None:
            b = em.builder
            one = b.insert_element(zeros, x, _I32_ZERO)
            found = em.numbered[key] = b.shuffle_vector(one, zeros, mask)
        return found
