"""NameSupply and GlobalVarSupply: the one place that makes fresh names.

As the name-mangling RFC has them: one prefix (the module's name, `tvmgen_default` for a
module called `default`), a way to reserve names, and a way to make a name fresh.  Unlike
TVM's `GetUniqueName`, the integer at the end of a name is kept apart from its stem, so
freshening never stacks suffixes:

    taken: fused_add12, fused_add13      fresh("fused_add12") -> fused_add14
    taken: fused_add                     fresh("fused_add")   -> fused_add_1
    taken: fused_add, fused_add_1        fresh("fused_add")   -> fused_add_2

Dots become underscores (`nn.conv2d` -> `nn_conv2d`), as in the names TVM's lowering makes.
"""

from __future__ import annotations

import re

from ..ir.expr import GlobalVar
from ..ir.module import IRModule

_TRAILING_INT = re.compile(r"^(.*?)(\d+)$", re.S)


def mangle_module_name(name: str) -> str:
    """The prefix for a module's names: `default` -> `tvmgen_default`."""
    return "tvmgen_" + name.replace(".", "_") if name else ""


def split_suffix(name: str) -> tuple[str, int | None]:
    """`fused_add12` -> ("fused_add", 12); `fused_add` -> ("fused_add", None)."""
    m = _TRAILING_INT.match(name)
    if m is None or not m.group(1):
        return name, None
    return m.group(1), int(m.group(2))


class NameSupply:
    def __init__(self, prefix: str = "tvmgen_default") -> None:
        self.prefix = prefix
        self.taken: set[str] = set()
        self.highest: dict[str, int] = {}  # stem -> the largest suffix taken with it

    def _full(self, name: str, add_prefix: bool) -> str:
        name = name.replace(".", "_")
        if add_prefix and self.prefix:
            return f"{self.prefix}_{name}"
        return name

    def _take(self, name: str) -> str:
        self.taken.add(name)
        stem, number = split_suffix(name)
        if number is not None:
            self.highest[stem] = max(self.highest.get(stem, 0), number)
        return name

    def reserve_name(self, name: str, add_prefix: bool = True) -> str:
        """Mark a name as used (it may already be); returns it as stored."""
        return self._take(self._full(name, add_prefix))

    def contains_name(self, name: str, add_prefix: bool = True) -> bool:
        return self._full(name, add_prefix) in self.taken

    def fresh_name(self, name: str, add_prefix: bool = True, add_underscore: bool = True) -> str:
        """`name` if it is free, else the same stem with the next integer suffix."""
        full = self._full(name, add_prefix)
        if full not in self.taken:
            return self._take(full)
        stem, number = split_suffix(full)
        if number is None:
            stem = stem + "_" if add_underscore else stem
        n = max(self.highest.get(stem, 0), number or 0) + 1
        while f"{stem}{n}" in self.taken:
            n += 1
        return self._take(f"{stem}{n}")


class GlobalVarSupply:
    """Global variables by name, made through one NameSupply."""

    def __init__(self, names: NameSupply | None = None, module: IRModule | None = None) -> None:
        self.names = names if names is not None else NameSupply(
            mangle_module_name(module.name) if module is not None else "tvmgen_default")
        self.globals: dict[str, GlobalVar] = {}
        if module is not None:  # names the module already uses are reserved first
            for gv in module.functions:
                self.reserve_global(gv)

    def reserve_global(self, gv: GlobalVar, allow_conflict: bool = False) -> None:
        if gv.name in self.globals and self.globals[gv.name] is not gv and not allow_conflict:
            raise ValueError(f"the global name @{gv.name} is already taken")
        self.names.reserve_name(gv.name, add_prefix=False)
        self.globals[gv.name] = gv

    def unique_global_for(self, name: str, add_prefix: bool = True) -> GlobalVar:
        """The global of this name, made on first request (same name, same global)."""
        full = self.names.reserve_name(name, add_prefix)
        gv = self.globals.get(full)
        if gv is None:
            gv = self.globals[full] = GlobalVar(full)
        return gv

    def fresh_global(self, name: str, add_prefix: bool = True) -> GlobalVar:
        """A new global whose name no other global of this supply has."""
        full = self.names.fresh_name(name, add_prefix)
        gv = self.globals[full] = GlobalVar(full)
        return gv
