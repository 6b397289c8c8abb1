"""The whole relay.build pipeline over the real corpus (../shared/corpus/relay).

Every corpus file that checks with no errors goes through `build_module(strict=True)`
(RELAY_BUILD_PIPELINE, opt_level 3), once, and then:

* spans: `spanless(snapshot.module) == []` after every pass, input included; a failure
  names the first pass that lost a span and the first node it left without one;
* fusion: every operator call of the final module sits inside a `Primitive=1` function
  (non-computational ones such as `on_device` stay outside, as in TVM)
  (functions with a `Compiler` attribute are external and left alone, as in TVM);
* numerics: where @main takes static tensors only, returns tensors, and the file defines
  every global and constant it uses, the reference interpreter gives the same result on
  the input module and on the final one, for the same seeded random inputs (floats to
  rtol = atol = 1e-4, everything else exactly).  A mismatch names the first pass after
  which the result differs.

A pass that raises fails the file's tests with the pass's name; nothing is skipped for
it.  Files with check errors (missing `#[metadata]` tables, deliberate error tests) are
skipped with their first error as the reason.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.build import BuildResult, build_module
from relaylens.compiler.check import CheckResult, check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir import Call, Function, Op
from relaylens.compiler.ir.expr import Constant, GlobalVar
from relaylens.compiler.ir.functor import children, post_order
from relaylens.compiler.ir.types import FuncType, TensorType, TupleType
from relaylens.compiler.printer import print_expr
from relaylens.compiler.transform.passes.fold_constant import NON_COMPUTATIONAL
from relaylens.compiler.transform.span_check import spanless

from conftest import CORPUS
FILES = sorted(p.name for p in CORPUS.glob("*.relay")) if CORPUS.is_dir() else []
pytestmark = pytest.mark.skipif(not FILES, reason="shared/corpus is not beside the checkout")

RTOL = ATOL = 1e-4
# float16 keeps 11 bits: a different order of accumulation moves a result by a few units
# in the last place (2^-10 relative), more after a long reduction
FLOAT16_TOL = 1e-2


# --- one build per file, shared by the tests ----------------------------------------------


@dataclass
class Built:
    checked: CheckResult
    result: BuildResult | None = None
    failed_pass: str | None = None
    error: BaseException | None = None


@lru_cache(maxsize=None)
def checked(name: str) -> CheckResult:
    return check_text((CORPUS / name).read_text(), name)


@lru_cache(maxsize=None)
def built(name: str) -> Built:
    """The file built with strict=True; skips files with check errors."""
    check = checked(name)
    errors = [d for d in check.diagnostics if d.is_error]
    if errors:
        pytest.skip(f"{len(errors)} check errors, first: {errors[0].message}")
    seen: list[str] = []
    out = Built(check)
    try:
        out.result = build_module(check.module, name=name, checked=check, strict=True, progress=seen.append)
    except Exception as err:  # noqa: BLE001 - reported by every test of the file
        out.failed_pass, out.error = (seen[-1] if seen else "<before the first pass>"), err
    return out


def build_ok(name: str) -> BuildResult:
    b = built(name)
    if b.result is None:
        pytest.fail(f"{name}: pass {b.failed_pass} raised {type(b.error).__name__}: {b.error}", pytrace=False)
    return b.result


def short(expr, limit: int = 160) -> str:
    """The node as printed, on one line (without the `free_var` header), and where its
    first part with a span comes from."""
    lines = [ln for ln in print_expr(expr, spans=True).splitlines() if not ln.lstrip().startswith("free_var")]
    text = " ".join(" ".join(lines).split())
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    near = next((k.span for k in children(expr) if k.span is not None), None)
    return f"{text}  (its first part with a span: {near})" if near is not None else text


# --- spans --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FILES)
def test_no_span_lost_after_any_pass(name):
    result = build_ok(name)
    for index, snap in enumerate(result.snapshots):
        lost = spanless(snap.module)
        if lost:
            where = "the parser (input module)" if index == 0 else f"pass #{index} {snap.pass_name}"
            gname, node = lost[0]
            pytest.fail(f"{name}: {where} left {len(lost)} expression(s) without a span although a part"
                        f" has one; first in @{gname}: {type(node).__name__} {short(node)}", pytrace=False)


# --- fusion -------------------------------------------------------------------------------


def ops_outside_primitive(mod) -> list[tuple[str, Call]]:
    """(global name, call) for every operator call not inside a Primitive=1 function;
    external (`Compiler=...`) functions are not compiled by Relay and are skipped."""

    def expand(e):
        return () if isinstance(e, Function) and e.is_primitive else children(e)

    return [(gv.name, n) for gv, f in mod.functions.items() if f.attrs.get("Compiler") is None
            for n in post_order(f, expand) if isinstance(n, Call) and isinstance(n.op, Op)
            and n.op.name not in NON_COMPUTATIONAL]  # annotations stay outside, as in TVM


@pytest.mark.parametrize("name", FILES)
def test_every_op_call_is_fused(name):
    result = build_ok(name)
    outside = ops_outside_primitive(result.module)
    if outside:
        gname, call = outside[0]
        pytest.fail(f"{name}: {len(outside)} operator call(s) outside a Primitive=1 function after"
                    f" {result.snapshots[-1].pass_name}; first in @{gname}: {short(call)}", pytrace=False)


# --- numerics -----------------------------------------------------------------------------


def runnable_reason(mod) -> str | None:
    """Why @main cannot be compared on random inputs, or None when it can."""
    if "main" not in mod:
        return "no @main"
    main = mod["main"]
    for p in main.params:
        ty = p.ty or p.type_annotation
        if not (isinstance(ty, TensorType) and ty.is_static):
            return f"parameter %{p.name} is not a static tensor"
    if not (isinstance(main.ty, FuncType) and tensors_only(main.ty.ret_type)):
        return "@main does not return tensors"
    defined = set(mod.functions)
    for func in mod.functions.values():
        for node in post_order(func):
            if isinstance(node, Constant) and node.data is None:
                return "a constant has no data (missing metadata)"
            if isinstance(node, GlobalVar) and node not in defined:
                return f"@{node.name} is not defined in the file"
    return None


def tensors_only(ty) -> bool:
    if isinstance(ty, TupleType):
        return all(tensors_only(f) for f in ty.fields)
    return isinstance(ty, TensorType)


def random_inputs(params, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    args = []
    for p in params:
        ty = p.ty or p.type_annotation
        shape, dtype = [int(d) for d in ty.shape], np.dtype(ty.dtype)
        if dtype.kind == "f":
            args.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            args.append(rng.integers(0, 2, shape).astype(bool))
        else:  # small positive integers: valid divisors, shifts and indices of small axes
            args.append(rng.integers(1, 4, shape).astype(dtype))
    return args


def assert_same(got, want, path: str = "result") -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{path}: {type(got).__name__} vs a tuple"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{path}.{i}")
        return
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype), \
        f"{path}: {got.shape} {got.dtype}, expected {want.shape} {want.dtype}"
    if want.dtype == np.float16:
        np.testing.assert_allclose(got, want, rtol=FLOAT16_TOL, atol=FLOAT16_TOL, err_msg=path)
    elif want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=path)
    else:
        np.testing.assert_array_equal(got, want, err_msg=path)


def numerics_case(name: str):
    result = build_ok(name)
    mod = result.snapshots[0].module
    why = runnable_reason(mod)
    if why:
        pytest.skip(why)
    return result, random_inputs(mod["main"].params, zlib.crc32(name.encode()))


@pytest.mark.parametrize("name", FILES)
def test_numerics_unchanged(name):
    result, args = numerics_case(name)
    want = interpret(result.snapshots[0].module, *args)
    try:
        assert_same(interpret(result.module, *args), want)
    except Exception as err:  # noqa: BLE001 - find the pass to blame, then fail
        pytest.fail(f"{name}: the result changed; {first_change(result, args, want)}\n{err}", pytrace=False)


def first_change(result: BuildResult, args, want) -> str:
    for index, snap in enumerate(result.snapshots[1:], start=1):
        if not snap.changed:
            continue
        try:
            assert_same(interpret(snap.module, *args), want)
        except Exception as err:  # noqa: BLE001
            return f"first after pass #{index} {snap.pass_name} ({type(err).__name__})"
    return "no single pass to blame"


# --- the tests have teeth -----------------------------------------------------------------


def test_the_corpus_exercises_the_pipeline():
    """Enough of the corpus builds, is compared numerically and is rewritten by the passes
    for the tests above to mean something."""
    clean = [n for n in FILES if not any(d.is_error for d in checked(n).diagnostics)]
    assert len(clean) >= 80, clean
    results = {n: built(n).result for n in clean}
    assert all(r is not None for r in results.values()), [n for n, r in results.items() if r is None]
    compared = [n for n in clean if runnable_reason(results[n].snapshots[0].module) is None]
    assert len(compared) >= 60, compared
    changed_by: dict[str, int] = {}
    for r in results.values():
        for snap in r.snapshots[1:]:
            changed_by[snap.pass_name] = changed_by.get(snap.pass_name, 0) + snap.changed
    assert changed_by.get("FuseOps", 0) >= 50, changed_by
    rewriters = [p for p in ("SimplifyInference", "SimplifyExpr", "FoldConstant", "CanonicalizeOps",
                             "EliminateCommonSubexpr") if changed_by.get(p, 0)]
    assert len(rewriters) >= 3, changed_by
