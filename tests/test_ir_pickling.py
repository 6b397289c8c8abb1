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


@dataclass(frozen=True, slots=True)
class Bare:  # as a Python whose dataclasses give no state methods (or ones under other names) makes it
    left: object
    right: object


for _name in ("__getstate__", "__setstate__"):
    if _name in Bare.__dict__:
        delattr(Bare, _name)


@dataclass(frozen=True, slots=True)
class Own:
    value: int

    def __getstate__(self):
        return {"value": self.value}

    def __setstate__(self, state):
        object.__setattr__(self, "value", state["value"] + 1)


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


def test_the_irs_classes_get_them() -> None:
    """Were the dataclasses module to give these classes other state methods, or none, this
    fails rather than a kept build unpickling slower without a word."""
    for cls in (Call, Var, TensorType, te.Const, te.Binary):
        assert cls.__setstate__.__module__ == cls.__getstate__.__module__ == "relaylens.compiler.ir.pickling", cls


def test_a_class_without_dataclass_state_methods_gets_them_and_one_with_its_own_keeps_its_own() -> None:
    assert Bare.__setstate__.__module__ == "relaylens.compiler.ir.pickling"
    back = pickle.loads(pickle.dumps(Bare(1, "x")))
    assert (back.left, back.right) == (1, "x")
    assert pickle.loads(pickle.dumps(Own(1))).value == 2  # its own methods ran
