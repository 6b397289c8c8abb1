"""Unification of Relay types with holes.

A hole is an `IncompleteType` (a `_` in the text, or one the checker makes for an
unannotated binder); the solver binds holes as unification learns what they stand for.
`ERROR` stands for the type of an expression that already has a reported error: it
unifies with everything, so one mistake is reported once and not again by every user.

Dimensions: `?` (and a symbolic `meta[tir.SizeVar][k]`) is compatible with any extent;
unification only checks them, it never narrows a `?`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.attrs import IntImm
from ..ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    MetaType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)


@dataclass(frozen=True, slots=True, eq=False)
class ErrorType(Type):
    """The type of an expression whose error has been reported already."""

    def __repr__(self) -> str:
        return "ERROR"


ERROR = ErrorType()


class Mismatch(Exception):
    """Two types that cannot be the same; `detail` says where they differ."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)
        self.detail = detail


def _dim(d: object) -> int | None:
    if isinstance(d, bool):
        return None
    if isinstance(d, int):
        return d
    if isinstance(d, IntImm):
        return d.value
    return None  # `?` or symbolic


class Solver:
    def __init__(self) -> None:
        self.bound: dict[IncompleteType, Type] = {}

    def fresh(self) -> IncompleteType:
        return IncompleteType()

    def shallow(self, ty: Type) -> Type:
        """Follow a hole's bindings to the first type that is not a bound hole."""
        while isinstance(ty, IncompleteType):
            nxt = self.bound.get(ty)
            if nxt is None:
                return ty
            ty = nxt
        if isinstance(ty, MetaType):  # `meta[IncompleteType][k]`: unknown, like `_`
            return ERROR
        return ty

    def resolve(self, ty: Type) -> Type:
        """`ty` with every bound hole replaced, as deep as it goes."""
        ty = self.shallow(ty)
        if isinstance(ty, TupleType):
            fields = tuple(self.resolve(f) for f in ty.fields)
            return ty if all(a is b for a, b in zip(fields, ty.fields)) else TupleType(fields, span=ty.span)
        if isinstance(ty, FuncType):
            args = tuple(self.resolve(a) for a in ty.arg_types)
            ret = self.resolve(ty.ret_type)
            return FuncType(args, ret, ty.type_params, span=ty.span)
        if isinstance(ty, TypeCall):
            return TypeCall(ty.func, tuple(self.resolve(a) for a in ty.args), span=ty.span)
        if isinstance(ty, RefType):
            return RefType(self.resolve(ty.value), span=ty.span)
        return ty

    def unify(self, a: Type, b: Type) -> None:
        """Make `a` and `b` the same type, binding holes; raises Mismatch."""
        stack = [(a, b)]
        while stack:
            x, y = stack.pop()
            x, y = self.shallow(x), self.shallow(y)
            if x is y:
                continue
            if isinstance(x, IncompleteType):
                self._bind(x, y)
            elif isinstance(y, IncompleteType):
                self._bind(y, x)
            elif isinstance(x, ErrorType) or isinstance(y, ErrorType):
                continue
            elif isinstance(x, TensorType) and isinstance(y, TensorType):
                if x.dtype != y.dtype:
                    raise Mismatch(f"dtype {x.dtype} vs {y.dtype}")
                if len(x.shape) != len(y.shape):
                    raise Mismatch(f"rank {len(x.shape)} vs {len(y.shape)}")
                for i, (dx, dy) in enumerate(zip(x.shape, y.shape)):
                    ix, iy = _dim(dx), _dim(dy)
                    if ix is not None and iy is not None and ix != iy:
                        raise Mismatch(f"dimension {i}: {ix} vs {iy}")
            elif isinstance(x, TupleType) and isinstance(y, TupleType):
                if len(x.fields) != len(y.fields):
                    raise Mismatch(f"{len(x.fields)} fields vs {len(y.fields)}")
                stack.extend(zip(x.fields, y.fields))
            elif isinstance(x, FuncType) and isinstance(y, FuncType):
                x, y = self.instantiate(x), self.instantiate(y)
                if len(x.arg_types) != len(y.arg_types):
                    raise Mismatch(f"{len(x.arg_types)} parameters vs {len(y.arg_types)}")
                stack.extend(zip(x.arg_types, y.arg_types))
                stack.append((x.ret_type, y.ret_type))
            elif isinstance(x, TypeCall) and isinstance(y, TypeCall):
                if x.func is not y.func and x.func.name != y.func.name:  # one name per module
                    raise Mismatch(f"{x.func.name} vs {y.func.name}")
                if x.args and y.args:  # a bare `List` matches any `List[...]`
                    if len(x.args) != len(y.args):
                        raise Mismatch(f"{len(x.args)} type arguments vs {len(y.args)}")
                    stack.extend(zip(x.args, y.args))
            elif isinstance(x, TypeCall) and isinstance(y, GlobalTypeVar) and x.func.name == y.name:
                continue
            elif isinstance(y, TypeCall) and isinstance(x, GlobalTypeVar) and y.func.name == x.name:
                continue
            elif isinstance(x, GlobalTypeVar) and isinstance(y, GlobalTypeVar) and x.name == y.name:
                continue
            elif isinstance(x, RefType) and isinstance(y, RefType):
                stack.append((x.value, y.value))
            else:
                raise Mismatch()

    def _bind(self, hole: IncompleteType, ty: Type) -> None:
        if self._occurs(hole, ty):
            raise Mismatch("the type would contain itself")
        self.bound[hole] = ty

    def _occurs(self, hole: IncompleteType, ty: Type) -> bool:
        stack = [ty]
        while stack:
            t = self.shallow(stack.pop())
            if t is hole:
                return True
            stack.extend(subtypes(t))
        return False

    def instantiate(self, ty: FuncType) -> FuncType:
        """A polymorphic function type with fresh holes for its type parameters."""
        if not ty.type_params:
            return ty
        mapping: dict[TypeVar, Type] = {tv: self.fresh() for tv in ty.type_params}
        return FuncType(tuple(substitute(a, mapping) for a in ty.arg_types),
                        substitute(ty.ret_type, mapping), span=ty.span)

    def is_complete(self, ty: Type) -> bool:
        """No hole and no error anywhere in `ty` (after resolving)."""
        stack = [ty]
        while stack:
            t = self.shallow(stack.pop())
            if isinstance(t, (IncompleteType, ErrorType)):
                return False
            stack.extend(subtypes(t))
        return True

    def has_error(self, ty: Type) -> bool:
        stack = [ty]
        while stack:
            t = self.shallow(stack.pop())
            if isinstance(t, ErrorType):
                return True
            if isinstance(t, TupleType):
                stack.extend(t.fields)
        return False


