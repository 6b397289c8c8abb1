"""Each op's layout rule: TVM's FInferCorrectLayout (src/relay/op/tensor/transform.cc,
reduce.cc, nn/nn.cc, nn/pad.cc, nn/pooling.cc, image/resize.cc, qnn/op/*.cc), which the
layout rewriter (layout_rewrite.py) asks twice per call.

    infer(call, new_in, old_in, types) -> Inferred(inputs, outputs, attrs) | None

`old_in` are the layouts the call's inputs had (None: no layout), `new_in` the ones they
are in now (None on the first call, when only the original is asked about); the rule
says the layouts it wants its inputs in, its results' layouts, and its attributes for
them (an axis moved to where its letter is).  None means the op cannot follow (TVM: an
undefined layout in the answer) and the rewriter falls back.  An op without a rule here
(`infer_rule` is None) falls back too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ir.attrs import Attrs, IntImm
from ..ir.expr import Call, Op
from ..ir.types import TensorType
from ..ops import all_ops, get_op
from ..ops.registry import BROADCAST, ELEMWISE
from .layouts import (UNDEF, Layout, LayoutError, MaybeLayout, adjust_subordinate_factors, make, parse, same,
                      try_transform_like)

@dataclass
class Inferred:
    """What an op's rule says: the layouts it wants its inputs in, its outputs' layouts,
    and its attributes (changed when the op follows its input's layout)."""

    inputs: list[Layout]
    outputs: list[Layout]
    attrs: Attrs


Types = list
Rule = Callable[[Attrs, "list[MaybeLayout] | None", "list[MaybeLayout]", Types], "Inferred | None"]


def _elemwise(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's ElemwiseArbitraryLayout: the layout the (first) input is in."""
    ret = new_in[0] if new_in is not None else next((x for x in old_in if x is not None), None)
    if ret is None:
        return None
    return Inferred([ret] * len(old_in), [ret], attrs)


def _shape_rank(t) -> int:
    return t.ndim if isinstance(t, TensorType) else -1


def _binary_broadcast(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's BinaryBroadcastLayout: the smaller operand follows the larger one's layout,
    its sub-axes of factor 1 where it broadcasts."""
    ranks = [_shape_rank(t) for t in types]
    if min(ranks) < 0:
        return None
    old_large = 0 if ranks[0] >= ranks[1] else 1
    layouts = list(old_in)
    default = Inferred([UNDEF, UNDEF], [UNDEF], attrs)
    if layouts[0] is None and layouts[1] is None:
        out = default
    elif layouts[0] is None or layouts[1] is None:
        d = 0 if layouts[0] is not None else 1
        u = 1 - d
        if ranks[d] >= ranks[u] and layouts[d] is not UNDEF:
            layouts[u] = layouts[d].sub_layout(ranks[d] - ranks[u], ranks[u])
            out = Inferred(list(layouts), [layouts[d]], attrs)
        else:
            out = default
    else:
        out = Inferred(list(layouts), [layouts[old_large]], attrs)
    if new_in is None:
        return out
    if any(x is UNDEF for x in (*new_in, *layouts)):
        return default if all(x is UNDEF for x in new_in) else None
    ret = new_in[old_large]
    large = 0 if new_in[0].ndim_primal >= new_in[1].ndim_primal else 1
    small = 1 - large
    target = try_transform_like(layouts[small], layouts[large], new_in[large])
    if target is None:
        return default
    new_small = adjust_subordinate_factors(target, layouts[small], types[small].shape)
    result = [None, None]
    result[large], result[small] = new_in[large], new_small
    return Inferred(result, [ret], attrs)


def _conv(op_name: str):
    """TVM's ConvInferCorrectLayout: the layouts of the attributes, whatever the input."""
    def rule(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
        a = get_op(op_name).normalize_attrs(attrs)
        out = a.out_layout or a.data_layout
        return Inferred([parse(a.data_layout), parse(a.kernel_layout)], [parse(out)], attrs)
    return rule


def _pool(op_name: str):
    """TVM's PoolInferCorrectLayout: the input's layout, unless out_layout is set."""
    def rule(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
        a = get_op(op_name).normalize_attrs(attrs)
        layout = a.layout
        if not a.out_layout and new_in is not None and new_in[0] is not None:
            if any(new_in[0].index_of(a) >= 0 for a in "dhw"):  # a split spatial axis: no compute here
                return None
            if new_in[0].name != layout:
                layout = new_in[0].name
                attrs = attrs.with_(layout=layout)
        return Inferred([parse(layout)], [parse(layout)], attrs)
    return rule


def _concatenate(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's ConcatenateLayout: all inputs in one new layout, the axis moved with its letter."""
    axis = get_op("concatenate").normalize_attrs(attrs).axis
    if new_in is not None:
        first = old_in[0]
        if first is None or first is UNDEF:
            return None
        dim = first.axes[axis if axis >= 0 else axis + first.ndim][0]
        if all(same(x, new_in[0]) for x in new_in) and new_in[0] is not UNDEF:
            ret = new_in[0]
            attrs = attrs.with_(axis=IntImm(ret.index_of(dim)))
        else:
            ret = first
    else:
        ret = next((x for x in old_in if x is not None), None)
        if ret is None or ret is UNDEF or ret.ndim <= axis or not ret.axes[axis][0].isupper():
            return None
    return Inferred([ret] * len(old_in), [ret], attrs)


def _dense(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's DenseInferCorrectLayout: NC for both inputs and the result."""
    return Inferred([parse("NC"), parse("NC")], [parse("NC")], attrs)


def _dense_pack(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's DensePackInferCorrectLayout: NC data, the weight in its packed layout."""
    layout = get_op("nn.contrib_dense_pack").normalize_attrs(attrs).weight_layout
    return Inferred([parse("NC"), parse(layout)], [parse("NC")], attrs)


def _squeeze(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's SqueezeInferCorrectLayout: the input's layout without the squeezed axes,
    the axes renumbered to where their letters are in the new layout."""
    a = get_op("squeeze").normalize_attrs(attrs)
    layout = new_in[0] if new_in is not None else old_in[0]
    if layout is None or layout is UNDEF:
        return None
    shape = types[0].shape
    axis = list(a.axis) if a.axis is not None else [i for i, d in enumerate(shape) if d == 1]
    if new_in is not None and old_in[0] is not None:
        axis = [layout.index_of(old_in[0].axes[x][0]) for x in axis]
        attrs = attrs.with_(axis=[IntImm(x) for x in axis])
    drop = {x + layout.ndim if x < 0 else x for x in axis}
    out = make([ax for i, ax in enumerate(layout.axes) if i not in drop])
    return Inferred([layout], [out], attrs)


def _reduce(op_name: str):
    """TVM's ReduceInferCorrectLayout: the reduced axes found by their letters in the new
    layout (a split axis reduces its sub-axis too: NCHW8c summed over C sums axes 1 and 4);
    the result's layout drops them, or keeps them (a sub-axis as 1c) with keepdims."""
    def rule(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
        a = get_op(op_name).normalize_attrs(attrs)
        ndim = types[0].ndim
        listed = {x + ndim if x < 0 else x for x in (a.axis if a.axis is not None else range(ndim))}
        exclude = getattr(a, "exclude", False)
        r_axes = sorted(set(range(ndim)) - listed) if exclude and a.axis is not None else sorted(listed)
        if a.axis is None:
            r_axes = list(range(ndim))
        old = old_in[0]
        if old is None or old is UNDEF:
            return None

        def follow(layout: Layout):
            old_dims = {old.axes[x][0] for x in r_axes}
            axes, ins, outs = [], [], []
            for pos, (letter, factor) in enumerate(layout.axes):
                primal = letter.upper()
                pushed = (primal in old_dims) != exclude  # an axis the new `axis` lists
                if pushed:
                    axes.append(pos)
                ins.append((letter, factor))
                if letter.isupper():
                    if not (primal in old_dims) or a.keepdims:
                        outs.append((letter, factor))
                elif pushed:
                    if exclude:
                        outs.append((letter, factor))
                    elif a.keepdims:
                        outs.append((letter, 1))
                else:
                    outs.append((letter, factor))
            return make(ins), make(outs), axes

        if new_in is not None and r_axes:
            layout_in, layout_out, axes = follow(new_in[0])
            attrs = attrs.with_(axis=[IntImm(x) for x in axes])
        else:
            layout_in, layout_out, _ = follow(old)
        if layout_out.ndim == 0:  # TVM builds it from a string: "" is Layout::Undef(), a failure
            return None
        return Inferred([layout_in] * len(old_in), [layout_out], attrs)
    return rule


def _transpose(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's TransposeInferCorrectLayout: the permutation rewritten by letters for the
    new layout when every axis is found there, else kept on the old one."""
    old = old_in[0]
    if old is None or old is UNDEF:
        return None
    given = get_op("transpose").normalize_attrs(attrs).axes
    old_axes = list(given) if given else list(range(old.ndim - 1, -1, -1))
    old_axes = [x + old.ndim if x < 0 else x for x in old_axes]
    layout, axes = old, old_axes
    if new_in is not None and new_in[0] is not None and new_in[0] is not UNDEF:
        new = new_in[0]
        moved = [new.index_of(old.axes[x][0]) for x in old_axes]
        if -1 not in moved and len(moved) == new.ndim:
            layout, axes = new, moved
    attrs = attrs.with_(axes=[IntImm(x) for x in axes])
    return Inferred([layout], [make([layout.axes[x] for x in axes])], attrs)


def _pad(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's PadInferCorrectLayout: the new layout when no split axis is padded, its
    pad_width rewritten by letters; the pad value is a scalar.  An undefined layout on
    either side (a layer_norm's output feeding Swin's window pad) keeps pad_width as it
    is: rewritten by the letters of no axis it lost every pair (`pad_width=[]`)."""
    widths = [list(w) for w in get_op("nn.pad").normalize_attrs(attrs).pad_width]
    data = old_in[0]
    if new_in is not None and not any(x is None or x is UNDEF for x in (old_in[0], new_in[0])):
        by_axis = {letter: w for (letter, _), w in zip(old_in[0].axes, widths)}
        new_widths, ok = [], True
        for letter, _ in new_in[0].axes:
            width = by_axis[letter.upper()]
            if letter.islower() and any(width):
                ok = False
            new_widths.append(width)
        if ok:
            data = new_in[0]
            attrs = attrs.with_(pad_width=[[IntImm(x) for x in w] for w in new_widths])
    if data is None:
        return None
    return Inferred([data, make(())], [data], attrs)


def _resize(op_name: str, follows):
    """TVM's UpsamplingInferCorrectLayout / ResizeInferCorrectLayout: the op's layout,
    or the input's new layout when `follows(new, old, own)` allows it."""
    def rule(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
        own = parse(get_op(op_name).normalize_attrs(attrs).layout)
        layout = own
        if new_in is not None and new_in[0] is not None and new_in[0] is not UNDEF:
            if follows(new_in[0], old_in[0], own):
                layout = new_in[0]
                attrs = attrs.with_(layout=layout.name)
        return Inferred([layout], [layout], attrs)
    return rule


def _upsampling_follows(new: Layout, old, own: Layout) -> bool:
    return (all(new.index_of(a) == own.index_of(a) for a in "HW") and new.index_of("h") < 0
            and new.index_of("w") < 0
            and (new.index_of("D") < 0 or (new.index_of("D") == own.index_of("D") and new.index_of("d") < 0)))


def _resize_follows(new: Layout, old, own: Layout) -> bool:
    return old is not None and not same(new, old) and same(own, old) and new.ndim == old.ndim


# ---- issue 14: dyn.nn.upsampling, slice_like, topk ---------------------------------------------


def _dyn_upsampling(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's UpsamplingInferCorrectLayout on dyn.nn.upsampling's data; its scales are scalars
    (no layout).  TVM registers the one-input rule on this three-input op, so its layout
    passes stop at a check on the number of inputs; here the scales just stay as they are."""
    out = _resize("dyn.nn.upsampling", _upsampling_follows)(attrs, new_in and new_in[:1], old_in[:1], types[:1])
    return Inferred([out.inputs[0], make(()), make(())], out.outputs, out.attrs)


def _slice_like(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's SliceLikeInferCorrectLayout: when data and shape_like were and are in one layout,
    the axes move to where their letters are (no letter there: the old layouts); the result
    is laid out as shape_like was.  An input without a layout: no rule (the fallback)."""
    if any(x is None or x is UNDEF for x in old_in):
        return None
    given = get_op("slice_like").normalize_attrs(attrs).axes
    if new_in is not None and all(x is not None and x is not UNDEF for x in new_in) and given:
        old, new = old_in[0], new_in[0]
        if not same(new_in[0], new_in[1]) or not same(old_in[0], old_in[1]):
            return None  # TVM: a failed check
        moved = [new.index_of(old.axes[a + old.ndim if a < 0 else a][0]) for a in given]
        if -1 not in moved:
            return Inferred([new, new], [new], attrs.with_(axes=[IntImm(a) for a in moved]))
    return Inferred([old_in[0], old_in[1]], [old_in[1]], attrs)


def _topk(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's TopKInferCorrectLayout: the axis moves to where its letter is in the new layout;
    the results (values and indices, or the one ret_type asks for) are in the input's layout.
    Unlike TVM, a new layout that splits the sorted axis (NCHW16c for a topk along C, which
    would sort the blocks alone) or lacks it keeps the old one."""
    old = old_in[0]
    if old is None or old is UNDEF:
        return None
    layout = old
    if new_in is not None and new_in[0] is not None and new_in[0] is not UNDEF:
        axis = get_op("topk").normalize_attrs(attrs).axis
        letter = old.axes[axis + old.ndim if axis < 0 else axis][0]
        new = new_in[0]
        if new.index_of(letter) >= 0 and new.index_of(letter.lower()) < 0:
            layout = new
            attrs = attrs.with_(axis=IntImm(new.index_of(letter)))
    outputs = [layout, layout] if get_op("topk").normalize_attrs(attrs).ret_type == "both" else [layout]
    return Inferred([layout], outputs, attrs)


def _strided_slice(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's StridedSliceInferCorrectLayout: a permuted layout of the same length (NHWC to
    NCHW) takes begin/end/strides (or the axes) by letters; a blocked one (NCHW to
    NCHW16c) divides the bounds of a split axis by its factor when they divide and the
    stride is 1.  Anything else keeps the old layout (the input goes back first)."""
    old = old_in[0]
    if old is None or old is UNDEF:
        return None
    if new_in is None or new_in[0] is None or new_in[0] is UNDEF:
        return Inferred([old], [old], attrs)
    new = new_in[0]
    a = get_op("strided_slice").normalize_attrs(attrs)
    shape = types[0].shape
    size_mode = a.slice_mode == "size"
    begin, end = list(a.begin or []), list(a.end or [])
    strides = [1] * len(a.strides or []) if size_mode else list(a.strides or [])

    def ints(xs):
        return [IntImm(x) for x in xs]

    if not old.name.startswith(new.name) and not new.name.startswith(old.name):
        if old.ndim != new.ndim:
            return None
        if a.axes is not None:
            axes = [new.index_of(old.axes[x][0]) for x in a.axes]
            changes = {"begin": ints(begin), "end": ints(end), "strides": ints(strides), "axes": ints(axes)}
        else:
            nb, ne, ns = [], [], []
            for letter, _ in new.axes:
                i = old.index_of(letter)
                if i < 0:
                    return None
                ns.append(strides[i] if i < len(strides) and strides[i] is not None else 1)
                nb.append(begin[i] if i < len(begin) and begin[i] is not None else 0)
                ne.append(end[i] if i < len(end) and end[i] is not None else shape[i])
            changes = {"begin": ints(nb), "end": ints(ne), "strides": ints(ns)}
        return Inferred([new], [new], attrs.with_(**changes))
    if old.ndim >= new.ndim:
        return Inferred([old], [old], attrs)
    axes = list(a.axes) if a.axes is not None else list(range(len(begin)))
    nb, ne = [], []
    for k, x in enumerate(axes):
        letter = old.axes[x][0]
        factor = new.factor_of(letter)
        if factor == -1:
            nb.append(begin[k])
            ne.append(end[k])
            continue
        if k < len(strides) and strides[k] is not None and strides[k] != 1:
            return None
        bg = begin[k] if begin[k] is not None else 0
        if a.axes is None and end[k] is None:
            ed = shape[x]
        elif a.axes is None and size_mode:
            ed = shape[x] if end[k] < 0 else bg + end[k]
        else:
            ed = end[k]
        if bg % factor or ed % factor:
            return None
        nb.append(bg // factor)
        ne.append(ed // factor)
    changes = {"begin": ints(nb), "end": ints(ne)}
    if a.axes is not None:
        changes["axes"] = ints([new.index_of(old.axes[x][0]) for x in axes])
    return Inferred([new], [new], attrs.with_(**changes))


def _normalization(op_name: str, stats: int, results: int):
    """TVM's BatchNormInferCorrectLayout and NormalizationInferCorrectLayout (layer_norm,
    instance_norm): the input's (new) layout, `axis` moved to where its letter is there;
    the `stats` parameter vectors (gamma, beta, mean, variance) and the extra results in C."""
    def rule(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
        old = old_in[0]
        if old is None or old is UNDEF:
            return None
        layout = old
        if new_in is not None and new_in[0] is not None and new_in[0] is not UNDEF:
            axis = get_op(op_name).normalize_attrs(attrs).axis
            axis = axis + types[0].ndim if axis < 0 else axis
            layout = new_in[0]
            attrs = attrs.with_(axis=IntImm(layout.index_of(old.axes[axis][0])))
        c = parse("C")
        return Inferred([layout] + [c] * stats, [layout] + [c] * (results - 1), attrs)
    return rule


def _l2_normalize(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's L2NormalizeInferCorrectLayout: the new layout, each axis moved to its letter."""
    old = old_in[0]
    if old is None or old is UNDEF:
        return None
    if new_in is None or new_in[0] is None or new_in[0] is UNDEF:
        return Inferred([old], [old], attrs)
    ndim = types[0].ndim
    axes = [x + ndim if x < 0 else x for x in get_op("nn.l2_normalize").normalize_attrs(attrs).axis]
    moved = [new_in[0].index_of(old.axes[x][0]) for x in axes]
    return Inferred([new_in[0]], [new_in[0]], attrs.with_(axis=[IntImm(x) for x in moved]))


def _prelu(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's PReluInferCorrectLayout: the data's old layout, the slope in C."""
    if old_in[0] is None:
        return None
    return Inferred([old_in[0], parse("C")], [old_in[0]], attrs)


def _split(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's SplitInferCorrectLayout: the new layout, the axis moved to its letter and the
    split indices divided by the factor when that axis is split (the old layout when an
    index does not divide); one result per section, all in that layout."""
    old = old_in[0]
    if old is None or old is UNDEF:
        return None
    a = get_op("split").normalize_attrs(attrs)
    ios = a.indices_or_sections
    size = ios if isinstance(ios, int) else len(ios) + 1
    layout = old
    if new_in is not None and new_in[0] is not None and new_in[0] is not UNDEF:
        new = new_in[0]
        axis = a.axis + types[0].ndim if a.axis < 0 else a.axis
        letter = old.axes[axis][0]
        changes = {"axis": IntImm(new.index_of(letter))}
        factor = new.factor_of(letter)
        divisible = True
        if factor > 1 and not isinstance(ios, int):
            divisible = all(v % factor == 0 for v in ios)
            if divisible:
                changes["indices_or_sections"] = [IntImm(v // factor) for v in ios]
        attrs = attrs.with_(**changes)
        layout = new if divisible else old
    return Inferred([layout], [layout] * size, attrs)


def _with_channels(rule: Rule, data_inputs: int, channels: int, letter: str = "C") -> Rule:
    """A qnn op's rule (TVM's QnnConvInferCorrectLayout, QnnDenseInferCorrectLayout): `rule`
    on its first `data_inputs` inputs, the `channels` scales and zero points after them in
    `letter` (C; N for qnn.dense, as TVM writes it)."""
    def qnn_rule(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
        out = rule(attrs, None if new_in is None else new_in[:data_inputs], old_in[:data_inputs],
                   types[:data_inputs])
        if out is None:
            return None
        return Inferred(out.inputs + [parse(letter)] * channels, out.outputs, out.attrs)
    return qnn_rule


def _is_scalar(t) -> bool:
    return isinstance(t, TensorType) and t.ndim == 0


def _requantize(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's RequantizeInferCorrectLayout: the new layout (its sub-axes kept only when the
    input scale and zero point are scalars), the axis moved to its letter; the four
    quantization parameters in C."""
    c = parse("C")
    old = old_in[0]
    if old is None or old is UNDEF:
        return None
    if new_in is None or new_in[0] is None or new_in[0] is UNDEF:
        return Inferred([old, c, c, c, c], [old], attrs)
    a = get_op("qnn.requantize").normalize_attrs(attrs)
    axis = types[0].ndim - 1 if a.axis == -1 else a.axis
    old_dim = old.axes[axis][0]
    scalars = _is_scalar(types[1]) and _is_scalar(types[2])
    axes, new_axis = [], None
    for letter, factor in new_in[0].axes:
        if letter == old_dim:
            new_axis = len(axes)
        if letter.isupper() or scalars:
            axes.append((letter, factor))
    if new_axis is None:
        return None
    layout = make(axes)
    return Inferred([layout, c, c, c, c], [layout], attrs.with_(axis=IntImm(new_axis)))


# qnn.add, qnn.concatenate, qnn.conv2d_transpose, simulated_quantize


def _qnn_concatenate(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's QnnConcatenateLayout: concatenate's rule on the data tensors, then the 2n + 2
    scales and zero points in C."""
    count = len(types[0].fields)
    out = _concatenate(attrs, None if new_in is None else new_in[:count], old_in[:count], types[:1])
    if out is None:
        return None
    return Inferred(out.inputs + [parse("C")] * (2 * count + 2), out.outputs, out.attrs)


def _simulated_quantize(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's SimQuantizeLayout: the data's new layout (its old one on the first call), the
    scale and clip bounds in C."""
    ret = new_in[0] if new_in is not None else old_in[0]
    if ret is None:
        return None
    c = parse("C")
    return Inferred([ret, c, c, c], [ret], attrs)


def _add_quantization_rules(rules: dict[str, Rule]) -> None:
    rules["qnn.add"] = _with_channels(_binary_broadcast, 2, 6)  # TVM's QnnBinaryBroadcastLayout
    rules["qnn.concatenate"] = _qnn_concatenate
    rules["qnn.conv2d_transpose"] = _with_channels(_conv("qnn.conv2d_transpose"), 2, 4)
    rules["relay.op.annotation.simulated_quantize"] = _simulated_quantize

# ROI pooling and deformable convolution

# TVM writes the rois' layout as Layout("N5"): its parser keeps the axis N and drops the
# trailing number, so the rois (R, 5) have a one-axis layout that never changes
ROIS = Layout("N5", (("N", 0),))


def _roi(op_name: str):
    """TVM's ROIAlignInferCorrectLayout / ROIPoolInferCorrectLayout: data and result in
    the op's layout, the rois in N5, whatever the inputs are in."""
    def rule(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
        layout = parse(get_op(op_name).normalize_attrs(attrs).layout)
        return Inferred([layout, ROIS], [layout], attrs)
    return rule


def _deformable_conv(attrs: Attrs, new_in, old_in, types) -> Inferred | None:
    """TVM's DeformableConvInferCorrectLayout: data and offset in data_layout, the weight
    in kernel_layout, the result in out_layout (or data_layout)."""
    a = get_op("nn.deformable_conv2d").normalize_attrs(attrs)
    data = parse(a.data_layout)
    return Inferred([data, data, parse(a.kernel_layout)], [parse(a.out_layout or a.data_layout)], attrs)


def _build_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for d in all_ops():
        if d.inputs == ("data",) and d.pattern == ELEMWISE:
            rules[d.name] = _elemwise
        elif d.inputs == ("lhs", "rhs") and d.pattern == BROADCAST:
            rules[d.name] = _binary_broadcast
    for name in ("nn.relu", "nn.leaky_relu", "clip", "cast", "sigmoid", "tanh"):
        if get_op(name) is not None:
            rules[name] = _elemwise
    for name in ("nn.conv1d", "nn.conv2d", "nn.contrib_conv2d_NCHWc", "nn.contrib_depthwise_conv2d_NCHWc",
                 "nn.conv2d_transpose", "nn.conv3d", "nn.conv3d_transpose",
                 "nn.contrib_conv2d_winograd_without_weight_transform"):
        if get_op(name) is not None:
            rules[name] = _conv(name)
    for name in ("nn.max_pool1d", "nn.avg_pool1d", "nn.max_pool2d", "nn.avg_pool2d", "nn.max_pool3d",
                 "nn.avg_pool3d", "nn.global_max_pool2d", "nn.global_avg_pool2d",
                 "nn.adaptive_max_pool1d", "nn.adaptive_avg_pool1d", "nn.adaptive_max_pool2d",
                 "nn.adaptive_avg_pool2d", "nn.adaptive_max_pool3d", "nn.adaptive_avg_pool3d"):
        if get_op(name) is not None and any(a.name == "layout" for a in get_op(name).attrs):
            rules[name] = _pool(name)
    rules["concatenate"] = _concatenate
    rules["nn.dense"] = _dense
    rules["nn.contrib_dense_pack"] = _dense_pack
    rules["squeeze"] = _squeeze
    for name in ("sum", "mean", "max", "min", "prod", "all", "argmax", "argmin", "variance"):
        if get_op(name) is not None:
            rules[name] = _reduce(name)
    rules["transpose"] = _transpose
    rules["nn.batch_norm"] = _normalization("nn.batch_norm", 4, 3)
    rules["nn.layer_norm"] = _normalization("nn.layer_norm", 2, 1)
    rules["nn.instance_norm"] = _normalization("nn.instance_norm", 2, 1)
    rules["nn.prelu"] = _prelu
    rules["nn.l2_normalize"] = _l2_normalize
    rules["strided_slice"] = _strided_slice
    rules["split"] = _split
    rules["qnn.conv2d"] = _with_channels(_conv("qnn.conv2d"), 2, 4)
    rules["qnn.dense"] = _with_channels(_dense, 2, 4, "N")
    rules["qnn.requantize"] = _requantize
    rules["nn.pad"] = _pad
    for name in ("nn.upsampling", "nn.upsampling3d"):
        if get_op(name) is not None:
            rules[name] = _resize(name, _upsampling_follows)
    for name in ("image.resize1d", "image.resize2d", "image.resize3d"):
        if get_op(name) is not None:
            rules[name] = _resize(name, _resize_follows)
    _add_quantization_rules(rules)
    for name in ("vision.roi_align", "vision.roi_pool"):
        rules[name] = _roi(name)
    rules["nn.deformable_conv2d"] = _deformable_conv
    rules["dyn.nn.upsampling"] = _dyn_upsampling
    rules["slice_like"] = _slice_like
    rules["topk"] = _topk
    return rules


_RULES: dict[str, Rule] | None = None


def infer_rule(name: str) -> Rule | None:
    """An op's FInferCorrectLayout, or None when it has none."""
    global _RULES
    if _RULES is None:
        _RULES = _build_rules()
    return _RULES.get(name)


def infer(call: Call, new_in, old_in, types) -> Inferred | None:
    """TVM's InferCorrectLayouts: the op's rule, None when it has none or any layout it
    reports is unknown."""
    if not isinstance(call.op, Op):
        return None
    rule = infer_rule(call.op.name)
    if rule is None:
        return None
    try:
        out = rule(call.attrs, new_in, old_in, types)
    except (LayoutError, KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None
    if out is None or any(x is None for x in (*out.inputs, *out.outputs)):
        return None
    return out
