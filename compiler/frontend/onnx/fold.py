"""Values known before run time: constant folding for converters and after each node.

Two questions, both answered by evaluating the op library's numpy semantics:

* `value(expr)`: the array an expression will hold, if it depends only on constants and
  initializers (None otherwise).  Converters use it for inputs that Relay takes as
  attributes: Reshape's shape, Slice's starts, Pad's pads, Resize's sizes...
* `fold(expr)`: after a node is converted, an output computed from constants alone (no
  initializer, no input) becomes one Constant when it is a scalar, or integers or
  booleans of at most `FOLD_LIMIT` elements.  That turns a Shape → Gather → Concat chain
  on static shapes into the constant new shape of a Reshape, as TVM's frontend folds,
  while a float ConstantOfShape stays a `full(...)` call (which the FoldConstant pass
  may fold later) instead of a tensor written into the text.

Evaluation is memoised per expression; a chain of thousands of nodes is walked with an
explicit stack.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem, Var
from ...ir.functor import post_order
from ...ir.types import TensorType
from ...ops import get_op
from .builder import const

FOLD_LIMIT = 1024
_UNKNOWN: Any = object()


class Folder:
    def __init__(self, params: dict[Var, np.ndarray]) -> None:
        self.params = params  # initializers, by the variable standing for them
        self._values: dict[Expr, Any] = {}
        self._constant: dict[Expr, bool] = {}

    def value(self, expr: Expr) -> Any:
        """The value of `expr` (an array, or a tuple for a tuple), or None if unknown."""
        memo = self._values
        if expr not in memo:
            for node in post_order(expr, done=memo):
                memo[node] = self._evaluate(node)
        found = memo[expr]
        return None if found is _UNKNOWN else found

    def fold(self, expr: Expr) -> Expr:
        """`expr`, or a Constant of its value if it is made of constants only and small."""
        if isinstance(expr, Constant) or not self._is_constant(expr):
            return expr
        ty = expr.ty
        if not (isinstance(ty, TensorType) and ty.is_static):
            return expr
        size = int(np.prod(ty.shape))
        if size > 1 and (size > FOLD_LIMIT or not ty.dtype.startswith(("int", "uint", "bool"))):
            return expr
        found = self.value(expr)
        return expr if found is None else const(found)

    def _is_constant(self, expr: Expr) -> bool:
        memo = self._constant
        if expr not in memo:
            for node in post_order(expr, done=memo):
                if isinstance(node, (Constant, Op)):
                    memo[node] = True
                elif isinstance(node, (Call, Tuple, TupleGetItem)):
                    kids = (*node.args, node.op) if isinstance(node, Call) else \
                        node.fields if isinstance(node, Tuple) else (node.tuple_value,)
                    memo[node] = all(memo[k] for k in kids)
                else:
                    memo[node] = False
        return memo[expr]

    def _evaluate(self, node: Expr) -> Any:
        memo = self._values
        if isinstance(node, Constant):
            return node.data if node.data is not None else _UNKNOWN
        if isinstance(node, Var):
            return self.params.get(node, _UNKNOWN)
        if isinstance(node, Tuple):
            fields = [memo[f] for f in node.fields]
            return _UNKNOWN if any(f is _UNKNOWN for f in fields) else tuple(fields)
        if isinstance(node, TupleGetItem):
            inner = memo[node.tuple_value]
            return _UNKNOWN if inner is _UNKNOWN else inner[node.index]
        if isinstance(node, Call) and isinstance(node.op, Op):
            args = [memo[a] for a in node.args]
            opdef = get_op(node.op.name)
            if opdef is None or opdef.numpy_compute is None or any(a is _UNKNOWN for a in args):
                return _UNKNOWN
            try:
                with np.errstate(all="ignore"):
                    return opdef.evaluate(args, node.attrs)
            except Exception:  # noqa: BLE001 -- it fails at run time too, where it is reported
                return _UNKNOWN
        return _UNKNOWN
