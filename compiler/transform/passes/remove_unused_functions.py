"""RemoveUnusedFunctions: drop every global function the entry functions cannot reach.

As TVM's pass of that name (src/relay/backend/vm/removed_unused_funcs.cc, `CallTracer`),
the first pass of `relay.build`, called there with the one entry `main`:

* Tracing starts at each entry function and follows every `@global` it meets, wherever
  it occurs (callee, argument, tuple field, branch of an `if`): a global met is kept,
  and if the module defines it, its body is traced in turn, transitively.  A global the
  module does not define (a lowered function behind `call_lowered(@f, ...)`) is kept by
  name and not traced.  Type definitions and their constructors are not functions and
  all stay.
* Every other global function is removed; the kept ones stay in their order.

One difference from TVM: TVM stops with an error when an entry function does not exist;
here a module without any of the entry functions comes back unchanged (the editor builds
files that define only helpers), and a missing entry among several is skipped.

Expects: nothing (no types needed).  Guarantees: every function left is reachable from
an entry.

Spans: nothing is built or rewritten; the kept functions are the same objects, spans
and all.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.functor import post_order
from ...ir.module import IRModule
from ..infra import ModulePass, PassContext, register_pass


def reachable_globals(mod: IRModule, entries: tuple[str, ...]) -> set[str]:
    """The names of the globals reachable from the entry functions the module defines
    (the entries included)."""
    found: set[str] = set()
    todo = [name for name in entries if name in mod]
    seen_nodes: set = set()
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        func = mod[name]
        for node in post_order(func, done=seen_nodes):
            seen_nodes.add(node)
            if isinstance(node, GlobalVar) and node.name not in found:
                if node.name in mod:
                    todo.append(node.name)
                else:
                    found.add(node.name)
    return found


@register_pass
class RemoveUnusedFunctions(ModulePass):
    name = "RemoveUnusedFunctions"
    opt_level = 1

    def __init__(self, entry_functions: tuple[str, ...] | list[str] = ("main",)) -> None:
        self.entry_functions = tuple(entry_functions)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        keep = reachable_globals(mod, self.entry_functions)
        if not keep:  # no entry function in the module: nothing to trace from
            return mod
        unused = [gv for gv in mod.functions if gv.name not in keep]
        if not unused:
            return mod
        new = mod.copy()
        for gv in unused:
            del new.functions[gv]
            new.global_vars.pop(gv.name, None)
        return new

