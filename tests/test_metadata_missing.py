"""Text printed without its metadata (`mod.astext(show_meta_data=False)`, `print(mod)`):
`meta[relay.Constant][i]` with no `#[metadata]` section are constants of unknown value.

One warning per file, no errors; types from `ty=` comments or from the constants' use
(typing/unknown_constants.py); the pipeline runs with spans kept; FoldConstant folds them
to unknown constants; `fill_unknown_constants` gives them values from a seed so that the
model runs, compiled and interpreted alike.  Real corpus files: 005 (ResNet-50, printed
without its section), 001 (MNIST), 131 (an NHWC block) with its section cut off.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.diagnostics import Severity
from relaylens.compiler.cli import main
from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.lower.disk_cache import environment_cache
from relaylens.compiler.ir import Constant
from relaylens.compiler.parser import parse
from relaylens.compiler.printer.types import print_type
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing.unknown_constants import unknown_constants
from relaylens.compiler.random_data import Role
from relaylens.compiler.unknown_values import draw_constant, fill_unknown_constants

from conftest import CORPUS, corpus_file

CORPUS_RELAY = CORPUS / "relay" if (CORPUS / "relay").is_dir() else CORPUS


def read(name: str) -> str:
    path = CORPUS_RELAY / name
    if not path.exists():
        pytest.skip(f"{name} is not in the corpus")
    return path.read_text()


def without_section(text: str) -> str:
    """The text as `show_meta_data=False` prints it: the `#[metadata]` section cut off."""
    return text[:text.index("#[metadata]")]


def constant_types(module) -> dict[int, str | None]:
    """meta index -> printed type (None when unknown) of every unknown constant."""
    return {c.meta.index: (print_type(c.ty) if c.ty is not None else None) for c in unknown_constants(module)}


def metadata_warnings(diagnostics) -> list:
    return [d for d in diagnostics if d.source == "metadata"]


# -- parsing and types ----------------------------------------------------------------------

def test_resnet50_one_warning_no_errors_and_every_type_inferred():
    text = read("005.relay")
    checked = check_text(text, "005.relay")
    assert [d.render() for d in checked.diagnostics if d.is_error] == []
    warnings = metadata_warnings(checked.diagnostics)
    assert len(warnings) == 1 and warnings[0].severity == Severity.WARNING
    assert warnings[0].message.startswith("259 constants refer to a metadata section that is not here")
    types = constant_types(checked.module)
    assert len(types) == 259 and None not in types.values()
    assert types[0] == "Tensor[(3), float32]"  # batch_norm gamma of the 3-channel input
    assert types[4] == "Tensor[(64, 3, 7, 7), float32]"  # conv2d weight: channels, kernel_size, data
    assert types[257] == "Tensor[(1000, 2048), float32]"  # dense weight: units, data
    # the final bias: add's result is fixed by @main's result type to the other operand's type
    assert types[258] == "Tensor[(1, 1000), float32]"


def test_conv_weights_in_hwio_match_the_printed_comments():
    """131 (NHWC, kernel_layout HWIO) prints every constant's type: cut the section and the
    conv weights' comments, and what inference fixes must be what TVM printed."""
    text = without_section(read("131.relay"))
    comments = {int(i): ty for i, ty in re.findall(r"meta\[relay\.Constant\]\[(\d+)\] /\* ty=(.*?) \*/", text)}
    weight = r"(meta\[relay\.Constant\]\[\d+\]) /\* ty=Tensor\[\(\d+, \d+, \d+, \d+\), float32\] \*/"
    bare = re.sub(weight, r"\1", text)
    checked = check_text(bare, "131.relay")
    assert [d.render() for d in checked.diagnostics if d.is_error] == []
    types = constant_types(checked.module)
    weights = [i for i, ty in comments.items() if ty.count(",") == 4]  # the rank-4 conv weights
    assert len(weights) == 5
    for i in weights:
        assert types[i] == comments[i]
    # with a bias's comment gone too, nothing fixes it (it may be (C), (1, C) or a scalar)
    # nor anything after it, so the next conv's weight is unknown as well
    bare = re.sub(r"(meta\[relay\.Constant\]\[1\]) /\* ty=.*? \*/", r"\1", bare)
    checked = check_text(bare, "131.relay")
    types = constant_types(checked.module)
    assert types[1] is None and types[0] == comments[0]
    notes = [d for d in checked.diagnostics if d.severity == Severity.INFO]
    assert sum("meta[relay.Constant][1] is unknown" in d.message for d in notes) == 1
    # the ty= comments, where present, are the types
    assert constant_types(check_text(text, "131.relay").module) == {i: comments[i] for i in comments}


