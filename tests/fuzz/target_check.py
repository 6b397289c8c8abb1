"""Fuzz target `check`: bytes → text → `relaylens.compiler.check.check_text` (parse,
names, type inference: what `relaylens check` and the editor's fast path run).

Properties: the parse properties (target_parse); check_text returns on every input; every
type diagnostic that names a document range names one inside this text; no diagnostic
says "internal error".
"""

from __future__ import annotations

from relaylens.compiler.check import check_text
from relaylens.compiler.ir.span import document_span
from findings import InvariantBroken
from relay_mutator import crossover_text, mutate_text
from target_parse import text_of
from test_parser_fuzz import check_result

INSTRUMENT = ("relaylens",)
MAX_LEN = 4096
DICT = "relay.dict"
mutate, crossover = mutate_text, crossover_text


def check_diagnostics(text: str, diagnostics) -> None:
    for d in diagnostics:
        if "internal error" in d.message:
            raise InvariantBroken(f"internal error ({d.source})", d.message)
        span = document_span(d.span)
        if span is not None and not (span.source.text == text and 0 <= span.start <= span.end <= len(text)):
            raise InvariantBroken("diagnostic outside the text", f"{span.start}..{span.end} of {len(text)}: {d.message}")


def check(data: bytes) -> None:
    text = text_of(data)
    result = check_text(text, "fuzz.relay")
    check_result(text, result.parsed)
    check_diagnostics(text, result.type_diagnostics)
