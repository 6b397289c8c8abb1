"""One printed module renumbered after another, so that a diff shows what a pass changed.

The printer numbers temporaries `%0, %1, ...` in print order, so a pass that rewrites one
call near the top renumbers every line below it, and a text diff of the two snapshots marks
them all.  `align_temporaries(before, after)` gives `after` back renumbered so that the
statements of the two line up:

    before:  %0 = nn.conv2d(%x, %w);  %1 = nn.bias_add(%0, %b);  %2 = nn.relu(%1); ...
    after:   %0 = nn.conv2d(%x, %w);  %1 = expand_dims(%b);  %2 = add(%0, %1);  %3 = nn.relu(%2); ...
    aligned: %0 = nn.conv2d(%x, %w);  %4 = expand_dims(%b);  %1 = add(%0, %4);  %2 = nn.relu(%1); ...

Each statement `%N = rhs` is reduced to its shape, the rhs with the operands' numbers left
out, and the two sequences of shapes are aligned as a text diff aligns lines (difflib):
a statement in a run of equal shapes takes the number of its partner; in a run that was
rewritten (bias_add into expand_dims and add) the statements pair from the end, since a
rewrite's last statement is the value the old one was (so `nn.relu(%1)` reads as before).
Every other statement keeps its own number when that is free, or gets one `before` does
not use.  The renaming is one to one, so the aligned text is the same module as `after`;
only the numbers are no longer in print order.  A statement spread over several lines
(`%3 = fn (...) {`) is compared by its first line, its body lines being statements of their
own.  This reads text only: it works on any two printed modules, ours or TVM's.
`Aligned.original_offset` maps an offset of the aligned text back to `after`'s (for hover
and go-to-definition in the aligned view).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from difflib import SequenceMatcher

_DEFINITION = re.compile(r"^(\s*)%(\d+) = (.*)$")
_TEMPORARY = re.compile(r"%(\d+)\b")


def _statements(text: str) -> list[tuple[str, str]]:
    """(number, right-hand side's first line) of each `%N = ...` line, in order."""
    found = []
    for line in text.splitlines():
        m = _DEFINITION.match(line)
        if m:
            found.append((m[2], m[3]))
    return found


def _shape(rhs: str) -> str:
    """A right-hand side with its operands' numbers left out: what a statement is."""
    return _TEMPORARY.sub("%", rhs)


def align_temporaries(before: str, after: str) -> "Aligned":
    """`after`, with its temporaries renumbered as `before` numbers the statements they
    correspond to."""
    old, new = _statements(before), _statements(after)
    rename: dict[str, str] = {}
    matcher = SequenceMatcher(None, [_shape(r) for _, r in old], [_shape(r) for _, r in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or tag == "replace":  # a rewrite: its last statement is the value
            for (o, _), (n, _) in zip(reversed(old[i1:i2]), reversed(new[j1:j2])):
                rename.setdefault(n, o)
    given = set(rename.values())
    old_numbers = {number for number, _ in old}
    fresh = max((int(n) for n in old_numbers), default=-1) + 1
    for number, _ in new:
        if number in rename:
            continue
        if number in old_numbers and number not in given:  # its own number is free
            rename[number] = number
        else:
            rename[number] = str(fresh)
            fresh += 1
        given.add(rename[number])
    return Aligned.renamed(after, rename)


@dataclass(frozen=True, slots=True)
class Aligned:
    """The renumbered text, and where each of its offsets was in the text it came from."""

    text: str
    # (offset in `text`, offset in the original) after each renamed token, in order
    anchors: tuple[tuple[int, int], ...] = ()

    @classmethod
    def renamed(cls, text: str, rename: dict[str, str]) -> "Aligned":
        pieces, anchors, last, shift = [], [], 0, 0
        for m in _TEMPORARY.finditer(text):
            new = rename.get(m[1], m[1])
            if new == m[1]:
                continue
            pieces += [text[last:m.start()], "%" + new]
            shift += len(new) - len(m[1])
            last = m.end()
            anchors.append((last + shift, last))
        if not anchors:
            return cls(text)
        pieces.append(text[last:])
        return cls("".join(pieces), tuple(anchors))

    def original_offset(self, offset: int) -> int:
        """Where `offset` of the renumbered text was (inside a renamed token: its end)."""
        i = bisect_right(self.anchors, (offset, float("inf"))) - 1
        if i < 0:
            return offset
        at, was = self.anchors[i]
        return was + (offset - at)

    def aligned_offset(self, original: int) -> int:
        """Where offset `original` of the text it came from is in the renumbered text."""
        i = bisect_right(self.anchors, original, key=lambda anchor: anchor[1]) - 1
        if i < 0:
            return original
        at, was = self.anchors[i]
        return at + (original - was)
