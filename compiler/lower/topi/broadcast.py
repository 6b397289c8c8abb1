"""Broadcasting binary ops (reference §7.2): arithmetic, comparisons, logic."""

from __future__ import annotations

from .. import te
from .common import broadcast_read
from .registry import lowering

_ARITH = {"add": "add", "subtract": "sub", "multiply": "mul", "maximum": "max", "minimum": "min",
          "power": "pow", "floor_divide": "floordiv", "floor_mod": "floormod", "mod": "truncmod",
          "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
          "greater_equal": "ge", "logical_and": "and", "logical_or": "or", "logical_xor": "xor",
          "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor",
          "left_shift": "shl", "right_shift": "shr"}


def _binary_rule(relay_name: str, op: str):
    @lowering(relay_name)
    def rule(a: te.Tensor, b: te.Tensor, attrs, out_type) -> te.Tensor:
        shape = out_type.shape
        return te.compute(shape, lambda *i: te.binary(op, broadcast_read(a, i), broadcast_read(b, i)),
                          f"T_{relay_name}")

    return rule


for _name, _op in _ARITH.items():
    _binary_rule(_name, _op)


@lowering("divide")
def _(a: te.Tensor, b: te.Tensor, attrs, out_type) -> te.Tensor:
    """True division for floats; for integers TVM's divide truncates toward zero."""
    return te.compute(out_type.shape, lambda *i: te.truncdiv(broadcast_read(a, i), broadcast_read(b, i)),
                      "T_divide")
