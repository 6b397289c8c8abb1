"""Names of fused (primitive) functions, as TVM's lowering makes them (reference §8.2).

    relu(add(conv2d(p0, p1), p2))  ->  fused_nn.conv2d_add_nn.relu
                                   ->  tvmgen_default_fused_nn_conv2d_add_nn_relu

The candidate is `fused` + `_<op name>` for every call in evaluation order (each call
once); longer than 80 characters, it is cut to 80 and given `_<hash>_` of the whole
candidate (a stable 64-bit BLAKE2 hex digest: TVM's was its C++ std::hash, which no
other program can reproduce).  The NameSupply prepends the module prefix, turns dots into
underscores and keeps names unique; structurally identical functions share one name, as
they share one compiled kernel in TVM's cache.  An external function (`Compiler=...`) whose
`global_symbol` has the module's prefix (PartitionGraph's `tvmgen_default_mynpu_main_0`) is
named by it, as an external codegen names its symbol; other external functions (printed
by TVM's Collage, `collage_...`) get a fused name like any primitive function.
"""

from __future__ import annotations

import hashlib

from ..ir.expr import Call, Function, Op
from ..ir.functor import children, post_order
from ..ir.module import IRModule
from ..ir.structural_equal import structural_equal
from ..ir.structural_hash import structural_hash
from .names import NameSupply, mangle_module_name

MAX_CANDIDATE = 80


def candidate_name(func: Function) -> str:
    parts = ["fused"]
    for node in post_order(func.body):
        if isinstance(node, Call) and isinstance(node.op, Op):
            parts.append(node.op.name)
    name = "_".join(parts)
    if len(name) > MAX_CANDIDATE:
        digest = hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
        name = f"{name[:MAX_CANDIDATE]}_{digest}_"
    return name


def _callee_last(expr):
    """Children in evaluation order: a call's arguments before the function it calls."""
    if isinstance(expr, Call):
        return (*expr.args, expr.op)
    return children(expr)


def primitive_functions(mod: IRModule) -> list[Function]:
    """Every primitive function of the module, in evaluation order, each once."""
    found: list[Function] = []
    seen: set = set()
    for func in mod.functions.values():
        if func.is_primitive and func not in seen:
            seen.add(func)
            found.append(func)
            continue
        for node in post_order(func, _callee_last):
            if isinstance(node, Function) and node.is_primitive and node not in seen:
                seen.add(node)
                found.append(node)
    return found


def name_primitive_functions(mod: IRModule, names: NameSupply | None = None) -> dict[Function, str]:
    """A global name for every primitive function (shared by structurally equal ones)."""
    if names is None:
        names = NameSupply(mangle_module_name(mod.name))
        for gv in mod.functions:
            names.reserve_name(gv.name, add_prefix=False)
    result: dict[Function, str] = {}
    by_hash: dict[int, list[tuple[Function, str]]] = {}
    for func in primitive_functions(mod):
        symbol = func.attrs.get("global_symbol") if "Compiler" in func.attrs else None
        if isinstance(symbol, str) and symbol.startswith(names.prefix + "_"):  # PartitionGraph's symbol
            result[func] = names.reserve_name(symbol, add_prefix=False)
            continue
        key = structural_hash(func)
        same = next((name for other, name in by_hash.get(key, ())
                     if structural_equal(func, other, types=True)), None)
        name = same or names.fresh_name(candidate_name(func))
        by_hash.setdefault(key, []).append((func, name))
        result[func] = name
    return result
