"""The steps of an open's analysis that grow with the text pass pause points
(compiler/pauses.py), so that the language server's analysis in pieces
(server/pieces.py) hands back to the event loop inside them: the regions of the
anchors, the walk down a long chain of statements, the symbol index's sort, the
expression table.  And what they make is what they made before.  No clock: the test
records where the pause points are passed."""

from __future__ import annotations

import sys

from hypothesis import given, settings, strategies as st

from relaylens.compiler import pauses
from relaylens.compiler.parser.symbols import _order
from relaylens.compiler.pauses import pausing, sorted_in_pieces
from relaylens.server.analysis import analyse

LINES = 6_000


def chain(n: int = LINES) -> str:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(16), float32]) {", "  %0 = add(%x, %x);"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1});" for k in range(1, n)]
    return "\n".join([*lines, f"  %{n - 1}", "}"]) + "\n"


def test_the_long_steps_of_an_open_pass_pause_points() -> None:
    passed: set[str] = set()

    def hook(may_stop: bool) -> None:
        code = sys._getframe(2).f_code  # the function the pause point is in
        passed.add(f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}")

    with pausing(hook):
        analysis = analyse("file:///chain.relay", 1, chain())
        analysis.prepare()
    assert {"anchors.py:__init__", "functor.py:post_order", "symbols.py:entries", "exprs.py:_entries",
            "pauses.py:sorted_in_pieces"} <= passed, passed
    entries = analysis.index.entries()
    assert entries == sorted(entries, key=_order)  # the same order as a sort by _order
    assert len(entries) >= 3 * LINES  # every statement's definition and its two uses
    exprs = analysis.exprs.entries
    assert [(s.start, -s.end) for s, _ in exprs] == sorted((s.start, -s.end) for s, _ in exprs)
    assert len(exprs) == LINES  # every call
    line = 2 + 4_321
    offset = analysis.source.offset(line + 1, 3)  # on `%4321`, its definition
    found = analysis.index.at(offset)
    assert found is not None and found[0].name == "4321"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 1000))), st.integers(1, 5))
def test_a_sort_in_pieces_is_a_stable_sort(items, run) -> None:
    """pauses.py `sorted_in_pieces`: runs sorted, then merged two by two; the result is
    `sorted`'s, items with equal keys in their order (the second field tells them apart)."""
    old, pauses.RUN = pauses.RUN, run
    paused = []
    try:
        with pausing(lambda may_stop: paused.append(1)):
            got = sorted_in_pieces(items, key=lambda item: item[0])
    finally:
        pauses.RUN = old
    assert got == sorted(items, key=lambda item: item[0])
    assert len(paused) >= len(items) // run


def test_a_syntax_error_lark_reads_passes_pause_points() -> None:
    """A `(` opened mid-body and never closed is not mended with its statement alone: the
    definition goes to Lark whole (parser/recovery.py), which held the language server's
    loop for 5 s of a printed model's 100,000-line @main (a hover after the edit waited)
    each time.  Lark's parse now passes a pause point every PAUSE_TOKENS tokens, as the
    driver does, and gives the same diagnostics."""
    from relaylens.compiler.check import check_text
    from relaylens.compiler.parser.lalr_driver import PAUSE_TOKENS

    lines = chain().split("\n")
    lines[10] = lines[10].replace("= ", "= (")  # `%8 = (add(%7, %7);`: runs to the body's end
    text = "\n".join(lines)
    in_lark = []

    def hook(may_stop: bool) -> None:
        names = {sys._getframe(i).f_code.co_name for i in range(2, 6)}
        in_lark.append("lark_parse" in names or "parse_from_state" in names)

    with pausing(hook):
        checked = check_text(text, "chain.relay")
    tokens = 9 * LINES  # `%k = add(%j, %j);`: 9 tokens a statement
    assert sum(in_lark) >= tokens // PAUSE_TOKENS // 2, (sum(in_lark), len(in_lark))
    assert [(d.message, d.span.start) for d in checked.diagnostics] == \
        [(d.message, d.span.start) for d in check_text(text, "chain.relay").diagnostics]
    assert len([d for d in checked.diagnostics if d.source == "syntax"]) == 1


def test_the_scan_of_a_printed_model_passes_pause_points() -> None:
    """A printed model has a `ty=` comment on every line: the comment scan, the blanking
    of the comments and the annotations' table walked 200,000 of them in 100,000 lines
    without a pause point (1.3 s that a hover after an edit waited for)."""
    lines = chain().split("\n")
    text = "\n".join(f"{line[:-1]} /* ty=Tensor[(16), float32] */;" if line.endswith(");") else line
                     for line in lines)
    passed: list[str] = []

    def hook(may_stop: bool) -> None:
        code = sys._getframe(2).f_code
        passed.append(f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}")

    with pausing(hook):
        analysis = analyse("file:///printed.relay", 1, text)
    for where in ("scan.py:scan", "scan.py:_blank", "result.py:annotation_ends"):
        assert passed.count(where) >= LINES // 512, (where, passed.count(where))
    assert not analysis.diagnostics