def test_unknown_type_is_said_once_at_the_constant_not_at_every_user():
    text = read("001.relay")  # MNIST: the conv bias `add(%1, meta[1])` fixes nothing
    checked = check_text(text, "001.relay")
    assert [d for d in checked.diagnostics if d.is_error] == []
    types = constant_types(checked.module)
    assert types[0] == "Tensor[(8, 1, 5, 5), float32]"
    assert types[1] is None
    infos = [d for d in checked.diagnostics if d.severity == Severity.INFO]
    assert len(infos) == sum(t is None for t in types.values())
    assert not any("cannot infer the argument types" in d.message for d in checked.diagnostics)


def test_rules_need_what_the_relation_needs():
    def typed(body: str) -> str | None:
        text = f"def @main(%x: Tensor[(1, 4, 8, 8), float32]) {{ {body} }}"
        checked = check_text(text, "t.relay")
        assert [d for d in checked.diagnostics if d.is_error] == []
        return constant_types(checked.module)[0]

    w = "meta[relay.Constant][0]"
    assert typed(f"nn.conv2d(%x, {w}, channels=6, kernel_size=[3, 3])") == "Tensor[(6, 4, 3, 3), float32]"
    assert typed(f"nn.conv2d(%x, {w}, channels=8, kernel_size=[3, 3], groups=2)") == "Tensor[(8, 2, 3, 3), float32]"
    assert typed(f"nn.conv2d(%x, {w}, kernel_size=[3, 3])") is None  # no channels
    assert typed(f"nn.bias_add(%x, {w})") == "Tensor[(4), float32]"
    assert typed(f"nn.bias_add(%x, {w}, axis=3)") == "Tensor[(8), float32]"
    assert typed(f"%0 = nn.batch_norm(%x, {w}, {w}, {w}, {w}); %0.0") == "Tensor[(4), float32]"
    assert typed(f"nn.dense(%x, {w})") is None  # units=None
    assert typed(f"multiply(%x, {w})") is None  # broadcasting: any of several shapes fits
    assert typed(f"nn.conv2d(%x, {w} /* ty=Tensor[(2, 4, 1, 1), float32] */, channels=2, kernel_size=[1, 1])") \
        == "Tensor[(2, 4, 1, 1), float32]"


def test_a_missing_entry_of_a_present_section_is_still_an_error():
    text = read("131.relay").replace("meta[relay.Constant][9]", "meta[relay.Constant][99]", 1)
    result = parse(text, "131.relay")
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert errors == ["no entry meta[relay.Constant][99] in the metadata section (it has 10 relay.Constant entries)"]


# -- the pipeline ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["001.relay", "005.relay", "131.relay"])
def test_pipeline_runs_and_keeps_spans(name):
    text = read(name)
    if "#[metadata]" in text:
        text = without_section(text)
    built = compile(text, name, stop_after="passes")
    assert [d.render() for d in built.diagnostics if d.is_error] == []
    assert len(metadata_warnings(built.diagnostics)) == 1  # the pipeline's InferType does not repeat it
    assert built.snapshots
    for snap in built.snapshots:
        assert spanless(snap.module) == [], f"a span was lost in {snap.pass_name}"


