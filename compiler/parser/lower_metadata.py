"""`meta[...]` references → IR values: a `meta[relay.Constant][i]` expression's tensor, a
call's attributes written as `meta[relay.attrs.X][i]`, and the reference itself.

`MetadataLowering` is a part of the `Lowerer` (lower.py), which inherits it: its methods
read the `module`'s metadata table and the op library's `attr_schema`, and report through
`error` and `diagnostics`.  A file printed without its metadata section is not an error:
an unknown constant is recorded in `unknown_constants` (one warning for the file, made by
the check) and unknown attributes become the op's defaults, with a warning.
"""

from __future__ import annotations

import re

from lark import Token

from ..diagnostics import Diagnostic, Severity
from ..ir import attrs as A
from ..ir import expr as E
from ..ir.span import Span
from ..metadata import MetadataError

_META = re.compile(r"meta\[([^\]]+)\]\[(\d+)\]")


class MetadataLowering:
    """The metadata half of the Lowerer (see the module docstring for what it uses)."""

    def constant_data(self, ref: A.MetaRef, span: Span):
        """The tensor of `meta[relay.Constant][i]`; None for an unknown value.  Without a
        metadata section (text printed with `show_meta_data=False`) the value is unknown but
        not an error: the reference is recorded, and `unknown_constants_warning` makes one
        warning for the file."""
        table = self.module.metadata
        if table is None:
            self.unknown_constants.append(span)
            return None
        try:
            return table.constant(ref.index)
        except MetadataError as err:
            self.error(str(err), span, source="metadata")
            return None

    def meta_attrs(self, ref: A.MetaRef, callee: E.Expr, span: Span) -> A.Attrs:
        """A call's attributes written as a metadata entry: read from the section, by the
        op's schema (metadata.py, `MetadataTable.attrs`); without the section, a warning and
        the op's defaults."""
        table = self.module.metadata
        if table is None or self.attr_schema is None:
            why = ("are in a metadata section that is not here" if table is None else
                   "are read by the type check, which knows the operator's schema")
            self.diagnostics.append(Diagnostic(
                f"{ref}: the attributes {why}; the op's defaults are used", span, Severity.WARNING,
                source="metadata"))
            return A.EMPTY_ATTRS
        kinds = self.attr_schema(callee.name) if isinstance(callee, E.Op) else {}
        try:
            fields = table.attrs(ref.key, ref.index, lambda name: kinds.get(name) in ("number", "bool"))
        except MetadataError as err:
            self.error(str(err), span, source="metadata")
            return A.EMPTY_ATTRS
        return A.Attrs(tuple((k, bool(v) if kinds[k] == "bool" and v in (0, 1) else v)
                             for k, v in fields.items() if k in kinds))

    def meta_ref(self, tok: Token) -> A.MetaRef:
        m = _META.fullmatch(str(tok))
        return A.MetaRef(m.group(1), int(m.group(2)))
