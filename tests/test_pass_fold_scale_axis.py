"""FoldScaleAxis: TVM's test cases as golden files, numerics before/after with the
reference interpreter, spans of folded weights, and relay.build on the demo model.

Each file of tests/passes/fold_scale_axis/ is one graph one of TVM's tests builds
(tests/python/relay/test_pass_fold_scale_axis.py at v0.16.0), or a case of our own:

    // TVM test_fold_fwd_simple: check((2, 4, 10, 10), 2, None)    <- where it comes from
    // pass: ForwardFoldScaleAxis                                   <- the pass to run
    // bind: in_scale=positive, weight=zeros                        <- parameters made constants
    def @main(...) { ... }                                          <- the input
    // expected:                                                    <- TVM's expected graph,
    def @main(...) { ... }                                             or `// expected: unchanged`

Bound values are drawn per name (positive: uniform [0.5, 1), negative: its negation,
zeros, normal: standard normal) and bound alike in the input and the expected module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir.structural import assert_structural_equal
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.bind_params import bind_params_by_name
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

HEADER = '#[version = "0.0.5"]\n'
CASES = Path(__file__).parent / "passes" / "fold_scale_axis"


# --- the golden files ------------------------------------------------------------------


@dataclass
class Case:
    name: str
    pass_name: str
    bind: dict[str, str]
    before: str
    expected: str | None  # None: the pass must return its input


def load_case(path: Path) -> Case:
    text = path.read_text()
    before, marker, expected = text.partition("// expected")
    assert marker, f"{path.name}: no '// expected' line"
    header = dict(re.findall(r"^// (pass|bind): (.*)$", before, re.M))
    bind = dict(item.strip().split("=") for item in header.get("bind", "").split(",") if item.strip())
    expected = expected.split("\n", 1)[1] if "unchanged" not in expected.split("\n", 1)[0] else None
    return Case(path.stem, header["pass"], bind, before, expected)


def parse_ok(text: str, name: str):
    result = parse(HEADER + text, name)
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert not errors, errors
    return result.module


def draw(kind: str, shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    values = {"positive": lambda: rng.uniform(0.5, 1, shape), "negative": lambda: -rng.uniform(0.5, 1, shape),
              "zeros": lambda: np.zeros(shape), "normal": lambda: rng.standard_normal(shape)}[kind]()
    return np.asarray(values).astype(dtype)


def bound(case: Case, text: str, name: str):
    mod = parse_ok(text, name)
    rng = np.random.default_rng(sum(map(ord, case.name)))
    params = {p.name: p for p in mod["main"].params}
    arrays = {}
    for pname, kind in case.bind.items():
        ty = params[pname].type_annotation
        arrays[pname] = draw(kind, tuple(int(d) for d in ty.shape), ty.dtype, rng)
    mod, errors = bind_params_by_name(mod, arrays)
    assert not errors, [d.message for d in errors]
    return mod


def run(pass_name: str, mod):
    with PassContext(opt_level=3):
        return get_pass(pass_name)(mod)


CASE_FILES = sorted(CASES.glob("*.relay"))


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_golden(path):
    case = load_case(path)
    mod = bound(case, case.before, f"{case.name}.relay")
    printed = print_module(mod)
    out = run(case.pass_name, mod)
    assert print_module(mod) == printed, "the input module changed"
    if case.expected is None:
        assert out is mod, print_module(out)
        return
    expected = bound(case, case.expected, f"{case.name}.expected.relay")
    run("InferType", expected)
    assert_structural_equal(out, expected)
    assert [d.message for d in infer_types(out) if d.is_error] == []
    assert spanless(out) == []


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_numerics_unchanged(path):
    case = load_case(path)
    mod = bound(case, case.before, f"{case.name}.relay")
    out = run(case.pass_name, mod)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(tuple(int(d) for d in p.type_annotation.shape)).astype(p.type_annotation.dtype)
            for p in mod["main"].params]
    want, got = interpret(mod, *args), interpret(out, *args)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