def test_fold_constant_makes_unknown_constants_of_the_inferred_type():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32]) {
  %0 = nn.batch_norm(%x, meta[relay.Constant][0], meta[relay.Constant][1], meta[relay.Constant][2], meta[relay.Constant][3]);
  %0.0
}
"""
    built = compile(text, "bn.relay", passes=["SimplifyInference", "FoldConstant"], stop_after="passes")
    assert [d.render() for d in built.diagnostics if d.is_error] == []
    folded = [c for c in unknown_constants(built.module) if c.meta is None]
    assert folded, "the scale and shift computed from the unknown constants fold"
    for c in folded:
        assert print_type(c.ty) in ("Tensor[(3, 1, 1), float32]", "Tensor[(3), float32]")
        lines = {origin.line for origin in c.span.origins()}
        assert 3 in lines  # the span names the batch_norm line it was folded from
    assert spanless(built.module) == []


# -- filling from a seed ----------------------------------------------------------------------

def test_draw_is_deterministic_and_depends_on_seed_index_and_role():
    from relaylens.compiler.ir.types import TensorType

    ty = TensorType((16, 8, 3, 3), "float32")
    weight = Role("weight")
    a = draw_constant(1, 0, ty, weight)
    assert a.dtype == np.float32 and a.shape == (16, 8, 3, 3)
    assert np.array_equal(a, draw_constant(1, 0, ty, weight))
    assert not np.array_equal(a, draw_constant(2, 0, ty, weight))
    assert not np.array_equal(a, draw_constant(1, 1, ty, weight))
    assert abs(float(a.std()) - 1 / np.sqrt(72)) < 0.05
    var = draw_constant(1, 4, TensorType((64,), "float32"), Role("scale"))
    assert (var > 0).all()
    assert set(np.unique(draw_constant(0, 0, TensorType((50,), "int32")))) <= {0, 1}


def test_fill_refuses_a_constant_of_unknown_type():
    checked = check_text(read("001.relay"), "001.relay")
    module, diagnostics = fill_unknown_constants(checked.module, seed=0)
    assert module is checked.module
    errors = [d for d in diagnostics if d.is_error]
    assert errors and all("no known type" in d.message for d in errors)
    assert {d.location()[1] for d in errors} >= {6, 16}


def _run_both(text: str, name: str, seed: int, x: np.ndarray, disk_cache=None):
    built = compile(text, name, unknown_seed=seed, disk_cache=disk_cache)
    assert [d.render() for d in built.diagnostics if d.is_error] == []
    assert any(f"from seed {seed}" in d.message for d in built.diagnostics)
    compiled = np.asarray(built.executable.run(x))
    filled, _ = fill_unknown_constants(check_text(text, name).module, seed)
    interpreted = np.asarray(Interpreter(filled).call("main", [x]))
    return compiled, interpreted


def test_run_mnist_with_types_written():
    """001 with the types nothing fixes written as TVM prints them: runs from a seed."""
    text = read("001.relay")
    text = text.replace("meta[relay.Constant][1]", "meta[relay.Constant][1] /* ty=Tensor[(8, 1, 1), float32] */")
    text = text.replace("meta[relay.Constant][3]", "meta[relay.Constant][3] /* ty=Tensor[(16, 1, 1), float32] */")
    text = text.replace("meta[relay.Constant][4]", "meta[relay.Constant][4] /* ty=Tensor[(10, 256), float32] */")
    text = text.replace("meta[relay.Constant][5]", "meta[relay.Constant][5] /* ty=Tensor[(1, 10), float32] */")
    x = np.random.default_rng(0).normal(size=(1, 1, 28, 28)).astype("float32")
    compiled, interpreted = _run_both(text, "001.relay", 3, x)
    assert compiled.shape == (1, 10) and np.isfinite(compiled).all()
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-4, atol=1e-5)
    again, _ = _run_both(text, "001.relay", 3, x)
    np.testing.assert_array_equal(again, compiled)  # deterministic from the seed
    other, _ = _run_both(text, "001.relay", 4, x)
    assert not np.allclose(other, compiled)


def test_run_resnet50_from_a_seed():
    """`relaylens run`'s default seed and the session's kernel cache (conftest), as `run`
    builds: test_lower_corpus and test_numerics build this model with the same constants,
    so it is compiled once in the session (the other seeds are the MNIST tests')."""
    text = read("005.relay")
    x = np.random.default_rng(1).normal(size=(1, 3, 224, 224)).astype("float32")
    compiled, interpreted = _run_both(text, "005.relay", 0, x, disk_cache=environment_cache())
    assert compiled.shape == (1, 1000) and np.isfinite(compiled).all()
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-3, atol=1e-4)


# -- attributes in the metadata section ---------------------------------------------------------

BATCH_MATMUL = """#[version = "0.0.5"]
def @main(%a: Tensor[(1, 4, 8), float32], %b: Tensor[(1, 5, 8), float32]) {
  nn.batch_matmul(%a, %b, meta[relay.attrs.BatchMatmulAttrs][0])
}
"""
SECTION = """#[metadata]
{"root": 1, "nodes": [{"type_key": ""}, {"type_key": "Map", "keys": ["relay.attrs.BatchMatmulAttrs"], "data": [2]},
 {"type_key": "Array", "data": [3]},
 {"type_key": "relay.attrs.BatchMatmulAttrs", "attrs": {"out_dtype": "", "transpose_a": "0", "transpose_b": "1"}}],
 "b64ndarrays": [], "attrs": {"tvm_version": "0.8.0"}}
"""


def test_attrs_read_from_the_metadata_section():
    checked = check_text(BATCH_MATMUL + SECTION, "bm.relay")
    assert [d.render() for d in checked.diagnostics if d.is_error] == []
    call = checked.module["main"].body
    assert dict(call.attrs) == {"out_dtype": "", "transpose_a": False, "transpose_b": True}
    assert print_type(call.ty) == "Tensor[(1, 4, 5), float32]"


