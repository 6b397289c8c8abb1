"""MergeCompilerRegions, after TVM's tests/python/relay/test_pass_merge_compiler_regions.py:
annotated modules in, merged modules out, as Relay text compared structurally."""

from __future__ import annotations

from byoc_cases import assert_module, assert_same_values, parse_typed, run_byoc
from relaylens.compiler.transform import PassContext, get_pass

T = "Tensor[(10, 10), float32]"


def begin(x: str, target: str) -> str:
    return f'annotation.compiler_begin({x}, compiler="{target}")'


def end(x: str, target: str) -> str:
    return f'annotation.compiler_end({x}, compiler="{target}")'


DIAMOND = f"""def @main(%data: {T}) {{
  %0 = {begin("%data", "test")};
  %1 = abs(%0);
  %2 = {end("%1", "test")};
  %3 = {end("%1", "test")};
  %4 = {begin("%2", "test")};
  %5 = {begin("%3", "default")};
  %6 = nn.relu(%4);
  %7 = {end("%6", "test")};
  %8 = tanh(%5);
  %9 = {end("%8", "default")};
  %10 = {begin("%7", "test")};
  %11 = {begin("%9", "test")};
  %12 = add(%10, %11);
  {end("%12", "test")}
}}"""


def test_diamond_graph_fanouts():
    """abs and relu merge; add may not join them, since tanh (default) sits between
    (TVM: test_diamond_graph_fanouts)."""
    out = run_byoc(DIAMOND, ["MergeCompilerRegions"])
    assert_module(out, f"""def @main(%data: {T}) {{
  %0 = {begin("%data", "test")};
  %1 = abs(%0);
  %2 = {end("%1", "test")};
  %3 = nn.relu(%1);
  %4 = {end("%3", "test")};
  %5 = {begin("%2", "default")};
  %6 = tanh(%5);
  %7 = {end("%6", "default")};
  %8 = {begin("%4", "test")};
  %9 = {begin("%7", "test")};
  %10 = add(%8, %9);
  {end("%10", "test")}
}}""")
    assert_same_values(DIAMOND, out)


def test_chain_of_one_target_becomes_one_region():
    before = f"def @main(%x: {T}) {{\n  %0 = nn.relu(%x);\n  %1 = abs(%0);\n  exp(%1)\n}}"
    out = run_byoc(before, ["AnnotateTarget", "MergeCompilerRegions"], targets=["t"], ops=["nn.relu", "abs", "exp"])
    assert_module(out, f"""def @main(%x: {T}) {{
  %0 = {begin("%x", "t")};
  %1 = nn.relu(%0);
  %2 = abs(%1);
  %3 = exp(%2);
  {end("%3", "t")}
}}""")


def test_default_regions_merge_too():
    """Regions of the host (`default`) merge like any target's; PartitionGraph drops them."""
    before = f"def @main(%x: {T}) {{\n  %0 = nn.relu(%x);\n  %1 = tanh(%0);\n  %2 = exp(%1);\n  abs(%2)\n}}"
    out = run_byoc(before, ["AnnotateTarget", "MergeCompilerRegions"], targets=["t"], ops=["nn.relu", "abs"])
    assert_module(out, f"""def @main(%x: {T}) {{
  %0 = {begin("%x", "t")};
  %1 = nn.relu(%0);
  %2 = {end("%1", "t")};
  %3 = {begin("%2", "default")};
  %4 = tanh(%3);
  %5 = exp(%4);
  %6 = {end("%5", "default")};
  %7 = {begin("%6", "t")};
  %8 = abs(%7);
  {end("%8", "t")}
}}""")
    assert_same_values(before, out)


def test_an_end_without_a_begin_is_an_error_at_it():
    mod = parse_typed(f"def @main(%x: {T}) {{\n  %0 = nn.relu(%x);\n  {end('%0', 't')}\n}}")
    p = get_pass("MergeCompilerRegions")
    with PassContext():
        out = p(mod)
    assert out is mod
    [error] = p.diagnostics
    assert "compiler_end without a region" in error.message and error.location()[1] == 4
