"""The reference interpreter: evaluates a module on numpy arrays.

    Interpreter(module).call("main", [x, w])      run a global function
    Interpreter(module).evaluate(expr, {var: v})  evaluate one expression
    interpret(module, *args, entry="main")        the two lines above in one
    Interpreter(module, kernels={fn: k}, observe=f)   fused calls to compiled kernels;
                                                  f(call, args, result) after each op or
                                                  kernel call (numerics/: NaN tracing, bisection)

Algorithm note.  Evaluation is a small abstract machine with an explicit work stack
and a value stack, so neither a 10,000-op dataflow chain nor a deep Relay recursion
uses Python frames.  A work item is (step, node, frame):

* EVAL pushes the node's value, or the steps that compute it: the children in
  evaluation order (callee first, then arguments, left to right), then FINISH.
* FINISH pops the children's values and computes the node (an op call, a tuple, a ref
  operation...); a call of a closure instead opens a new frame and schedules its body.
* BIND (let), BRANCH (if) and MATCH pick what to evaluate next once their first child
  is known; STORE records a result; RETURN checks a result against `-> T`.

A frame is one activation of a function: `vals` maps the nodes evaluated in it (a DAG
node shared by two uses is evaluated once per activation) and the variables bound in
it; `parent` is the frame the closure was created in, where captured variables are
found.  A `let` binding a function sees itself (the closure looks names up in the very
frame that binds it), so `let %f = fn (...) { ... %f(...) ... }` recurses.

Ops are run through the operator library: attributes normalised by the op's schema,
the argument types checked by its type relation on the concrete shapes, then its numpy
compute.  Every failure is an `InterpreterError` at the span of the expression that
failed, with a note per enclosing call site; nothing numpy raises leaks out.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..diagnostics import CompileError
from ..ir.expr import (
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
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.module import IRModule
from ..ir.span import AnySpan
from ..ir.types import TensorType, TupleType, Type
from ..ops import AttrError, OpTypeError, get_op
from ..ops.relation_memo import known_result, normalized, remember_result, result_key
from .values import (
    Closure,
    ConstructorValue,
    RefValue,
    Value,
    as_tensor,
    type_mismatch,
    value_text,
    value_type,
)

MAX_DEPTH = 100_000  # nested calls before we call it runaway recursion
MAX_NOTES = 8  # call sites listed under an error


class InterpreterError(CompileError):
    """A run-time error: the message, the span of the expression that failed, and notes
    pointing at the call sites that led there (innermost first)."""


class Frame:
    """One activation of a function (or the top-level evaluation)."""

    __slots__ = ("vals", "parent", "caller", "site", "name", "depth")

    def __init__(self, vals: dict, parent: "Frame | None" = None, caller: "Frame | None" = None,
                 site: Call | None = None, name: str | None = None) -> None:
        self.vals = vals
        self.parent = parent  # lexical: where captured variables live
        self.caller = caller  # dynamic: who called (for the notes of an error)
        self.site = site
        self.name = name
        self.depth = caller.depth + 1 if caller is not None else 0

    def lookup(self, var: Var) -> Any:
        frame: Frame | None = self
        while frame is not None:
            vals = frame.vals
            if var in vals:
                return vals[var]
            frame = frame.parent
        raise KeyError(var)


EVAL, FINISH, BIND, BRANCH, MATCH, STORE, RETURN = range(7)


class Interpreter:
    def __init__(self, module: IRModule | None = None, *, check_types: bool = True,
                 kernels: Mapping[Function, Any] | None = None,
                 observe: Callable[[Call, tuple, Value], None] | None = None) -> None:
        self.module = module if module is not None else IRModule()
        self.check_types = check_types  # run type relations and `-> T` checks at run time
        self.kernels = kernels or {}  # primitive function -> compiled kernel(*args) -> value
        self.observe = observe  # called (call, args, result) after each op call and kernel call
        self._globals: dict[GlobalVar, Closure] = {}
        self._ops: dict[str, Any] = {}
        self._attrs: dict[Call, Any] = {}

    # --- entry points -------------------------------------------------------------
    def call(self, func: str | GlobalVar | Value, args: Sequence[Value] = ()) -> Value:
        """Apply a global function (by name or GlobalVar) or a function value to arguments."""
        if isinstance(func, str):
            if func not in self.module:
                raise InterpreterError(f"the module has no function @{func}")
            func = self.module.global_vars[func]
        callee = self._global(func, None) if isinstance(func, GlobalVar) else func
        if not isinstance(callee, Closure):
            raise InterpreterError(f"cannot call {value_text(callee)} directly; call a function")
        args = tuple(np.asarray(a) if isinstance(a, (int, float, bool, np.generic)) else a for a in args)
        root = Frame({})
        values: list[Value] = []
        work: list[tuple[int, Any, Frame]] = []
        self._apply(callee, args, None, root, work, values)
        self._run(work, values)
        return values.pop()

    def evaluate(self, expr: Expr, env: Mapping[Var, Value] | None = None) -> Value:
        """The value of `expr` with the variables of `env` bound."""
        frame = Frame(dict(env or {}))
        values: list[Value] = []
        self._run([(EVAL, expr, frame)], values)
        return values.pop()

    # --- the machine --------------------------------------------------------------
    def _run(self, work: list, values: list) -> None:
        pop, push = work.pop, work.append
        frame = None
        try:
            while work:
                step, node, frame = pop()
                if step == EVAL:
                    vals = frame.vals
                    if node in vals:
                        values.append(vals[node])
                    elif type(node) is Var:
                        values.append(self._var(node, frame))
                    elif type(node) is Call:
                        push((FINISH, node, frame))
                        args = node.args
                        for i in range(len(args) - 1, -1, -1):
                            push((EVAL, args[i], frame))
                        callee = node.op
                        if type(callee) is GlobalVar:  # resolved now: an error points at the call
                            values.append(self._global(callee, node.span))
                        elif type(callee) is not Op:
                            push((EVAL, callee, frame))
                    else:
                        self._start(node, frame, work, values)
                elif step == FINISH:
                    self._finish(node, frame, work, values)
                elif step == STORE:
                    frame.vals[node] = values[-1]
                elif step == BIND:
                    value = values.pop()
                    self._check_annotation(node.var, value)
                    frame.vals[node.var] = value
                    push((STORE, node, frame))
                    push((EVAL, node.body, frame))
                elif step == BRANCH:
                    take = self._condition(node, values.pop())
                    push((STORE, node, frame))
                    push((EVAL, node.true_branch if take else node.false_branch, frame))
                elif step == MATCH:
                    self._match(node, values.pop(), frame, work)
                elif step == RETURN:
                    self._check_return(node, values[-1])
        except InterpreterError as exc:
            if frame is not None and not exc.notes:
                exc.notes.extend(_call_notes(frame))
            raise

    def _start(self, node: Expr, frame: Frame, work: list, values: list) -> None:
        """EVAL of a node that is not a variable or a call."""
        kind = type(node)
        if kind is Constant:
            if node.data is None:
                raise _error(f"{node.meta or 'this constant'} has no value (the text has no metadata section "
                             f"for it); fill such constants from a seed (unknown_values.py)",
                             node.span)
            values.append(node.data)
        elif kind is GlobalVar:
            values.append(self._global(node, node.span))
        elif kind is Function:
            closure = Closure(node, frame)
            frame.vals[node] = closure
            values.append(closure)
        elif kind in (Op, Constructor):
            values.append(node)
        elif kind in (Tuple, TupleGetItem, RefCreate, RefRead, RefWrite):
            work.append((FINISH, node, frame))
            for child in reversed(_operands(node)):
                work.append((EVAL, child, frame))
        elif kind is Let:
            work.append((BIND, node, frame))
            work.append((EVAL, node.value, frame))
        elif kind is If:
            work.append((BRANCH, node, frame))
            work.append((EVAL, node.cond, frame))
        elif kind is Match:
            work.append((MATCH, node, frame))
            work.append((EVAL, node.data, frame))
        elif kind is ErrorExpr:
            raise _error(f"cannot run a syntax error{': ' + node.message if node.message else ''}", node.span)
        else:
            raise _error(f"the interpreter cannot evaluate {type(node).__name__}", node.span)

    def _finish(self, node: Expr, frame: Frame, work: list, values: list) -> None:
        """FINISH: the operands are on the value stack, in order."""
        kind = type(node)
        if kind is Call:
            n = len(node.args)
            if type(node.op) is Op:
                args = tuple(values[len(values) - n:]) if n else ()
                del values[len(values) - n:]
                if node.op.name == "call_lowered" and args and isinstance(args[0], Closure):
                    self._call_lowered(node, args, frame, work, values)
                    return
                result = self._call_op(node, node.op, args)
            else:
                args = tuple(values[len(values) - n:]) if n else ()
                del values[len(values) - n:]
                callee = values.pop()
                kernel = self.kernels.get(callee.func) if isinstance(callee, Closure) else None
                if kernel is not None:
                    result = kernel(*args)
                elif isinstance(callee, Closure):
                    self._apply(callee, args, node, frame, work, values)
                    return
                else:
                    result = self._call_value(node, callee, args)
            if self.observe is not None:
                self.observe(node, args, result)
            frame.vals[node] = result
            values.append(result)
            return
        if kind is Tuple:
            n = len(node.fields)
            result = tuple(values[len(values) - n:]) if n else ()
            del values[len(values) - n:]
        elif kind is TupleGetItem:
            value = values.pop()
            if not isinstance(value, tuple):
                raise _error(f"projection .{node.index} needs a tuple, found {value_text(value)}", node.span)
            if not 0 <= node.index < len(value):
                raise _error(f"projection .{node.index} is out of range for a tuple of {len(value)} "
                             f"field{'s' if len(value) != 1 else ''} {value_text(value)}", node.span)
            result = value[node.index]
        elif kind is RefCreate:
            result = RefValue(values.pop())
        elif kind is RefRead:
            ref = values.pop()
            if not isinstance(ref, RefValue):
                raise _error(f"ref_read needs a reference, found {value_text(ref)}", node.span)
            result = ref.value
        elif kind is RefWrite:
            new = values.pop()
            ref = values.pop()
            if not isinstance(ref, RefValue):
                raise _error(f"ref_write needs a reference, found {value_text(ref)}", node.span)
            ref.value = new
            result = ()
        else:  # pragma: no cover - _start schedules FINISH only for the kinds above
            raise _error(f"the interpreter cannot evaluate {kind.__name__}", node.span)
        frame.vals[node] = result
        values.append(result)

    # --- variables, globals, functions --------------------------------------------
    def _var(self, var: Var, frame: Frame) -> Value:
        try:
            return frame.lookup(var)
        except KeyError:
            raise _error(f"%{var.name} has no value here (a free variable, or bound in a scope "
                         f"that was not entered)", var.span) from None

    def _global(self, gv: GlobalVar, span: AnySpan | None) -> Closure:
        closure = self._globals.get(gv)
        if closure is None:
            func = self.module.functions.get(gv)
            if func is None:
                raise _error(f"@{gv.name} is not defined in this module", span or gv.span)
            closure = self._globals[gv] = Closure(func, None, "@" + gv.name)
        return closure

    def _apply(self, closure: Closure, args: tuple, site: Call | None, frame: Frame,
               work: list, values: list) -> None:
        """Open a frame for a call of `closure` and schedule its body."""
        func = closure.func
        params = func.params
        what = closure.name or "the function"
        span = site.span if site is not None else func.span
        if len(args) != len(params):
            raise _error(f"{what} takes {len(params)} argument{'s' if len(params) != 1 else ''}, "
                         f"given {len(args)}", span)
        if frame.depth >= MAX_DEPTH:
            raise _error(f"calls nested more than {MAX_DEPTH} deep (runaway recursion?)", span)
        if self.check_types:
            for i, (param, arg) in enumerate(zip(params, args)):
                why = type_mismatch(arg, param.type_annotation)
                if why is not None:
                    at = span if site is not None else param.span or span
                    raise _error(f"{what}: argument %{param.name}: {why}", at)
        callee = Frame(dict(zip(params, args)), closure.env, frame, site, closure.name)
        if site is not None:
            work.append((STORE, site, frame))
        if self.check_types and func.ret_type is not None:
            work.append((RETURN, closure, callee))
        work.append((EVAL, func.body, callee))

    def _check_return(self, closure: Closure, value: Value) -> None:
        why = type_mismatch(value, closure.func.ret_type)
        if why is not None:
            what = closure.name or "the function"
            raise _error(f"{what} returns a value that does not fit its declared result type: {why}",
                         _declared_span(closure.func))

    def _check_annotation(self, var: Var, value: Value) -> None:
        if self.check_types and var.type_annotation is not None:
            why = type_mismatch(value, var.type_annotation)
            if why is not None:
                raise _error(f"%{var.name}: {why}", var.span)

    def _call_value(self, call: Call, callee: Value, args: tuple) -> Value:
        """A call whose callee is a value other than a closure."""
        if isinstance(callee, Constructor):
            if len(args) != len(callee.inputs):
                raise _error(f"constructor {callee.name} takes {len(callee.inputs)} field"
                             f"{'s' if len(callee.inputs) != 1 else ''}, given {len(args)}", call.span)
            return ConstructorValue(callee, args)
        if isinstance(callee, Op):
            return self._call_op(call, callee, args)
        raise _error(f"cannot call {value_text(callee)}: it is not a function", call.span)

    def _call_lowered(self, call: Call, args: tuple, frame: Frame, work: list, values: list) -> None:
        """`call_lowered(@f, (a, b), metadata=...)` calls @f on a and b (TVM's LowerTE form)."""
        if len(args) != 2 or not isinstance(args[1], tuple):
            found = value_text(args[1]) if len(args) == 2 else f"{len(args)} arguments"
            raise _error(f"call_lowered takes the function and a tuple of its arguments, found {found}",
                         call.span)
        self._apply(args[0], args[1], call, frame, work, values)

    # --- control ------------------------------------------------------------------
    def _condition(self, node: If, cond: Value) -> bool:
        if not isinstance(cond, np.ndarray) or cond.ndim != 0 or cond.dtype != np.bool_:
            raise _error(f"if: the condition must be a scalar bool, found {value_text(cond)}",
                         _use_span(node.cond, node.span))
        return bool(cond)

    def _match(self, node: Match, value: Value, frame: Frame, work: list) -> None:
        for clause in node.clauses:
            bound: dict[Var, Value] = {}
            if _matches(clause.lhs, value, bound):
                for var, v in bound.items():
                    self._check_annotation(var, v)
                frame.vals.update(bound)
                work.append((STORE, node, frame))
                work.append((EVAL, clause.rhs, frame))
                return
        kind = "match" if node.complete else "match?"
        raise _error(f"{kind}: no clause matches the value {value_text(value)}", node.span)

    # --- operators ----------------------------------------------------------------
    def _opdef(self, op: Op, span: AnySpan | None):
        opdef = self._ops.get(op.name)
        if opdef is None:
            opdef = get_op(op.name)
            if opdef is None:
                raise _error(f"unknown operator {op.name}: the operator library does not define it", span)
            self._ops[op.name] = opdef
        return opdef

    def _call_op(self, call: Call, op: Op, args: tuple) -> Value:
        span = call.span
        opdef = self._opdef(op, span)
        name = op.name
        if opdef.numpy_compute is None:
            raise _error(f"{name} has no reference implementation (numpy compute) in the operator "
                         f"library yet", span)
        if opdef.inputs is not None and len(args) != len(opdef.inputs):
            raise _error(f"{name} takes {len(opdef.inputs)} argument{'s' if len(opdef.inputs) != 1 else ''} "
                         f"({', '.join(opdef.inputs)}), given {len(args)}", span)
        attrs = self._attrs.get(call)
        if attrs is None:
            try:
                attrs = self._attrs[call] = normalized(opdef, call.attrs)  # ops/relation_memo.py
            except AttrError as exc:
                raise _error(exc.message, span) from None
        expected: Type | None = None
        arg_types = [value_type(a) for a in args]
        # a value whose type cannot be told without inference (an ADT value, an unannotated
        # closure) goes to the compute unchecked: pass-through ops such as on_device take any
        if self.check_types and opdef.type_relation is not None and None not in arg_types:
            key = result_key(opdef, call.attrs, arg_types)
            expected = known_result(key)
            try:
                if expected is not None:
                    pass  # this relation on these types and attributes succeeded before
                elif opdef.inputs is None:
                    expected = opdef.type_relation(arg_types, attrs)
                else:
                    expected = opdef.type_relation(*arg_types, attrs)
                remember_result(key, call.attrs, expected)
            except OpTypeError as exc:  # at the call: an argument's own span may be its binder
                raise _error(exc.message, span) from None
            except AttrError as exc:
                raise _error(exc.message, span) from None
        try:
            with np.errstate(all="ignore"):
                if opdef.inputs is None:
                    result = opdef.numpy_compute(list(args), attrs)
                else:
                    result = opdef.numpy_compute(*args, attrs)
        except (OpTypeError, AttrError) as exc:
            raise _error(exc.message, span) from None
        except MemoryError:
            raise _error(f"{name}: out of memory", span) from None
        except NotImplementedError as exc:
            raise _error(f"{name} has no reference implementation in the interpreter"
                         f"{': ' + str(exc) if str(exc) else ''}", span) from None
        except Exception as exc:  # noqa: BLE001 -- numpy's complaint becomes a diagnostic
            detail = str(exc) or type(exc).__name__
            raise _error(f"{name} failed at run time on {', '.join(value_text(a) for a in args)}: "
                         f"{detail}", span) from None
        result = _as_result(result)
        if result is None:
            raise _error(f"{name}: its numpy compute returned something that is not a value "
                         f"(a bug in the operator library)", span)
        if expected is not None and isinstance(expected, (TensorType, TupleType)):
            why = type_mismatch(result, expected)
            if why is not None:
                raise _error(f"{name}: its numpy compute disagrees with its type relation: {why} "
                             f"(a bug in the operator library)", span)
        return result


# --- helpers --------------------------------------------------------------------------


def _error(message: str, span: AnySpan | None) -> InterpreterError:
    return InterpreterError(message, span)


def _operands(node: Expr) -> tuple[Expr, ...]:
    kind = type(node)
    if kind is Tuple:
        return node.fields
    if kind is TupleGetItem:
        return (node.tuple_value,)
    if kind is RefCreate:
        return (node.value,)
    if kind is RefRead:
        return (node.ref,)
    return (node.ref, node.value)  # RefWrite


def _as_result(value: Any) -> Value | None:
    if isinstance(value, (np.ndarray, Closure, ConstructorValue, RefValue, Op, Constructor)):
        return value
    if isinstance(value, (np.generic, bool, int, float)):
        return as_tensor(value)
    if isinstance(value, (tuple, list)):
        fields = tuple(_as_result(v) for v in value)
        return None if any(f is None for f in fields) else fields
    return None


def _use_span(expr: Expr, fallback: AnySpan | None) -> AnySpan | None:
    """Where `expr` is written; a variable's span is its binder, not this use, so a
    variable gives `fallback` (a graph node `%3` gives its definition: where the value
    came from)."""
    if isinstance(expr, (Var, GlobalVar)) or expr.span is None:
        return fallback
    return expr.span


def _declared_span(func: Function) -> AnySpan | None:
    ret = func.ret_type
    return getattr(ret, "span", None) or func.span


def _matches(pattern: Pattern, value: Value, bound: dict[Var, Value]) -> bool:
    """Does `value` match `pattern`?  Fills `bound` with the pattern's variables."""
    kind = type(pattern)
    if kind is PatternWildcard:
        return True
    if kind is PatternVar:
        bound[pattern.var] = value
        return True
    if kind is PatternConstructor:
        if not isinstance(value, ConstructorValue):
            return False
        if not _same_constructor(value.constructor, pattern.constructor):
            return False
        if len(pattern.patterns) != len(value.fields):
            return False
        return all(_matches(p, v, bound) for p, v in zip(pattern.patterns, value.fields))
    if kind is PatternTuple:
        if not isinstance(value, tuple) or len(value) != len(pattern.patterns):
            return False
        return all(_matches(p, v, bound) for p, v in zip(pattern.patterns, value))
    return False


def _same_constructor(a: Constructor, b: Constructor) -> bool:
    return a is b or (a.name == b.name and a.belongs_to.name == b.belongs_to.name)


def _call_notes(frame: Frame) -> list[tuple[AnySpan | None, str]]:
    """One note per enclosing call site, innermost first."""
    notes: list[tuple[AnySpan | None, str]] = []
    skipped = 0
    f: Frame | None = frame
    while f is not None:
        if f.site is not None:
            if len(notes) < MAX_NOTES:
                notes.append((f.site.span, f"in this call of {f.name or 'a closure'}"))
            else:
                skipped += 1
        f = f.caller
    if skipped:
        notes.append((None, f"... and {skipped} more enclosing call{'s' if skipped != 1 else ''}"))
    return notes


def interpret(module: IRModule, *args: Value, entry: str = "main") -> Value:
    """Run `@entry` of `module` on `args` (numpy arrays, tuples...)."""
    return Interpreter(module).call(entry, args)


__all__ = ["Frame", "Interpreter", "InterpreterError", "interpret"]
