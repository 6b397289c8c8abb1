"""Where a build report (server/slow/reporting.py) puts what the editor shows: each fused
function's lens on the first expression it computes, and, for each pass that changed an
expression, the appearance that speaks for it (compiler/provenance.py, `Provenance.ordered`)
printed without the type comments of its operands."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.server.slow.reporting import build_report

# a U-Net's skip connection: after AlterOpLayout the relu's value (line 5) reaches the
# resize + concatenate kernel through a layout_transform that carries the relu's span
MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 16, 16), float32], %w: Tensor[(8, 3, 3, 3), float32], %w2: Tensor[(8, 8, 3, 3), float32],
          %g: Tensor[(8), float32], %b: Tensor[(8), float32], %m: Tensor[(8), float32], %v: Tensor[(8), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, %g, %b, %m, %v);
  %2 = nn.relu(%1.0);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  %4 = nn.conv2d(%3, %w2, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  %5 = image.resize2d(%4, size=[16, 16], method="nearest_neighbor");
  %6 = (%5, %2);
  concatenate(%6, axis=1)
}
"""


def line_of(needle: str) -> int:
    return MODEL.count("\n", 0, MODEL.index(needle)) + 1


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    weights = tmp_path_factory.mktemp("anchors") / "model.npz"
    rng = np.random.default_rng(0)
    np.savez(weights, w=rng.standard_normal((8, 3, 3, 3), "float32"), w2=rng.standard_normal((8, 8, 3, 3), "float32"),
             g=rng.uniform(0.5, 1.5, 8).astype("float32"), b=np.zeros(8, "float32"), m=np.zeros(8, "float32"),
             v=np.ones(8, "float32"))
    built = build_report("file:///anchors/model.relay", 1, MODEL, weights=str(weights))
    assert built.functions, [d.message for d in built.diagnostics]
    return built


def test_a_lens_sits_on_the_first_expression_its_kernel_computes(report):
    anchors = {fn.display_name: MODEL.count("\n", 0, fn.anchor[0]) + 1 for fn in report.functions}
    resize = next(name for name in anchors if "resize2d" in name)
    assert anchors[resize] == line_of("image.resize2d("), anchors  # not the relu its layout_transform moves
    conv = next(name for name in anchors if name.startswith("conv2d + batch_norm"))
    assert anchors[conv] == line_of("nn.conv2d(%x")
    # nor does it colour the relu's line as its own (the line map's Relay side)
    lines = {fn.display_name: {MODEL.count("\n", 0, start) + 1 for start, _ in fn.ranges} for fn in report.functions}
    assert line_of("nn.relu(%1.0)") not in lines[resize] and line_of("nn.relu(%1.0)") in lines[conv], lines


def test_a_change_shows_what_the_expression_itself_became(report):
    conv = next(e for e in report.exprs if MODEL[e.range[0]:].startswith("nn.conv2d(%x"))
    assert conv.changes
    for change in conv.changes:  # FoldScaleAxis scales the weight before it: still the conv first
        assert change.became[0][1].startswith(("nn.conv2d(", "nn.contrib_conv2d_NCHWc(")), change
        assert change.before.startswith(("nn.conv2d(", "nn.contrib_conv2d_NCHWc(")), change
    snippets = [c.before for e in report.exprs for c in e.changes] + \
        [text for e in report.exprs for c in e.changes for _, text in c.became]
    assert snippets and not [s for s in snippets if "/*" in s]