def test_attrs_without_the_section_are_a_warning_and_the_defaults():
    result = parse(BATCH_MATMUL, "bm.relay")
    meta = metadata_warnings(result.diagnostics)
    assert [d.severity for d in meta] == [Severity.WARNING]
    assert "the op's defaults are used" in meta[0].message
    assert dict(result.module["main"].body.attrs) == {}


def test_attrs_arrays_and_strings_are_node_references():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 6, 6), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
  nn.conv2d(%x, %w, meta[relay.attrs.Conv2DAttrs][0])
}
#[metadata]
{"root": 1, "nodes": [{"type_key": ""}, {"type_key": "Map", "keys": ["relay.attrs.Conv2DAttrs"], "data": [2]},
 {"type_key": "Array", "data": [3]},
 {"type_key": "relay.attrs.Conv2DAttrs", "attrs": {"strides": "4", "padding": "7", "channels": "12",
   "kernel_size": "13", "groups": "1", "data_layout": "16", "out_dtype": ""}},
 {"type_key": "Array", "data": [5, 6]},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "2"}},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "2"}},
 {"type_key": "Array", "data": [8, 9, 10, 11]},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "1"}},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "1"}},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "1"}},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "1"}},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "4"}},
 {"type_key": "Array", "data": [14, 15]},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "3"}},
 {"type_key": "IntImm", "attrs": {"dtype": "int32", "value": "3"}},
 {"type_key": "runtime.String", "repr_str": "NCHW"}],
 "b64ndarrays": [], "attrs": {"tvm_version": "0.8.0"}}
"""
    checked = check_text(text, "conv.relay")
    assert [d.render() for d in checked.diagnostics if d.is_error] == []
    assert print_type(checked.module["main"].body.ty) == "Tensor[(1, 4, 3, 3), float32]"


def test_incremental_edits_keep_the_one_warning():
    """The editor re-reads one statement after an edit: the file's warning is counted again,
    as a full check counts it (an edit that adds or removes a reference changes N)."""
    from relaylens.compiler.check import recheck

    text = read("001.relay")
    checked = check_text(text, "001.relay", incremental=True)
    edits = [("meta[relay.Constant][1]);", "meta[relay.Constant][1]) ;"),  # the first use's neighbour
             ("%1 = nn.conv2d(%0, meta[relay.Constant][0]", "%1 = nn.conv2d(%0, meta[relay.Constant][0] "),
             ("add(%6, meta[relay.Constant][3])", "add(%6, %6)")]
    redone = 0
    for old, new in edits:
        text = text.replace(old, new, 1)
        done = recheck(checked, text)
        checked = done[0] if done is not None else check_text(text, "001.relay", incremental=True)
        redone += done is not None
        full = check_text(text, "001.relay")
        got = [(d.message, d.span.start) for d in metadata_warnings(checked.diagnostics)]
        assert got == [(d.message, d.span.start) for d in metadata_warnings(full.diagnostics)]
        assert len(got) == 1
    assert redone >= 2
    assert got[0][0].startswith("5 constants refer")


def test_printed_snapshots_never_reuse_an_unknown_constants_number():
    """After FoldConstant a module holds both the unknown constants as written and new ones
    (folded): their printed numbers must not collide, or reading the text back would make
    two constants one."""
    from relaylens.compiler.printer import print_module

    text = read("005.relay")
    built = compile(text, "005.relay", stop_after="passes")
    printed = print_module(built.module)
    refs = re.findall(r"meta\[relay\.Constant\]\[(\d+)\]", printed)
    kept = {c.meta.index for c in unknown_constants(built.module) if c.meta is not None}
    made = [c for c in unknown_constants(built.module) if c.meta is None]
    assert kept and made
    assert len(set(refs)) == len(kept) + len(made)
    assert "#[metadata]" not in printed


def test_interpreting_an_unknown_constant_says_how_to_fill_it():
    from relaylens.compiler.interpreter import InterpreterError

    checked = check_text(read("005.relay"), "005.relay")
    x = np.zeros((1, 3, 224, 224), "float32")
    with pytest.raises(InterpreterError) as info:
        Interpreter(checked.module).call("main", [x])
    assert "meta[relay.Constant][0] has no value" in str(info.value)
    assert "seed" in str(info.value)


def test_references_to_one_entry_share_type_and_value():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 8, 8), float32]) {
  %0 = nn.conv2d(%x, meta[relay.Constant][0], channels=4, kernel_size=[3, 3], padding=[1, 1, 1, 1]);
  %1 = nn.conv2d(%0, meta[relay.Constant][0], channels=4, kernel_size=[3, 3], padding=[1, 1, 1, 1]);
  %2 = multiply(%1, meta[relay.Constant][1]);
  multiply(%2, meta[relay.Constant][1])
}
"""
    checked = check_text(text, "t.relay")
    assert [d.render() for d in checked.diagnostics if d.is_error] == []
    refs = unknown_constants(checked.module)
    zero = [c for c in refs if c.meta.index == 0]
    assert len(zero) == 2 and all(print_type(c.ty) == "Tensor[(4, 4, 3, 3), float32]" for c in zero)
    one = [d for d in checked.diagnostics if d.severity == Severity.INFO]
    assert len(one) == 1 and "meta[relay.Constant][1]" in one[0].message  # said once for two uses
    clash = text.replace("nn.conv2d(%0, meta[relay.Constant][0]", "nn.conv2d(%0, meta[relay.Constant][0] /* ty=Tensor[(4), float32] */")
    errors = [d.message for d in check_text(clash, "t.relay").diagnostics if d.is_error]
    assert "meta[relay.Constant][0] is Tensor[(4), float32] here but Tensor[(4, 4, 3, 3), float32] elsewhere (rank 4 vs 1)" in errors
    typed = text.replace("multiply(%1, meta[relay.Constant][1])", "multiply(%1, meta[relay.Constant][1] /* ty=float32 */)")
    module, _ = fill_unknown_constants(check_text(typed, "t.relay").module, seed=5)
    filled = [c for c in _constants(module) if c.meta is not None]
    by_index: dict = {}
    for c in filled:
        by_index.setdefault(c.meta.index, []).append(c.data)
    assert all(len(v) == 2 and v[0] is v[1] for v in by_index.values())


