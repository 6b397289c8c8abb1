"""FoldConstant beyond its golden cases: folds whose spans or values are asserted one by
one, what TVM leaves alone, numerics before/after with the reference interpreter, and the
span invariant over the corpus. Their before/expected cases are golden files in tests/passes/fold_constant/ (format:
tests/passes/README.md), run by tests/test_golden_passes.py."""

from __future__ import annotations


import numpy as np
import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir.expr import Call, Constant, Tuple
from relaylens.compiler.ir.span import LayerSpan
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.fold_constant import FoldConstant
from relaylens.compiler.transform.span_check import spanless

from conftest import CORPUS
HEADER = '#[version = "0.0.5"]\n'
DEVICES = "virtual_device=meta[VirtualDevice][0]"


def parse_ok(text: str, name: str = "test.relay"):
    result = parse(HEADER + text, name)
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert not errors, errors
    return result.module


def fold(mod, p=None):
    with PassContext(opt_level=3):
        return (p or get_pass("FoldConstant"))(mod)


def body(mod):
    return mod.functions[mod.global_vars["main"]].body


def layers(expr) -> list[str]:
    return [o.name for o in expr.span.origins() if isinstance(o, LayerSpan)]


# --- calls of constants ----------------------------------------------------------------


def test_tuple_arguments_and_tuple_results():
    mod = parse_ok("""def @main() {
  %0 = full(2f /* span=two:0:0 */, shape=[4], dtype="float32") /* span=full:0:0 */;
  %1 = (%0, full(1f, shape=[2], dtype="float32")) /* span=tup:0:0 */;
  %2 = concatenate(%1) /* span=cat:0:0 */;
  %3 = split(%2, indices_or_sections=[1, 3]) /* span=split:0:0 */;
  %4 = %3.2 /* span=last:0:0 */;
  (%3, %4) /* span=out:0:0 */
}""")
    out = body(fold(mod))
    parts, last = out.fields
    assert isinstance(parts, Tuple) and all(isinstance(f, Constant) for f in parts.fields)
    np.testing.assert_array_equal(parts.fields[1].data, [2, 2])
    assert layers(parts) == ["split", "cat", "tup", "full", "two"]
    assert all(f.span == parts.span for f in parts.fields)
    assert isinstance(last, Constant) and last.data.tolist() == [2, 1, 1]
    assert layers(last)[:2] == ["last", "split"]


def test_chained_folds_and_on_device_arguments():
    mod = parse_ok(f"""def @main() {{
  %0 = on_device(1f /* span=one:0:0 */, {DEVICES}, constrain_result=True) /* span=od:0:0 */;
  %1 = add(%0, 2f) /* span=a:0:0 */;
  negative(%1) /* span=neg:0:0 */
}}""")
    out = body(fold(mod))
    assert isinstance(out, Constant) and out.data == -3
    assert layers(out) == ["neg", "a", "od", "one"]


def test_without_si_builder_folds_without_spans():
    mod = parse_ok("""def @main() { add(1f /* span=a:0:0 */, 2f) /* span=b:0:0 */ }""")
    with PassContext(config={"ir.enable_si_builder": False}):
        out = get_pass("FoldConstant")(mod)
    folded = body(out)
    assert isinstance(folded, Constant) and folded.data == 3 and folded.span is None


# --- shape_of, ndarray_size --------------------------------------------------------------


def test_shape_of_a_static_tensor_folds_whatever_its_value():
    mod = parse_ok("""def @main(%x: Tensor[(2, 3), float32] /* span=x:0:0 */) {
  %0 = shape_of(%x) /* span=shape:0:0 */;
  %1 = ndarray_size(%x, dtype="int64") /* span=size:0:0 */;
  (%0, %1, %x) /* span=out:0:0 */
}""")
    shape, size, x = body(fold(mod)).fields
    assert shape.data.tolist() == [2, 3] and shape.data.dtype == np.int32 and layers(shape) == ["shape"]
    assert size.data == 6 and size.data.dtype == np.int64 and layers(size) == ["size"]
    assert x is mod.functions[mod.global_vars["main"]].params[0]


