"""Conformance over the real corpus (../shared/corpus/relay): 110 programs written or
printed by other people, with SOURCES.tsv saying whether TVM's own parser accepts each.

* Files TVM accepts parse without errors.  The only error allowed is the one TVM would
  give too without the table its test passed in: a `meta[...]` reference in a file that
  has no `#[metadata]` section.
* Files TVM rejects either parse through one of our documented extensions
  (docs/text-format-extensions.md) or give their diagnostics at the places pinned below.
* Everything that parses prints and parses back to a structurally equal module, spans
  included when printed with spans.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from relaylens.compiler.parser import parse
from relaylens.compiler.diagnostics import Severity

from conftest import CORPUS
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared/corpus is not beside the checkout")


def _sources() -> dict[str, dict[str, str]]:
    if not CORPUS.is_dir():
        return {}
    with open(CORPUS / "SOURCES.tsv", newline="") as f:
        return {row["file"]: row for row in csv.DictReader(f, delimiter="\t")}


SOURCES = _sources()
ACCEPTED = sorted(name for name, row in SOURCES.items() if row["tvm_accepts"] == "yes")
OTHERS = sorted(name for name, row in SOURCES.items() if row["tvm_accepts"] != "yes")

# Files TVM rejects (or may reject) that we read through an extension, and which one.
EXTENDED = {
    "063.relay": "print(mod) output: no header",
    "098.relay": "free_var without ';'",
    "099.relay": "free_var without ';'",
    "136.relay": "bare expression after a header",
    "141.relay": "no header",
    "143.relay": "no header",
    "145.relay": "no header",
    "146.relay": "unknown meta keys in attributes (SEScope)",
}
# Files that must give errors, with (line, col, fragment of the message) for each.
REJECTED = {
    "052.relay": [(3, 17, "@id is defined twice")],
    "053.relay": [(6, 17, "undefined variable %x")],
    "100.relay": [
        (2, 5, "legacy text format (v0.0.1)"),
        (4, 14, "expected an expression after '='"),
        (23, 5, "expected ';'"),
    ],
    "142.relay": [(line, 3, "'#' does not start a comment") for line in (2, 3, 4, 5, 7, 8, 14, 20, 32, 35, 36, 37, 38)],
    "144.relay": [(1, 1, "'#' does not start a comment"), (7, 80, "found '.'")],
}


def read(name: str) -> str:
    return (CORPUS / name).read_text()


def real_errors(result) -> list:
    """Error diagnostics other than a meta reference in a file with no metadata section."""
    has_table = result.module.metadata is not None
    return [
        d
        for d in result.diagnostics
        if d.is_error and (has_table or "has no #[metadata] section" not in d.message)
    ]


def test_corpus_is_complete() -> None:
    assert len(SOURCES) == 110
    assert set(EXTENDED) | set(REJECTED) == set(OTHERS)


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_file_parses(name: str) -> None:
    result = parse(read(name), name)
    assert [d.render() for d in real_errors(result)] == []
    assert result.module.functions or result.module.type_definitions


@pytest.mark.parametrize("name", sorted(EXTENDED))
def test_extension_reads_file_tvm_rejects(name: str) -> None:
    result = parse(read(name), name)
    assert [d.render() for d in real_errors(result)] == []
    assert result.module.functions


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_file_errors_at_the_right_place(name: str) -> None:
    result = parse(read(name), name)
    got = [(d.location()[1], d.location()[2], d.message) for d in real_errors(result)]
    expected = REJECTED[name]
    assert [(line, col) for line, col, _ in got] == [(line, col) for line, col, _ in expected], got
    for (_, _, message), (_, _, fragment) in zip(got, expected):
        assert fragment in message


def test_meta_references_without_table_are_one_warning() -> None:
    text = read("001.relay")
    result = parse(text, "001.relay")
    meta = [d for d in result.diagnostics if d.source == "metadata"]
    assert [d.severity for d in meta] == [Severity.WARNING]
    assert meta[0].location() == ("001.relay", 5, 30)
    assert meta[0].message.startswith(f"{text.count('meta[relay.Constant]')} constants refer to a metadata "
                                      "section that is not here; their values are unknown")


def test_metadata_section_resolves_constants() -> None:
    result = parse(read("131.relay"), "131.relay")
    assert real_errors(result) == []
    from relaylens.compiler.ir import Constant, ExprVisitor

    found = []

    class Collect(ExprVisitor):
        def visit_constant(self, c: Constant) -> None:
            if c.meta is not None:
                found.append(c)

    for func in result.module.functions.values():
        Collect().visit(func)
    assert found and all(c.data is not None for c in found)
    # the ty= comment beside each one says its shape
    assert all(c.ty is None or tuple(c.ty.shape) == c.data.shape for c in found)


def test_gpt2_structure() -> None:
    """The largest file: one @main, every %N resolved, every call's op named."""
    result = parse(read("002.relay"), "002.relay")
    main = result.module["main"]
    from relaylens.compiler.ir import Call, ExprVisitor, Op

    ops: dict[str, int] = {}

    class Count(ExprVisitor):
        def visit_call(self, call: Call) -> None:
            if isinstance(call.op, Op):
                ops[call.op.name] = ops.get(call.op.name, 0) + 1

    Count().visit(main)
    text = read("002.relay")
    assert [p.name for p in main.params] == ["x"]
    graph_lines = re.findall(r"^\s*%\d+ = ", text, re.M)
    assert len(result.index.by_kind("graph")) == len(graph_lines) == 916
    assert ops["nn.dense"] == text.count("nn.dense(") == 48
    assert ops["nn.batch_matmul"] == text.count("nn.batch_matmul(") == 24


# ---- round trips ---------------------------------------------------------------------
def _parses(name: str) -> bool:
    return not real_errors(parse(read(name), name))


ROUND_TRIP = [name for name in ACCEPTED + sorted(EXTENDED)]


@pytest.mark.parametrize("name", ROUND_TRIP)
@pytest.mark.parametrize("spans", [False, True], ids=["plain", "spans"])
def test_print_parse_round_trip(name: str, spans: bool) -> None:
    from relaylens.compiler.ir.structural_equal import assert_structural_equal
    from relaylens.compiler.printer import print_module

    first = parse(read(name), name)
    text = print_module(first.module, spans=spans, types=True)
    second = parse(text, "printed.relay")
    assert [d.render() for d in real_errors(second)] == [], text
    assert_structural_equal(first.module, second.module, spans=spans)
    # printing is a fixed point after one round
    assert print_module(second.module, spans=spans, types=True) == text
