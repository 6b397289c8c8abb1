"""Expressions in graph normal form, as TVM's printer writes them (reference §3.7).

Which node gets a line of its own:

* atoms (variables, globals, operators, constructors, constants, `__error__`) never: they
  are written where they are used;
* a node used more than once gets one `%N = ...;` line, the first time it is printed, and
  is `%N` everywhere (N from one counter per print, allocated when the node is done);
* in argument position (call arguments and callee, tuple fields, `if` condition, `ref`
  operands, projected tuple, match scrutinee) every other node gets a line too;
* the tail of a block and the value of a `let` are written inline when used once.

A `let` chain in tail position is a run of `let` lines in the enclosing block; anywhere
else it is wrapped in parentheses over several lines.

Printing never recurses on the Python stack: each node is a generator that *yields* a
request `(child, mode)` for every child it needs and gets the child's tokens back; `_run`
drives the generators with an explicit stack, so a 50,000-deep chain costs a list of
generators, not 50,000 frames.  Before a node's line is emitted its children have emitted
theirs, which gives TVM's order: a call's arguments first, then its callee.
"""

from __future__ import annotations

from typing import Callable, Generator, Iterable

from ..ir.attrs import Attrs
from ..ir.expr import (
    ANNOTATED,
    Call,
    Constant,
    Constructor,
    ErrorExpr,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.functor import children, post_order
from ..ir.span import AnySpan
from ..ir.types import Type
from .comments import annotation
from .doc import Close, Open, Scope, Tokens, newline
from .literals import print_attr_value, scalar_literal
from .names import Names
from .types import print_type, type_params_text

ARG, TAIL, VALUE = "arg", "tail", "value"  # where a child is printed (see the docstring)
ERROR_TEXT = "__error__"

Printing = Generator[tuple[Expr, str], Tokens, Tokens]
# which `/* ty=... span=... */` an expression gets: (type or None, span or None)
NotePolicy = Callable[[Expr], tuple[Type | None, AnySpan | None]]


def count_uses(roots: Iterable[Expr]) -> dict[Expr, int]:
    """How many times each compound node is used: one per parent edge (`add(%0, %0)` uses
    %0 twice).  Atoms are left out: they are written at every use anyway."""
    uses: dict[Expr, int] = {}
    stack = list(roots)
    while stack:
        for child in children(stack.pop()):
            if type(child) in _ATOMS:
                continue
            count = uses.get(child, 0)
            uses[child] = count + 1
            if not count:
                stack.append(child)
    return uses


class MetaTable:
    """Numbers the non-scalar constants `meta[relay.Constant][k]` in order of first print.

    Constants holding the very same array object are one entry: the parser reads each
    metadata tensor once, so the nodes it makes for `meta[relay.Constant][3]` written
    twice share their array, and print back as one entry again."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}  # id of a constant's data → k
        self.arrays: list = []  # keeps every numbered array alive, so ids stay unique
        # indices that unknown constants keep as written (`reserve`): new numbers skip them
        self.reserved: set[int] = set()

    def reserve(self, roots) -> None:
        """Keep the indices of the unknown constants under `roots` (text printed without
        its metadata: they print as written) out of the numbering of other constants, so
        that a constant a pass made never prints as one of theirs."""
        done: set = set()
        for root in roots:
            for node in post_order(root, done=done):
                done.add(node)
                if isinstance(node, Constant) and node.data is None and node.meta is not None:
                    self.reserved.add(node.meta.index)

    def ref(self, const: Constant) -> str:
        if const.data is None and const.meta is not None:
            return str(const.meta)  # its entry was never found: keep the reference as written
        key = id(const.data) if const.data is not None else id(const)
        k = self.index.get(key)
        if k is None:
            k = len(self.arrays)
            while k in self.reserved:  # no section is written when a constant is unknown,
                self.arrays.append(None)  # so a placeholder entry costs nothing
                k += 1
            self.arrays.append(const.data)
            self.index[key] = k
        return f"meta[relay.Constant][{k}]"


class ExprWriter:
    """Prints the expressions of one print job: variable names, the `%N` counter and meta
    numbers are shared by all its definitions.  Sharing is not: each definition is printed
    on its own (a node reachable from two defs is written in both), so every def reads
    without the others, as our parser and the editor read them."""

    def __init__(self, *, types: bool = False, spans: bool = False, note: NotePolicy | None = None):
        self.uses: dict[Expr, int] = {}
        self.types = types
        self.spans = spans
        self.note_policy = note
        self.names = Names()
        self.meta = MetaTable()
        self.memo: dict[Expr, Tokens] = {}
        self.temps = 0
        self.scope = Scope(0)
        self.free_scope = self.scope  # where `free_var` lines go
        self._visit = {kind: getattr(self, name) for kind, name in _VISIT.items()}
        self._type_texts: dict = {}

    # -- entry points ------------------------------------------------------------------
    def write_root(self, expr: Expr) -> Tokens:
        """A bare expression: its free variables declared, its lines, its value."""
        self._begin(expr)
        self.scope = self.free_scope = Scope(0)
        tail = self._run(self._tail(expr))
        tokens = self.scope.close(tail)
        tokens[0] = tokens[0][1:]  # the first line has no line before it
        return tokens

    def write_def(self, name: str, fn: Function) -> Tokens:
        """`def @name(...) -> R {...}`; free variables are declared atop its body."""
        self._begin(fn)
        body = self.free_scope = Scope(1)
        self.scope = Scope(0)
        tokens = [Open(fn), self._run(self._function(fn, f"def @{name}", body)), Close(fn)]
        if self.spans and fn.span is not None:  # ours: TVM writes no comment after a def
            tokens.append(annotation(None, fn.span))
        return tokens

    def _begin(self, root: Expr) -> None:
        self.uses = count_uses([root])
        self.memo = {}

    # -- the driver --------------------------------------------------------------------
    def _run(self, root: Printing) -> Tokens:
        """Drive `root` and every generator it asks for; each stack entry is a generator
        with the node it prints (None for the root) and whether that node is inline."""
        stack: list[tuple[Printing, Expr | None, bool]] = [(root, None, True)]
        value = None
        while True:
            gen, node, inline = stack[-1]
            try:
                expr, mode = gen.send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value if node is None else self._finish(node, inline, stop.value)
                if not stack:
                    return value
                continue
            value = self._atom(expr)
            if value is None:
                value = self.memo.get(expr)
            if value is None:
                inline = mode != ARG and self.uses.get(expr, 0) <= 1
                stack.append((self._start(expr, mode, inline), expr, inline))

    def _tail(self, expr: Expr) -> Printing:
        return (yield expr, TAIL)

    def _start(self, expr: Expr, mode: str, inline: bool) -> Printing:
        if type(expr) is Let:
            return self._let_chain(expr) if inline and mode == TAIL else self._wrapped_let(expr)
        visit = self._visit.get(type(expr))
        if visit is None:
            raise TypeError(f"the printer does not know {type(expr).__name__} nodes")
        return visit(expr)

    def _finish(self, expr: Expr, inline: bool, body: list) -> Tokens:
        """Mark a printed node, add its comment; then use it in place or bind it to `%N`."""
        if type(expr) is Let:
            tokens = body  # a let chain marks its own lets
        else:
            tokens = [Open(expr), *body, Close(expr)]
            note = self._note(expr)
            if note:
                tokens.append(note)
        if inline:
            self.memo[expr] = tokens
            return tokens
        ref = f"%{self.temps}"
        self.temps += 1
        self.scope.line(ref + " = ", tokens, ";")
        self.memo[expr] = ref
        return ref

    # -- atoms -------------------------------------------------------------------------
    def _atom(self, expr: Expr) -> Tokens | None:
        kind = type(expr)
        if kind is Var:
            name = self.names.get(expr)
            return "%" + (name if name is not None else self._declare_free(expr))
        if kind is Op or kind is Constructor:
            return expr.name
        if kind is GlobalVar:
            return "@" + expr.name
        if kind is Constant:
            text = scalar_literal(expr.data) if expr.data is not None else None
            tokens = [Open(expr), text or self.meta.ref(expr), Close(expr)]
            note = self._note(expr)
            if note:
                tokens.append(note)
            return tokens
        if kind is ErrorExpr:
            return [Open(expr), ERROR_TEXT, Close(expr)]
        return None

    def _declare_free(self, var: Var) -> str:
        self.free_scope.declare("free_var ", self._binder(var), ";")
        return self.names.bind(var)

    def _binder(self, var: Var) -> Tokens:
        """A variable where it is bound: `%x {virtual_device=...}: T /* ty=T */`."""
        tokens = [Open(var), "%" + self.names.bind(var), Close(var)]
        if var.virtual_device is not None:
            tokens.append(" {virtual_device=" + print_attr_value(var.virtual_device) + "}")
        if var.type_annotation is not None:
            tokens.append(": " + self._type(var.type_annotation))
        note = self._note(var)
        if note:
            tokens.append(note)
        return tokens

    def _note(self, expr: Expr) -> str:
        if type(expr) not in ANNOTATED:
            return ""
        if self.note_policy is not None:
            ty, span = self.note_policy(expr)
            return annotation(self._type(ty) if ty is not None else None, span)
        if not (self.types or self.spans):
            return ""
        ty = self._type(expr.ty) if self.types and expr.ty is not None else None
        return annotation(ty, expr.span if self.spans else None)

    def _type(self, ty: Type) -> str:
        """`print_type`, remembered: a model repeats the same few types many times."""
        try:
            text = self._type_texts.get(ty)
        except TypeError:  # a type holding something unhashable
            return print_type(ty)
        if text is None:
            text = self._type_texts[ty] = print_type(ty)
        return text

    # -- compound nodes ----------------------------------------------------------------
    def _call(self, call: Call) -> Printing:
        items = []
        for arg in call.args:
            items.append((yield arg, ARG))
        items += self._attrs(call.attrs)
        callee = yield call.op, ARG
        if isinstance(call.op, Constructor) and not call.op.inputs and not items:
            return callee  # `Nil`: the parser applies a nullary constructor itself
        return [callee, "(", _commas(items), ")"]

    def _tuple(self, tup: Tuple) -> Printing:
        items = []
        for field in tup.fields:
            items.append((yield field, ARG))
        return ["(", items[0], ",)"] if len(items) == 1 else ["(", _commas(items), ")"]

    def _tuple_get_item(self, item: TupleGetItem) -> Printing:
        tup = yield item.tuple_value, ARG
        return [tup, f".{item.index}"]

    def _if(self, expr: If) -> Printing:
        cond = yield expr.cond, ARG
        then = yield from self._body(expr.true_branch, Scope(self.scope.depth + 1))
        other = yield from self._body(expr.false_branch, Scope(self.scope.depth + 1))
        return ["if (", cond, ") ", then, " else ", other]

    def _match(self, match: Match) -> Printing:
        data = yield match.data, ARG
        depth = self.scope.depth
        tokens = ["match (" if match.complete else "match? (", data, ") {"]
        for clause in match.clauses:
            lhs = self._pattern(clause.lhs)
            rhs = yield from self._body(clause.rhs, Scope(depth + 2))
            tokens += [newline(depth + 1), lhs, " => ", rhs, ","]
        tokens += [newline(depth), "}"]
        return tokens

    def _function_literal(self, fn: Function) -> Printing:
        return (yield from self._function(fn, "fn ", Scope(self.scope.depth + 1)))

    def _function(self, fn: Function, prefix: str, body_scope: Scope) -> Printing:
        params = [self._binder(p) for p in fn.params] + self._attrs(fn.attrs)
        head = [prefix, type_params_text(fn.type_params), "(", _commas(params), ") "]
        if fn.ret_type is not None:
            head.append(f"-> {self._type(fn.ret_type)} ")
        body = yield from self._body(fn.body, body_scope)
        return [head, body]

    def _ref_create(self, ref: RefCreate) -> Printing:
        return ["ref(", (yield ref.value, ARG), ")"]

    def _ref_read(self, ref: RefRead) -> Printing:
        return ["ref_read(", (yield ref.ref, ARG), ")"]

    def _ref_write(self, ref: RefWrite) -> Printing:
        target = yield ref.ref, ARG
        value = yield ref.value, ARG
        return ["ref_write(", target, ", ", value, ")"]

    # -- blocks and lets ---------------------------------------------------------------
    def _body(self, expr: Expr, scope: Scope) -> Printing:
        """`{`, the block of `expr` at `scope`'s depth, `}` one level out."""
        outer, self.scope = self.scope, scope
        tail = yield expr, TAIL
        self.scope = outer
        return ["{", scope.close(tail), newline(scope.depth - 1), "}"]

    def _let_chain(self, let: Let) -> Printing:
        """`let` lines into the current block; returns the chain's value.  A Let's text
        runs from its `let` to the end of that value."""
        scope = self.scope
        closes = []
        while True:
            var = self._binder(let.var)
            value = yield let.value, VALUE
            scope.line("", Open(let), "let ", var, " = ", value, ";")
            closes.append(Close(let))
            body = let.body
            if not isinstance(body, Let) or body in self.memo or self.uses.get(body, 0) > 1:
                break
            let = body
        tail = yield body, TAIL
        closes.reverse()
        return [tail, closes]

    def _wrapped_let(self, let: Let) -> Printing:
        outer, self.scope = self.scope, Scope(self.scope.depth + 1)
        tail = yield from self._let_chain(let)
        inner, self.scope = self.scope, outer
        return ["(", inner.close(tail), newline(outer.depth), ")"]

    # -- patterns and attributes -------------------------------------------------------
    def _pattern(self, pattern: Pattern) -> Tokens:
        if isinstance(pattern, PatternVar):
            return self._binder(pattern.var)
        if isinstance(pattern, PatternConstructor):
            if not pattern.patterns:
                return pattern.constructor.name
            subs = [self._pattern(p) for p in pattern.patterns]
            return [pattern.constructor.name, "(", _commas(subs), ")"]
        if isinstance(pattern, PatternTuple):
            subs = [self._pattern(p) for p in pattern.patterns]
            return ["(", subs[0], ",)"] if len(subs) == 1 else ["(", _commas(subs), ")"]
        return "_"

    def _attrs(self, attrs: Attrs) -> list[str]:
        return [f"{key}={print_attr_value(value, self._var_name)}" for key, value in attrs.items()]

    def _var_name(self, var: Var) -> str:
        return self.names.get(var) or var.name


def _commas(items: list) -> list:
    out: list = []
    for i, item in enumerate(items):
        if i:
            out.append(", ")
        out.append(item)
    return out


_VISIT = {
    Call: "_call",
    Tuple: "_tuple",
    TupleGetItem: "_tuple_get_item",
    If: "_if",
    Match: "_match",
    Function: "_function_literal",
    RefCreate: "_ref_create",
    RefRead: "_ref_read",
    RefWrite: "_ref_write",
}

_ATOMS = {Var, GlobalVar, Op, Constructor, Constant, ErrorExpr}

# The node kinds that carry a ` /* ty=... span=... */` comment (a Var only where bound).
