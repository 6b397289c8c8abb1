"""Fuzz target `passes`: bytes → text → check → the default pass pipeline
(`relaylens.compiler.build.build_module`, TVM's relay.build order) on inputs that check
without errors.  Lowering to LLVM is left out (slow, and fuzzed through its own tests).

Properties: the check properties (target_check); no pass raises (`strict=True` re-raises
what the driver would report as "internal error in pass X"); no pass reports an error on
a module that type-checked; the span invariant holds after every pass (an expression made
from expressions with spans has a span: compiler/transform/span_check.py).
"""

from __future__ import annotations

from relaylens.compiler.build import build_module
from relaylens.compiler.check import check_text
from relaylens.compiler.transform.span_check import spanless
from findings import InvariantBroken
from relay_mutator import crossover_text, mutate_text
from target_check import check_diagnostics
from target_parse import text_of

INSTRUMENT = ("relaylens",)
MAX_LEN = 4096
DICT = "relay.dict"
mutate, crossover = mutate_text, crossover_text


def check(data: bytes) -> None:
    text = text_of(data)
    checked = check_text(text, "fuzz.relay")
    check_diagnostics(text, checked.diagnostics)
    if any(d.is_error for d in checked.diagnostics):
        return
    result = build_module(checked.module, name="fuzz.relay", checked=checked, strict=True)
    for d in result.diagnostics:
        if d.is_error:
            raise InvariantBroken("a pass reported an error on a typed module", d.message)
    for snap in result.snapshots:
        lost = spanless(snap.module)
        if lost:
            name, node = lost[0]
            raise InvariantBroken(f"span lost after {snap.pass_name}", f"@{name}: {type(node).__name__}")
