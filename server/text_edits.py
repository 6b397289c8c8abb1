"""Offsets and names across an edit: for a request on text newer than its analysis.

`common_prefix(old, new)`, `map_offset(old, new, offset)` (an offset of the editor's text
carried over to the text an older analysis was made from), and `typed_binders(text, start,
end)` (the `%` names bound in what was typed since).
"""

from __future__ import annotations

import re
from typing import Callable

from .cursor import blank


def common_prefix(old: str, new: str) -> int:
    """How many leading characters `old` and `new` share."""
    lo, hi = 0, min(len(old), len(new))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, prefix: int = 0) -> int:
    """The length of the longest common suffix of `a` and `b` that does not overlap their
    common prefix of length `prefix`."""
    lo, hi = 0, min(len(a), len(b)) - prefix
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def map_offset(old: str, new: str, offset: int) -> int:
    """The offset in `old` that corresponds to `offset` in `new`: the same place in the
    common prefix or suffix, else the start of the edited region."""
    return offset_mapper(old, new)(offset)


def offset_mapper(old: str, new: str) -> Callable[[int], int]:
    """`map_offset` for many offsets of one pair of texts: the common prefix and suffix are
    found once."""
    if old == new:
        return lambda offset: offset
    prefix = common_prefix(old, new)
    suffix_start = len(new) - common_suffix(old, new, prefix)

    def mapped(offset: int) -> int:
        if offset <= prefix:
            return offset
        if offset >= suffix_start:
            return offset - len(new) + len(old)
        return prefix

    return mapped


_TYPED_BINDER = re.compile(r"(?:let\s+|free_var\s+)?(%[A-Za-z_][A-Za-z0-9_/]*(?:\.[A-Za-z0-9_/]+)*)\s*(?::(?!:)|=(?![=>]))")
_TYPED_GRAPH = re.compile(r"(%[0-9]+)\s*=(?![=>])")


def typed_binders(text: str, start: int, end: int) -> list[str]:
    """`%` names bound in `text[start:end]` as far as the raw text shows (for what was
    typed since the last analysis): `let %x`, `%x: T`, `%3 = ...`."""
    code, _ = blank(text[start:end])
    names = [m.group(1) for m in _TYPED_BINDER.finditer(code)]
    names += [m.group(1) for m in _TYPED_GRAPH.finditer(code)]
    return names
