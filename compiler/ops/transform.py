"""Shape and layout transforms (reference §7.6): reshape and its relatives, transpose,
expand_dims/squeeze, concatenate/stack/split, layout_transform, broadcasting and collapsing.

Ops that pick, replicate or create elements (strided_slice, take, gather, gather_nd,
tile, repeat, reverse, sliding_window, one_hot, full, zeros, ones, arange, shape_of,
ndarray_size) are in transform_index.py; the geometry both files share with the compute
rules (permutations, split points, layouts, slice plans) is in transform_geometry.py.

Every relation lets `?` dimensions flow: a result dimension computed from a `?` is `?`, and
a check that needs a `?` to be a given number passes.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import ANY, TensorType, TupleType
from ..support import contiguous
from .attrs import BOOL, INT, INT_OR_INTS, INTS, OPT_INT, OPT_INTS, STR, Attr, AttrError
from .registry import BROADCAST, COMM_REDUCE, INJECTIVE, OpTypeError, define
from .shapes import (
    BroadcastError,
    Dim,
    add,
    axis_index,
    broadcast,
    dims,
    known,
    mul,
    product,
    same_dim,
    tensor,
    tensors_of_tuple,
    type_text,
)
from .transform_geometry import (
    expand_pivot,
    ints_text,
    layout_extents,
    layouts,
    permutation,
    require_attr,
    split_plan,
    squeezed_axes,
    type_of_array,
)


def _shape(ds) -> str:
    return "(" + ", ".join(str(d) for d in ds) + ")"


# --------------------------------------------------------------------------- reshape

reshape = define(
    "reshape", ("data",), INJECTIVE,
    attrs=(Attr("newshape", INTS, doc="the new shape; 0 copies an input dimension, -1 infers one, "
                                      "-2 copies the rest, -3 merges two, -4 splits one in two"),
           Attr("allowzero", BOOL, False, doc="0 in newshape means a zero-sized dimension, not a copy")),
    doc="Give data a new shape with the same number of elements.  Codes in newshape: 0 copies "
        "the input dimension at the same place, -1 is inferred from the rest, -2 copies all "
        "remaining input dimensions, -3 merges the next two input dimensions, -4 splits the next "
        "input dimension into the two values that follow it (one of them may be -1).")


def new_shape(op: str, data: TensorType, newshape: tuple[int, ...], allowzero: bool) -> tuple[Dim, ...]:
    """The result shape of `reshape(data, newshape=..., allowzero=...)`."""
    ishape = dims(data)
    ns = ints_text(newshape)
    out: list[Dim] = []
    used_in: set[int] = set()  # input dimensions copied (0, -2, -3, -4): not part of the -1
    used_out: set[int] = set()  # output dimensions they became
    src = 0
    infer = -1
    i = 0

    def need_input(k: int, code: str) -> None:
        if k >= len(ishape):
            raise OpTypeError(f"{op}: {code} at position {i} of newshape {ns} refers to input "
                              f"dimension {k}, but data {type_text(data)} has rank {len(ishape)}")

    while i < len(newshape):
        v = newshape[i]
        if v > 0 or (v == 0 and allowzero):
            out.append(v)
            src += 1
        elif v == 0:
            need_input(src, "0")
            used_in.add(src)
            used_out.add(len(out))
            out.append(ishape[src])
            src += 1
        elif v == -1:
            if infer >= 0:
                raise AttrError(f"{op}: newshape {ns} has more than one -1; only one dimension "
                                "can be inferred", "newshape")
            infer = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            while src < len(ishape):
                used_in.add(src)
                used_out.add(len(out))
                out.append(ishape[src])
                src += 1
        elif v == -3:
            need_input(src + 1, "-3")
            used_in.update((src, src + 1))
            used_out.add(len(out))
            out.append(mul(ishape[src], ishape[src + 1]))
            src += 2
        elif v == -4:
            if i + 2 >= len(newshape):
                raise AttrError(f"{op}: -4 at position {i} of newshape {ns} must be followed by "
                                "the two dimensions to split into", "newshape")
            need_input(src, "-4")
            d0 = ishape[src]
            used_in.add(src)
            src += 1
            a, b = newshape[i + 1], newshape[i + 2]
            if a == -1 and b == -1:
                raise AttrError(f"{op}: -4 at position {i} of newshape {ns} splits into -1 and "
                                "-1; at most one of the two can be inferred", "newshape")
            if not all(x > 0 or x == -1 for x in (a, b)):
                raise AttrError(f"{op}: -4 at position {i} of newshape {ns} splits into {a} and "
                                f"{b}; each must be positive or -1", "newshape")
            fits = (d0 % b == 0 if a == -1 else d0 % a == 0 if b == -1 else d0 == a * b) \
                if known(d0) else True  # type: ignore[operator]
            if not fits:
                raise OpTypeError(f"{op}: -4 at position {i} of newshape {ns} cannot split input "
                                  f"dimension {src - 1} of size {d0} (data {type_text(data)}) "
                                  f"into {a} x {b}")
            if a == -1:
                a = d0 // b if known(d0) else ANY  # type: ignore[operator]
            elif b == -1:
                b = d0 // a if known(d0) else ANY  # type: ignore[operator]
            used_out.update((len(out), len(out) + 1))
            out += [a, b]
            i += 2
        else:
            raise AttrError(f"{op}: newshape {ns} has the value {v} at position {i}; "
                            "expected a positive size or one of the codes 0, -1, -2, -3, -4",
                            "newshape")
        i += 1

    total = product(ishape)
    if infer >= 0:
        rest_in = product([d for k, d in enumerate(ishape) if k not in used_in])
        rest_out = product([d for k, d in enumerate(out) if k not in used_out and k != infer])
        if known(rest_in, rest_out):
            if rest_out == 0 or rest_in % rest_out:  # type: ignore[operator]
                raise OpTypeError(f"{op}: cannot reshape data {type_text(data)} ({total} elements) "
                                  f"to newshape {ns}: the -1 cannot be inferred, since the other "
                                  f"dimensions hold {rest_out} elements, which does not divide "
                                  f"{rest_in}")
            out[infer] = rest_in // rest_out  # type: ignore[operator]
        else:
            out[infer] = ANY
    count = product(out)
    if known(total, count) and total != count:
        shown = "" if list(out) == list(newshape) else f", as {_shape(out)}"
        raise OpTypeError(f"{op}: cannot reshape data {type_text(data)} ({total} elements) to "
                          f"newshape {ns} ({count} elements{shown})")
    return tuple(out)


@reshape.relation
def _(data, attrs):
    t = tensor(data, "reshape: data", 0)
    return TensorType(new_shape("reshape", t, attrs.newshape, attrs.allowzero), t.dtype)


@reshape.reference
def _(x, attrs):
    return x.reshape(new_shape("reshape", type_of_array(x), attrs.newshape, attrs.allowzero))


reshape_like = define(
    "reshape_like", ("data", "shape_like"), INJECTIVE,
    attrs=(Attr("lhs_begin", INT, 0, "first axis of data to replace"),
           Attr("lhs_end", OPT_INT, None, "end (exclusive) of the axes of data to replace; None: the rank"),
           Attr("rhs_begin", INT, 0, "first axis of shape_like to take"),
           Attr("rhs_end", OPT_INT, None, "end (exclusive) of the axes of shape_like to take; None: the rank")),
    doc="Reshape data so that its axes [lhs_begin, lhs_end) become the axes "
        "[rhs_begin, rhs_end) of shape_like.")


def _axis_range(op: str, begin: int, end: int | None, ndim: int, names: tuple[str, str], what: str) -> tuple[int, int]:
    b = begin + ndim if begin < 0 else begin
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b <= e <= ndim:
        raise OpTypeError(f"{op}: {names[0]}={begin}, {names[1]}={end} is not a range of axes of "
                          f"{what}, which has rank {ndim}")
    return b, e


def _reshape_like_shape(d: TensorType, like: TensorType, attrs) -> tuple[Dim, ...]:
    lb, le = _axis_range("reshape_like", attrs.lhs_begin, attrs.lhs_end, d.ndim,
                         ("lhs_begin", "lhs_end"), f"data {type_text(d)}")
    rb, re_ = _axis_range("reshape_like", attrs.rhs_begin, attrs.rhs_end, like.ndim,
                          ("rhs_begin", "rhs_end"), f"shape_like {type_text(like)}")
    ds, ls = dims(d), dims(like)
    out = ds[:lb] + ls[rb:re_] + ds[le:]
    n_in, n_out = product(ds), product(out)
    if known(n_in, n_out) and n_in != n_out:
        raise OpTypeError(f"reshape_like: cannot reshape data {type_text(d)} ({n_in} elements) to "
                          f"{_shape(out)} ({n_out} elements) taken from shape_like {type_text(like)}", 1)
    return out


@reshape_like.relation
def _(data, shape_like, attrs):
    d = tensor(data, "reshape_like: data", 0)
    like = tensor(shape_like, "reshape_like: shape_like", 1)
    return TensorType(_reshape_like_shape(d, like, attrs), d.dtype)


@reshape_like.reference
def _(x, like, attrs):
    return x.reshape(_reshape_like_shape(type_of_array(x), type_of_array(like), attrs))


batch_flatten = define("nn.batch_flatten", ("data",), INJECTIVE,
                       doc="Flatten every axis but the first: (N, d1, d2, ...) -> (N, d1*d2*...).")


@batch_flatten.relation
def _(data, attrs):
    t = tensor(data, "nn.batch_flatten: data", 0)
    if t.ndim == 0:
        raise OpTypeError(f"nn.batch_flatten: data must have at least one dimension, found {type_text(t)}", 0)
    ds = dims(t)
    return TensorType((ds[0], product(ds[1:])), t.dtype)


@batch_flatten.reference
def _(x, attrs):
    return x.reshape(x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64)))


# --------------------------------------------------------------------------- transpose, expand_dims, squeeze

transpose = define("transpose", ("data",), INJECTIVE,
                   attrs=(Attr("axes", OPT_INTS, None, "the new order of the axes; None reverses them"),),
                   doc="Permute the axes of data: result axis i is data axis axes[i].")


@transpose.relation
def _(data, attrs):
    t = tensor(data, "transpose: data", 0)
    ds = dims(t)
    return TensorType(tuple(ds[a] for a in permutation(t, attrs.axes)), t.dtype)


@transpose.reference
def _(x, attrs):
    return np.transpose(x, permutation(type_of_array(x), attrs.axes))


expand_dims = define("expand_dims", ("data",), BROADCAST,
                     attrs=(Attr("axis", INT, doc="where the new axes go, in [-ndim-1, ndim]"),
                            Attr("num_newaxis", INT, 1, "how many axes of length 1 to insert")),
                     doc="Insert num_newaxis axes of length 1 at axis (a negative axis counts "
                         "from the end of the result, as in NumPy).")


@expand_dims.relation
def _(data, attrs):
    t = tensor(data, "expand_dims: data", 0)
    p = expand_pivot(t, attrs)
    ds = dims(t)
    return TensorType(ds[:p] + (1,) * attrs.num_newaxis + ds[p:], t.dtype)


@expand_dims.reference
def _(x, attrs):
    p = expand_pivot(type_of_array(x), attrs)
    return x.reshape(x.shape[:p] + (1,) * attrs.num_newaxis + x.shape[p:])


squeeze = define("squeeze", ("data",), INJECTIVE,
                 attrs=(Attr("axis", OPT_INTS, None, "the axes to remove (each of length 1); "
                                                     "None: every axis of length 1"),),
                 doc="Remove axes of length 1.")


@squeeze.relation
def _(data, attrs):
    t = tensor(data, "squeeze: data", 0)
    gone = set(squeezed_axes(t, attrs.axis))
    return TensorType(tuple(d for k, d in enumerate(dims(t)) if k not in gone), t.dtype)


@squeeze.reference
def _(x, attrs):
    return np.squeeze(x, axis=tuple(sorted(set(squeezed_axes(type_of_array(x), attrs.axis)))))


# --------------------------------------------------------------------------- concatenate, stack, split

concatenate = define("concatenate", ("data",), INJECTIVE, tuple_input=True,
                     attrs=(Attr("axis", INT, 0, "the axis to join along"),),
                     doc="Join a tuple of tensors along an existing axis; the other dimensions "
                         "must agree.")


def _fields(op: str, data) -> list[TensorType]:
    fields = tensors_of_tuple(data, f"{op}: data", 0)
    if not fields:
        raise OpTypeError(f"{op}: the tuple of tensors is empty", 0)
    first = fields[0]
    for k, f in enumerate(fields[1:], 1):
        if f.dtype != first.dtype:
            raise OpTypeError(f"{op}: field {k} has dtype {f.dtype} but field 0 has {first.dtype} "
                              f"({type_text(f)} and {type_text(first)})", 0)
    return fields


@concatenate.relation
def _(data, attrs):
    fields = _fields("concatenate", data)
    first = fields[0]
    n = first.ndim
    for k, f in enumerate(fields[1:], 1):
        if f.ndim != n:
            raise OpTypeError(f"concatenate: field {k} has rank {f.ndim} but field 0 has rank {n} "
                              f"({type_text(f)} and {type_text(first)})", 0)
    axis = axis_index(attrs.axis, n, "concatenate: axis", 0)
    shapes = [dims(f) for f in fields]
    joined: Dim = 0
    for s in shapes:
        joined = add(joined, s[axis])
    out: list[Dim] = []
    for i in range(n):
        if i == axis:
            out.append(joined)
            continue
        static = [s[i] for s in shapes if known(s[i])]
        for k, s in enumerate(shapes):
            if known(s[i]) and s[i] != static[0]:
                raise OpTypeError(f"concatenate: field {k} has {s[i]} on axis {i} but another "
                                  f"field has {static[0]}; only axis {axis} may differ "
                                  f"({', '.join(type_text(f) for f in fields)})", 0)
        # as TVM: a partly known axis stays known only when the joined axis is unknown
        if static and (len(static) == len(shapes) or joined is ANY):
            out.append(static[0])
        else:
            out.append(ANY)
    return TensorType(tuple(out), first.dtype)


@concatenate.reference
def _(xs, attrs):
    return np.concatenate(xs, axis=attrs.axis)


stack = define("stack", ("data",), INJECTIVE, tuple_input=True,
               attrs=(Attr("axis", INT, 0, "where the new axis goes in the result"),),
               doc="Join a tuple of tensors of one shape along a new axis.")


@stack.relation
def _(data, attrs):
    fields = _fields("stack", data)
    first = fields[0]
    n = first.ndim
    axis = axis_index(attrs.axis, n + 1, "stack: axis", 0)
    fs = dims(first)
    for k, f in enumerate(fields[1:], 1):
        if f.ndim != n or not all(same_dim(a, b) for a, b in zip(fs, dims(f))):
            raise OpTypeError(f"stack: field {k} has shape {type_text(f)} but field 0 has "
                              f"{type_text(first)}; stacked tensors must have one shape", 0)
    return TensorType(fs[:axis] + (len(fields),) + fs[axis:], first.dtype)


@stack.reference
def _(xs, attrs):
    return np.stack(xs, axis=attrs.axis)


split = define("split", ("data",), INJECTIVE,
               attrs=(Attr("indices_or_sections", INT_OR_INTS,
                           doc="a number of equal sections, or the ascending indices to split at"),
                      Attr("axis", INT, 0, "the axis to split")),
               doc="Split data along axis into a tuple: into N equal sections (an integer), or "
                   "at the listed indices (a list).")


@split.relation
def _(data, attrs):
    t = tensor(data, "split: data", 0)
    axis, pieces = split_plan(t, attrs)
    ds = dims(t)
    return TupleType(tuple(TensorType(ds[:axis] + (p,) + ds[axis + 1:], t.dtype) for p in pieces))


@split.reference
def _(x, attrs):
    axis, pieces = split_plan(type_of_array(x), attrs)
    return tuple(np.split(x, np.cumsum(pieces[:-1]), axis=axis))


# --------------------------------------------------------------------------- layout_transform

layout_transform = define(
    "layout_transform", ("data",), INJECTIVE,
    attrs=(Attr("src_layout", STR, doc="the layout of data, e.g. NCHW"),
           Attr("dst_layout", STR, doc="the layout of the result, e.g. NHWC or NCHW8c")),
    doc="Re-lay data out: permute axes (NCHW -> NHWC) and split or merge blocked axes "
        "(NCHW -> NCHW8c gives (N, C/8, H, W, 8)).  Upper-case letters are axes, a number "
        "and a lower-case letter a block of that axis; a channel count that the block does not "
        "divide is padded with zeros.")


@layout_transform.relation
def _(data, attrs):
    t = tensor(data, "layout_transform: data", 0)
    src, dst = layouts(t, attrs)
    whole = layout_extents(t, src)
    out: list[Dim] = []
    for a, f in dst.axes:
        if f is not None:
            out.append(f)
        else:
            e, b = whole[a], dst.block(a) or 1
            out.append(-(-e // b) if known(e) else ANY)  # type: ignore[operator]
    return TensorType(tuple(out), t.dtype)


@layout_transform.reference
def _(x, attrs):
    src, dst = layouts(type_of_array(x), attrs)
    # to one axis per upper-case letter, in src order: each axis followed by its block
    # (a block split again, as OHWI16i64o2i splits I, has its blocks outer to inner in order)
    order = []
    for a in src.primal:
        order.append(src.position(a))
        order += [k for k, _, _ in src.blocks(a)]
    whole = layout_extents(type_of_array(x), src)
    y = np.transpose(x, order).reshape([whole[a] for a in src.primal])
    # into dst's upper-case order, padded to whole blocks and split
    y = np.transpose(y, [src.primal.index(a) for a in dst.primal])
    split_shape, positions = [], []
    for k, a in enumerate(dst.primal):
        b = dst.block(a)
        if b:
            outer = -(-y.shape[k] // b)
            if outer * b != y.shape[k]:  # np.pad copies even when it adds nothing
                pad = [(0, 0)] * y.ndim
                pad[k] = (0, outer * b - y.shape[k])
                y = np.pad(y, pad)
            split_shape += [outer] + [f for _, f, _ in dst.blocks(a)]
            positions += [dst.position(a)] + [p for p, _, _ in dst.blocks(a)]
        else:
            split_shape.append(y.shape[k])
            positions.append(dst.position(a))
    y = y.reshape(split_shape)
    return contiguous(np.transpose(y, [positions.index(k) for k in range(len(dst.axes))]))


# --------------------------------------------------------------------------- broadcasting and collapsing

broadcast_to = define("broadcast_to", ("data",), BROADCAST,
                      attrs=(Attr("shape", OPT_INTS, None, "the shape to broadcast to"),
                             Attr("dtype", STR, "", "unused (the result keeps the dtype of data)")),
                      doc="Broadcast data to shape, NumPy style.")


def _check_broadcast_to(op: str, d: TensorType, target: tuple[Dim, ...], what: str) -> None:
    try:
        got = broadcast(dims(d), target)
    except BroadcastError:
        got = None
    if got is None or len(got) != len(target) or not all(same_dim(a, b) for a, b in zip(got, target)):
        raise OpTypeError(f"{op}: data {type_text(d)} cannot be broadcast to {what}", 0)


@broadcast_to.relation
def _(data, attrs):
    t = tensor(data, "broadcast_to: data", 0)
    shape = tuple(require_attr("broadcast_to", attrs, "shape"))
    _check_broadcast_to("broadcast_to", t, shape, f"shape {_shape(shape)}")
    return TensorType(shape, t.dtype)


@broadcast_to.reference
def _(x, attrs):
    return np.broadcast_to(x, attrs.shape).copy()


broadcast_to_like = define("broadcast_to_like", ("data", "broadcast_type"), BROADCAST,
                           doc="Broadcast data to the shape of broadcast_type.")


@broadcast_to_like.relation
def _(data, broadcast_type, attrs):
    t = tensor(data, "broadcast_to_like: data", 0)
    like = tensor(broadcast_type, "broadcast_to_like: broadcast_type", 1)
    if t.dtype != like.dtype:
        raise OpTypeError(f"broadcast_to_like: data {type_text(t)} and broadcast_type "
                          f"{type_text(like)} have different dtypes", 1)
    _check_broadcast_to("broadcast_to_like", t, dims(like), f"broadcast_type {type_text(like)}")
    return like


@broadcast_to_like.reference
def _(x, like, attrs):
    return np.broadcast_to(x, like.shape).copy()


def _collapse_check(op: str, d: TensorType, target: TensorType, what: str) -> None:
    """collapse_sum sums data down to a shape that broadcasts back up to data's."""
    if d.dtype != target.dtype:
        raise OpTypeError(f"{op}: data {type_text(d)} and {what} {type_text(target)} have "
                          "different dtypes", 1)
    try:
        got = broadcast(dims(d), dims(target))
    except BroadcastError:
        got = None
    if got is None or len(got) != d.ndim or not all(same_dim(a, b) for a, b in zip(got, dims(d))):
        raise OpTypeError(f"{op}: data {type_text(d)} cannot be summed down to {what} "
                          f"{type_text(target)}: that shape does not broadcast to data's", 1)


