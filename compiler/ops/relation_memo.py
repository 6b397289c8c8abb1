"""Results of type relations and attribute normalisation kept for calls seen again.

A relation is a function of its argument types and its attributes, and so is
`normalize_attrs` of its attributes.  A build asks both again and again for the same
call: every InferType of relay.build types every call of the module again, the
interpreter checks each op call it evaluates against its relation, and FoldConstant's
budget asks a call's result size before folding it; a pass that rebuilds a call keeps
its attributes object.  So both are kept here:

* `result_type(opdef, attrs, arg_types)`: the relation's result, by (op, attributes
  object, argument types); `remember_result` after a relation succeeded.  Failures are
  not kept: they run again, and report.
* `normalized(opdef, attrs)`: `opdef.normalize_attrs(attrs)` by (op, attributes object).

Attributes are keyed by identity, not by value (`1`, `1.0` and `True` are equal keys but
not equal attributes), and each entry keeps its attributes object alive, so that an id is
never reused while it is a key.  Argument types are keyed by value (types that denote
values compare by value; a hole compares by identity, and the callers pass complete
types only).  Each table is bounded: cleared when full.
"""

from __future__ import annotations

from typing import Any

MAX_ENTRIES = 1 << 16

_RESULTS: dict[tuple, tuple[Any, Any]] = {}
_NORMALIZED: dict[tuple, tuple[Any, Any]] = {}


def result_key(opdef, attrs: Any, arg_types) -> tuple | None:
    """The key of a call's relation result, or None when a type or dimension is not
    hashable (then nothing is kept)."""
    key = (opdef.name, id(attrs), *arg_types)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def known_result(key: tuple | None) -> Any:
    """The result kept under `key`, or None."""
    if key is None:
        return None
    entry = _RESULTS.get(key)
    return entry[1] if entry is not None else None


def remember_result(key: tuple | None, attrs: Any, result: Any) -> None:
    if key is None or result is None:
        return
    if len(_RESULTS) >= MAX_ENTRIES:
        _RESULTS.clear()
    _RESULTS[key] = (attrs, result)


def normalized(opdef, attrs: Any) -> Any:
    """`opdef.normalize_attrs(attrs)`, computed once per attributes object (its errors
    are raised each time)."""
    key = (opdef.name, id(attrs))
    entry = _NORMALIZED.get(key)
    if entry is not None and entry[0] is attrs:
        return entry[1]
    value = opdef.normalize_attrs(attrs)
    if len(_NORMALIZED) >= MAX_ENTRIES:
        _NORMALIZED.clear()
    _NORMALIZED[key] = (attrs, value)
    return value


def clear() -> None:
    """Forget everything (tests)."""
    _RESULTS.clear()
    _NORMALIZED.clear()
