"""What a failed structural comparison reports: the `Mismatch` (where, why, both sides),
the path to it (`@main.body.args[1]`) and short, bounded descriptions of IR values.

    Mismatch(path, reason, left, right)   # str() is the multi-line report, spans included
    render_path(path) -> str              # a linked-list path as `@main.body.args[1]`
    describe(x, depth=2) -> str           # one line, never the whole graph
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..lazy_modules import numpy as np
from .expr import (
    Call,
    Constant,
    Constructor,
    ErrorExpr,
    Function,
    GlobalVar,
    Let,
    Match,
    Node,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    Tuple,
    TupleGetItem,
    Var,
)
from .module import IRModule, TypeData
from .structural_keys import as_array, dim_key
from .types import (
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

@dataclass(frozen=True)
class Mismatch:
    """The first difference found: where (`@main.body.args[1]`), what, and the two sides."""

    path: str
    reason: str
    left: Any
    right: Any

    def __str__(self) -> str:
        lines = [f"structural mismatch at {self.path}: {self.reason}"]
        for side, value in (("left: ", self.left), ("right:", self.right)):
            text = describe(value)
            span = getattr(value, "span", None) if isinstance(value, Node) else None
            if span is not None:
                text += f"    (at {span})"
            lines.append(f"  {side} {text}")
        return "\n".join(lines)


# A path is a linked list of tuples, built only when a mismatch report is wanted:
# (root_label,) | (parent, label) | (parent, label, index).
Path = tuple | None


def render_path(path: Path) -> str:
    parts: list[str] = []
    while path is not None:
        if len(path) == 1:
            parts.append(path[0])
            break
        if len(path) == 2:
            parts.append(path[1])
        else:
            index = path[2]
            parts.append(f"{path[1]}[{index!r}]" if isinstance(index, str) else f"{path[1]}[{index}]")
        path = path[0]
    parts.reverse()
    if len(parts) > 40:
        parts = parts[:10] + [f".…({len(parts) - 30} more)…"] + parts[-20:]
    text = "".join(parts)
    if text.startswith("."):
        text = text[1:]
    return text or "<root>"


def describe(x: Any, depth: int = 2) -> str:
    """A short, bounded description of an IR value for messages (never the whole graph)."""
    if x is None:
        return "None"
    if isinstance(x, Var):
        ann = f": {describe(x.type_annotation, depth)}" if x.type_annotation is not None else ""
        return f"Var(%{x.name}{ann})"
    if isinstance(x, GlobalVar):
        return f"GlobalVar(@{x.name})"
    if isinstance(x, Op):
        return f"Op({x.name})"
    if isinstance(x, Constructor):
        return f"Constructor({x.name} of {x.belongs_to.name})"
    if isinstance(x, Constant):
        if x.data is None:
            return f"Constant({x.meta})"
        arr = as_array(x.data)
        values = np.array2string(arr, threshold=8, edgeitems=2).replace("\n", "")
        return f"Constant({arr.dtype}{list(arr.shape)} {values})"
    if isinstance(x, (Call, Tuple, TupleGetItem, Let, Function, Match, ErrorExpr,
                      PatternVar, PatternConstructor, PatternTuple)):
        return repr(x)  # the nodes' own one-line repr (expr.py)
    if isinstance(x, (Node, TypeData)):
        return type(x).__name__
    if isinstance(x, Type):
        return _describe_type(x, depth)
    if isinstance(x, IRModule):
        return repr(x)
    text = repr(x)
    return text if len(text) <= 120 else text[:117] + "..."


def _describe_type(t: Any, depth: int) -> str:
    if t is None:
        return "None"
    if isinstance(t, TensorType):
        dims = ", ".join(str(dim_key(d)) for d in t.shape)
        return f"Tensor[({dims}), {t.dtype}]"
    if isinstance(t, (TypeVar, GlobalTypeVar)):
        return t.name
    if isinstance(t, IncompleteType):
        return "_"
    if isinstance(t, MetaType):
        return str(t.ref)
    if depth <= 0:
        return "…"

    def many(items: tuple) -> str:
        shown = ", ".join(_describe_type(i, depth - 1) for i in items[:6])
        return shown + (", …" if len(items) > 6 else "")

    if isinstance(t, TupleType):
        return f"({many(t.fields)})"
    if isinstance(t, FuncType):
        return f"fn ({many(t.arg_types)}) -> {_describe_type(t.ret_type, depth - 1)}"
    if isinstance(t, TypeCall):
        return f"{t.func.name}[{many(t.args)}]" if t.args else t.func.name
    if isinstance(t, RefType):
        return f"ref({_describe_type(t.value, depth - 1)})"
    return repr(t)