def _collapse_sum(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    lead = x.ndim - len(shape)
    y = x.sum(axis=tuple(range(lead))) if lead else x
    axes = tuple(k for k, d in enumerate(shape) if d == 1 and y.shape[k] != 1)
    if axes:
        y = y.sum(axis=axes, keepdims=True)
    return np.asarray(y, dtype=x.dtype).reshape(shape)


collapse_sum_like = define("collapse_sum_like", ("data", "collapse_type"), COMM_REDUCE,
                           doc="Sum data over the axes that broadcasting would have added to "
                               "collapse_type's shape (the gradient of a broadcast).")


@collapse_sum_like.relation
def _(data, collapse_type, attrs):
    t = tensor(data, "collapse_sum_like: data", 0)
    like = tensor(collapse_type, "collapse_sum_like: collapse_type", 1)
    _collapse_check("collapse_sum_like", t, like, "collapse_type")
    return like


@collapse_sum_like.reference
def _(x, like, attrs):
    return _collapse_sum(x, like.shape)


collapse_sum_to = define("collapse_sum_to", ("data", "shape"), COMM_REDUCE,
                         attrs=(Attr("shape", OPT_INTS, None, "the target shape when the shape "
                                                              "argument is a constant"),
                                Attr("dtype", STR, "", "unused")),
                         doc="Sum data down to the shape given as a 1-D integer tensor (the "
                             "gradient of broadcast_to).")


@collapse_sum_to.relation
def _(data, shape, attrs):
    t = tensor(data, "collapse_sum_to: data", 0)
    s = tensor(shape, "collapse_sum_to: shape", 1)
    if s.ndim != 1 or not known(dims(s)[0]) or not s.dtype.startswith(("int", "uint")):
        raise OpTypeError(f"collapse_sum_to: shape must be a 1-D integer tensor of known length, "
                          f"found {type_text(s)}", 1)
    rank = dims(s)[0]
    target = attrs.shape if attrs.shape is not None else (ANY,) * rank  # type: ignore[operator]
    if len(target) != rank:
        raise OpTypeError(f"collapse_sum_to: attribute shape {ints_text(target)} has {len(target)} "
                          f"values but the shape argument {type_text(s)} has {rank}", 1)
    out = TensorType(tuple(target), t.dtype)
    _collapse_check("collapse_sum_to", t, out, "shape")
    return out


@collapse_sum_to.reference
def _(x, shape, attrs):
    return _collapse_sum(x, tuple(int(v) for v in np.asarray(shape).reshape(-1)))
