"""The operator library: one `OpDef` per primitive operator, registered once.

An op file defines its ops like this:

    conv2d = define("nn.conv2d", ("data", "weight"), OUT_EWISE_FUSABLE,
                    attrs=(Attr("strides", INTS, (1, 1)), ...),
                    doc="2-D convolution ...")

    @conv2d.relation
    def _(data: TensorType, weight: TensorType, attrs: OpAttrs) -> Type: ...

    @conv2d.reference
    def _(data: np.ndarray, weight: np.ndarray, attrs: OpAttrs) -> np.ndarray: ...

The relation is called as `relation(*arg_types, attrs)` (for an op with `inputs=None`:
`relation(list_of_arg_types, attrs)`).  The argument types are resolved but not checked:
use the helpers of `shapes.py` (`tensor(ty, "nn.conv2d: data", 0)`) to demand a tensor and
to compute with shapes.  It returns the result type or raises `OpTypeError` (an
`AttrError` for an attribute whose value is wrong for these inputs is fine too).

The reference (`numpy_compute`) is the numpy semantics, called the same way with numpy
arrays (0-d arrays for scalars; a tuple argument arrives as a Python tuple of arrays).  It
returns an array, or a tuple of arrays for a tuple result, in the dtype the relation
promises.

`compute` is the op's compute rule (tensor expressions, TVM's FTVMCompute): the lowering
registers it onto the OpDef (`register_compute` in lower/te/topi/registry.py; this layer
never imports the lowering), so `get_op(name).compute` is the one lookup once the rules
are loaded.  Geometry that both the reference and the rule need (window sizes, padding,
resize coordinates, layouts) is a public function of a `*_geometry.py` module here.  Every relation's result is held to the size budget of budget.py (rank,
element count, fields).  `OpDef.infer` and `OpDef.evaluate` run both from plain values
(for tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Callable, Iterator, Mapping

from ..ir.attrs import Attrs
from .attrs import BOOL, FLOAT, INT, Attr, OpAttrs, normalize, to_ir_value
from .budget import result_problem


class OpPattern(IntEnum):
    """How an op may fuse (TVM's TOpPattern, same numbers)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_EWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8

    @property
    def label(self) -> str:
        return {0: "ElemWise", 1: "Broadcast", 2: "Injective", 3: "CommReduce",
                4: "OutEWiseFusable", 7: "Tuple", 8: "Opaque"}[self.value]


ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_EWISE_FUSABLE = OpPattern.OUT_EWISE_FUSABLE
OPAQUE = OpPattern.OPAQUE


class OpTypeError(Exception):
    """A type relation's complaint.  `arg` is the index of the argument at fault (the
    diagnostic then points at that argument), or None for the call as a whole."""

    def __init__(self, message: str, arg: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.arg = arg


Relation = Callable[..., Any]
Compute = Callable[..., Any]


@dataclass(eq=False)
class OpDef:
    name: str
    inputs: tuple[str, ...] | None  # argument names; None: any number (`call_lowered`)
    pattern: OpPattern | None  # None: no pattern (rewritten away before fusion)
    attrs: tuple[Attr, ...] = ()
    doc: str = ""
    open_attrs: bool = False  # keep attributes the schema does not list
    tuple_input: bool = False  # the single argument is a tuple of tensors (concatenate)
    polymorphic: bool = False  # the relation takes any types, even unknown ones (on_device)
    type_relation: Relation | None = field(default=None, repr=False)
    numpy_compute: Compute | None = field(default=None, repr=False)
    compute: Compute | None = field(default=None, repr=False)  # set by the lowering

    def relation(self, fn: Relation) -> Relation:
        """Register `fn` as the type relation, held to the size budget (budget.py): a
        result of absurd rank or size is an OpTypeError, whatever the op."""
        name = self.name

        def within_budget(*args: Any) -> Any:
            result = fn(*args)
            problem = result_problem(result)
            if problem is not None:
                raise OpTypeError(f"{name}: {problem}")
            return result

        self.type_relation = within_budget
        return fn

    def reference(self, fn: Compute) -> Compute:
        """Register `fn` as the numpy reference semantics."""
        self.numpy_compute = fn
        return fn

    def normalize_attrs(self, attrs: Attrs | Mapping[str, Any]) -> OpAttrs:
        """Defaults filled, values converted; raises AttrError."""
        return normalize(self.name, self.attrs, attrs, open_schema=self.open_attrs)

    def infer(self, arg_types: list[Any] | tuple[Any, ...], attrs: Mapping[str, Any] = Attrs()) -> Any:
        """The result type for these argument types (attrs as parsed, or plain values)."""
        normalized = self.normalize_attrs(as_ir_attrs(attrs))
        if self.inputs is None:
            return self.type_relation(list(arg_types), normalized)
        return self.type_relation(*arg_types, normalized)

    def evaluate(self, args: list[Any] | tuple[Any, ...], attrs: Mapping[str, Any] = Attrs()) -> Any:
        """The numpy result for these argument values."""
        normalized = self.normalize_attrs(as_ir_attrs(attrs))
        if self.inputs is None:
            return self.numpy_compute(list(args), normalized)
        return self.numpy_compute(*args, normalized)

    def signature(self) -> str:
        """`nn.conv2d(data, weight, strides=[1, 1], ...)`, for hover and completion."""
        args = list(self.inputs) if self.inputs is not None else ["args..."]
        args += [f"{a.name}={a.default_text()}" for a in self.attrs]
        return f"{self.name}({', '.join(args)})"


def as_ir_attrs(attrs: Mapping[str, Any]) -> Attrs:
    """Plain Python values (`{"strides": (2, 2)}`) as the parser would give them."""
    if isinstance(attrs, Attrs):
        return attrs
    return Attrs({k: to_ir_value(v) for k, v in attrs.items()})


_REGISTRY: dict[str, OpDef] = {}


def define(name: str, inputs: tuple[str, ...] | None, pattern: OpPattern | None, *,
           attrs: tuple[Attr, ...] = (), doc: str = "", open_attrs: bool = False,
           tuple_input: bool = False, polymorphic: bool = False) -> OpDef:
    """Register an op; a name registered twice is a bug in the library."""
    if name in _REGISTRY:
        raise ValueError(f"operator {name} is defined twice")
    opdef = OpDef(name, inputs, pattern, attrs, doc, open_attrs, tuple_input, polymorphic)
    _REGISTRY[name] = opdef
    return opdef


def get_op(name: str) -> OpDef | None:
    """The definition of an op, or None if the library does not know it."""
    return _REGISTRY.get(name)


def attr_schema(name: str) -> dict[str, str]:
    """An op's attributes by name, as the parser needs them to read attributes written as a
    metadata entry: "number", "bool" or "other" ({} for an op the library does not know)."""
    opdef = get_op(name)
    if opdef is None:
        return {}
    return {a.name: "bool" if a.kind is BOOL else "number" if a.kind in (INT, FLOAT) else "other" for a in opdef.attrs}


def all_ops() -> Iterator[OpDef]:
    return iter(sorted(_REGISTRY.values(), key=lambda d: d.name))
