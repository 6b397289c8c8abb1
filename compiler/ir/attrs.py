"""Attribute values of calls and functions, as a small typed tree.

What the text writes is kept exactly enough to print it back: an integer keeps its width
(`0i64`), a float its width (`1f16`), a list is a tuple, `None`/`nullptr` is None,
`meta[K][i]` is a `MetaRef`, and the debug forms of `print(mod)` (`{...}`, `'name'`)
are `Opaque` text.  Op-specific typing of these values belongs to the operator library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from .pickling import fast_pickling


@dataclass(frozen=True, slots=True)
class IntImm:
    """An integer literal of a given dtype (`int32` unless written with a suffix)."""

    value: int
    dtype: str = "int32"

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


@dataclass(frozen=True, slots=True)
class FloatImm:
    """A floating-point literal of a given dtype (`float32` unless written with a suffix)."""

    value: float
    dtype: str = "float32"

    def __float__(self) -> float:
        return self.value


@dataclass(frozen=True, slots=True)
class MetaRef:
    """`meta[key][index]`: element `index` of the metadata array stored under `key`."""

    key: str
    index: int

    def __str__(self) -> str:
        return f"meta[{self.key}][{self.index}]"


@dataclass(frozen=True, slots=True)
class Opaque:
    """A value TVM printed for debugging only (`{a=1}`, `'main'`); kept as its text."""

    text: str


# An attribute value: IntImm | FloatImm | bool | str | None | MetaRef | Opaque |
# tuple[AttrValue, ...] | an expression (TVM accepts any atomic expression, e.g. `@f`).
AttrValue = Any


class Attrs(Mapping[str, AttrValue]):
    """An immutable, ordered map of attribute names to values (printing keeps the order)."""

    __slots__ = ("_items", "_index")

    def __init__(self, items: Mapping[str, AttrValue] | tuple[tuple[str, AttrValue], ...] = ()):
        pairs = tuple(items.items()) if isinstance(items, Mapping) else tuple(items)
        self._items = pairs
        self._index = {k: v for k, v in pairs}

    def __getitem__(self, key: str) -> AttrValue:
        return self._index[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def items(self):  # ordered as written
        return self._index.items()

    def with_(self, **changes: AttrValue) -> "Attrs":
        """A copy with some values replaced or added (new keys go last)."""
        merged = dict(self._index)
        merged.update(changes)
        return Attrs(merged)

    def without(self, *keys: str) -> "Attrs":
        return Attrs({k: v for k, v in self._index.items() if k not in keys})

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._items)

    def __repr__(self) -> str:
        return f"Attrs({dict(self._index)!r})"


EMPTY_ATTRS = Attrs()


fast_pickling(globals())  # ir/pickling.py: a kept build unpickles thousands of these
