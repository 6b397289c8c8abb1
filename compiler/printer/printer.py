"""IR → Relay text in TVM's layout (reference §2, §3.7, §6).

    #[version = "0.0.5"]
    type List[A] {
      Cons(A, List[A]),
      Nil,
    }

    def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
      %0 = add(%x, %x);
      nn.relu(%0)
    }

Type definitions come first, then functions, each group sorted by name, one blank line
between items.  Tensor constants print as `meta[relay.Constant][k]`; with `metadata=True`
their data follows in a `#[metadata]` section (compiler/metadata.py).  With `types` and
`spans` expressions carry ` /* ty=T span=S */` comments.

Options for a caller that rewrites a user's file (the editor's formatter): `order` sorts
the items (type definitions and functions) by a key of the caller's, e.g. their place in
the source; `names_per_definition` gives every definition its own variable names (a `%x`
in two defs stays `%x` in both, where TVM's printer would write `%x1`); `note` decides
which `/* ty=... span=... */` each expression gets instead of `types`/`spans`.

`Printer(...).print_module(mod)` also says where each expression was printed:
`PrintResult.locations` maps a node to the [start, end) offsets of its text, without its
comment (a call bound as `%3 = add(...)` maps to `add(...)`, a Let to the text from its
`let` to its chain's value, a def's Function to its whole `def`).  A variable is located
where it is bound; a shared constant where it is first printed; operators, globals and
constructors, which are shared by every use, are not located.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..ir.expr import Expr, GlobalVar, Node
from ..ir.module import IRModule
from ..support import gc_paused
from .doc import render
from .exprs import ExprWriter, NotePolicy
from .names import Names
from .types import print_type_def

HEADER = '#[version = "0.0.5"]'


@dataclass(frozen=True, slots=True)
class PrintResult:
    text: str
    locations: dict[Node, tuple[int, int]] = field(default_factory=dict)
    # what `meta[relay.Constant][k]` refers to, by k (None: a reference kept as written)
    constants: tuple = ()


class Printer:
    def __init__(self, *, spans: bool = False, types: bool = False, metadata: bool = True,
                 header: bool = True, order: Callable[[Any], Any] | None = None,
                 names_per_definition: bool = False, note: NotePolicy | None = None) -> None:
        self.spans = spans
        self.types = types
        self.metadata = metadata
        self.header = header
        self.order = order
        self.names_per_definition = names_per_definition
        self.note = note

    def print_module(self, mod: IRModule) -> PrintResult:
        with gc_paused():
            return self._print_module(mod)

    def print_expr(self, expr: Expr) -> PrintResult:
        with gc_paused():
            writer = ExprWriter(types=self.types, spans=self.spans)
            return PrintResult(*render(writer.write_root(expr)))

    def _print_module(self, mod: IRModule) -> PrintResult:
        writer = ExprWriter(types=self.types, spans=self.spans, note=self.note)
        writer.meta.reserve(mod.functions.values())
        datas = sorted(mod.type_definitions.values(), key=lambda d: d.header.name)
        defs = sorted(mod.functions, key=lambda gv: gv.name)
        if self.order is not None:  # one sequence of items in the caller's order
            keyed = [(self.order(d), 0, i, d) for i, d in enumerate(datas)]
            keyed += [(self.order(mod.functions[gv]), 1, i, gv) for i, gv in enumerate(defs)]
            ordered = [item for *_, item in sorted(keyed, key=lambda k: k[:3])]
        else:
            ordered = [*datas, *defs]
        items: list = []
        for item in ordered:
            if not isinstance(item, GlobalVar):
                items.append(print_type_def(item))
                continue
            if self.names_per_definition:
                writer.names = Names()
            items.append(writer.write_def(item.name, mod.functions[item]))
        tokens: list = [HEADER + "\n"] if self.header else []
        for i, item in enumerate(items):
            tokens += ["\n", item, "\n"] if i else [item, "\n"]
        text, locations = render(tokens)
        if self.metadata and writer.meta.arrays:
            text += _metadata_section(writer.meta.arrays)
        return PrintResult(text, locations, tuple(writer.meta.arrays))


def _metadata_section(arrays: list) -> str:
    if any(a is None for a in arrays):
        return ""  # a constant without data: there is no section to write
    from ..metadata import encode_metadata  # the codec is only needed when there are tensors

    return "\n#[metadata]\n" + encode_metadata(arrays) + "\n"


def print_module(mod: IRModule, *, spans: bool = False, types: bool = False,
                 metadata: bool = True, header: bool = True) -> str:
    printer = Printer(spans=spans, types=types, metadata=metadata, header=header)
    return printer.print_module(mod).text


def print_expr(expr: Expr, *, spans: bool = False, types: bool = False) -> str:
    """A bare expression; its free variables are declared first (`free_var %x: T;`)."""
    return Printer(spans=spans, types=types).print_expr(expr).text