def test_shape_of_uses_the_op_library_for_scalars():
    out = body(fold(parse_ok("""def @main(%x: float32) {
  (shape_of(%x), ndarray_size(%x))
}""")))
    assert out.fields[0].data.shape == () and out.fields[1].data == 1


# --- if, projections, let --------------------------------------------------------------


def test_if_on_a_constant_keeps_the_branch_taken():
    mod = parse_ok("""def @main(%x: Tensor[(2), float32] /* span=x:0:0 */) {
  if (less(1f, 2f) /* span=cond:0:0 */) {
    add(%x, 1f) /* span=then:0:0 */
  } else {
    %x
  }
}""", "if.relay")
    out = body(fold(mod))
    assert isinstance(out, Call) and out.op.name == "add"
    if_span = body(mod).span
    assert layers(out) == ["then"] and if_span.origins()[0] in out.span.origins()
    # the false branch is a variable: it cannot take a new span, and is kept as it is
    mod = parse_ok("""def @main(%x: Tensor[(2), float32]) {
  if (False) { add(%x, 1f) } else { %x }
}""")
    out = fold(mod)
    assert body(out) is mod.functions[mod.global_vars["main"]].params[0]


def test_if_branch_used_elsewhere_is_not_copied():
    mod = parse_ok("""def @main(%x: Tensor[(2), float32]) {
  %0 = add(%x, 1f);
  %1 = if (True) { %0 } else { %x };
  multiply(%1, %0)
}""")
    out = body(fold(mod))
    assert out.args[0] is out.args[1]  # still one node, not two copies of add


def test_projection_through_on_device_keeps_the_annotation():
    mod = parse_ok(f"""def @main(%x: Tensor[(2), float32]) {{
  %0 = on_device((%x, 1f), {DEVICES}) /* span=od:0:0 */;
  %0.0
}}""")
    out = body(fold(mod))
    assert out.op.name == "on_device" and layers(out) == ["od"]
    assert out.args[0] is mod.functions[mod.global_vars["main"]].params[0]
    assert out.attrs == body(mod).tuple_value.attrs


# --- must not fire -----------------------------------------------------------------------


def test_qnn_folds_when_asked():
    mod = parse_ok("""def @main() {
  qnn.quantize(2f, 0.5f, 1, out_dtype="int8") /* span=q:0:0 */
}""")
    out = body(fold(mod, FoldConstant(fold_qnn=True)))
    assert isinstance(out, Constant) and out.data == 5 and out.data.dtype == np.int8


def test_calls_the_op_library_cannot_evaluate_are_left_alone():
    # the relation rejects the dtypes: no fold, no crash (the type checker reports it)
    mod = parse(HEADER + "def @main() { add(1f, 2) }", "bad.relay").module
    assert fold(mod) is mod
    mod = parse(HEADER + "def @main() { my.op(1f) }", "unknown.relay").module
    assert fold(mod) is mod


# --- numerics --------------------------------------------------------------------------------