def subtypes(ty: Type) -> tuple[Type, ...]:
    """The types directly inside `ty` (fields, parameters and result, arguments)."""
    if isinstance(ty, TupleType):
        return ty.fields
    if isinstance(ty, FuncType):
        return (*ty.arg_types, ty.ret_type)
    if isinstance(ty, TypeCall):
        return ty.args
    if isinstance(ty, RefType):
        return (ty.value,)
    return ()


def substitute(ty: Type, mapping: dict) -> Type:
    """Replace type variables (or holes) by the types `mapping` gives them."""
    if ty in mapping:
        return mapping[ty]
    if isinstance(ty, TupleType):
        return TupleType(tuple(substitute(f, mapping) for f in ty.fields), span=ty.span)
    if isinstance(ty, FuncType):
        inner = {k: v for k, v in mapping.items() if k not in ty.type_params}
        return FuncType(tuple(substitute(a, inner) for a in ty.arg_types), substitute(ty.ret_type, inner),
                        ty.type_params, span=ty.span)
    if isinstance(ty, TypeCall):
        return TypeCall(ty.func, tuple(substitute(a, mapping) for a in ty.args), span=ty.span)
    if isinstance(ty, RefType):
        return RefType(substitute(ty.value, mapping), span=ty.span)
    return ty
