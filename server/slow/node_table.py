"""`NodeTable`: a snapshot's printed nodes (`Snapshot.nodes`) kept in four int arrays
(4-byte ints, 8 for a text past 2**31 characters).

    table = NodeTable([(start, end, ((s, e), ...)), ...])   # sorted by (start, -end)
    table[i] == (start, end, ((s, e), ...)); len(table); list(table)
    table.innermost(offset)                                 # as report._innermost

A typed ResNet-50's report holds some 80,000 such tuples (3 MB, in each of the two reports
the server keeps per document); the table holds the same in a tenth of that, pickles as
four byte strings, and reads as the tuple of tuples it replaces (a `Sequence`, so
`bisect` and `report._innermost` take it as they took the tuple).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence

Range = tuple[int, int]


class NodeTable(Sequence):
    __slots__ = ("starts", "ends", "firsts", "ranges")

    def __init__(self, nodes: Iterable[tuple[int, int, tuple[Range, ...]]] = ()) -> None:
        starts: list[int] = []
        ends: list[int] = []
        firsts = [0]
        ranges: list[int] = []
        for start, end, keys in nodes:
            starts.append(start)
            ends.append(end)
            for s, e in keys:
                ranges += (s, e)
            firsts.append(len(ranges))
        code = "i" if max(max(ends, default=0), max(ranges, default=0), firsts[-1]) < 2**31 else "q"
        self.starts, self.ends, self.firsts, self.ranges = (array(code, x) for x in (starts, ends, firsts, ranges))

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        flat = self.ranges[self.firsts[i]:self.firsts[i + 1]]
        return self.starts[i], self.ends[i], tuple(zip(flat[::2], flat[1::2]))

    def innermost(self, offset: int) -> tuple[int, int, tuple[Range, ...]] | None:
        """The innermost node holding `offset` (nodes sorted by (start, -end) and nested)."""
        for j in range(bisect.bisect_right(self.starts, offset) - 1, -1, -1):
            if offset < self.ends[j]:
                return self[j]
        return None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeTable):
            return (self.starts, self.ends, self.firsts, self.ranges) == (
                other.starts, other.ends, other.firsts, other.ranges)
        return isinstance(other, Sequence) and list(self) == list(other)

    def __hash__(self) -> int:  # never changed once made (a frozen Snapshot hashes its fields)
        return hash((self.starts.tobytes(), self.ends.tobytes(), self.ranges.tobytes()))

    def __getstate__(self):
        return (self.starts, self.ends, self.firsts, self.ranges)

    def __setstate__(self, state) -> None:
        self.starts, self.ends, self.firsts, self.ranges = state

    def __repr__(self) -> str:
        return f"NodeTable({len(self)} nodes)"