def test_numerics_unchanged():
    mod = parse_ok("""def @main(%x: Tensor[(2, 4), float32], %flag: bool) {
  %0 = full(0.5f, shape=[4], dtype="float32");
  %1 = exp(%0);
  %2 = expand_dims(%1, axis=0);
  %3 = multiply(%x, %2);
  %4 = (%3, sqrt(%1));
  let %s = sum(%1);
  %5 = if (greater(%s, 1f)) { add(%4.0, %s) } else { %x };
  %6 = reshape(%5, newshape=[2, 4]);
  %7 = where(%flag, %6, %4.1);
  (%7, cast(shape_of(%x), dtype="float32"))
}""")
    out = fold(mod)
    assert out is not mod
    text = print_module(out)
    for gone in ("exp(", "full(", "if (", "shape_of(", "sqrt("):
        assert gone not in text
    rng = np.random.default_rng(1)
    for flag in (True, False):
        x = rng.standard_normal((2, 4)).astype("float32")
        want, got = interpret(mod, x, np.asarray(flag)), interpret(out, x, np.asarray(flag))
        for w, g in zip(want, got):
            assert w.dtype == g.dtype
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_simplified_batch_norm_with_constant_parameters_folds_to_scale_and_shift():
    """SimplifyInference then FoldConstant, as relay.build runs them: the per-channel
    vectors computed from constant statistics become two constants."""
    from relaylens.compiler.ir.functor import ExprMutator

    mod = parse_ok("""def @main(%x: Tensor[(1, 3, 4, 4), float32] /* span=x:0:0 */, %g: Tensor[(3), float32],
                %b: Tensor[(3), float32], %m: Tensor[(3), float32], %v: Tensor[(3), float32]) {
  %0 = nn.batch_norm(%x, %g, %b, %m, %v) /* span=bn:0:0 */;
  %1 = %0.0 /* span=bn.out:0:0 */;
  nn.relu(%1) /* span=relu:0:0 */
}""")
    func = mod.functions[mod.global_vars["main"]]
    rng = np.random.default_rng(2)
    values = {p: rng.random(3).astype("float32") + 0.5 for p in func.params[1:]}

    class Bind(ExprMutator):  # the weights become constants, as a frontend leaves them
        def visit_var(self, var):
            if var in values:
                return Constant(values[var], span=LayerSpan(f"w.{var.name}"))
            return var

    import dataclasses

    bound = mod.with_functions({mod.global_vars["main"]: dataclasses.replace(
        func, params=func.params[:1], body=Bind().visit(func.body))})
    with PassContext(opt_level=3):
        out = get_pass("FoldConstant")(get_pass("SimplifyInference")(bound))
    text = print_module(out)
    for gone in ("sqrt", "negative", "divide", "batch_norm"):
        assert gone not in text
    final = body(out)
    assert final.op.name == "nn.relu"
    add = final.args[0]
    assert add.op.name == "add" and isinstance(add.args[1], Constant)
    mul = add.args[0]
    assert mul.op.name == "multiply" and isinstance(mul.args[1], Constant)
    assert mul.args[1].data.shape == (3, 1, 1)
    assert {"bn", "bn.out", "w.v"} <= set(layers(mul.args[1]))
    assert spanless(out) == []
    x = rng.standard_normal((1, 3, 4, 4)).astype("float32")
    np.testing.assert_allclose(interpret(out, x), interpret(bound, x), rtol=1e-5, atol=1e-6)


# --- the span invariant over the corpus ----------------------------------------------------

CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*.relay")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS_FILES, reason="shared/corpus is not beside the checkout")
def test_spans_kept_over_the_corpus():
    skipped, changed = [], []
    for name in CORPUS_FILES:
        result = check_text((CORPUS / name).read_text(), name)
        mod = result.module
        with PassContext(opt_level=3):
            out = get_pass("FoldConstant")(mod)  # must never raise, typed or not
        if any(d.is_error for d in result.diagnostics):
            skipped.append(name)
            continue
        assert spanless(out) == [], name
        if out is not mod:
            changed.append(name)
            assert not [d.message for d in check_text(print_module(out), name).diagnostics if d.is_error]
    print(f"skipped (type errors): {skipped}; folded: {changed}")
    assert changed, "nothing in the corpus folds: the test lost its teeth"


def test_weights_folded_into_a_layout_are_aligned_for_the_kernels():
    """A weight folded into its layout (layout_transform's copy) or transposed (a view the
    fold copies) is 64-byte aligned, as the kernels' parameters promise, so the executable
    reads it in place instead of copying it again (support.contiguous).  147 KB: numpy
    maps arrays that large and puts their data 16 bytes past a page."""
    mod = parse_ok("""def @main() {
  %0 = arange(0f, 36864f, 1f, dtype="float32");
  %1 = reshape(%0, newshape=[64, 64, 3, 3]);
  (layout_transform(%1, src_layout="OIHW", dst_layout="OIHW8i8o"), transpose(%1, axes=[1, 0, 2, 3]))
}""")
    packed, transposed = body(fold(mod)).fields
    w = np.arange(36864, dtype="float32").reshape(64, 64, 3, 3)
    np.testing.assert_array_equal(packed.data, w.reshape(8, 8, 8, 8, 3, 3).transpose(0, 2, 4, 5, 3, 1))
    np.testing.assert_array_equal(transposed.data, w.transpose(1, 0, 2, 3))
    for c in (packed, transposed):
        assert c.data.flags.c_contiguous and c.data.ctypes.data % 64 == 0
