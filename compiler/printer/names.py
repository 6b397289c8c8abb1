"""Variable names made unique over one print, as TVM's printer makes them (reference §3.7).

A name taken before gets the next free decimal counter appended with no separator: `%x`,
`%x1`, `%x2`; a name already ending in digits just gets more (`%p0` → `%p01`).  A name that
is empty or does not start with a letter or `_` gets a `v` in front (`1` → `%v1`).  Names
are otherwise kept verbatim (`input.1`, `onnx::Conv_7`): our parser reads them at binders.
"""

from __future__ import annotations

from ..ir.expr import Var


class Names:
    def __init__(self) -> None:
        self._counters: dict[str, int] = {}  # every name handed out → its last suffix
        self._of: dict[Var, str] = {}

    def get(self, var: Var) -> str | None:
        """The name given to `var` so far, if any."""
        return self._of.get(var)

    def bind(self, var: Var) -> str:
        """The name of `var`, given now if it has none (the same Var keeps its name)."""
        name = self._of.get(var)
        if name is None:
            name = self._of[var] = self.fresh(var.name)
        return name

    def fresh(self, hint: str) -> str:
        if not hint or not (hint[0].isascii() and (hint[0].isalpha() or hint[0] == "_")):
            hint = "v" + hint
        name = hint
        counters = self._counters
        if hint in counters:
            while name in counters:
                counters[hint] += 1
                name = f"{hint}{counters[hint]}"
        counters[name] = 0
        return name
