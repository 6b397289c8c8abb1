"""Parse trees → IR, resolving names on the way (top-down, with scopes).

One method per grammar alias.  Every node gets the span of the text it came from; a
`/* ty=... span=... */` comment right after an expression adds its type (`ty`) and its
origins (the node's span becomes the document range followed by those origins).

Scoping follows TVM (reference §3.6): parameters for the body, `let` for the rest of its
block (bound before its value, so a closure can call itself), pattern variables for their
clause, each block and branch its own scope, `free_var` everywhere after it.  Graph
numbers `%N` live in one table for the whole file, in document order, the last binding
winning (TVM's printer relies on a number bound in one `if` branch being visible in the
other).  Names in the IR are objects; the SymbolIndex records where each was written.

This file holds the Lowerer: spans, definitions, scopes, expressions, patterns and
attributes.  Types are lowered by lower_types.py and `meta[...]` references by
lower_metadata.py, the two parts the Lowerer inherits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

# an operator's attributes by name: "number", "bool" or "other" ({} for an unknown operator)
AttrSchema = Callable[[str], Mapping[str, str]]

from lark import Token, Tree

from ..lazy_modules import numpy as np
from ..diagnostics import Diagnostic, Severity, did_you_mean, replacement
from ..ir import attrs as A
from ..ir import expr as E
from ..ir import types as T
from ..ir.module import IRModule, TypeData
from ..ir.span import AnySpan, Source, Span, sequential
from ..pauses import pause_point
from .annotations import split_annotation
from .errors import NAMED_BINDING
from .grammar import first_token, kids, last_token
from .literals import LiteralError, parse_number, parse_string
from .lower_metadata import MetadataLowering
from .lower_types import TypeLowering
from .symbols import Symbol, SymbolIndex

NULL_NAMES = frozenset({"None", "nullptr"})  # attribute values that mean "no value"
_PROJECTION = re.compile(r"(.+)\.(\d+)")


@dataclass(slots=True)
class Statement:
    """A `%N = value` statement of a definition's body, as the lowering left it: what an
    incremental re-read of the statement needs (its name, the node others refer to, the
    scopes it was read in)."""

    name: str
    value: E.Expr
    symbol: Symbol
    scopes: tuple[dict, ...]
    type_scopes: tuple[dict, ...]


class Lowerer(TypeLowering, MetadataLowering):
    """Lowers one file's parse trees into its IRModule, recording names in the SymbolIndex
    and problems in `diagnostics`; types and `meta[...]` references are lowered by the two
    parts it inherits (lower_types.py, lower_metadata.py)."""

    def __init__(
        self,
        source: Source,
        module: IRModule,
        index: SymbolIndex,
        diagnostics: list[Diagnostic],
        annotations: dict[int, tuple[str, int]],
        parse_type: Callable[[str], Tree],
        attr_schema: AttrSchema | None = None,
    ) -> None:
        self.attr_schema = attr_schema  # the op library's, given by the check (the parser sits below it)
        self.source = source
        self.module = module
        self.index = index
        self.diagnostics = diagnostics
        self.annotations = annotations  # end offset of an expression → (comment body, its offset)
        self.parse_type = parse_type
        self.base = 0  # offset of the text being lowered within the source
        self.graph: dict[str, tuple[E.Expr, Symbol]] = {}
        self.scopes: list[dict[str, tuple[E.Var, Symbol]]] = []
        self.free_vars: dict[str, tuple[E.Var, Symbol]] = {}
        self.type_scopes: list[dict[str, tuple[T.TypeVar, Symbol]]] = []
        self.constructors: dict[str, tuple[E.Constructor, Symbol]] = {}
        self.globals: dict[str, Symbol] = {}
        self.types: dict[str, Symbol] = {}
        self._dispatch = {}
        self.top_block = False  # the next block is a definition's body (its statements are recorded)
        self.unknown_constants: list[Span] = []  # `meta[relay.Constant][i]` with no section to read
        self.definition_start = 0  # where the definition being lowered starts

    # ---- spans and diagnostics -------------------------------------------------------
    def span(self, node: Tree | Token) -> Span:
        if isinstance(node, Token):
            return Span(self.source, self.base + node.start_pos, self.base + node.end_pos)
        return Span(self.source, self.base + first_token(node).start_pos, self.base + last_token(node).end_pos)

    def error(self, message: str, span: AnySpan | None, notes=(), source: str = "names") -> None:
        self.diagnostics.append(Diagnostic(message, span, Severity.ERROR, tuple(notes), source))

    def annotated(self, node: Tree | Token, span: Span) -> tuple[AnySpan, T.Type | None]:
        """The span and type of an expression, with what a trailing comment adds."""
        found = self.annotations.get(span.end)
        if found is None:
            return span, None
        body, body_offset = found
        note = split_annotation(body)
        if note is None:
            return span, None
        ty = None
        if note.type_text:
            base = self.base
            self.base = body_offset + note.type_offset  # spans of the type point into the comment
            try:
                ty = self.type(self.parse_type(note.type_text))
            except Exception:  # a malformed comment is the printer's problem, not fatal
                self.diagnostics.append(
                    Diagnostic(f"cannot read the type in this comment: {note.type_text}", span, Severity.WARNING, source="syntax")
                )
            finally:
                self.base = base
        return sequential(span, *note.spans), ty

    # ---- definitions ---------------------------------------------------------------------
    def declare_type(self, tree: Tree) -> None:
        """First pass over a `type`/`extern type` item: its name and constructors."""
        name_tok = kids(tree)[0]
        name = str(name_tok)
        span = self.span(name_tok)
        if name in self.types and self.types[name].definition is not None:
            first = self.types[name].definition
            self.error(f"type {name} is defined twice", span, [(first, "first defined here")])
            return
        header = self.module.get_global_type_var(name, span)
        type_vars, ctor_trees = (), []
        self.type_scopes.append({})
        try:
            for child in kids(tree)[1:]:
                if child.data == "type_params":
                    type_vars = self.type_params(child)
                elif child.data == "ctor_list":
                    ctor_trees = [c for c in kids(child) if isinstance(c, Tree)]
            ctors = []
            for tag, ctor_tree in enumerate(ctor_trees):
                ctor_tok = kids(ctor_tree)[0]
                ctor_name = str(ctor_tok)
                inputs = tuple(self.type(t) for t in kids(ctor_tree)[1:])
                ctor = E.Constructor(ctor_name, inputs, header, tag, span=self.span(ctor_tree))
                if ctor_name in self.constructors:
                    first = self.constructors[ctor_name][1].definition
                    self.error(f"constructor {ctor_name} is defined twice", self.span(ctor_tok), [(first, "first defined here")])
                    continue
                self.constructors[ctor_name] = (ctor, self.index.define("constructor", ctor_name, self.span(ctor_tok), ctor))
                ctors.append(ctor)
        finally:
            self.type_scopes.pop()
        data = TypeData(header, type_vars, tuple(ctors), span=self.span(tree))
        self.module.add_type(data)
        symbol = self.types.get(name)
        if symbol is None:
            self.types[name] = self.index.define("type", name, span, data)
        else:  # referred to before its definition
            symbol.definition, symbol.node = span, data

    def define_function(self, tree: Tree) -> None:
        name_tok = kids(tree)[0]
        name = str(name_tok)[1:]
        span = self.span(name_tok)
        symbol = self.globals.get(name)
        if symbol is not None and symbol.definition is not None:
            self.error(f"@{name} is defined twice", span, [(symbol.definition, "first defined here")])
            return
        gv = self.module.get_global_var(name, span)
        if symbol is None:
            symbol = self.globals[name] = self.index.define("global", name, span, gv)
        else:
            symbol.definition = span
        self.definition_start = self.span(tree).start
        span, _ = self.annotated(tree, self.span(tree))
        self.top_block = True
        func = self.function(kids(tree)[1:], span)
        self.module.add(gv, func)

    def declare_broken_global(self, name: str, span: Span) -> None:
        """A definition that did not parse still defines its name (no cascade of errors)."""
        if name not in self.globals:
            self.globals[name] = self.index.define("global", name, span, self.module.get_global_var(name, span))

    def check_undefined(self) -> None:
        """A warning at each use of a global or type name the file does not define.

        TVM interns such names and accepts the text: they come from a module the caller
        passes in (the prelude's `@hd`), from the runtime (`Storage`) or from lowered code
        (`call_lowered(@fused_add, ...)`).  Type checking reports the uses that matter."""
        for kind, table in (("global", self.globals), ("type", self.types)):
            for name, symbol in table.items():
                if symbol.definition is None:
                    shown = "@" + name if kind == "global" else name
                    for ref in symbol.references:
                        self.diagnostics.append(
                            Diagnostic(f"{kind} {shown} is not defined in this file", ref, Severity.WARNING, source="names")
                        )

    # ---- functions and blocks ----------------------------------------------------------
    def function(self, parts: list, span: AnySpan, ty: T.Type | None = None) -> E.Function:
        type_params: tuple[T.TypeVar, ...] = ()
        params: list[E.Var] = []
        attrs = A.EMPTY_ATTRS
        ret_type = None
        self.type_scopes.append({})
        self.scopes.append({})
        try:
            for part in parts[:-1]:
                if part.data == "type_params":
                    type_params = self.type_params(part)
                elif part.data == "params":
                    for p in kids(part):
                        if p.data == "param":
                            params.append(self.param(p))
                        else:
                            attrs = self.kwargs(p)
                elif part.data == "ret_type":
                    ret_type = self.type(kids(part)[0])
            body = self.block(parts[-1])
        finally:
            self.scopes.pop()
            self.type_scopes.pop()
        return E.Function(tuple(params), body, ret_type, type_params, attrs, span=span, ty=ty)

    def param(self, tree: Tree) -> E.Var:
        tok = kids(tree)[0]
        type_tree = None
        device = None
        for child in kids(tree)[1:]:
            if child.data == "kwargs":
                device = self.kwargs(child).get("virtual_device")
            else:
                type_tree = child
        return self.bind(tok, type_tree, device, end_node=tree)

    def bind(self, tok: Token, type_tree: Tree | None, device=None, end_node: Tree | None = None) -> E.Var:
        """A new variable bound at `tok`; its annotation comment follows `end_node`."""
        name = str(tok)[1:]
        ann = self.type(type_tree) if type_tree is not None else None
        if end_node is None:
            end_node = type_tree if type_tree is not None else tok
        end_span = self.span(end_node)
        tok_span = self.span(tok)
        span, ty = self.annotated(end_node, Span(self.source, tok_span.start, end_span.end))
        var = E.Var(name, ann, device, span=span, ty=ty)
        symbol = self.index.define("local", name, tok_span, var)
        self.scopes[-1][name] = (var, symbol)
        return var

    def block(self, tree: Tree) -> E.Expr:
        top, self.top_block = self.top_block, False
        if not (isinstance(tree, Tree) and tree.data == "block"):
            return self.expr(tree)
        self.scopes.append({})
        try:
            lets: list[tuple[E.Var, E.Expr, int]] = []
            for stmt in kids(tree)[:-1]:
                pause_point()
                kind = stmt.data
                if kind == "let_stmt":
                    tok, *rest = kids(stmt)
                    type_tree = rest[0] if len(rest) == 2 else None
                    var = self.bind(tok, type_tree)
                    lets.append((var, self.expr(rest[-1]), self.base + first_token(stmt).start_pos))
                elif kind == "graph_stmt":
                    name, value, symbol = self.graph_statement(stmt)
                    if top:
                        self.record(stmt, Statement(name, value, symbol, tuple(self.scopes), tuple(self.type_scopes)))
                elif kind == "free_var_stmt":
                    tok = kids(stmt)[0]
                    var = self.bind(tok, kids(stmt)[1] if len(kids(stmt)) > 1 else None)
                    self.free_vars[var.name] = self.scopes[-1].pop(var.name)
                else:  # `e1; e2` is `let %_ = e1; e2`
                    value = self.expr(kids(stmt)[0])
                    lets.append((E.Var("_", span=self.span(stmt)), value, self.base + first_token(stmt).start_pos))
            result = self.expr(kids(tree)[-1])
            end = self.base + last_token(tree).end_pos
            for var, value, start in reversed(lets):
                result = E.Let(var, value, result, span=Span(self.source, start, end))
            return result
        finally:
            self.scopes.pop()

    def graph_statement(self, stmt: Tree) -> tuple[str, E.Expr, Symbol]:
        """`%N = value`: the value, named by its number from here on."""
        tok, value_tree = kids(stmt)
        value = self.expr(value_tree)
        symbol = self.index.define("graph", str(tok)[1:], self.span(tok), value)
        self.graph[str(tok)[1:]] = (value, symbol)
        return str(tok)[1:], value, symbol

    def record(self, stmt: Tree, statement: "Statement") -> None:
        """Keep what a body statement bound on its region of the text, when the source is
        read for incremental analysis (compiler/parser/incremental.py)."""
        anchors = self.source.anchors
        if anchors is not None:
            piece = anchors.piece_at(self.base + first_token(stmt).start_pos)
            if piece.base == self.base + first_token(stmt).start_pos:
                piece.info = statement

    # ---- expressions -----------------------------------------------------------------------
    def expr(self, tree: Tree) -> E.Expr:
        method = self._dispatch.get(tree.data)
        if method is None:
            method = self._dispatch[tree.data] = getattr(self, "x_" + tree.data)
        return method(tree)

    def x_block(self, tree: Tree) -> E.Expr:
        return self.block(tree)

    def x_scope(self, tree: Tree) -> E.Expr:
        return self.block(kids(tree)[0])

    def x_paren(self, tree: Tree) -> E.Expr:
        return self.block(kids(tree)[0])

    def x_number(self, tree: Tree) -> E.Expr:
        tok = kids(tree)[0]
        span = self.span(tree)
        try:
            value, dtype = parse_number(str(tok))
        except LiteralError as err:
            self.error(str(err), span, source="syntax")
            return E.ErrorExpr(str(err), span=span)
        span2, ty = self.annotated(tree, span)
        return E.Constant(np.array(value, dtype=dtype), span=span2, ty=ty)

    def x_true(self, tree: Tree) -> E.Expr:
        span, ty = self.annotated(tree, self.span(tree))
        return E.Constant(np.array(True), span=span, ty=ty)

    def x_false(self, tree: Tree) -> E.Expr:
        span, ty = self.annotated(tree, self.span(tree))
        return E.Constant(np.array(False), span=span, ty=ty)

    def x_local(self, tree: Tree) -> E.Expr:
        tok = kids(tree)[0]
        return self.lookup_local(str(tok)[1:], self.span(tok))

    def lookup_local(self, name: str, span: Span) -> E.Expr:
        found = self._find_local(name)
        if found is not None:
            var, symbol = found
            self.index.refer(symbol, span)
            return var
        m = _PROJECTION.fullmatch(name)
        if m is not None:  # `%t.0` where no `t.0` is declared: a projection of `%t`
            inner_len = len(m.group(1)) + 1
            inner = self.lookup_local(m.group(1), Span(self.source, span.start, span.start + inner_len))
            return E.TupleGetItem(inner, int(m.group(2)), span=span)
        if self._bound_without_let(name, span):
            return E.ErrorExpr(f"undefined variable %{name}", span=span)  # said once, at the binding
        visible = {n for scope in self.scopes for n in scope} | set(self.free_vars)
        close = did_you_mean(name, visible)
        hint = f" (did you mean %{close}?)" if close else ""
        fixes = replacement(span, f"%{name}", f"%{close}") if close else ()
        self.diagnostics.append(Diagnostic(f"undefined variable %{name}{hint}", span, Severity.ERROR,
                                           source="names", fixes=fixes))
        return E.ErrorExpr(f"undefined variable %{name}", span=span)

    def _bound_without_let(self, name: str, use: Span) -> bool:
        """Whether a syntax error earlier in this definition is `%name = ...` without its
        `let` (errors.py): its uses are not reported again as undefined."""
        text = self.source.text
        return any(d.code == NAMED_BINDING and self.definition_start <= d.span.start < use.start
                   and text[d.span.start:d.span.end] == f"%{name}" for d in self.diagnostics)

    def _find_local(self, name: str):
        for scope in reversed(self.scopes):
            found = scope.get(name)
            if found is not None:
                return found
        return self.free_vars.get(name)

    def x_graph(self, tree: Tree) -> E.Expr:
        tok = kids(tree)[0]
        number = str(tok)[1:]
        span = self.span(tok)
        found = self.graph.get(number)
        if found is None:
            later = re.search(rf"%{number}\s*=(?!=)", self.source.text[span.end:])
            self.error(f"%{number} is used before it is defined" if later else f"%{number} is not defined", span)
            return E.ErrorExpr(f"%{number} is undefined", span=span)
        self.index.refer(found[1], span)
        return found[0]

    def x_global_var(self, tree: Tree) -> E.Expr:
        tok = kids(tree)[0]
        return self.refer_global(str(tok)[1:], self.span(tok))

    def refer_global(self, name: str, span: Span) -> E.GlobalVar:
        gv = self.module.get_global_var(name)
        symbol = self.globals.get(name)
        if symbol is None:
            symbol = self.globals[name] = self.index.define("global", name, None, gv)
        self.index.refer(symbol, span)
        return gv

    def x_meta(self, tree: Tree) -> E.Expr:
        span = self.span(tree)
        ref = self.meta_ref(kids(tree)[0])
        span2, ty = self.annotated(tree, span)
        if ref.key != "relay.Constant":
            self.error(f"{ref} cannot stand for an expression here (only relay.Constant can)", span, source="syntax")
            return E.ErrorExpr(str(ref), span=span2, ty=ty)
        data = self.constant_data(ref, span)
        return E.Constant(data, meta=ref, span=span2, ty=ty)

    def x_name(self, tree: Tree, applied: bool = True) -> E.Expr:
        tok = kids(tree)[0]
        name = str(tok)
        span = self.span(tok)
        found = self.constructors.get(name)
        if found is not None:
            ctor, symbol = found
            self.index.refer(symbol, span)
            if applied and not ctor.inputs:  # `Nil` means `Nil()`
                span2, ty = self.annotated(tree, span)
                return E.Call(ctor, (), span=span2, ty=ty)
            return ctor
        return E.op(name)

    def x_hole(self, tree: Tree) -> E.Expr:
        return E.ErrorExpr("syntax error", span=self.span(tree))

    def x_call(self, tree: Tree) -> E.Expr:
        callee_tree = kids(tree)[0]
        if callee_tree.data == "name":
            callee = self.x_name(callee_tree, applied=False)
        else:
            callee = self.expr(callee_tree)
        args: list[E.Expr] = []
        attrs = A.EMPTY_ATTRS
        if len(kids(tree)) > 1:
            for child in kids(kids(tree)[1]):
                if isinstance(child, Tree) and child.data == "kwargs":
                    attrs = self.kwargs(child)
                elif isinstance(child, Tree) and child.data == "meta" and str(kids(child)[0]).startswith(
                        "meta[relay.attrs."):  # `op(%x, meta[relay.attrs.Conv2DAttrs][0])`
                    attrs = self.meta_attrs(self.meta_ref(kids(child)[0]), callee, self.span(child))
                else:
                    args.append(self.block(child))
        span, ty = self.annotated(tree, self.span(tree))
        return E.Call(callee, tuple(args), attrs, span=span, ty=ty)

    def x_binop(self, tree: Tree) -> E.Expr:
        left, tok, right = kids(tree)
        name = _BINOPS[str(tok)]
        span, ty = self.annotated(tree, self.span(tree))
        return E.Call(E.op(name), (self.expr(left), self.expr(right)), span=span, ty=ty)

    def x_proj(self, tree: Tree) -> E.Expr:
        inner, tok = kids(tree)
        value = self.expr(inner)
        span, ty = self.annotated(tree, self.span(tree))
        if not str(tok).isdigit():
            self.error(f"a tuple projection takes a field number, not '{tok}'", self.span(tok), source="syntax")
            return E.ErrorExpr("bad projection", span=span)
        return E.TupleGetItem(value, int(str(tok)), span=span, ty=ty)

    def x_tuple(self, tree: Tree) -> E.Expr:
        fields = tuple(self.block(c) for c in kids(tree))
        span, ty = self.annotated(tree, self.span(tree))
        return E.Tuple(fields, span=span, ty=ty)

    def x_fn(self, tree: Tree) -> E.Expr:
        span, ty = self.annotated(tree, self.span(tree))
        return self.function(kids(tree), span, ty)

    def x_if_expr(self, tree: Tree) -> E.Expr:
        cond, then, other = (self.block(c) for c in kids(tree))
        return E.If(cond, then, other, span=self.span(tree))

    def x_ref_create(self, tree: Tree) -> E.Expr:
        return E.RefCreate(self.block(kids(tree)[0]), span=self.span(tree))

    def x_ref_read(self, tree: Tree) -> E.Expr:
        return E.RefRead(self.block(kids(tree)[0]), span=self.span(tree))

    def x_ref_write(self, tree: Tree) -> E.Expr:
        ref, value = (self.block(c) for c in kids(tree))
        return E.RefWrite(ref, value, span=self.span(tree))

    def x_match_expr(self, tree: Tree) -> E.Expr:
        keyword, scrutinee, *clause_trees = kids(tree)
        data = self.expr(scrutinee)
        clauses = []
        for clause in clause_trees:
            self.scopes.append({})
            try:
                lhs = self.pattern(kids(clause)[0])
                rhs = self.block(kids(clause)[1])
            finally:
                self.scopes.pop()
            clauses.append(E.Clause(lhs, rhs, span=self.span(clause)))
        return E.Match(data, tuple(clauses), str(keyword) == "match", span=self.span(tree))

    # ---- patterns ------------------------------------------------------------------------------
    def pattern(self, tree: Tree) -> E.Pattern:
        kind = tree.data
        span = self.span(tree)
        if kind == "pattern_wildcard":
            return E.PatternWildcard(span=span)
        if kind == "pattern_var":
            var = self.bind(kids(tree)[0], kids(tree)[1] if len(kids(tree)) > 1 else None)
            return E.PatternVar(var, span=span)
        if kind == "pattern_tuple":
            return E.PatternTuple(tuple(self.pattern(p) for p in kids(tree)), span=span)
        tok = kids(tree)[0]
        found = self.constructors.get(str(tok))
        subs = tuple(self.pattern(p) for p in kids(tree)[1:])
        if found is None:
            self.error(f"unknown constructor {tok} in this pattern", self.span(tok))
            return E.PatternWildcard(span=span)
        ctor, symbol = found
        self.index.refer(symbol, self.span(tok))
        if len(subs) != len(ctor.inputs):
            self.error(
                f"constructor {ctor.name} has {len(ctor.inputs)} field(s) but this pattern gives {len(subs)}",
                span,
                [(symbol.definition, f"{ctor.name} is defined here")],
                source="types",
            )
        return E.PatternConstructor(ctor, subs, span=span)

    # ---- attributes ----------------------------------------------------------------------------
    def kwargs(self, tree: Tree) -> A.Attrs:
        items = []
        for kwarg in kids(tree):
            key, value = kids(kwarg)
            items.append((str(key), self.attr_value(value)))
        return A.Attrs(tuple(items))

    def attr_value(self, tree: Tree):
        kind = tree.data
        if kind == "attr_value":  # `(v)`: one value in parentheses
            return self.attr_value(kids(tree)[0])
        if kind == "attr_number":
            tok = kids(tree)[0]
            try:
                value, dtype = parse_number(str(tok))
            except LiteralError as err:
                self.error(str(err), self.span(tok), source="syntax")
                return None
            return A.FloatImm(value, dtype) if dtype.startswith("float") else A.IntImm(value, dtype)
        if kind == "attr_true":
            return True
        if kind == "attr_false":
            return False
        if kind == "attr_string":
            return parse_string(str(kids(tree)[0]))
        if kind == "attr_meta":
            return self.meta_ref(kids(tree)[0])
        if kind == "attr_list":
            return tuple(self.attr_value(c) for c in kids(tree))
        if kind == "attr_name":
            name = str(kids(tree)[0])
            return None if name in NULL_NAMES else A.Opaque(name)
        if kind == "attr_global":
            tok = kids(tree)[0]
            return self.refer_global(str(tok)[1:], self.span(tok))
        if kind == "attr_local":
            tok = kids(tree)[0]
            return self.lookup_local(str(tok)[1:], self.span(tok))
        if kind == "attr_graph":
            return self.x_graph(tree)
        span = self.span(tree)
        return A.Opaque(self.source.text[span.start : span.end])  # attr_opaque, attr_opaque_call

_BINOPS = {
    "*": "multiply",
    "/": "divide",
    "+": "add",
    "-": "subtract",
    "<": "less",
    ">": "greater",
    "<=": "less_equal",
    ">=": "greater_equal",
    "==": "equal",
    "!=": "not_equal",
}
