"""IRModule: the global functions and type definitions of one program."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from .expr import Constructor, Function, GlobalVar
from .span import AnySpan
from .types import GlobalTypeVar, TypeVar


@dataclass(frozen=True, slots=True, eq=False)
class TypeData:
    """An algebraic data type: `type List[A] { Cons(A, List[A]), Nil }`."""

    header: GlobalTypeVar
    type_vars: tuple[TypeVar, ...]
    constructors: tuple[Constructor, ...]
    span: AnySpan | None = field(default=None, kw_only=True)


class IRModule:
    """Global functions by `GlobalVar` and type definitions by `GlobalTypeVar`.

    Globals are interned by name: `get_global_var("f")` always returns the same object,
    so a definition may call a global defined after it.  Iteration is in insertion order;
    the printer sorts by name as TVM does.
    """

    def __init__(self, name: str = "default") -> None:
        self.name = name
        self.functions: dict[GlobalVar, Function] = {}
        self.type_definitions: dict[GlobalTypeVar, TypeData] = {}
        self.global_vars: dict[str, GlobalVar] = {}
        self.global_type_vars: dict[str, GlobalTypeVar] = {}
        self.metadata: Any = None  # the parsed #[metadata] section, when there is one

    # globals -------------------------------------------------------------------
    def get_global_var(self, name: str, span: AnySpan | None = None) -> GlobalVar:
        gv = self.global_vars.get(name)
        if gv is None:
            gv = self.global_vars[name] = GlobalVar(name, span=span)
        return gv

    def get_global_type_var(self, name: str, span: AnySpan | None = None) -> GlobalTypeVar:
        gtv = self.global_type_vars.get(name)
        if gtv is None:
            gtv = self.global_type_vars[name] = GlobalTypeVar(name, span=span)
        return gtv

    def add(self, gv: GlobalVar, func: Function) -> None:
        self.global_vars.setdefault(gv.name, gv)
        self.functions[gv] = func

    def add_type(self, data: TypeData) -> None:
        self.global_type_vars.setdefault(data.header.name, data.header)
        self.type_definitions[data.header] = data

    def copy(self) -> "IRModule":
        """A new module with the same globals, functions and types (shared, not copied)."""
        new = IRModule(self.name)
        new.functions = dict(self.functions)
        new.type_definitions = dict(self.type_definitions)
        new.global_vars = dict(self.global_vars)
        new.global_type_vars = dict(self.global_type_vars)
        new.metadata = self.metadata
        return new

    def with_functions(self, changes: dict[GlobalVar, Function]) -> "IRModule":
        """A new module with some functions replaced or added (passes never mutate)."""
        new = self.copy()
        for gv, func in changes.items():
            new.add(gv, func)
        return new

    def __getitem__(self, name: str | GlobalVar) -> Function:
        gv = self.global_vars[name] if isinstance(name, str) else name
        return self.functions[gv]

    def __contains__(self, name: str) -> bool:
        gv = self.global_vars.get(name)
        return gv is not None and gv in self.functions

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self.functions)

    def constructors(self) -> Iterator[Constructor]:
        for data in self.type_definitions.values():
            yield from data.constructors

    def __repr__(self) -> str:
        names = ", ".join("@" + gv.name for gv in self.functions)
        return f"IRModule({names})"
