"""PlanDevices for a homogeneous build: every value lives on the one CPU device.

TVM's PlanDevices (src/relay/transforms/device_planner.cc) is a Sequential of
PlanDevicesRewrite, PlanDevicesCheckConflicts, InferType and PlanDevicesCore: it solves
a virtual device for every sub-expression from the `on_device` / `device_copy` calls,
defaults the rest, and writes the answer back.  `relay.build` for one target gives it a
CompilationConfig with that one target, so every constraint and every default is the
one virtual device (CPU 0, target llvm).  What is left of the pass is what its last
phase, `DeviceCapturer`, writes, and this pass writes exactly that:

* every `on_device(e, ...)` becomes `e` (the capturer drops all of them and adds back
  only those it needs), and every `device_copy(e, ...)` becomes `e` (source and
  destination are the same device, and a same-device copy is dropped);
* every function that is not primitive, global or local, gets `virtual_device` for its
  result and for each parameter (`%x {virtual_device=...}: T`); global functions that
  are external (`Compiler`, `Extern`) or `SkipOptimization` are left as they are, and
  primitive functions are not entered;
* every let-bound value, unless it is a variable, a global, a function, an operator or a
  constructor, is wrapped as `on_device(value, virtual_device=..., constrain_result=True)`
  (the capturer always marks let-bound values, so that passes that inline them keep the
  device; TVM's PlanDevices test test_let_on_cpu shows both lets wrapped).

The one device is written `meta[VirtualDevice][0]`, as TVM prints it (the module's first
VirtualDevice).  Left out, because one device never needs them: solving constraints
between devices, inserting device_copy calls, host-only ops (shape_of and the memory
dialect on the host), memory scopes of lowered PrimFuncs.  A device named by an
annotation is taken to be the one device: a program that really asks for two devices is
not a homogeneous build.  The pass is idempotent.

Expects: typed input (required: InferType).  Guarantees: no device_copy and no
on_device except around let-bound values; every optimizable function and parameter
carries the device.  The same values.

Spans: an annotated parameter or function keeps its span; a dropped annotation leaves
its argument with its own span (as SimplifyExpr does for `x * 1`); a new on_device around
a let-bound value takes that value's span.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.attrs import Attrs, MetaRef
from ...ir.expr import Call, Constructor, Expr, Function, GlobalVar, Let, Op, Var, op
from ...ir.functor import ExprMutator, children
from ...ir.module import IRModule
from ..infra import ModulePass, PassContext, register_pass
from ..si_builder import SIBuilder

ONE_DEVICE = MetaRef("VirtualDevice", 0)
ANNOTATIONS = ("on_device", "device_copy")
NOT_ANNOTATED = (Var, GlobalVar, Function, Op, Constructor)  # MaybeOnDevice leaves these bare


def _annotation(e: Expr) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in ANNOTATIONS and len(e.args) == 1


def optimizable(func: Function) -> bool:
    """TVM's AsOptimizableFunctionNode: not external, not to be skipped."""
    attrs = func.attrs
    if "Compiler" in attrs or ("SkipOptimization" in attrs and int(attrs["SkipOptimization"]) != 0):
        return False
    return "Extern" not in attrs or int(attrs["Extern"]) == 0


class _Capturer(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.params: set[Var] = set()  # parameters of the functions being annotated

    def children(self, expr: Expr):
        if isinstance(expr, Function):
            if expr.is_primitive:
                return ()
            self.params.update(expr.params)
        return children(expr)

    def visit_var(self, var: Var) -> Expr:
        if var in self.params and var.virtual_device != ONE_DEVICE:
            return replace(var, virtual_device=ONE_DEVICE)
        return var

    def visit_call(self, call: Call) -> Expr:
        if _annotation(call):
            return self.result(call.args[0])
        return self.rebuild(call)

    def visit_function(self, fn: Function) -> Expr:
        if fn.is_primitive:
            return fn
        new = self.rebuild(fn)
        if new.attrs.get("virtual_device") != ONE_DEVICE:
            new = replace(new, attrs=new.attrs.with_(virtual_device=ONE_DEVICE))
        return new

    def visit_let(self, let: Let) -> Expr:
        new = self.rebuild(let)
        value = new.value
        if isinstance(value, NOT_ANNOTATED):
            return new
        if _on_the_device(let.value) and self.result(let.value.args[0]) is value:
            wrapped = let.value  # written by an earlier run: kept, so a second run changes nothing
        else:
            wrapped = Call(op("on_device"), (value,), Attrs({"virtual_device": ONE_DEVICE, "constrain_result": True}))
            SIBuilder(value.span).recursively_fill_span(wrapped, inputs=[value])
        if wrapped is let.value and new.body is let.body and new.var is let.var:
            return let
        return replace(new, value=wrapped)


def _on_the_device(e: Expr) -> bool:
    """`on_device(v, virtual_device=<the device>, constrain_result=True)`, as this pass writes it."""
    return (_annotation(e) and e.op.name == "on_device" and e.attrs.get("virtual_device") == ONE_DEVICE
            and bool(e.attrs.get("constrain_result", False)) and bool(e.attrs.get("constrain_body", True)))


def plan_function(func: Function) -> Function:
    return _Capturer().visit(func)


@register_pass
class PlanDevices(ModulePass):
    name = "PlanDevices"
    opt_level = 0
    required = ("InferType",)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed = {}
        for gv, func in mod.functions.items():
            if not isinstance(func, Function) or not optimizable(func):
                continue
            new = plan_function(func)
            if new is not func:
                changed[gv] = new
        return mod.with_functions(changed) if changed else mod
