"""AnnotateTarget, after TVM's tests/python/relay/test_pass_annotate_target.py: the
supported ops come from the op list (`relay.byoc.ops`), composites from their names;
expected modules as Relay text, compared structurally."""

from __future__ import annotations

from byoc_cases import assert_module, assert_same_values, run_byoc

T = "Tensor[(10, 10), float32]"
T5 = "Tensor[(10, 5), float32]"


def begin(x: str, target: str) -> str:
    return f'annotation.compiler_begin({x}, compiler="{target}")'


def end(x: str, target: str) -> str:
    return f'annotation.compiler_end({x}, compiler="{target}")'


def test_multiple_ends():
    """A supported op used twice gets one end per use (TVM: test_multiple_ends)."""
    before = f"def @main(%x: {T}) {{\n  %0 = nn.relu(%x);\n  %1 = abs(%0);\n  %2 = abs(%0);\n  add(%1, %2)\n}}"
    out = run_byoc(before, ["AnnotateTarget"], targets=["test"], ops=["nn.relu"])
    assert_module(out, f"""def @main(%x: {T}) {{
  %0 = {begin("%x", "test")};
  %1 = nn.relu(%0);
  %2 = {end("%1", "test")};
  %3 = {begin("%2", "default")};
  %4 = abs(%3);
  %5 = {end("%4", "default")};
  %6 = {end("%1", "test")};
  %7 = {begin("%6", "default")};
  %8 = abs(%7);
  %9 = {end("%8", "default")};
  %10 = {begin("%5", "default")};
  %11 = {begin("%9", "default")};
  %12 = add(%10, %11);
  {end("%12", "default")}
}}""")
    assert_same_values(before, out)


def test_tuple_between_supported_ops_is_annotated():
    """A tuple whose fields are all of the target joins it (TVM: test_tuple, non-call ops on)."""
    before = f"def @main(%x: {T5}, %y: {T5}) {{\n  %0 = nn.relu(%x);\n  %1 = nn.relu(%y);\n  %2 = (%0, %1);\n  concatenate(%2, axis=1)\n}}"
    out = run_byoc(before, ["AnnotateTarget"], targets=["t"], ops=["nn.relu", "concatenate"])
    assert_module(out, f"""def @main(%x: {T5}, %y: {T5}) {{
  %0 = {begin("%x", "t")};
  %1 = nn.relu(%0);
  %2 = {end("%1", "t")};
  %3 = {begin("%2", "t")};
  %4 = {begin("%y", "t")};
  %5 = nn.relu(%4);
  %6 = {end("%5", "t")};
  %7 = {begin("%6", "t")};
  %8 = (%3, %7);
  %9 = {end("%8", "t")};
  %10 = {begin("%9", "t")};
  %11 = concatenate(%10, axis=1);
  {end("%11", "t")}
}}""")
    assert_same_values(before, out)


def test_composite_function_takes_the_target_of_its_name():
    """`Composite="test.add_relu"` goes to target `test`; its body is not entered
    (TVM: test_composite_function)."""
    composite = (f'fn (%in_1: {T}, %in_2: {T}, Composite="test.add_relu") '
                 '{ %10 = add(%in_1, %in_2); nn.relu(%10) }')
    before = f"def @main(%a: {T}, %b: {T}) {{\n  %0 = {composite};\n  %0(%a, %b)\n}}"
    out = run_byoc(before, ["AnnotateTarget"], targets=["test"])
    assert_module(out, f"""def @main(%a: {T}, %b: {T}) {{
  %0 = {begin("%a", "test")};
  %1 = {begin("%b", "test")};
  %2 = {composite};
  %3 = %2(%0, %1);
  {end("%3", "test")}
}}""")
    other = run_byoc(before, ["AnnotateTarget"], targets=["other"])
    assert other["main"].body.attrs["compiler"] == "default"


def test_first_target_in_the_list_wins():
    before = f"def @main(%x: {T}) {{ nn.relu(%x) }}"
    ops = {"A": ["nn.relu"], "B": ["nn.relu"]}
    assert run_byoc(before, ["AnnotateTarget"], targets=["A", "B"], ops=ops)["main"].body.attrs["compiler"] == "A"
    assert run_byoc(before, ["AnnotateTarget"], targets=["B", "A"], ops=ops)["main"].body.attrs["compiler"] == "B"


def test_multiple_runs_equal_one_run_with_both_targets():
    """Annotating for A then for B gives what annotating for [A, B] gives (TVM: test_multiple_runs)."""
    before = f"def @main(%x: {T5}) {{\n  %0 = nn.relu(%x);\n  %1 = abs(%0);\n  %2 = nn.relu(%0);\n  add(%1, %2)\n}}"
    ops = {"A": ["nn.relu"], "B": ["add"]}
    once = run_byoc(before, ["AnnotateTarget"], targets=["A", "B"], ops=ops)
    a = run_byoc(before, ["AnnotateTarget"], targets=["A"], ops=ops)
    twice = run_byoc(a, ["AnnotateTarget"], targets=["B"], ops=ops)
    from relaylens.compiler.printer import print_module

    assert_module(twice, print_module(once).split("\n", 1)[1])
    assert_same_values(before, twice)


def test_without_targets_everything_is_default():
    before = f"def @main(%x: {T}) {{ nn.relu(%x) }}"
    out = run_byoc(before, ["AnnotateTarget"])
    assert_module(out, f"""def @main(%x: {T}) {{
  %0 = {begin("%x", "default")};
  %1 = nn.relu(%0);
  {end("%1", "default")}
}}""")
