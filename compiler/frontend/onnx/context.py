"""What a converter sees of its node: inputs as expressions, attributes, the opset.

    ctx.input(0)            the expression of input 0 (required)
    ctx.optional(2)         None when input 2 is absent or given as ""
    ctx.value(1, "shape")   input 1's value, which must be known before run time
    ctx.attrs.int("axis")   attributes (attributes.py)
    ctx.opset               the model's opset of the default domain
    ctx.wants(1)            whether output 1 is used (named) in the graph
    ctx.tensor(array)       a tensor the node defines (Constant), as the graph holds initializers

A converter returns one expression, or a list with one entry per ONNX output (None for
an optional output the node does not produce).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from onnx import NodeProto

from ...ir.expr import Expr
from .attributes import NodeAttrs
from .errors import NodeError


class NodeContext:
    def __init__(self, node: NodeProto, opset: int, inputs: list[Expr | None],
                 value_of: Callable[[Expr], Any], tensor: Callable[[str, np.ndarray], Expr]) -> None:
        self.node = node
        self.op_type = node.op_type
        self.opset = opset
        self.attrs = NodeAttrs(node)
        self._inputs = inputs
        self._value_of = value_of
        self._tensor = tensor

    @property
    def num_outputs(self) -> int:
        return len(self.node.output)

    def wants(self, k: int) -> bool:
        return k < len(self.node.output) and bool(self.node.output[k])

    def optional(self, k: int) -> Expr | None:
        return self._inputs[k] if k < len(self._inputs) else None

    def input(self, k: int) -> Expr:
        found = self.optional(k)
        if found is None:
            raise NodeError(f"input {k} is required")
        return found

    def variadic(self) -> list[Expr]:
        """Every given input (Sum, Max, Concat...); at least one."""
        found = [e for e in self._inputs if e is not None]
        if not found:
            raise NodeError("at least one input is required")
        return found

    def tensor(self, array: np.ndarray) -> Expr:
        """A constant, or (weights) a parameter of @main named after output 0."""
        return self._tensor(self.node.output[0], array)

    def maybe_value(self, k: int, what: str) -> np.ndarray | None:
        """Input k's value; None if the input is absent; an error if it is only known at
        run time."""
        expr = self.optional(k)
        if expr is None:
            return None
        found = self._value_of(expr)
        if found is None:
            raise NodeError(f"{what} (input {k}) must be known before run time (a constant or an "
                            f"initializer, or computed from them and static shapes)", needs_value=k)
        return np.asarray(found)

    def value(self, k: int, what: str) -> np.ndarray:
        found = self.maybe_value(k, what)
        if found is None:
            raise NodeError(f"{what} (input {k}) is required")
        return found

    def static(self, k: int) -> np.ndarray | None:
        """Input k's value if it is known before run time, else None (no error)."""
        expr = self.optional(k)
        found = None if expr is None else self._value_of(expr)
        return None if found is None else np.asarray(found)

    def axes(self, attr_input: int, since: int, what: str = "axes") -> tuple[int, ...] | None:
        """Axes given as an attribute before opset `since` and as input `attr_input` from it
        (Squeeze, Unsqueeze, ReduceSum, Split...); None when not given."""
        if self.opset >= since:
            found = self.maybe_value(attr_input, what)
            return None if found is None else tuple(int(a) for a in found.reshape(-1))
        return self.attrs.ints(what, None)
