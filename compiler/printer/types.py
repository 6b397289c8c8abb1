"""Type text (reference §4) and type definitions (§2.1).

    Tensor[(1, 3, 224, 224), float32]   float32 (0-d)   Tensor[(64), float32] (1-d)
    (T1, T2)  (T,)  ()   fn (A, B) -> C   fn [A](A) -> A   List[A]  List  ref(T)  _

Types nest only as deep as people write them, so this printer recurses.
"""

from __future__ import annotations

from ..ir.module import TypeData
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
from .literals import dim_text


def print_type(ty: Type) -> str:
    if isinstance(ty, TensorType):
        if not ty.shape:
            return ty.dtype
        return f"Tensor[({', '.join(dim_text(d) for d in ty.shape)}), {ty.dtype}]"
    if isinstance(ty, TupleType):
        return _tuple(print_type(f) for f in ty.fields)
    if isinstance(ty, FuncType):
        args = ", ".join(print_type(a) for a in ty.arg_types)
        return f"fn {type_params_text(ty.type_params)}({args}) -> {print_type(ty.ret_type)}"
    if isinstance(ty, TypeCall):
        if not ty.args:
            return ty.func.name
        return f"{ty.func.name}[{', '.join(print_type(a) for a in ty.args)}]"
    if isinstance(ty, TypeVar | GlobalTypeVar):
        return ty.name
    if isinstance(ty, RefType):
        return f"ref({print_type(ty.value)})"
    if isinstance(ty, IncompleteType):
        return "_"
    if isinstance(ty, MetaType):
        return str(ty.ref)
    raise TypeError(f"cannot print type {ty!r}")


def _tuple(fields) -> str:
    items = list(fields)
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


def type_params_text(params) -> str:
    """`[A, B]` for a definition's type parameters, or nothing."""
    return f"[{', '.join(p.name for p in params)}]" if params else ""


def print_type_def(data: TypeData) -> str:
    """`type List[A] {` then one constructor per line, each with a trailing comma, `}`."""
    lines = [f"type {data.header.name}{type_params_text(data.type_vars)} {{"]
    for ctor in data.constructors:
        fields = f"({', '.join(print_type(t) for t in ctor.inputs)})" if ctor.inputs else ""
        lines.append(f"  {ctor.name}{fields},")
    lines.append("}")
    return "\n".join(lines)
