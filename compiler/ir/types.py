"""Relay types.

Types that denote values compare by value (`TensorType((1, 8), "float32")` equals any
other such type) and their span is left out of the comparison.  Type variables, global
type names and incomplete types are identities, as binders are.  `structural_equal`
compares types up to the renaming of type variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .attrs import MetaRef
from .span import AnySpan
from .pickling import fast_pickling


class Type:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class AnyDim:
    """A dimension whose extent is known only at run time; printed `?`."""

    def __str__(self) -> str:
        return "?"

    def __reduce__(self) -> str:  # unpickled as the one ANY (compared by identity)
        return "ANY"


ANY = AnyDim()

# A dimension: an int, ANY, a MetaRef (`meta[tir.SizeVar][0]`), or an int with a width
# other than int32 kept as IntImm (`1i64`).
Dim = object


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    shape: tuple[Dim, ...]
    dtype: str
    span: AnySpan | None = field(default=None, kw_only=True, compare=False)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    fields: tuple[Type, ...]
    span: AnySpan | None = field(default=None, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True, eq=False)
class TypeVar(Type):
    """A type parameter (`A` in `def @id[A](%x: A) -> A`); an identity."""

    name: str
    span: AnySpan | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True, eq=False)
class GlobalTypeVar(Type):
    """The name of an algebraic data type (`List`); interned per module."""

    name: str
    span: AnySpan | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class TypeCall(Type):
    """An ADT applied to type arguments: `List[int32]`, or `List` with none."""

    func: GlobalTypeVar
    args: tuple[Type, ...] = ()
    span: AnySpan | None = field(default=None, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    arg_types: tuple[Type, ...]
    ret_type: Type
    type_params: tuple[TypeVar, ...] = ()
    span: AnySpan | None = field(default=None, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class RefType(Type):
    """The type of a mutable reference; printed `ref(T)` (our parser's extension)."""

    value: Type
    span: AnySpan | None = field(default=None, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True, eq=False)
class IncompleteType(Type):
    """A type still to be inferred: `_` in the text."""

    span: AnySpan | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class MetaType(Type):
    """A type printed as `meta[IncompleteType][k]`: unknown, kept for printing."""

    ref: MetaRef
    span: AnySpan | None = field(default=None, kw_only=True, compare=False)


UNIT = TupleType(())


fast_pickling(globals())  # ir/pickling.py: a kept build unpickles thousands of these
