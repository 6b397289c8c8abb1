"""Type inference over a whole module.

Every expression gets its type; `infer_types` writes it into the node's `ty` field (the
one place that sets `ty` after parsing: a node's type is a function of the node, so
filling it in place is safe even where modules share nodes, as TVM's `checked_type_`).

How it works.  Each global function is walked once, children before parents, with an
explicit stack (printed models nest thousands deep).  Binders get their annotation, or a
hole the solver fills in later (`solver.py`).  A call to an operator runs the op's type
relation as soon as its argument types are known; while they are not (an unannotated
parameter, say), the call waits in a queue that is retried as holes get bound.  A call to
a function unifies arguments with parameters; polymorphic functions and constructors are
instantiated with fresh holes at every use.  A global is inferred before its first use
unless its annotations already give its whole type.

A constant of unknown value (text printed without its metadata) has its `ty=` comment
as its type, else a hole that the call using it fills where the op's relation fixes it
(unknown_constants.py); every reference to one metadata entry shares one type.  One that
stays unknown gets one information diagnostic, and the calls waiting on it no warning.

An op call whose relation already succeeded on the same attributes object and argument
types (the same call typed again by a later InferType, or a call a pass rebuilt) takes
that result from ops/relation_memo.py without running the relation again.

Errors are diagnostics at the offending expression with both sides in the message; the
expression's type becomes ERROR, which unifies with everything, so one mistake does not
hide the rest of the module or cascade into its users.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..diagnostics import Diagnostic, Severity, did_you_mean, replacement
from ..ir import expr as E
from ..ir.functor import children
from ..ir.module import IRModule
from ..ir.types import FuncType, IncompleteType, MetaType, RefType, TensorType, TupleType, Type, TypeCall, UNIT
from ..ops import AttrError, OpTypeError, all_ops, get_op
from ..ops.relation_memo import known_result, normalized, remember_result, result_key
from ..pauses import pause_point
from ..printer.types import print_type
from .unknown_constants import broadcast_operand, operand_type, unknown_constants
from .solver import ERROR, ErrorType, Mismatch, Solver, subtypes

BOOL_SCALAR = TensorType((), "bool")
PAUSE_STEPS = 128  # steps of the walk between two pause points (compiler/pauses.py: about 1 ms)


def infer_types(module: IRModule, *, check_annotations: bool = False,
                commented: dict | None = None) -> list[Diagnostic]:
    """Infer and set the type of every expression of `module`; return the type errors.

    `check_annotations` also compares the `ty=` comments the parser read with the
    inferred types (a difference is a warning: TVM itself ignores those comments).
    `commented`, if given, receives the nodes that had a type before (their comments),
    with that type.
    """
    checker = TypeChecker(module, check_annotations)
    checker.commented = commented
    return checker.run()


def infer_expr_types(module: IRModule, root: E.Expr, is_new, *, check_annotations: bool = False,
                     commented: dict | None = None) -> tuple[Type | None, list[Diagnostic]] | None:
    """Type the new nodes under `root` (those `is_new` holds for) in a module whose other
    nodes are typed already: the incremental re-check of one statement
    (compiler/check.py).  The nodes it refers to keep their types; the global functions
    keep their signatures.  Returns (root's type, the errors in the new nodes), or None
    when a node it refers to has no complete type (then check the whole module)."""
    checker = TypeChecker(module, check_annotations)
    checker.commented = commented
    for gv, func in module.functions.items():
        if gv.ty is not None:
            checker.global_types[gv] = gv.ty
        if func.ty is not None:
            checker.types[func] = func.ty
            checker.seeded.add(func)
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node is root or is_new(node):
            stack.extend(c for c in children(node) if isinstance(c, E.Expr))
            if isinstance(node, E.Call) and not isinstance(node.op, E.Op):
                stack.append(node.op)
        elif isinstance(node, (E.Var, E.GlobalVar, E.Op)) and node.ty is None:
            continue  # a binder or global typed from its annotation or signature
        elif node.ty is None:
            return None
        else:
            checker.types[node] = node.ty
            checker.seeded.add(node)
    if any(isinstance(n, E.Constant) and not n.known and n.meta is not None for n in seen if is_new(n)):
        for const in unknown_constants(module):
            if not is_new(const) and const.meta is not None:
                if const.ty is None:
                    return None  # the new statement may fix its type: check the whole module
                checker.meta_types.setdefault(const.meta, const.ty)
    checker.walk(root)
    checker.retry_pending(final=True)
    checker.finish()
    return root.ty, checker.diagnostics


_generation = 0  # how many times types were written into nodes (TypeChecker.finish) in this process


def typing_generation() -> int:
    """A number that changes whenever inference writes types into nodes: a module typed
    at generation g still holds the types of that inference while it is g (InferType
    skips such a module when its functions are the same objects)."""
    return _generation


class TypeChecker:
    def __init__(self, module: IRModule, check_annotations: bool) -> None:
        self.module = module
        self.check_annotations = check_annotations
        self.solver = Solver()
        self.types: dict[E.Expr, Type] = {}
        self.diagnostics: list[Diagnostic] = []
        self.pending: list[E.Call] = []
        self.global_types: dict[E.GlobalVar, Type] = {}
        self.in_progress: set[E.GlobalVar] = set()
        self.commented: dict | None = None  # collects the nodes typed before inference, with that type
        self.seeded: set[E.Expr] = set()  # typed by an earlier inference: left as they are
        self.unknown: dict[E.Constant, IncompleteType] = {}  # unknown-valued constants, untyped
        self.meta_types: dict = {}  # MetaRef -> the type of every reference to it
        self.unknown_after_error: set[E.Constant] = set()  # used by a call with an error: not noted

    # driver ----------------------------------------------------------------------
    def run(self, also: Sequence[E.Expr] = ()) -> list[Diagnostic]:
        """Type the module's functions, then whatever of `also` they left untyped."""
        for gv, func in self.module.functions.items():
            declared = _declared_type(func)
            if declared is not None:
                self.global_types[gv] = declared
        for gv in list(self.module.functions):
            self.infer_global(gv)
        for root in also:
            self.walk(root)  # (skips what is typed)
        self.retry_pending(final=True)
        self.finish()
        return self.diagnostics

    def infer_global(self, gv: E.GlobalVar) -> None:
        func = self.module.functions[gv]
        if func in self.types or gv in self.in_progress:
            return
        self.in_progress.add(gv)
        try:
            self.walk(func)
        finally:
            self.in_progress.discard(gv)
        self.retry_pending()
        declared = self.global_types.get(gv)
        inferred = self.types[func]
        if declared is None:
            self.global_types[gv] = inferred
        else:
            self.unify(declared, inferred, func, lambda a, b: f"@{gv.name} has type {b}, not {a}")

    def global_type(self, gv: E.GlobalVar) -> Type:
        if gv not in self.module.functions:
            return ERROR  # the parser reported the undefined global
        if gv not in self.global_types or (gv not in self.in_progress and self.module.functions[gv] not in self.types
                                           and len(self.in_progress) < 64):
            if gv in self.in_progress:  # recursion without a full signature
                func = self.module.functions[gv]
                params = tuple(self.binder_type(p) for p in func.params)
                ret = self.annotation(func.ret_type) if func.ret_type is not None else self.solver.fresh()
                self.global_types[gv] = FuncType(params, ret, func.type_params)
            else:
                self.infer_global(gv)
        ty = self.global_types.get(gv)
        if ty is None:  # deep chains of globals: a provisional type, checked later
            func = self.module.functions[gv]
            ty = self.global_types[gv] = FuncType(tuple(self.solver.fresh() for _ in func.params),
                                                  self.solver.fresh(), func.type_params)
        return ty

    # the walk ----------------------------------------------------------------------
    def walk(self, root: E.Expr) -> None:
        """Type `root` and everything under it, children first, without recursion."""
        types = self.types
        stack: list[tuple[int, object]] = [(0, root)]
        countdown = PAUSE_STEPS
        while stack:
            countdown -= 1
            if not countdown:
                countdown = PAUSE_STEPS
                pause_point()
            step, item = stack.pop()
            if step == 0:  # enter
                node = item
                if node in types:
                    continue
                if isinstance(node, E.Call):
                    stack.append((1, node))
                    stack.extend((0, a) for a in reversed(node.args))
                    if not isinstance(node.op, E.Op):
                        stack.append((0, node.op))
                elif isinstance(node, E.Let):
                    stack += [(1, node), (0, node.body), (2, node), (0, node.value)]
                elif isinstance(node, E.Function):
                    for p in node.params:
                        self.binder_type(p)
                    stack += [(1, node), (0, node.body)]
                elif isinstance(node, E.Match):
                    stack.append((1, node))
                    for clause in reversed(node.clauses):
                        stack += [(0, clause.rhs), (3, (node, clause))]
                    stack.append((0, node.data))
                elif isinstance(node, (E.Tuple, E.TupleGetItem, E.If, E.RefCreate, E.RefRead, E.RefWrite)):
                    stack.append((1, node))
                    stack.extend((0, c) for c in reversed(children(node)))
                else:
                    types[node] = self.leaf(node)
            elif step == 1:  # exit: all children typed
                types[item] = self.exit(item)
            elif step == 2:  # a let's value is typed: bind its variable
                self.bind_let(item)
            else:
                match, clause = item
                self.bind_pattern(clause.lhs, self.types[match.data])

    def leaf(self, node: E.Expr) -> Type:
        if isinstance(node, E.Var):
            return self.binder_type(node)
        if isinstance(node, E.GlobalVar):
            return self.global_type(node)
        if isinstance(node, E.Constant):
            if not node.known:  # an unknown value: its ty= comment, else what its use fixes
                return self.unknown_constant(node)
            return TensorType(node.shape, node.dtype)  # a deferred value's too, not computed
        if isinstance(node, E.Constructor):
            data = self.module.type_definitions.get(node.belongs_to)
            params = data.type_vars if data is not None else ()
            result = TypeCall(node.belongs_to, tuple(params)) if params else TypeCall(node.belongs_to)
            return FuncType(node.inputs, result, tuple(params))
        return ERROR  # an op used as a value, an ErrorExpr (reported by the parser)

    def exit(self, node: E.Expr) -> Type:
        t = self.types
        if isinstance(node, E.Call):
            return self.call(node)
        if isinstance(node, E.Tuple):
            return TupleType(tuple(t[f] for f in node.fields))
        if isinstance(node, E.TupleGetItem):
            return self.project(node)
        if isinstance(node, E.Let):
            return t[node.body]
        if isinstance(node, E.If):
            self.unify(BOOL_SCALAR, t[node.cond], node.cond,
                       lambda want, got: f"the condition of if must be a bool scalar, found {got}")
            self.unify(t[node.true_branch], t[node.false_branch], node.false_branch,
                       lambda a, b: f"the branches of if differ: the true branch is {a}, the false branch {b}")
            return t[node.true_branch]
        if isinstance(node, E.Function):
            body = t[node.body]
            ret = body
            if node.ret_type is not None:
                ret = self.annotation(node.ret_type)
                self.unify(ret, body, node.body,
                           lambda a, b: f"the function returns {b} but its result is annotated {a}")
            return FuncType(tuple(t[p] for p in node.params), ret, node.type_params)
        if isinstance(node, E.Match):
            result = t[node.clauses[0].rhs] if node.clauses else self.solver.fresh()
            for clause in node.clauses[1:]:
                self.unify(result, t[clause.rhs], clause.rhs,
                           lambda a, b: f"the clauses of match differ: {a} in the first clause, {b} here")
            return result
        if isinstance(node, E.RefCreate):
            return RefType(t[node.value])
        if isinstance(node, E.RefRead):
            value = self.solver.fresh()
            self.unify(RefType(value), t[node.ref], node.ref, lambda a, b: f"ref_read expects a reference, found {b}")
            return value
        if isinstance(node, E.RefWrite):
            self.unify(t[node.ref], RefType(t[node.value]), node.value,
                       lambda a, b: f"ref_write: the reference holds {_ref_value(a)}, the value is {_ref_value(b)}")
            return UNIT
        raise AssertionError(f"unexpected node {node!r}")

    # binders --------------------------------------------------------------------------
    def annotation(self, ty: Type | None) -> Type:
        """A written type, its `_` holes usable by the solver."""
        if ty is None or isinstance(ty, MetaType):
            return self.solver.fresh()
        return ty

    def binder_type(self, var: E.Var) -> Type:
        found = self.types.get(var)
        if found is None:
            found = self.types[var] = self.annotation(var.type_annotation)
        return found

    def bind_let(self, let: E.Let) -> None:
        value = self.types[let.value]
        if let.var.type_annotation is None:
            self.types.setdefault(let.var, value)
            return
        declared = self.binder_type(let.var)
        self.unify(declared, value, let.value,
                   lambda a, b: f"%{let.var.name} is annotated {a} but its value has type {b}")

    def bind_pattern(self, pattern: E.Pattern, ty: Type) -> None:
        stack = [(pattern, ty)]
        while stack:
            p, t = stack.pop()
            if isinstance(p, E.PatternVar):
                declared = self.binder_type(p.var)
                self.unify(declared, t, p.var, lambda a, b: f"%{p.var.name} is annotated {a} but matches {b}")
            elif isinstance(p, E.PatternTuple):
                fields = tuple(self.solver.fresh() for _ in p.patterns)
                if self.unify(TupleType(fields), t, p, lambda a, b: f"a tuple pattern of {len(fields)} fields "
                                                                      f"cannot match {b}"):
                    stack.extend(zip(p.patterns, fields))
            elif isinstance(p, E.PatternConstructor):
                ctor = p.constructor
                ctor_type = self.solver.instantiate(self.leaf(ctor))  # type: ignore[arg-type]
                if len(p.patterns) != len(ctor_type.arg_types):
                    self.error(f"constructor {ctor.name} has {len(ctor_type.arg_types)} fields, "
                               f"the pattern gives {len(p.patterns)}", p)
                    continue
                if self.unify(ctor_type.ret_type, t, p, lambda a, b: f"pattern {ctor.name} of {a} cannot match {b}"):
                    stack.extend(zip(p.patterns, ctor_type.arg_types))

    # calls ------------------------------------------------------------------------------
    def call(self, call: E.Call) -> Type:
        if isinstance(call.op, E.Op):
            return self.op_call(call)
        callee = self.solver.shallow(self.types[call.op])
        args = [self.types[a] for a in call.args]
        if isinstance(callee, ErrorType):
            return ERROR
        if isinstance(callee, IncompleteType):
            ret = self.solver.fresh()
            self.unify(callee, FuncType(tuple(args), ret), call, lambda a, b: f"cannot call a value of type {a}")
            return ret
        if not isinstance(callee, FuncType):
            self.error(f"cannot call a value of type {self.show(callee)}", call)
            return ERROR
        fn = self.solver.instantiate(callee)
        what = _callee_name(call)
        if len(args) != len(fn.arg_types):
            self.error(f"{what} takes {len(fn.arg_types)} argument{'s' * (len(fn.arg_types) != 1)}, "
                       f"{len(args)} given", call)
            return fn.ret_type
        for i, (param, arg) in enumerate(zip(fn.arg_types, args)):
            self.unify(param, arg, call, lambda a, b, i=i: f"argument {i + 1} of {what}: expected {a}, found {b}")
        return fn.ret_type

    def op_call(self, call: E.Call) -> Type:
        opdef = get_op(call.op.name)  # type: ignore[union-attr]
        if opdef is None:
            name = call.op.name  # type: ignore[union-attr]
            if name[:1].isupper():  # a constructor of a type defined elsewhere (TVM's prelude)
                self.error(f"constructor {name} is not defined in this file; its type is unknown",
                           call, Severity.WARNING)
            else:
                close = did_you_mean(name, (d.name for d in all_ops()))
                hint = f" (did you mean {close}?)" if close else ""
                self.error(f"unknown operator {name}{hint}", call,
                           fixes=replacement(call.span, name, close) if close else ())
            return ERROR
        if opdef.inputs is not None and len(call.args) != len(opdef.inputs):
            n = len(opdef.inputs)
            self.error(f"{opdef.name} takes {n} argument{'s' * (n != 1)} ({', '.join(opdef.inputs)}), "
                       f"{len(call.args)} given", call)
            return ERROR
        result = self.try_relation(call)
        if result is None:
            hole = self.solver.fresh()
            self.pending.append(call)
            self.types[call] = hole
            return hole
        return result

    def try_relation(self, call: E.Call) -> Type | None:
        """The op's result type, ERROR after reporting, or None if the inputs are not known yet."""
        opdef = get_op(call.op.name)  # type: ignore[union-attr]
        args = [self.solver.resolve(self.types[a]) for a in call.args]
        if any(self.solver.has_error(a) for a in args):
            self.unknown_after_error.update(a for a in call.args if a in self.unknown)
            return ERROR
        complete = all(self.solver.is_complete(a) for a in args)
        if not opdef.polymorphic and not complete:
            if not self.type_unknown_operands(call, opdef, args):
                return None
            args = [self.solver.resolve(self.types[a]) for a in call.args]
            if not all(self.solver.is_complete(a) for a in args):
                return None
            complete = True
        key = result_key(opdef, call.attrs, args) if complete else None  # ops/relation_memo.py
        known = known_result(key)
        if known is not None:
            return known
        try:
            attrs = normalized(opdef, call.attrs)
            if opdef.type_relation is None:
                self.error(f"{opdef.name} has no type relation yet", call)
                return ERROR
            result = opdef.type_relation(args, attrs) if opdef.inputs is None else opdef.type_relation(*args, attrs)
            remember_result(key, call.attrs, result)
            return result
        except AttrError as err:
            self.error(err.message, call, fixes=_attribute_fix(call, err))
        except OpTypeError as err:
            message = err.message if err.message.startswith(opdef.name) else f"{opdef.name}: {err.message}"
            self.error(message, call)
        return ERROR

    def retry_pending(self, final: bool = False) -> None:
        progress = True
        while progress and self.pending:
            progress = False
            waiting = self.pending
            self.pending = []
            for call in waiting:
                result = self.try_relation(call)
                if result is None:
                    self.pending.append(call)
                    continue
                progress = True
                self.unify(self.types[call], result, call, lambda a, b: f"{call.op.name} returns {b}, used as {a}")
        if final and self.pending and self.unknown and self.type_broadcast_operands():
            self.retry_pending(final=True)
            return
        if final:
            blocked = self.blocked_by_unknown()
            for call in self.pending:
                if call in blocked:  # said once, at the constant (finish)
                    continue
                self.error(f"cannot infer the argument types of {call.op.name}: annotate the parameters it "
                           f"depends on", call, Severity.WARNING)
            self.pending = []

    # unknown-valued constants (unknown_constants.py) ----------------------------------
    def unknown_constant(self, node: E.Constant) -> Type:
        """The type of a constant of unknown value: its `ty=` comment, else a hole its use
        fills.  Every reference to one metadata entry has one type."""
        ty = node.ty
        if ty is None:
            ty = self.unknown[node] = self.solver.fresh()
        if node.meta is not None:
            first = self.meta_types.setdefault(node.meta, ty)
            if first is not ty:
                self.unify(first, ty, node, lambda a, b: f"{node.meta} is {b} here but {a} elsewhere")
        return ty

    def type_unknown_operands(self, call: E.Call, opdef, args: list[Type]) -> bool:
        """Give the untyped unknown constants among `call`'s operands the type its relation
        fixes; True if any got one."""
        found = False
        for i, arg in enumerate(call.args):
            if arg in self.unknown and isinstance(self.solver.shallow(self.types[arg]), IncompleteType):
                try:
                    ty = operand_type(opdef.name, i, args, opdef.normalize_attrs(call.attrs))
                except AttrError:
                    return False  # reported when the relation runs
                if ty is not None:
                    self.solver.unify(self.types[arg], ty)
                    found = True
        return found

    def type_broadcast_operands(self) -> bool:
        """Last resort, once nothing else can be learnt: an unknown operand of a broadcasting
        op whose result is fixed to the other operand's type takes that type."""
        found = False
        for call in self.pending:
            args = [self.solver.resolve(self.types[a]) for a in call.args]
            result = self.solver.resolve(self.types[call])
            for i, arg in enumerate(call.args):
                if arg in self.unknown and isinstance(self.solver.shallow(self.types[arg]), IncompleteType):
                    ty = broadcast_operand(call.op.name, i, args, result)
                    if ty is not None:
                        self.solver.unify(self.types[arg], ty)
                        found = True
        return found

    def blocked_by_unknown(self) -> set[E.Call]:
        """The pending calls that wait, directly or through other pending calls (or the
        variables bound to them), on an unknown constant whose type nothing fixed."""
        shallow = self.solver.shallow
        holes = {id(shallow(h)) for h in self.unknown.values() if isinstance(shallow(h), IncompleteType)}
        blocked: set[E.Call] = set()
        changed = bool(holes)
        while changed:
            changed = False
            for call in self.pending:
                if call not in blocked and any(id(shallow(self.types[a])) in holes for a in call.args):
                    blocked.add(call)
                    holes.add(id(shallow(self.types[call])))
                    changed = True
        return blocked

    def project(self, node: E.TupleGetItem) -> Type:
        ty = self.solver.shallow(self.types[node.tuple_value])
        if isinstance(ty, ErrorType):
            return ERROR
        if isinstance(ty, TupleType):
            if not 0 <= node.index < len(ty.fields):
                self.error(f"index {node.index} is out of range for a tuple of {len(ty.fields)} "
                           f"field{'s' * (len(ty.fields) != 1)} ({self.show(ty)})", node)
                return ERROR
            return ty.fields[node.index]
        if isinstance(ty, IncompleteType):
            self.error(f"cannot infer the tuple type of .{node.index}: annotate the value", node, Severity.WARNING)
            return ERROR
        self.error(f"cannot take field {node.index} of {self.show(ty)}: not a tuple", node)
        return ERROR

    # reporting ------------------------------------------------------------------------
    def unify(self, expected: Type, found: Type, where: E.Node, message) -> bool:
        try:
            self.solver.unify(expected, found)
            return True
        except Mismatch as err:
            text = message(self.show(expected), self.show(found))
            if err.detail:
                text += f" ({err.detail})"
            self.error(text, where)
            return False

    def show(self, ty: Type) -> str:
        ty = self.solver.resolve(ty)
        if isinstance(ty, ErrorType):
            return "<error>"
        try:
            return print_type(ty)
        except TypeError:
            return repr(ty)

    def error(self, message: str, where: E.Node, severity: Severity = Severity.ERROR, fixes=()) -> None:
        self.diagnostics.append(Diagnostic(message, where.span, severity, source="types", fixes=fixes))

    # results --------------------------------------------------------------------------
    def finish(self) -> None:
        """Write every complete type into its node; check the `ty=` comments if asked."""
        global _generation
        _generation += 1
        solver = self.solver
        seeded = self.seeded
        countdown = PAUSE_STEPS
        for node, ty in self.types.items():
            countdown -= 1
            if not countdown:
                countdown = PAUSE_STEPS
                pause_point()
            if node in seeded:
                continue
            resolved = solver.resolve(ty)
            complete = solver.is_complete(resolved)
            if node.ty is not None and self.commented is not None:
                self.commented[node] = node.ty
            if self.check_annotations and node.ty is not None and complete and not isinstance(node, E.Function):
                self.compare_comment(node, node.ty, resolved)
            object.__setattr__(node, "ty", resolved if complete else None)
        noted: set = set()
        for const, hole in self.unknown.items():
            if const.meta in noted or const in self.unknown_after_error:
                continue
            noted.add(const.meta)
            if not solver.is_complete(hole) and not solver.has_error(hole):
                self.error(f"the type of {const.meta} is unknown: its value is not here, and its use does "
                           f"not fix its type (write it in a /* ty=... */ comment)", const, Severity.INFO)
        for gv, ty in self.global_types.items():
            resolved = solver.resolve(ty)
            object.__setattr__(gv, "ty", resolved if solver.is_complete(resolved) else None)
        for gv, func in self.module.functions.items():
            for p in func.params:
                if not solver.is_complete(self.types.get(p, ERROR)) and not solver.has_error(self.types.get(p, ERROR)):
                    self.error(f"cannot infer the type of parameter %{p.name} of @{gv.name}; annotate it",
                               p, Severity.WARNING)
        self.diagnostics.sort(key=_position)

    def compare_comment(self, node: E.Expr, written: Type, inferred: Type) -> None:
        probe = Solver()
        try:
            probe.unify(written, inferred)
        except Mismatch:
            self.error(f"the comment says ty={self.show(written)}, but the type is {self.show(inferred)}",
                       node, Severity.WARNING)


def _declared_type(func: E.Function) -> FuncType | None:
    """A global's type when its annotations give all of it (no hole anywhere)."""
    if func.ret_type is None or any(p.type_annotation is None for p in func.params):
        return None
    types = [p.type_annotation for p in func.params] + [func.ret_type]
    if any(_has_hole(t) for t in types):
        return None
    return FuncType(tuple(p.type_annotation for p in func.params), func.ret_type, func.type_params)


def _has_hole(ty: Type) -> bool:
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, (IncompleteType, MetaType)):
            return True
        stack.extend(subtypes(t))
    return False


def _callee_name(call: E.Call) -> str:
    if isinstance(call.op, E.GlobalVar):
        return "@" + call.op.name
    if isinstance(call.op, E.Var):
        return "%" + call.op.name
    if isinstance(call.op, E.Constructor):
        return call.op.name
    return "the function"


def _ref_value(text: str) -> str:
    return text[4:-1] if text.startswith("ref(") and text.endswith(")") else text


def _position(d: Diagnostic) -> tuple:
    loc = d.location()
    return (loc[1], loc[2]) if loc else (0, 0)


def _attribute_fix(call: E.Call, err: AttrError) -> tuple:
    """The quick fix of a misspelt attribute: its name, where the call writes `name=`,
    changed to the suggestion the message makes."""
    if err.suggestion is None or err.name is None:
        return ()
    return replacement(call.span, err.name, err.suggestion, rf"[(,]\s*({re.escape(err.name)})\s*=")
