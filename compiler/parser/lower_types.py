"""Types written in the text → IR types: tensor types and their shapes and dtypes, tuple,
function, reference and ADT types, type parameters and the names that refer to them.

`TypeLowering` is a part of the `Lowerer` (lower.py), which inherits it: its methods use
the lowerer's state -- `span`, `error`, `meta_ref`, the `index`, the `module`, the
`type_scopes` (innermost last) and the `types` table of global type names -- and change
nothing else.  A type name is a type variable in scope, else a dtype (a scalar tensor),
else a global type (recorded as a reference, defined or not).  `dtype` is the one place
the text's dtype names are checked (through `ir.dtypes.dtype_problem`).
"""

from __future__ import annotations

import re

from lark import Token, Tree

from ..ir import attrs as A
from ..ir import types as T
from ..ir.dtypes import dtype_problem
from ..ir.span import Span
from .grammar import kids
from .literals import LiteralError, parse_number

# TVM reads a bare type name as a dtype when it starts with int, uint, float or bool; we
# take a proper dtype pattern instead (so bfloat16 works) and read `int` as `int32`.
DTYPE_NAME = re.compile(r"(?:bool|(?:u?int|float|bfloat)\d*|handle|e[45]m[23]_float\d*)(?:x\d+)?")
_DEFAULT_WIDTH = {"int": "int32", "uint": "uint32", "float": "float32", "bfloat": "bfloat16"}


class TypeLowering:
    """The type half of the Lowerer (see the module docstring for what it uses)."""

    def type_params(self, tree: Tree) -> tuple[T.TypeVar, ...]:
        found = []
        for tok in kids(tree):
            tv = T.TypeVar(str(tok), span=self.span(tok))
            symbol = self.index.define("type_var", str(tok), self.span(tok), tv)
            self.type_scopes[-1][str(tok)] = (tv, symbol)
            found.append(tv)
        return tuple(found)

    def type(self, tree: Tree) -> T.Type:
        kind = tree.data
        span = self.span(tree)
        if kind == "tensor_type":
            shape_tree, dtype = kids(tree)
            return T.TensorType(self.shape(shape_tree), self.dtype(dtype), span=span)
        if kind == "type_name":
            return self.type_name(kids(tree)[0], span)
        if kind == "tuple_type":
            return T.TupleType(tuple(self.type(c) for c in kids(tree)), span=span)
        if kind == "func_type":
            children = list(kids(tree))
            self.type_scopes.append({})
            try:
                tps = self.type_params(children.pop(0)) if children and children[0].data == "type_params" else ()
                types = [self.type(c) for c in children]
            finally:
                self.type_scopes.pop()
            return T.FuncType(tuple(types[:-1]), types[-1], tps, span=span)
        if kind == "type_call":
            tok, *args = kids(tree)
            return T.TypeCall(self.refer_type(tok), tuple(self.type(a) for a in args), span=span)
        if kind == "incomplete_type":
            return T.IncompleteType(span=span)
        if kind == "ref_type":
            return T.RefType(self.type(kids(tree)[0]), span=span)
        if kind == "meta_type":
            return T.MetaType(self.meta_ref(kids(tree)[0]), span=span)
        raise AssertionError(f"unknown type tree {kind}")

    def type_name(self, tok: Token, span: Span) -> T.Type:
        name = str(tok)
        for scope in reversed(self.type_scopes):
            found = scope.get(name)
            if found is not None:
                self.index.refer(found[1], self.span(tok))
                return found[0]
        if DTYPE_NAME.fullmatch(name):
            return T.TensorType((), self.dtype(tok), span=span)
        return T.TypeCall(self.refer_type(tok), (), span=span)

    def dtype(self, tok: Token) -> str:
        """A dtype written in a type (`int` is `int32`), with an error at it when RelayLens
        cannot use it: the one dtype rule, `dtype_problem`, so that check catches what
        the passes and lowering could not carry."""
        name = _DEFAULT_WIDTH.get(str(tok), str(tok))
        problem = dtype_problem(name)
        if problem is not None:
            self.error(problem, self.span(tok), source="types")
        return name

    def refer_type(self, tok: Token) -> T.GlobalTypeVar:
        name = str(tok)
        gtv = self.module.get_global_type_var(name)
        symbol = self.types.get(name)
        if symbol is None:
            symbol = self.types[name] = self.index.define("type", name, None, gtv)
        self.index.refer(symbol, self.span(tok))
        return gtv

    def shape(self, tree: Tree) -> tuple:
        dims = kids(tree) if tree.data == "shape" else [tree]
        out = []
        for dim in dims:
            if dim.data == "dim_any":
                out.append(T.ANY)
            elif dim.data == "dim_meta":
                out.append(self.meta_ref(kids(dim)[0]))
            else:
                tok = kids(dim)[0]
                if tok.isdigit():  # the common case, without the literal rules
                    out.append(int(tok))
                    continue
                try:
                    value, dtype = parse_number(str(tok))
                except LiteralError as err:
                    self.error(str(err), self.span(tok), source="syntax")
                    value, dtype = 0, "int32"
                if dtype.startswith("float"):
                    self.error(f"a dimension must be an integer, not {tok}", self.span(tok), source="syntax")
                out.append(int(value) if dtype == "int32" else A.IntImm(int(value), dtype))
        return tuple(out)
