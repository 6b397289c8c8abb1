"""Type inference on the real corpus: every file TVM accepts typechecks, the types TVM
printed in `ty=` comments agree with ours, and everything the text gives enough
information for gets a type."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.ir import Call
from relaylens.compiler.ir.functor import post_order

from conftest import CORPUS, needs_corpus

# Files whose text alone cannot be fully typed, and why (the diagnostics say so too).
INCOMPLETE = {
    "089.relay": "uses List/Cons from TVM's prelude without defining them",
}


def _rows():
    path = CORPUS / "SOURCES.tsv"
    if not path.exists():
        return []
    with path.open() as f:
        return [r for r in csv.DictReader(f, delimiter="\t")]


ACCEPTED = [r["file"] for r in _rows() if r["tvm_accepts"] == "yes"]


def _explains_missing_types(diagnostics) -> bool:
    """A metadata entry or a global the file does not have: types depending on it are unknown."""
    return any("meta" in d.message or "not defined in this file" in d.message for d in diagnostics)


@pytest.mark.parametrize("name", ACCEPTED)
def test_corpus_file_typechecks(name, corpus_dir):
    result = check_text((corpus_dir / name).read_text(), name)
    errors = [f"{d.location()}: {d.message}" for d in result.type_diagnostics if d.is_error]
    assert not errors, "\n".join(errors)
    disagreements = [d.message for d in result.type_diagnostics if "the comment says" in d.message]
    assert not disagreements, "types TVM printed differ from ours:\n" + "\n".join(disagreements)
    untyped = [c for f in result.module.functions.values() for c in post_order(f)
               if isinstance(c, Call) and c.ty is None]
    if untyped and name not in INCOMPLETE:
        assert _explains_missing_types(result.parsed.diagnostics), (
            f"{len(untyped)} calls without a type, first: {untyped[0]!r} at {untyped[0].span}")


@needs_corpus
def test_corpus_is_there():
    assert len(ACCEPTED) > 80


def test_gpt2_types_are_complete_where_the_text_allows(corpus_dir):
    """GPT-2's weights are in a metadata table the file lacks; the reshapes, takes and
    element-wise ops on the input still get types that match what TVM printed."""
    result = check_text((corpus_dir / "002.relay").read_text(), "002.relay")
    main = result.module["main"]
    from relaylens.compiler.printer import print_type

    typed = {print_type(c.ty) for c in post_order(main) if isinstance(c, Call) and c.ty is not None}
    assert {"Tensor[(50, 32), int64]", "Tensor[(50, 32), bool]"} <= typed
