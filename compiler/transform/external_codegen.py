"""The reference external codegen: how an external function (`Compiler="mynpu"`, made by
PartitionGraph) is compiled when no vendor compiler exists for its target — always, here.

TVM hands such a function to `relay.ext.<target>`.  RelayLens compiles it with its own
LLVM path, and FuseOps calls `reference_codegen` for every external function:

* Its composites are inlined (each `Composite` function literal called with its arguments
  becomes its body with the parameters replaced), and the body is fused as FuseOps fuses
  any function.
* If that gives one fused function over the whole body (a region that is one kernel, as a
  conv2d+bias+relu region is: its arguments are the function's parameters and the
  constants FuseOps lifted out of the body, e.g. weights bound inside a `Constants=`
  composite), the external function is kept as it is: it stays `Primitive=1`, and
  lowering compiles it as one kernel named by its `global_symbol` (its constants the
  kernel's own, as for any kernel), which the AOT entry of @main calls.  This is TVM's
  contract: FuseOps never looks inside a `Compiler=` function, and the external codegen
  emits it whole under its `global_symbol`.
* Otherwise (several convolutions in one region, which one kernel's schedule cannot hold)
  the external function keeps `Compiler` and `global_symbol` but its body becomes the fused
  body and it is no longer primitive: its kernels are FuseOps's, named `fused_*` as any
  others, and @main runs through the interpreter with compiled kernels (the AOT plan calls
  only kernels).

Spans: the inlined expressions keep their own spans; fused functions get FuseOps's.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ..ir.attrs import Attrs
from ..ir.expr import Call, Constant, Expr, Function, Var
from ..ir.functor import ExprMutator


class _InlineComposites(ExprMutator):
    def visit_call(self, call: Call) -> Expr:
        post = self.rebuild(call)
        callee = call.op
        if isinstance(callee, Function) and "Composite" in callee.attrs:
            assert isinstance(post, Call)
            return _Substitute(dict(zip(callee.params, post.args))).visit(callee.body)
        return post


class _Substitute(ExprMutator):
    def __init__(self, values: dict[Var, Expr]) -> None:
        super().__init__()
        self.values = values

    def visit_var(self, var: Var) -> Expr:
        return self.values.get(var, var)


def inline_composites(body: Expr) -> Expr:
    return _InlineComposites().visit(body)


def reference_codegen(func: Function, fuse: Callable[[Function], Function]) -> Function:
    """`func` (an external function) as the reference codegen compiles it; `fuse` is
    FuseOps on a host function."""
    host_attrs = Attrs({k: v for k, v in func.attrs.items() if k not in ("Primitive", "Compiler", "Inline")})
    host = dataclasses.replace(func, body=inline_composites(func.body), attrs=host_attrs)
    fused = fuse(host)
    body = fused.body
    one_kernel = (isinstance(body, Call) and isinstance(body.op, Function) and body.op.is_primitive
                  and [a for a in body.args if not isinstance(a, Constant)] == list(fused.params))
    if one_kernel:
        return func
    attrs = Attrs({k: v for k, v in func.attrs.items() if k not in ("Primitive", "Inline")})
    return dataclasses.replace(fused, attrs=attrs)
