"""Pickling frozen, slotted dataclasses without `dataclasses.fields()` per object.

    fast_pickling(globals())       # at the end of a module that defines such classes

A frozen dataclass with slots has no `__dict__` and refuses `setattr`, so `dataclass`
gives it `__getstate__` and `__setstate__` of its own, which call `fields(self)` for
every object pickled or unpickled.  A kept build (passes_cache.py) holds thousands of
such objects (a GPT-2 block's: 1,819 calls, IR nodes, types, spans and the kernels' tensor
expressions); unpickling it took 14 ms of CPU, 9 with the field names looked up once per
class, as these methods do.  Pickled state is the same list of field values, in order.

Which classes: a frozen dataclass with slots of its own whose state methods, where it has
any, are the dataclasses module's (CPython's are named `_dataclass_getstate` and
`_dataclass_setstate`, private names this does not rely on), not the class's own, which
would say more than its fields.  tests/test_ir_pickling.py checks that the IR's classes
get these methods, so that a Python whose dataclasses do otherwise fails a test rather
than unpickling slower without a word.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def fast_pickling(namespace: dict[str, Any]) -> None:
    """Give every frozen, slotted dataclass defined in `namespace` (a module's globals)
    state methods with its field names looked up once."""
    for cls in list(namespace.values()):
        if isinstance(cls, type) and cls.__module__ == namespace.get("__name__") and _frozen_slotted(cls):
            _give_state_methods(cls, tuple(f.name for f in dataclasses.fields(cls)))


def _frozen_slotted(cls: type) -> bool:
    """A frozen dataclass with slots, whose state methods are not its own."""
    params = cls.__dict__.get("__dataclass_params__")
    if params is None or not getattr(params, "frozen", False) or "__slots__" not in cls.__dict__:
        return False
    own = [cls.__dict__[name] for name in ("__getstate__", "__setstate__") if name in cls.__dict__]
    return all(getattr(method, "__module__", None) == "dataclasses" for method in own)


def _give_state_methods(cls: type, names: tuple[str, ...]) -> None:
    def __getstate__(self) -> list:
        return [getattr(self, name) for name in names]

    def __setstate__(self, state: list, _set=object.__setattr__) -> None:
        for name, value in zip(names, state):
            _set(self, name, value)

    cls.__getstate__ = __getstate__
    cls.__setstate__ = __setstate__
