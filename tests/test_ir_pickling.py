"""ir/pickling.py: frozen, slotted dataclasses pickle through state methods that know
their field names, and come back equal, shared objects shared."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from relaylens.compiler.ir.expr import Call, Var, op
from relaylens.compiler.ir.pickling import fast_pickling
from relaylens.compiler.ir.structural_equal import structural_equal
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.lower.te import expr as te


@dataclass(frozen=True, slots=True, eq=False)
class Pair:
    left: object
    right: object


fast_pickling(globals())


def test_a_frozen_slotted_dataclass_gets_the_state_methods_and_round_trips() -> None:
    assert Pair.__setstate__.__name__ == "__setstate__" and Pair.__getstate__.__name__ == "__getstate__"
    shared = Pair(1, "x")
    back = pickle.loads(pickle.dumps(Pair(shared, shared)))
    assert back.left is back.right and (back.left.left, back.left.right) == (1, "x")


def test_ir_and_tensor_expressions_round_trip() -> None:
    x = Var("x", TensorType((2, 3), "float32"))
    call = Call(op("nn.relu"), (x,))
    back = pickle.loads(pickle.dumps(call))
    assert structural_equal(back, call) and back.op is call.op  # the one operator object
    t = te.compute((4,), lambda i: te.placeholder((4,), "float32", "a")[i] * 2.0, "T")
    again = pickle.loads(pickle.dumps(t))
    assert again.shape == t.shape and type(again.op.body) is type(t.op.body)
