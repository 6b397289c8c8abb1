"""A parameter that AlterOpLayout puts in another layout for the call that reads it (a
weight left unbound, the model's input): the layout_transform is a kernel of its own that
runs at every inference.  What each view says of it (compiler/transform/layout_rewrite.py,
`input_span`; compiler/provenance.py, `Provenance.movers`):

- its Relay place is the call that reads the parameter, never the def line (which computes
  nothing): its LLVM IR's debug locations, its lens's line, the lines the line map colours;
- the call still leads to its own kernel (hover and explain: "fused into conv2d + relu");
- the call's hover and explain name the transform beside it, with what it moves, and say
  that binding the weight makes it a build-time fold;
- its lens is one more lens on the call's line, not a second `ƒ` (one `ƒ` per kernel the
  line computes).
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from lsprotocol import types as lsp

from relaylens.compiler.cli.explain import explain_text
from relaylens.compiler.driver import compile
from relaylens.server.features.code_lens import report_lenses
from relaylens.server.features.provenance_hover import describe, parameter_markdown
from relaylens.server.slow.builds import Built
from relaylens.server.slow.reporting import build_report

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32],
          %w: Tensor[(32, 16, 1, 1), float32]) -> Tensor[(1, 32, 8, 8), float32] {
  %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0], channels=32, kernel_size=[1, 1]);
  nn.relu(%0)
}
"""
CONV_LINE = 4  # 1-based
CONV = MODEL.index("nn.conv2d(")


def _line(offset: int) -> int:
    return MODEL.count("\n", 0, offset) + 1


def test_the_transforms_llvm_ir_is_located_at_the_call_not_the_def_line():
    built = compile(MODEL, "model.relay", stop_after="llvm")
    assert built.ok, built.diagnostics
    ir = built.lowered.llvm_ir
    scopes = {m[1]: m[2] for m in re.finditer(r'!(\d+) = distinct !DISubprogram\(name: "(tvmgen_default_fused_\w+)"', ir)}
    lines = {(scopes[m[2]], int(m[1])) for m in re.finditer(r"!DILocation\(line: (\d+), column: \d+, scope: !(\d+)\)", ir)
             if m[2] in scopes}
    assert lines and all(line not in (2, 3) for _, line in lines), sorted(lines)  # the def's lines
    # %x's and %w's transforms at the conv; the result's, back to NCHW, at the relu
    transforms = {line for name, line in lines if "layout_transform" in name and "nn_" not in name}
    assert transforms == {CONV_LINE, CONV_LINE + 1}, sorted(lines)


def test_the_call_leads_to_its_own_kernel_and_names_the_transforms_beside_it():
    built = compile(MODEL, "model.relay", stop_after="llvm")
    prov = built.provenance
    key = prov.key_at(CONV + 2)
    assert "conv2d_NCHWc" in prov.fused_function(key)[0]
    movers = prov.movers(key)
    assert sorted(moved for moved, _, _ in movers) == ["%w", "%x"], movers
    text = explain_text(prov, key, "model.relay", built.lowered)
    assert "fused into: tvmgen_default_fused_nn_contrib_conv2d_NCHWc" in text, text
    assert "  at every run, beside it" in text, text
    assert re.search(r"\n    tvmgen_default_fused_layout_transform\w*: layout_transform of %w: OIHW → OIHW16i16o\n", text), text


def test_the_report_puts_the_transforms_on_the_calls_line_as_lenses_of_its_kernel():
    report = build_report("file:///t/model.relay", 1, MODEL)
    assert report.functions, report.diagnostics
    for fn in report.functions:
        assert _line(fn.anchor[0]) not in (2, 3), (fn.display_name, _line(fn.anchor[0]))
        assert all(_line(start) not in (2, 3) for start, _ in fn.ranges), (fn.display_name, fn.ranges)
    movers = {fn.moves for fn in report.functions if fn.moves}
    assert movers == {"%x", "%w"}, movers
    # hover on the conv: its own kernel, then the transforms beside it
    expr = report.expr_at(CONV + 2)
    shown = describe(expr, report.uri, report.version, report.function(expr.fused), report.movers(expr.range))
    assert "**fused into** conv2d + relu" in shown, shown
    assert "layout_transform of `%w`" in shown and "layout_transform of `%x`" in shown, shown
    # lenses: one ƒ on the conv's line, the transforms as lenses after it
    lenses = report_lenses(Built(report))
    by_line: dict[int, list[str]] = {}
    for lens in lenses:
        by_line.setdefault(lens.range.start.line + 1, []).append(lens.command.title)
    assert all(sum(t.startswith("ƒ ") for t in titles) <= 1 for titles in by_line.values()), by_line
    conv_titles = by_line[CONV_LINE]
    assert conv_titles[0].startswith("ƒ conv2d + relu"), conv_titles
    assert {"layout_transform %w", "layout_transform %x"} <= set(conv_titles), conv_titles
    assert 2 not in by_line and 3 not in by_line, by_line
    opened = next(lens for lens in lenses if lens.command.title == "layout_transform %w")
    assert isinstance(opened.command.arguments[1], lsp.Range)  # module.ll at its lines


W = MODEL.index("%w")  # on the def line


