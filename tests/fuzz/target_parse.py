"""Fuzz target `parse`: bytes → text → `relaylens.compiler.parser.parse`.

Properties (test_parser_fuzz.check_result, one place for them): parse returns on every
input (no exception, RecursionError included); a module comes back; every diagnostic
points into the text; no stage failed inside ("internal"); an ErrorExpr in the IR comes
with an error diagnostic.  Bytes are decoded as UTF-8 with surrogateescape, so invalid
UTF-8 reaches the parser as lone surrogates, as a JSON string can deliver them to the
language server.
"""

from __future__ import annotations

from relaylens.compiler.parser import parse
from relay_mutator import crossover_text, mutate_text
from test_parser_fuzz import check_result

INSTRUMENT = ("relaylens", "lark")
MAX_LEN = 4096
DICT = "relay.dict"
mutate, crossover = mutate_text, crossover_text


def text_of(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def check(data: bytes) -> None:
    text = text_of(data)
    check_result(text, parse(text, "fuzz.relay"))
