"""Pickling frozen, slotted dataclasses without `dataclasses.fields()` per object.

    fast_pickling(globals())       # at the end of a module that defines such classes

A frozen dataclass with slots has no `__dict__` and refuses `setattr`, so `dataclass`
gives it `__getstate__` and `__setstate__` of its own, which call `fields(self)` for
every object pickled or unpickled.  A kept build (passes_cache.py) holds thousands of
such objects (a GPT-2 block's: 1,819 calls, IR nodes, types, spans and the kernels' tensor
expressions); unpickling it took 14 ms of CPU, 9 with the field names looked up once per
class, as these methods do.  Pickled state is the same list of field values, in order.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def fast_pickling(namespace: dict[str, Any]) -> None:
    """Give every frozen, slotted dataclass defined in `namespace` (a module's globals)
    state methods with its field names looked up once."""
    for cls in list(namespace.values()):
        if (isinstance(cls, type) and cls.__module__ == namespace.get("__name__")
                and getattr(cls.__dict__.get("__setstate__"), "__name__", "") == "_dataclass_setstate"):
            _give_state_methods(cls, tuple(f.name for f in dataclasses.fields(cls)))


def _give_state_methods(cls: type, names: tuple[str, ...]) -> None:
    def __getstate__(self) -> list:
        return [getattr(self, name) for name in names]

    def __setstate__(self, state: list, _set=object.__setattr__) -> None:
        for name, value in zip(names, state):
            _set(self, name, value)

    cls.__getstate__ = __getstate__
    cls.__setstate__ = __setstate__