def test_explain_on_a_parameter_names_the_kernels_that_read_it_not_a_pass_that_removed_it():
    built = compile(MODEL, "model.relay", stop_after="llvm")
    prov = built.provenance
    key = prov.key_at(W + 1)
    text = explain_text(prov, key, "model.relay", built.lowered)
    assert "gone" not in text and "RemoveUnusedFunctions" not in text, text
    assert "  type: Tensor[(32, 16, 1, 1), float32]\n" in text, text
    assert "  parameter of @main: no pass removes or rewrites it" in text, text
    assert re.search(r"\n  read at every run by: tvmgen_default_fused_nn_contrib_conv2d_NCHWc\w* \(conv2d \+ relu\)\n"
                     r"    after tvmgen_default_fused_layout_transform\w*: layout_transform: OIHW → OIHW16i16o\n"
                     r"    LLVM function: @tvmgen_default_fused_nn_contrib_conv2d_NCHWc", text), text


def test_explain_on_a_let_bound_variable_follows_its_value():
    model = ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(4), float32]) {\n'
             '  let %y = exp(%x);\n  add(%y, %y)\n}\n')
    built = compile(model, "let.relay", stop_after="llvm")
    prov = built.provenance
    text = explain_text(prov, prov.key_at(model.index("%y") + 1), "let.relay", built.lowered)
    assert "gone" not in text, text
    assert "  bound by let to the expression at let.relay:3:12, which follows\nlet.relay:3:12: exp(%x)\n" in text, text


def test_the_hover_on_a_parameter_names_the_kernels_that_read_it():
    report = build_report("file:///t/model.relay", 1, MODEL)
    readers = report.parameters["w"].readers
    assert len(readers) == 1 and "conv2d_NCHWc" in readers[0][0], readers
    assert [what for _, what in readers[0][1]] == ["layout_transform: OIHW → OIHW16i16o"], readers
    server = SimpleNamespace(builds=SimpleNamespace(current=lambda uri: Built(report)))
    shown = parameter_markdown(server, report.uri, "w")
    assert shown.startswith("**parameter of @main**"), shown
    assert "**read at every run by**  \nconv2d + relu · `tvmgen_default_fused_nn_contrib_conv2d_NCHWc" in shown, shown
    assert "after layout_transform: OIHW → OIHW16i16o · `tvmgen_default_fused_layout_transform" in shown, shown


BIASED = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(32, 16, 3, 3), float32], %b: Tensor[(32), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=32, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}
"""


def test_a_bias_left_unbound_is_put_in_its_layout_beside_the_kernel_that_adds_it():
    """CanonicalizeOps and AlterOpLayout make of an unbound bias expand_dims + layout_transform,
    a kernel of its own carrying the bias_add's range; the bias_add itself is the `add` inside
    the conv's kernel.  Explain, the hover and the lens called that kernel 'bias_add +
    layout_transform' and said the bias_add was fused into it."""
    built = compile(BIASED, "biased.relay", stop_after="llvm")
    prov = built.provenance
    key = prov.key_at(BIASED.index("nn.bias_add") + 3)
    assert "conv2d_NCHWc" in prov.fused_function(key)[0], prov.fused_function(key)
    text = explain_text(prov, key, "biased.relay", built.lowered)
    assert re.search(r"\n  fused into: tvmgen_default_fused_nn_contrib_conv2d_NCHWc\w* \(conv2d \+ bias_add \+ relu\)\n",
                     text), text
    assert re.search(r"\n    tvmgen_default_fused_expand_dims\w*: expand_dims \+ layout_transform of %b: NCHW → NCHW\d+c\n",
                     text), text
    report = build_report("file:///t/biased.relay", 1, BIASED)
    prep = next(fn for fn in report.functions if fn.name.startswith("tvmgen_default_fused_expand_dims"))
    assert (prep.display_name, prep.moves) == ("expand_dims + layout_transform", "%b"), prep
    expr = report.expr_at(BIASED.index("nn.bias_add") + 3)
    shown = describe(expr, report.uri, report.version, report.function(expr.fused), report.movers(expr.range))
    assert "**fused into** conv2d + bias_add + relu" in shown, shown
    assert "expand_dims + layout_transform of `%b`: NCHW → NCHW" in shown, shown


def test_explain_on_an_expression_that_a_let_of_no_name_binds():
    """`ref_write(%0, 1f); ref_read(%0)` binds the write to a variable of its own range: it is no
    variable to follow to its let's value (that value is itself: a RecursionError, exit 3, once
    explain followed lets); a call so bound answers for itself, not as its binder (said gone
    after RemoveUnusedFunctions)."""
    model = ('#[version = "0.0.5"]\ndef @main(%x: float32, %f: fn (int32) -> int32) {\n'
             '  %0 = ref(%x);\n  ref_write(%0, 1f);\n  %f(0);\n  ref_read(%0)\n}\n')
    built = compile(model, "refs.relay", stop_after="llvm")
    prov = built.provenance
    text = explain_text(prov, prov.key_at(model.index("ref_write") + 2), "refs.relay", built.lowered)
    assert text.startswith("refs.relay:4:3: ref_write(%0, 1f)\n") and "not traced through the passes" in text, text
    text = explain_text(prov, prov.key_at(model.index("%f(0)") + 1), "refs.relay", built.lowered)
    assert text.startswith("refs.relay:5:3: %f(0)\n") and "variable" not in text, text
    assert "RemoveUnusedFunctions" not in text, text  # its binder's range is no appearance that went
