"""Constants whose value FoldConstant defers (ir/deferred.py): typed, hashed, compared,
composed, planned and pickled without computing it; computed, once, by the first reader
of `Constant.data`, to what the eager fold computed."""

from __future__ import annotations

import pickle

import numpy as np

from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir.deferred import Deferred
from relaylens.compiler.ir.expr import Constant
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.ir.structural_equal import structural_equal
from relaylens.compiler.ir.structural_hash import structural_hash
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.parser import parse
from relaylens.compiler.transform import PassContext, get_pass

HEADER = '#[version = "0.0.5"]\n'
PACKED = """def @main() {
  %0 = arange(0f, 36864f, 1f, dtype="float32");
  %1 = reshape(%0, newshape=[64, 64, 3, 3]);
  layout_transform(%1, src_layout="OIHW", dst_layout="OIHW8i8o")
}"""
W = np.arange(36864, dtype="float32").reshape(64, 64, 3, 3)
W_PACKED = W.reshape(8, 8, 8, 8, 3, 3).transpose(0, 2, 4, 5, 3, 1)


def folded(text: str = PACKED, *passes: str):
    result = parse(HEADER + text, "test.relay")
    assert not [d.message for d in result.diagnostics if d.is_error]
    mod = result.module
    with PassContext(opt_level=3):
        for name in ("FoldConstant", *passes):
            mod = get_pass(name)(mod)
    return mod


def main_body(mod):
    return mod.functions[mod.global_vars["main"]].body


def test_a_weight_folded_into_a_layout_is_computed_when_first_read():
    packed = main_body(folded())
    assert isinstance(packed, Constant) and isinstance(packed.raw, Deferred) and not packed.raw.ready
    assert packed.known and packed.shape == (8, 8, 3, 3, 8, 8) and packed.dtype == "float32"
    assert packed.nbytes == W.nbytes
    reshaped = packed.raw.args[0]  # reshape's fold, deferred too
    np.testing.assert_array_equal(packed.data, W_PACKED)
    assert packed.raw.ready and not reshaped.raw.ready  # read for the layout, not kept
    assert packed.data is packed.data  # once
    assert packed.data.flags.c_contiguous and packed.data.ctypes.data % 64 == 0  # as the eager fold's
    np.testing.assert_array_equal(reshaped.data, W)


def test_small_results_are_folded_at_once():
    mod = folded("""def @main() {
  %0 = arange(0f, 64f, 1f, dtype="float32");
  transpose(reshape(%0, newshape=[8, 8]))
}""")
    assert isinstance(main_body(mod).raw, np.ndarray)


def test_types_and_hashes_do_not_compute_the_value():
    mod = folded(PACKED, "InferType")
    packed = main_body(mod)
    assert packed.ty == TensorType((8, 8, 3, 3, 8, 8), "float32")
    again = folded()
    assert structural_hash(mod) == structural_hash(again)  # by recipe: the same ops on equal arguments
    assert not packed.raw.ready and not main_body(again).raw.ready


def test_equality_by_recipe_or_by_value():
    mod = folded()
    packed = main_body(mod)
    twin = Constant(Deferred(packed.shape, packed.dtype, packed.raw.op, packed.raw.attrs, packed.raw.args,
                             lambda: 1 / 0))
    assert structural_equal(packed, twin) and not packed.raw.ready  # the same recipe: never computed
    assert structural_equal(packed, Constant(W_PACKED.copy()))  # an eager constant: by value
    assert not structural_equal(packed, Constant(W_PACKED + 1))


def test_a_pickled_module_keeps_values_and_recipes():
    mod = folded()
    back = pickle.loads(pickle.dumps(mod))
    packed = main_body(back)
    assert isinstance(packed.raw, Deferred) and packed.raw.ready
    np.testing.assert_array_equal(packed.data, W_PACKED)
    assert structural_hash(back) == structural_hash(mod)


def test_a_build_computes_the_weights_only_for_its_executable():
    text = HEADER + """def @main(%x: Tensor[(1, 64, 14, 14), float32], %w: Tensor[(64, 64, 3, 3), float32]) {
  nn.relu(nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3]))
}"""
    w = np.random.default_rng(0).standard_normal((64, 64, 3, 3)).astype("float32")
    x = np.random.default_rng(1).standard_normal((1, 64, 14, 14)).astype("float32")

    def deferred(result) -> list[Deferred]:
        return [n.raw for f in result.module.functions.values() for n in post_order(f)
                if isinstance(n, Constant) and isinstance(n.raw, Deferred)]

    shown = compile(text, "t.relay", params={"w": w}, stop_after="llvm")  # what the editor builds
    assert shown.ok and deferred(shown) and not any(d.ready for d in deferred(shown))
    built = compile(text, "t.relay", params={"w": w})
    assert built.ok and all(d.ready for d in deferred(built))
    want = interpret(compile(text, "t.relay", stop_after="check").checked.module, x, w)
    np.testing.assert_allclose(built.executable.run(x), want, rtol=1e-4, atol=1e-4)
