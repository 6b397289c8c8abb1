"""CanonicalizeOps beyond its golden cases: types of the new add, when it must not fire,
numerics before/after with the reference interpreter, the span invariant over the corpus.
Their before/expected cases are golden files in tests/passes/canonicalize_ops/ (format:
tests/passes/README.md), run by tests/test_golden_passes.py."""

from __future__ import annotations


import numpy as np
import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

from conftest import CORPUS
HEADER = '#[version = "0.0.5"]\n'


def parse_ok(text: str, name: str = "golden.relay"):
    result = parse(HEADER + text, name)
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert not errors, errors
    return result.module


def canonicalize(mod, opt_level: int = 3):
    with PassContext(opt_level=opt_level):
        return get_pass("CanonicalizeOps")(mod)


X4 = "%x: Tensor[(1, 8, 5, 5), float32] /* span=x:0:0 */, %b: Tensor[(8), float32] /* span=b:0:0 */"


def test_the_new_add_keeps_the_bias_add_type():
    mod = parse_ok(f"def @main({X4}) {{ nn.bias_add(%x, %b) }}")
    out = canonicalize(mod)
    add = out.functions[out.global_vars["main"]].body
    assert add.op.name == "add" and add.ty == TensorType((1, 8, 5, 5), "float32")
    assert add.args[1].ty is None  # made here: typed by the next InferType


def test_nested_functions_and_chains():
    mod = parse_ok(f"""def @main({X4}) {{
  %0 = fn (%y: Tensor[(1, 8, 5, 5), float32]) {{ nn.bias_add(%y, %b) /* span=inner:0:0 */ }};
  nn.bias_add(%0(%x), %b) /* span=outer:0:0 */
}}""")
    out = canonicalize(mod)
    assert "bias_add" not in print_module(out)
    assert spanless(out) == []
    assert [d for d in infer_types(out) if d.is_error] == []


# --- must not fire ---------------------------------------------------------------------


def test_untyped_data_is_left_alone():
    # a type error upstream leaves the data type unknown
    mod = parse(HEADER + """def @main(%b: Tensor[(8), float32]) {
  nn.bias_add(add(meta[relay.Constant][0], 1f), %b)
}""", "untyped.relay").module
    assert canonicalize(mod) is mod


# --- numerics --------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 5), 1), ((2, 3, 4, 5), -1), ((2, 3, 4, 5), 2),
                                        ((2, 3, 4, 5), -4), ((6, 7), 0), ((6,), 0)])
def test_numerics_unchanged(shape, axis):
    channels = shape[axis]
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    mod = parse_ok(f"""def @main(%x: Tensor[({dims}), float32], %b: Tensor[({channels}), float32]) {{
  nn.bias_add(%x, %b, axis={axis})
}}""")
    out = canonicalize(mod)
    assert "bias_add" not in print_module(out)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype("float32")
    b = rng.standard_normal(channels).astype("float32")
    np.testing.assert_array_equal(interpret(out, x, b), interpret(mod, x, b))


# --- the span invariant over the corpus ----------------------------------------------------

CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*.relay")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS_FILES, reason="shared/corpus is not beside the checkout")
def test_spans_kept_over_the_corpus():
    skipped, changed = [], []
    for name in CORPUS_FILES:
        result = check_text((CORPUS / name).read_text(), name)
        mod = result.module
        out = canonicalize(mod)  # must never raise, typed or not
        if any(d.is_error for d in result.diagnostics):
            skipped.append(name)
            continue
        assert spanless(out) == [], name
        if out is not mod:
            changed.append(name)
            assert "nn.bias_add" not in print_module(out)
            assert [d.message for d in infer_types(out) if d.is_error] == [], name
    print(f"skipped (type errors): {skipped}; rewritten: {changed}")
    assert changed, "no bias_add in the typed corpus: the test lost its teeth"
