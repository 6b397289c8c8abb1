"""Attribute schemas: what each op accepts, with defaults, and the one conversion from
the parsed values of `compiler/ir/attrs.py` to plain Python values.

    Attr("strides", INTS, (1, 1))        a list of integers, default [1, 1]
    Attr("units", OPT_INT, REQUIRED)     an integer or None, always written
    Attr("a_min", FLOAT, REQUIRED)

`normalize(schema, attrs)` fills defaults and converts; a wrong value raises
`AttrError` naming the attribute and the value, an unknown name raises it with the
closest known name.  Relations and numpy implementations read the result (`OpAttrs`)
as `attrs.strides`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from ..ir.attrs import Attrs, FloatImm, IntImm, MetaRef, Opaque


class AttrError(Exception):
    """A bad attribute: `name` is the attribute (None when the problem is the set)."""

    def __init__(self, message: str, name: str | None = None, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.suggestion = suggestion  # the known attribute a misspelt `name` is closest to


REQUIRED = object()  # no default: the attribute must be written


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of attribute value: its name for messages and its conversion."""

    name: str
    convert: Callable[[Any], Any]  # raises ValueError when the value does not fit

    def __repr__(self) -> str:
        return self.name


def _show(value: Any) -> str:
    from ..printer.literals import print_attr_value  # the printer owns value text

    try:
        return print_attr_value(value)
    except Exception:  # an expression or something odd: its repr will do
        return repr(value)


def _int(value: Any) -> int:
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError


def _float(value: Any) -> float:
    if isinstance(value, FloatImm):
        return value.value
    if isinstance(value, IntImm):
        return float(value.value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ValueError


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, IntImm) and value.value in (0, 1):  # TVM prints some as 0/1
        return bool(value.value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError


def _list(item: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    def convert(value: Any) -> tuple:
        if isinstance(value, (tuple, list)):
            return tuple(item(v) for v in value)
        return (item(value),)  # TVM accepts a scalar where a one-element list is meant

    return convert


def _optional(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        return None if value is None else inner(value)

    return convert


def _int_or_ints(value: Any) -> int | tuple[int, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(_int(v) for v in value)
    return _int(value)


def _any(value: Any) -> Any:
    return value


INT = Kind("an integer", _int)
FLOAT = Kind("a number", _float)
BOOL = Kind("a boolean", _bool)
STR = Kind("a string", _str)
INTS = Kind("a list of integers", _list(_int))
FLOATS = Kind("a list of numbers", _list(_float))
INT_LISTS = Kind("a list of integer lists", _list(_list(_int)))
INT_OR_INTS = Kind("an integer or a list of integers", _int_or_ints)
OPT_INT = Kind("an integer or None", _optional(_int))
OPT_FLOAT = Kind("a number or None", _optional(_float))
OPT_INTS = Kind("a list of integers or None", _optional(_list(_int)))
OPT_FLOATS = Kind("a list of numbers or None", _optional(_list(_float)))
OPT_STR = Kind("a string or None", _optional(_str))
ANY = Kind("any value", _any)  # kept as parsed (device annotations, metadata maps)


@dataclass(frozen=True, slots=True)
class Attr:
    """One attribute of an op: name, kind, default (REQUIRED if none), a line of doc."""

    name: str
    kind: Kind
    default: Any = REQUIRED
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def default_text(self) -> str:
        """The default as the text format writes it (for hover and completion)."""
        if self.required:
            return "required"
        return _show(to_ir_value(self.default))


def to_ir_value(value: Any) -> Any:
    """A Python default as the parser would have read it (so the printer can show it)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return IntImm(value)
    if isinstance(value, float):
        return FloatImm(value)
    if isinstance(value, (tuple, list)):
        return tuple(to_ir_value(v) for v in value)
    return value


class OpAttrs(Mapping[str, Any]):
    """An op's attributes after `normalize`: every schema entry present, plain values.

    Read as `attrs.axis` or `attrs["axis"]`.
    """

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]) -> None:
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("OpAttrs is immutable")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"OpAttrs({self._values!r})"


def normalize(op_name: str, schema: tuple[Attr, ...], attrs: Attrs | Mapping[str, Any],
              *, open_schema: bool = False) -> OpAttrs:
    """Check `attrs` against `schema`, fill defaults, convert to Python values.

    `open_schema` keeps attributes the schema does not list (as parsed), for the
    plumbing ops whose attributes changed between TVM versions.
    """
    known = {a.name: a for a in schema}
    for name in attrs:
        if name not in known and not open_schema:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            listed = ", ".join(known) if known else "none"
            raise AttrError(f"{op_name} has no attribute '{name}'{hint}; it takes: {listed}", name,
                            close[0] if close else None)
    values: dict[str, Any] = {}
    for attr in schema:
        if attr.name in attrs:
            raw = attrs[attr.name]
            if isinstance(raw, (MetaRef, Opaque)) and attr.kind is not ANY:
                raise AttrError(f"{op_name}: attribute {attr.name} is {_show(raw)}, which cannot be "
                                f"evaluated here; expected {attr.kind.name}", attr.name)
            try:
                values[attr.name] = attr.kind.convert(raw)
            except (ValueError, TypeError):
                raise AttrError(f"{op_name}: attribute {attr.name} expects {attr.kind.name}, "
                                f"got {_show(raw)}", attr.name) from None
        elif attr.required:
            raise AttrError(f"{op_name}: attribute {attr.name} is required "
                            f"(expected {attr.kind.name})", attr.name)
        else:
            values[attr.name] = attr.default
    if open_schema:
        for name, raw in attrs.items():
            values.setdefault(name, raw)
    return OpAttrs(values)
