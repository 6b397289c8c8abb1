"""A BYOC pattern table written as Relay text (docs/byoc.md has the whole syntax).

    def @conv2d_bias_relu(%x, %w, %b, Constants=["w", "b"]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
      %1 = nn.bias_add(%0, %b);
      nn.relu(%1)
    }

One `def` per pattern, in priority order (the first is tried first, as TVM's
`pattern_table()` lists them).  A parameter is a wildcard (annotated: only an expression
of that type, a `?` dimension matching any); a parameter used twice binds the same
expression; a call matches a call of the same operator whose attributes equal the ones
written (attributes not written are unconstrained); `%t.0` matches a projection; a
literal constant matches an equal constant.  Two function attributes extend this:

* `Constants=["w", ...]`: those parameters match constants only (TVM's `is_constant()`),
  and the constant is embedded in the composite function rather than passed to it.
* `Composite="name"`: the composite's name, instead of `<target>.<def name>` (or the def
  name when no target is given).  Several defs with one `Composite` name are TVM's
  alternatives (`|`) and optional ops: write each form, the longest first.

`load_pattern_table(text, name)` returns the table and its diagnostics (the errors
`relaylens check` finds in the file: syntax, names, unknown operators, arguments and
attributes; then the table's own: attributes it does not know, a `Constants` entry that
names no parameter), each at its place in the file.  Types are inferred only to find
those errors: a pattern is a shape, not a program.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...check import check_text
from ...diagnostics import Diagnostic, Severity
from ...ir.expr import Call, ErrorExpr, Function, Op, Tuple, TupleGetItem, Var
from ...ir.functor import post_order
from ...ir.module import IRModule
from ...ops import get_op
from ...ops.attrs import AttrError

SOURCE = "patterns"
KNOWN_ATTRS = ("Constants", "Composite")


@dataclass(frozen=True, eq=False)
class PatternEntry:
    """One `def` of the table: its name, the composite name it gives, its function."""

    name: str  # the def's name (`conv2d_bias_relu`)
    func: Function
    composite: str | None = None  # `Composite=` as written, else None (the pass names it)
    constants: frozenset[Var] = frozenset()  # parameters that match constants only

    @property
    def params(self) -> tuple[Var, ...]:
        return self.func.params

    def composite_name(self, target: str | None) -> str:
        """`Composite=` if written, else `<target>.<name>` (just `<name>` without a target)."""
        if self.composite is not None:
            return self.composite
        return f"{target}.{self.name}" if target else self.name


@dataclass
class PatternTable:
    name: str
    entries: list[PatternEntry] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def load_pattern_table(text: str, name: str = "<patterns>") -> PatternTable:
    """The table in `text`, with the errors `relaylens check` finds in it (an unknown
    operator, a wrong number of arguments, an attribute the operator does not have or
    cannot read: a def with one never matches, so a build that used it would silently
    partition nothing) before the table's own; its warnings (a wildcard's unknown type,
    the missing version header: a table is not a model) are left out."""
    checked = check_text(text, name)
    errors = [d for d in checked.diagnostics if d.is_error]
    said = {(d.message, d.span) for d in errors}
    errors += [d for d in attribute_errors(checked.module) if (d.message, d.span) not in said]
    return table_of_module(checked.module, name, errors)


def attribute_errors(module: IRModule) -> list[Diagnostic]:
    """Attributes an operator does not have, or values it cannot read: with the arguments'
    types unknown the type checker never reads them, and such a pattern would never match."""
    found = []
    for func in module.functions.values():
        for node in post_order(func.body):
            if isinstance(node, Call) and isinstance(node.op, Op) and node.attrs:
                opdef = get_op(node.op.name)
                try:
                    if opdef is not None:
                        opdef.normalize_attrs(node.attrs)
                except AttrError as err:
                    found.append(Diagnostic(str(err), node.span, Severity.ERROR, source=SOURCE))
    return found


def table_of_module(module: IRModule, name: str, diagnostics: list[Diagnostic]) -> PatternTable:
    """The table a parsed module makes; `diagnostics` (the parse's errors) come first in
    its diagnostics, the table's own checks after them."""
    table = PatternTable(name, diagnostics=list(diagnostics))
    for gv, func in module.functions.items():
        entry = _entry(gv.name, func, table.diagnostics)
        if entry is not None:
            table.entries.append(entry)
    if not table.entries and table.ok:
        table.diagnostics.append(Diagnostic(f"{name} defines no pattern (expected `def @name(%x, ...) {{ ... }}`)",
                                            None, Severity.ERROR, source=SOURCE))
    return table


def _entry(name: str, func: Function, diagnostics: list[Diagnostic]) -> PatternEntry | None:
    if any(isinstance(node, ErrorExpr) for node in post_order(func)):
        return None  # a syntax error, already reported at its place: the rest of the def is a hole
    ok = True
    for key in func.attrs:
        if key not in KNOWN_ATTRS:
            diagnostics.append(Diagnostic(f"@{name}: unknown pattern attribute {key!r} (known: "
                                          f"{', '.join(KNOWN_ATTRS)})", func.span, Severity.ERROR, source=SOURCE))
            ok = False
    by_name = {p.name: p for p in func.params}
    constants: set[Var] = set()
    written = func.attrs.get("Constants", ())
    for item in written if isinstance(written, tuple) else (written,):
        param = by_name.get(item) if isinstance(item, str) else None
        if param is None:
            diagnostics.append(Diagnostic(f"@{name}: Constants names {item!r}, which is not a parameter "
                                          f"(parameters: {', '.join(by_name) or 'none'})",
                                          func.span, Severity.ERROR, source=SOURCE))
            ok = False
        else:
            constants.add(param)
    if not isinstance(func.body, (Call, Tuple, TupleGetItem)):
        diagnostics.append(Diagnostic(f"@{name}: a pattern's result must be a call, a tuple or a projection",
                                      func.span if isinstance(func.body, Var) else func.body.span, Severity.ERROR,
                                      source=SOURCE))
        ok = False
    composite = func.attrs.get("Composite")
    if composite is not None and not isinstance(composite, str):
        diagnostics.append(Diagnostic(f"@{name}: Composite must be a string", func.span, Severity.ERROR,
                                      source=SOURCE))
        ok = False
    return PatternEntry(name, func, composite, frozenset(constants)) if ok else None
