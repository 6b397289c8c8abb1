"""Broadcasting binary ops (reference §7.4): arithmetic, comparisons, logic, bitwise,
`where` and `nn.bias_add`.

The te binary ops carry the numpy semantics of `compiler/ops/binary.py`: integer
`divide` truncates toward zero (te `div`), `mod` is C's fmod (`truncmod`), `floor_mod`
takes the sign of the divisor (`floormod`).  te's `and`/`or`/`xor` are bitwise on
integers, logical on bool, so one op serves `logical_*` and `bitwise_*`.
"""

from __future__ import annotations

from .. import expr as te
from .common import broadcast_read
from .registry import register_compute

_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "maximum": "max",
           "minimum": "min", "power": "pow", "floor_divide": "floordiv", "floor_mod": "floormod",
           "mod": "truncmod", "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le",
           "greater": "gt", "greater_equal": "ge", "logical_and": "and", "logical_or": "or",
           "logical_xor": "xor", "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor"}


def _binary_rule(relay_name: str, op: str):
    @register_compute(relay_name)
    def rule(a: te.Tensor, b: te.Tensor, attrs, out_type) -> te.Tensor:
        return te.compute(out_type.shape,
                          lambda *i: te.binary(op, broadcast_read(a, i), broadcast_read(b, i)),
                          f"T_{relay_name}")

    return rule


for _name, _op in _BINARY.items():
    _binary_rule(_name, _op)


@register_compute("where")
def _(cond: te.Tensor, x: te.Tensor, y: te.Tensor, attrs, out_type) -> te.Tensor:
    def body(*i):
        return te.select(broadcast_read(cond, i), broadcast_read(x, i), broadcast_read(y, i))

    return te.compute(out_type.shape, body, "T_where")


@register_compute("nn.bias_add")
def _(data: te.Tensor, bias: te.Tensor, attrs, out_type) -> te.Tensor:
    axis = attrs.axis % data.ndim
    return te.compute(data.shape, lambda *i: data[i] + bias[i[axis]], "T_bias_add")
