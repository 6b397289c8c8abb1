"""Where a partitioned build put each call (server/slow/byoc_report.py), and what the hover
says of it (server/features/byoc.py `describe`), without a client: composites and the def
that made them, ops taken one by one, composites no target takes, the closest pattern."""

from __future__ import annotations

from types import SimpleNamespace

from relaylens.server.features import Refused
from relaylens.server.features.byoc import DROPPED, describe
from relaylens.server.slow.builds import Built
from relaylens.server.slow.byoc_report import ByocRequest, Placement, byoc_config
from relaylens.server.slow.reporting import build_report

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %g: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, %g, %g, %g, %g);
  %2 = %1.0;
  %3 = exp(%2);
  %4 = add(%3, %2);
  nn.relu(%4)
}
"""
TABLE = """
def @conv2d_bn_relu(%x, %w, %g, %b, %m, %v, Composite="mynpu.conv2d_bn") {
  %0 = nn.batch_norm(nn.conv2d(%x, %w), %g, %b, %m, %v);
  nn.relu(%0.0)
}
def @conv2d_bn(%x, %w, %g, %b, %m, %v, Composite="mynpu.conv2d_bn") {
  %0 = nn.batch_norm(nn.conv2d(%x, %w), %g, %b, %m, %v);
  %0.0
}
def @add_relu(%x, %y, Composite="dsp.add_relu") { nn.relu(add(%x, %y)) }
"""


class _NoFiles:
    def get(self, uri: str):
        raise Refused(f"{uri} is not read here")


def built(ops: list[str]) -> Built:
    request = ByocRequest(byoc_config("/w/table.relay", TABLE, ["mynpu"], ops), "file:///w/table.relay")
    report = build_report("file:///w/m.relay", 1, MODEL, byoc=request)
    assert [d.message for d in report.diagnostics if d.severity == 1] == []
    return Built(report)


def hover(b: Built, needle: str) -> str:
    byoc = b.report.byoc
    call = byoc.call_at(MODEL.index(needle) + 1)
    return describe(SimpleNamespace(documents=_NoFiles()), call, byoc, b)


def test_alternatives_of_one_composite_name_are_told_apart_by_the_def_that_matched():
    b = built([])
    byoc = b.report.byoc
    [conv] = byoc.functions
    assert (conv.target, conv.patterns, conv.ops, conv.title) == (
        "mynpu", ("conv2d_bn",), 2, "mynpu · 2 ops · conv2d_bn")  # no relu after it: the optional form
    assert hover(b, "nn.batch_norm") == ("**BYOC: mynpu** · composite `mynpu.conv2d_bn` (pattern `@conv2d_bn`) in "
                                         f"[`{conv.name}`](relaylens:/pass/"
                                         f"{b.report.snapshots[byoc.snapshot].file_name}?uri=file%3A%2F%2F%2Fw%2Fm.relay"
                                         f"&version=1#L{b.report.snapshots[byoc.snapshot].text.count(chr(10), 0, conv.printed[0]) + 1})")


def test_a_composite_no_target_takes_stays_on_the_host():
    b = built([])
    byoc = b.report.byoc
    [m] = [m for m in byoc.matches if m.composite == "dsp.add_relu"]
    assert (m.pattern, m.target) == ("add_relu", None)
    assert hover(b, "add(%3") == ("**BYOC: host** · composite `dsp.add_relu` (pattern `@add_relu`), which no "
                                  "target takes (targets: mynpu)")
    assert hover(b, "exp(") == "**BYOC: host** · no pattern of `table.relay` calls `exp`"


def test_ops_taken_one_by_one_join_a_region_and_are_named():
    b = built(["exp"])
    byoc = b.report.byoc
    # exp joins the convolution's region (MergeCompilerRegions): one function, its op named
    assert [f.title for f in byoc.functions] == ["mynpu · 3 ops · conv2d_bn, exp"]
    assert hover(b, "exp(").startswith("**BYOC: mynpu** · `exp` taken as an op (`--target-ops`) in [`tvmgen_default_mynpu_")


def test_a_match_merge_composite_dropped_and_a_constraint_that_failed():
    b = built([])
    byoc, server = b.report.byoc, SimpleNamespace(documents=_NoFiles())
    dropped = Placement((0, 1), "add", closest="add_relu")
    assert describe(server, dropped, byoc, b) == f"**BYOC: host** · `@add_relu` {DROPPED}"
    kept_out = Placement((0, 1), "nn.conv2d", closest="conv2d_bn", why="%w must be a constant")
    assert describe(server, kept_out, byoc, b) == "**BYOC: host** · closest pattern `@conv2d_bn`: %w must be a constant"
