"""Dynamic forms of static ops (TVM's `dyn.*`): an attribute of the static op arrives as a
tensor argument instead, known only at run time.

    dyn.reshape(%x, %shape)   ==  reshape(%x, newshape=<the values of %shape>)

One table, `DYNAMIC_FORMS`, says for each dynamic op which static op it stands for and
which of its arguments hold which attribute (and how to read them from an array).  The
table drives the op definitions below (relation: the result's rank and dtype, every
extent `?`, or the type a form's `result` knows: dyn.nn.upsampling keeps N and C, dyn.topk
gives a tuple; reference: the static op's reference on the attribute values read from the
arguments) and DynamicToStatic (transform/passes/dynamic_to_static.py), which rewrites a
dynamic call whose attribute arguments are constants into its static op.

The other attributes of a dynamic op are the static op's; the moved ones stay accepted
as unused attributes (TVM prints `dyn.reshape(%x, %s, newshape=[])`).  No compute rule:
a dynamic op runs in the interpreter only, so it must become static before lowering.
TVM's dyn ops without a static op here (dyn.nn.upsampling3d, dyn.sparse_to_dense) are not
defined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..lazy_modules import numpy as np
from ..ir.types import ANY, TensorType, TupleType, Type
from .attrs import ANY as ANY_VALUE
from .attrs import Attr
from .algorithm import RET_TYPES
from .pooling_geometry import UPSAMPLING_METHODS, resize_check
from .registry import BROADCAST, INJECTIVE, OPAQUE, OUT_EWISE_FUSABLE, OpPattern, OpTypeError, define, get_op
from .shapes import axis_index, check_dtype, check_rank, dims, known, tensor, type_text


def _ints(a: np.ndarray) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(a).reshape(-1))


def _floats(a: np.ndarray) -> tuple[float, ...]:
    return tuple(float(v) for v in np.asarray(a).reshape(-1))


def _int(a: np.ndarray) -> int:
    return int(np.asarray(a).reshape(-1)[0])


def _float(a: np.ndarray) -> float:
    return float(np.asarray(a).reshape(-1)[0])


def _int_lists(a: np.ndarray) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(v) for v in row) for row in np.asarray(a))


@dataclass(frozen=True)
class DynamicForm:
    name: str  # dyn.reshape
    static: str  # reshape
    inputs: tuple[str, ...]  # the dynamic op's arguments
    moved: dict[int, tuple[str, Callable[[np.ndarray], Any]]]  # argument -> (static attribute, reader)
    rank: Callable[[list[TensorType], Any], int]  # the result's rank from the argument types
    dtype: Callable[[list[TensorType], Any], str]
    pattern: OpPattern = INJECTIVE
    also_constant: tuple[int, ...] = ()  # arguments TVM also wants constant before rewriting
    define: bool = field(default=True)  # False: the op is defined elsewhere (dyn.broadcast_to)
    result: Callable[[list[TensorType], Any], Type] | None = None  # the result's type when more is
    # known than its rank (extents the moved attributes do not touch, a tuple); None: every extent `?`

    def kept_args(self) -> list[int]:
        return [i for i in range(len(self.inputs)) if i not in self.moved]

    def static_attrs(self, attrs: Any, values: dict[int, np.ndarray]) -> dict[str, Any]:
        """The static op's attributes: the dynamic call's own, then the moved ones read
        from `values` (argument index -> array)."""
        moved = {name for name, _ in self.moved.values()}
        out = {a.name: attrs[a.name] for a in get_op(self.static).attrs if a.name not in moved and a.name in attrs}
        for index, (name, read) in self.moved.items():
            out[name] = read(values[index])
        return out


def _length(ty: TensorType, op: str, arg: int) -> int:
    """The static length of a 1-D shape-like argument."""
    if ty.ndim != 1 or not known(dims(ty)[0]):
        raise OpTypeError(f"{op}: argument {arg} must be a 1-D tensor of static length, found {type_text(ty)}", arg)
    return check_rank(int(dims(ty)[0]), f"{op}: the result")


def _data_dtype(ts, attrs) -> str:
    return ts[0].dtype


def _attr_dtype(default_from: int | None):
    def dtype(ts, attrs) -> str:
        if attrs.dtype:
            return check_dtype(attrs.dtype)
        return ts[default_from].dtype if default_from is not None else "float32"
    return dtype


def _upsampled(ts: list[TensorType], attrs) -> TensorType:
    """dyn.nn.upsampling (TVM's DynamicUpSampling relation): the scales are scalars; H and W
    of the result are `?`, its other axes (C, and a blocked layout's c) data's."""
    for arg, name in ((1, "scale_h"), (2, "scale_w")):
        if ts[arg].ndim != 0:
            raise OpTypeError(f"dyn.nn.upsampling: {name} must be a scalar, found {type_text(ts[arg])}", arg)
    if attrs.method not in UPSAMPLING_METHODS:
        raise OpTypeError(f"dyn.nn.upsampling: attribute method is '{attrs.method}'; expected one of "
                          f"{', '.join(UPSAMPLING_METHODS[:3])}")
    h, w = resize_check("dyn.nn.upsampling", ts[0], attrs.layout, attrs.method.removeprefix("bi"))
    shape = list(dims(ts[0]))
    shape[h] = shape[w] = ANY
    return TensorType(tuple(shape), ts[0].dtype)


def _topk(ts: list[TensorType], attrs) -> Type:
    """dyn.topk (TVM's DynTopK relation): k is a scalar or one value; the sorted axis of the
    results is `?`."""
    k = ts[1]
    if k.ndim > 1 or (k.ndim == 1 and dims(k)[0] != 1):
        raise OpTypeError(f"dyn.topk: k must be a scalar or a tensor of shape (1), found {type_text(k)}", 1)
    if not k.dtype.startswith(("int", "uint")):
        raise OpTypeError(f"dyn.topk: k must be an integer, found {type_text(k)}", 1)
    axis = axis_index(attrs.axis, ts[0].ndim, "dyn.topk: axis")
    if attrs.ret_type not in RET_TYPES:
        raise OpTypeError(f"dyn.topk: attribute ret_type is '{attrs.ret_type}'; expected one of "
                          f"{', '.join(RET_TYPES)}")
    shape = list(dims(ts[0]))
    shape[axis] = ANY
    values, indices = TensorType(tuple(shape), ts[0].dtype), TensorType(tuple(shape), check_dtype(attrs.dtype))
    if attrs.ret_type == "both":
        return TupleType((values, indices))
    return values if attrs.ret_type == "values" else indices


DYNAMIC_FORMS: dict[str, DynamicForm] = {f.name: f for f in (
    DynamicForm("dyn.reshape", "reshape", ("data", "newshape"), {1: ("newshape", _ints)},
                lambda ts, a: _length(ts[1], "dyn.reshape", 1), _data_dtype),
    DynamicForm("dyn.squeeze", "squeeze", ("data", "axis"), {1: ("axis", _ints)},
                lambda ts, a: ts[0].ndim - _length(ts[1], "dyn.squeeze", 1), _data_dtype),
    DynamicForm("dyn.tile", "tile", ("data", "reps"), {1: ("reps", _ints)},
                lambda ts, a: max(ts[0].ndim, _length(ts[1], "dyn.tile", 1)), _data_dtype, BROADCAST),
    DynamicForm("dyn.broadcast_to", "broadcast_to", ("data", "shape"), {1: ("shape", _ints)},
                lambda ts, a: _length(ts[1], "dyn.broadcast_to", 1), _data_dtype, BROADCAST, define=False),
    DynamicForm("dyn.zeros", "zeros", ("shape",), {0: ("shape", _ints)},
                lambda ts, a: _length(ts[0], "dyn.zeros", 0), _attr_dtype(None), OpPattern.ELEMWISE),
    DynamicForm("dyn.ones", "ones", ("shape",), {0: ("shape", _ints)},
                lambda ts, a: _length(ts[0], "dyn.ones", 0), _attr_dtype(None), OpPattern.ELEMWISE),
    DynamicForm("dyn.full", "full", ("fill_value", "shape"), {1: ("shape", _ints)},
                lambda ts, a: _length(ts[1], "dyn.full", 1), _attr_dtype(0), OpPattern.ELEMWISE),
    DynamicForm("dyn.one_hot", "one_hot", ("indices", "on_value", "off_value", "depth"), {3: ("depth", _int)},
                lambda ts, a: ts[0].ndim + 1, _attr_dtype(1), OUT_EWISE_FUSABLE),
    DynamicForm("dyn.strided_slice", "strided_slice", ("data", "begin", "end", "strides"),
                {1: ("begin", _ints), 2: ("end", _ints), 3: ("strides", _ints)},
                lambda ts, a: ts[0].ndim, _data_dtype),
    DynamicForm("dyn.nn.pad", "nn.pad", ("data", "pad_width", "pad_value"), {1: ("pad_width", _int_lists)},
                lambda ts, a: ts[0].ndim, _data_dtype, also_constant=(2,)),
    DynamicForm("dyn.image.resize2d", "image.resize2d", ("data", "size", "roi"),
                {1: ("size", _ints), 2: ("roi", _floats)},
                lambda ts, a: ts[0].ndim, lambda ts, a: check_dtype(a.out_dtype) if a.out_dtype else ts[0].dtype),
    DynamicForm("dyn.nn.upsampling", "nn.upsampling", ("data", "scale_h", "scale_w"),
                {1: ("scale_h", _float), 2: ("scale_w", _float)}, lambda ts, a: ts[0].ndim, _data_dtype,
                result=_upsampled),
    DynamicForm("dyn.topk", "topk", ("data", "k"), {1: ("k", _int)}, lambda ts, a: ts[0].ndim, _data_dtype,
                OPAQUE, result=_topk),
)}


def _define(form: DynamicForm) -> None:
    moved = {name for name, _ in form.moved.values()}
    attrs = tuple(a for a in get_op(form.static).attrs if a.name not in moved)
    attrs += tuple(Attr(name, ANY_VALUE, None, "unused: the value is an argument") for name in sorted(moved))
    opdef = define(form.name, form.inputs, form.pattern, attrs=attrs,
                   doc=f"{form.static} with {', '.join(sorted(moved))} given as tensor arguments, known at run "
                       f"time; " + ("the extents they decide are `?`." if form.result is not None
                                    else "every extent of the result is `?`."))

    @opdef.relation
    def _(*args: Any) -> TensorType:
        *types, attrs = args
        ts = [tensor(t, f"{form.name}: {n}", i) for i, (t, n) in enumerate(zip(types, form.inputs))]
        if form.result is not None:
            return form.result(ts, attrs)
        return TensorType((ANY,) * form.rank(ts, attrs), form.dtype(ts, attrs))

    @opdef.reference
    def _(*args: Any) -> np.ndarray:
        *values, attrs = args
        static = form.static_attrs(attrs, {i: values[i] for i in form.moved})
        return get_op(form.static).evaluate([values[i] for i in form.kept_args()], static)


for _form in DYNAMIC_FORMS.values():
    if _form.define:
        _define(_form)