def _constants(module) -> list[Constant]:
    from relaylens.compiler.ir.functor import post_order

    return [n for n in post_order(module["main"]) if isinstance(n, Constant)]


def test_no_unknown_type_note_behind_a_type_error():
    """A constant left untyped because its call already has an error gets no note: the
    error is the one thing to fix."""
    text = read("005.relay").replace("meta[relay.Constant][99]", "meta[relay.Constant][9]", 1)
    checked = check_text(text, "005.relay")
    errors = [d.message for d in checked.diagnostics if d.is_error]
    assert len(errors) == 1 and "moving_var has 64 elements but data has 128 channels" in errors[0]
    assert [d for d in checked.diagnostics if d.severity == Severity.INFO] == []


def test_run_fills_unknown_constants_from_its_seed_compiled_and_interpreted_alike(capsys):
    path = str(corpus_file("007.relay"))  # four constants, printed without their metadata
    assert main(["run", path, "--check", "--seed", "5"]) == 0
    err = capsys.readouterr().err
    assert "4 constants of unknown value filled with random values from seed 5" in err
    assert "DIFFERS" not in err and "check output: max abs error" in err
    assert main(["run", str(corpus_file("013.relay"))]) == 1  # a constant nothing gives a type to
    assert "has no value and no known type" in capsys.readouterr().err


def test_a_section_that_cannot_be_read_is_not_said_to_be_missing():
    """Garbage pasted into a model's #[metadata] section: the error is at the section, and
    the warning about the constants that refer to it said they referred to 'a metadata
    section that is not here'; it now says the section cannot be read, and stays so as the
    editor re-reads one statement at a time."""
    from relaylens.compiler.check import recheck

    text = ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n'
            '  %0 = add(%x, meta[relay.Constant][0] /* ty=Tensor[(2), float32] */);\n'
            '  %1 = multiply(%0, 2f);\n  %1\n}\n#[metadata]\n{"root": 1, "nodes": [ garbage }\n')
    checked = check_text(text, "m.relay", incremental=True)
    for old, new in [("2f", "3f"), ("3f", "4f")]:
        got = sorted(d.message for d in checked.diagnostics if d.source == "metadata")
        assert got[1].startswith("bad #[metadata] section: the metadata section is not valid JSON")
        assert got[0].startswith("1 constant refers to the #[metadata] section, which cannot be read "
                                 "(see the error there); their values are unknown")
        assert len(got) == 2
        text = text.replace(f"multiply(%0, {old})", f"multiply(%0, {new})")
        done = recheck(checked, text)
        assert done is not None
        checked = done[0]
