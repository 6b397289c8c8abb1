"""What a whole check types in a text with a statement that does not parse (compiler/check.py
`_cut_off`): every statement that does not depend on the hole the parser put in its place,
so the editor keeps their types while the statement is being typed; and in a valid text
only what the definitions use, as TVM."""

from __future__ import annotations

from relaylens.compiler.check import check_text
from relaylens.compiler.printer.types import print_type

BROKEN = '''#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32]) {
  %0 = nn.relu(%x);
  %1 = concatenate((%0, %0), axis=1;
  %2 = exp(%x);
  %3 = add(%1, %2);
  %3
}
'''


def _types(text: str) -> dict[str, object]:
    result = check_text(text, "t.relay", incremental=True)
    return {s.name: s.node.ty and print_type(s.node.ty) for s in result.parsed.index.symbols if s.kind == "graph"}


def test_a_hole_leaves_the_statements_it_cut_off_typed() -> None:
    result = check_text(BROKEN, "t.relay")
    assert [d.source for d in result.diagnostics if d.is_error] == ["syntax"]
    types = _types(BROKEN)
    assert types["0"] == "Tensor[(2, 3), float32]"
    assert types["2"] == "Tensor[(2, 3), float32]"  # after the hole, not using it
    assert types["1"] is None and types["3"] is None  # the hole, and what uses it


def test_a_valid_text_types_only_what_is_used() -> None:
    valid = BROKEN.replace("axis=1;", "axis=1);").replace("add(%1, %2)", "add(%0, %2)")
    types = _types(valid)
    assert types["3"] == "Tensor[(2, 3), float32]"
    assert types["1"] is None  # nothing uses %1: TVM's IR does not hold it
