"""Fuzz target `recheck`: the editor's incremental fast path against a whole check.

An input is two texts, `old NUL new` (no NUL: new = old).  `old` is checked as the
language server checks an opened document (`check_text(..., incremental=True)`), then
`recheck` takes the edit to `new`, re-reading only the statement it touched when it can.

Property (recheck's contract, compiler/check.py): when recheck answers, its result is the
result of checking `new` whole: the same diagnostics at the same places, the same module
printed with types and spans, the same names and expressions at every offset
(test_incremental.summary, one place for it).  And neither call raises.

The mutator edits `new` only, a token or two at a time, so most inputs are one small edit
inside a statement: the case recheck takes.
"""

from __future__ import annotations

import random

from relaylens.compiler.check import check_text, recheck
from findings import InvariantBroken
from relay_mutator import mutate_text
from target_parse import text_of
from test_incremental import summary

INSTRUMENT = ("relaylens",)
MAX_LEN = 8192
DICT = "relay.dict"
NAME = "file:///fuzz/doc.relay"


def texts(data: bytes) -> tuple[bytes, bytes]:
    old, sep, new = data.partition(b"\0")
    return old, new if sep else old


def check(data: bytes) -> None:
    old, new = (text_of(t) for t in texts(data))
    done = recheck(check_text(old, NAME, incremental=True), new)
    if done is None:
        return
    got, whole = summary(done[0]), summary(check_text(new, NAME))
    for key in whole:
        if got[key] != whole[key]:
            raise InvariantBroken(f"recheck's {key} differ from a whole check", f"{len(old)} -> {len(new)} characters")


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    old, new = texts(data)
    if random.Random(seed).random() < 0.1:  # now and then a new starting text
        old = new
    return old + b"\0" + mutate_text(new, max(1, max_size - len(old) - 1), seed)


def crossover(a: bytes, b: bytes, max_size: int, seed: int) -> bytes:
    return mutate(a, max_size, seed)
