"""Convolutions, dense and matmul (reference §7.1).

Ops: `nn.conv1d`, `nn.conv2d`, `nn.conv3d`, `nn.conv1d_transpose`, `nn.conv2d_transpose`,
`nn.contrib_conv2d_NCHWc`, `nn.contrib_depthwise_conv2d_NCHWc`, `nn.dense`,
`nn.contrib_dense_pack` (dense on a weight packed NC[x]n), `nn.matmul`, `nn.batch_matmul`; all OutEWiseFusable.

Layouts are handled as TVM's layout strings are: upper-case letters are the primal axes,
`8c` is a sub-axis of `C` split off with factor 8 (`NCHW8c`: channel = outer * 8 + inner).
A convolution accepts any layout whose primal axes are those of its canonical one (NCHW
and OIHW for conv2d, IOHW for conv2d_transpose, ...): NHWC, HWIO, OHWI, HWOI, NCHW8c,
OIHW8i8o all work, for the type relation and for the numpy compute alike.  Both run in
the canonical layout and convert at the edges (the layout machinery and the `ConvPlan`,
shared with the compute rules, are in conv_geometry.py).

The numpy compute is an im2col over a strided view of the padded input and one batched
matrix product per call (one matrix per group), fast enough for ResNet-50 through the
interpreter.  Integer inputs accumulate exactly (float64 while the bound allows it, int64
otherwise) and wrap to `out_dtype` as TVM's integer arithmetic does.

Where TVM's relation is looser or wrong this one says so in its doc: grouped conv1d
divides the input channels by `groups` (TVM v0.16 compares them undivided), and a grouped
transposed convolution without `channels` has weight.shape[1] * groups outputs (TVM says
weight.shape[1]).  The v0.8 default kernel_layout "OIHW" of conv2d_transpose read as today's
"IOHW"; a text that spells it out is read with today's meaning.
"""

from __future__ import annotations

import itertools
import re

from ..lazy_modules import numpy as np
from ..ir.types import ANY, TensorType
from .attrs import BOOL, INT, INTS, OPT_INT, OPT_INTS, STR, Attr, AttrError, OpAttrs
from .registry import OUT_EWISE_FUSABLE, OpTypeError, define
from .conv_geometry import (
    ConvPlan,
    ConvSpec,
    Layout,
    backward_shape,
    conv_plan,
    forward_shape,
    from_canonical,
    int_list,
    is_depthwise,
    list_text,
    result_dtype,
    to_canonical,
)
from .shapes import Dim, dims, known, mul, same_dim, tensor, type_text
from .registry import get_op

def _dims_text(ds) -> str:
    return "x".join(str(d) for d in ds)


# --------------------------------------------------------------------------------------
# Convolution family


def canonical_shape(op: str, what: str, t: TensorType, layout: Layout, canonical: str, arg: int) -> tuple[Dim, ...]:
    """The canonical shape of an argument, after checking its rank and sub-axis extents."""
    if t.ndim != len(layout.axes):
        raise OpTypeError(f"{op}: {what} must have {len(layout.axes)} dimensions for layout "
                          f"{layout.name}, found {type_text(t)}", arg)
    ds = dims(t)
    for i, (a, f) in enumerate(layout.axes):
        if f is not None and known(ds[i]) and ds[i] != f:
            raise OpTypeError(f"{op}: {what} axis {i} ('{f}{a}' of layout {layout.name}) must have "
                              f"extent {f}, found {type_text(t)}", arg)
    return forward_shape(layout, ds, canonical)


def _weight_text(w: TensorType, layout: Layout, canonical: str) -> str:
    text = type_text(w)
    return text if layout.name == canonical else f"{text} in {layout.name}"


def _data_text(d: TensorType, layout: Layout, canonical: str) -> str:
    text = type_text(d)
    return text if layout.name == canonical else f"{text} in {layout.name}"


def _conv_relation(spec: ConvSpec):
    op = spec.name

    def relation(data, weight, attrs):
        d = tensor(data, f"{op}: data", 0)
        w = tensor(weight, f"{op}: weight", 1)
        plan = conv_plan(spec, attrs)
        dshape = canonical_shape(op, "data", d, plan.data_layout, spec.data_canonical, 0)
        wshape = canonical_shape(op, "weight", w, plan.kernel_layout, spec.kernel_canonical, 1)
        kernel = check_weight(spec, plan, attrs, d, w, dshape, wshape)
        channels = kernel[0]
        out: list[Dim] = [dshape[0], channels]
        for i, axis in enumerate(spec.spatial):
            out.append(spatial_out(spec, plan, i, axis, dshape[2 + i], kernel[1][i]))
        oshape = backward_shape(plan.out_layout, tuple(out), spec.data_canonical)
        return TensorType(oshape, result_dtype(attrs, d.dtype))

    return relation


def check_weight(spec: ConvSpec, plan: ConvPlan, attrs: OpAttrs, d: TensorType, w: TensorType,
                  dshape: tuple[Dim, ...], wshape: tuple[Dim, ...]) -> tuple[Dim, tuple[Dim, ...]]:
    """Check the weight against data and the attributes; (output channels, kernel extents)."""
    op, groups = spec.name, plan.groups
    in_c = dshape[1]
    wkernel = wshape[2:]
    wtext = _weight_text(w, plan.kernel_layout, spec.kernel_canonical)
    dtext = _data_text(d, plan.data_layout, spec.data_canonical)
    if known(in_c) and in_c % groups:
        raise OpTypeError(f"{op}: data has {in_c} channels, which groups={groups} does not divide "
                          f"(data {dtext})", 0)
    kernel_size = attrs.kernel_size
    if kernel_size is not None:
        kernel_size = int_list(op, "kernel_size", kernel_size, spec.ndim)
        if not all(same_dim(a, b) for a, b in zip(kernel_size, wkernel)):
            raise OpTypeError(f"{op}: kernel_size={list_text(kernel_size)} but weight has a "
                              f"{_dims_text(wkernel)} kernel (weight {wtext})", 1)
    channels = attrs.channels
    if channels is not None and channels < 1:
        raise AttrError(f"{op}: channels must be positive, got channels={channels}", "channels")

    if spec.transpose:
        w_in, w_out = wshape[0], wshape[1]  # IO: input channels, output channels per group
        if channels is not None:
            if channels % groups:
                raise AttrError(f"{op}: channels={channels} is not divisible by groups={groups}",
                                "channels")
            if not same_dim(w_out, channels // groups):
                per = f" ({channels // groups} per group with groups={groups})" if groups > 1 else ""
                raise OpTypeError(f"{op}: channels={channels}{per} but weight has {w_out} output "
                                  f"channels{' per group' if groups > 1 else ''} (weight {wtext})", 1)
        if not same_dim(in_c, w_in):
            raise OpTypeError(f"{op}: data has {in_c} channels but weight expects {w_in} "
                              f"(data {dtext}, weight {wtext})", 1)
        out_c = channels if channels is not None else mul(w_out, groups)
        return out_c, tuple(kernel_size) if kernel_size is not None else wkernel

    w_out, w_in = wshape[0], wshape[1]
    depthwise = is_depthwise(groups, in_c, w_out)
    if channels is not None and kernel_size is not None:
        # TVM derives the whole weight shape from the attributes and unifies it.
        if depthwise:
            if channels % in_c:
                raise AttrError(f"{op}: channels={channels} is not a multiple of the {in_c} input "
                                f"channels of this depthwise convolution", "channels")
            want_in: Dim = channels // in_c
            if not same_dim(w_in, want_in):
                raise OpTypeError(f"{op}: channels={channels} makes a channel multiplier of "
                                  f"{want_in} but weight has {w_in} (weight {wtext})", 1)
            return channels, tuple(kernel_size)
        if not same_dim(w_out, channels):
            raise OpTypeError(f"{op}: channels={channels} but weight has {w_out} output channels "
                              f"(weight {wtext})", 1)
    elif channels is not None and not same_dim(w_out, channels):
        raise OpTypeError(f"{op}: channels={channels} but weight has {w_out} output channels "
                          f"(weight {wtext})", 1)
    if known(w_out) and w_out % groups and not depthwise:
        raise OpTypeError(f"{op}: weight has {w_out} output channels, which groups={groups} does "
                          f"not divide (weight {wtext})", 1)
    per_group: Dim = in_c // groups if known(in_c) else ANY
    if not same_dim(per_group, w_in):
        if groups > 1:
            msg = (f"{op}: data has {in_c} channels, {per_group} per group with groups={groups}, "
                   f"but weight expects {w_in} per group")
        else:
            msg = f"{op}: data has {in_c} channels but weight expects {w_in}"
        raise OpTypeError(f"{msg} (data {dtext}, weight {wtext})", 1)
    out_c = channels if channels is not None else w_out
    return out_c, tuple(kernel_size) if kernel_size is not None else wkernel


def spatial_out(spec: ConvSpec, plan: ConvPlan, i: int, axis: str, size: Dim, kernel: Dim) -> Dim:
    if not known(size, kernel):
        return ANY
    s, dil = plan.strides[i], plan.dilation[i]
    pads = plan.pad_before[i] + plan.pad_after[i]
    span = dil * (kernel - 1) + 1
    if spec.transpose:
        out = s * (size - 1) + span - pads + plan.output_padding[i]
        if out < 1:
            raise OpTypeError(f"{spec.name}: output {axis} would be {out}: input {size}, stride {s}, "
                              f"kernel {kernel} (dilated {span}) and padding {pads} in total")
        return out
    if size + pads < span:
        raise OpTypeError(f"{spec.name}: the kernel does not fit along {axis}: input {size} with "
                          f"padding {plan.pad_before[i]}+{plan.pad_after[i]} is smaller than the "
                          f"kernel extent {kernel}" + (f" dilated to {span}" if dil > 1 else ""))
    return (size + pads - span) // s + 1


# ---- numpy


def _acc_dtype(out_dtype: str, *inputs: np.ndarray) -> np.dtype:
    """The dtype to multiply and sum in: float32 for float16/32, float64 when any side is
    float64, float64 or int64 for integers (float64 only while it is exact)."""
    out = np.dtype(out_dtype)
    if out.kind == "f" or any(x.dtype.kind == "f" for x in inputs):
        wide = out == np.float64 or any(x.dtype == np.float64 for x in inputs)
        return np.dtype(np.float64 if wide else np.float32)
    return np.dtype(np.int64)


def _exact_in_float64(a: np.ndarray, b: np.ndarray, terms: int) -> bool:
    if a.size == 0 or b.size == 0:
        return True
    bound = float(np.abs(a).max(initial=0)) * float(np.abs(b).max(initial=0)) * max(terms, 1)
    return bound < 2.0 ** 53


def accumulate_matmul(a: np.ndarray, b: np.ndarray, out_dtype: str) -> np.ndarray:
    """np.matmul with TVM's accumulation: exact for integers (wrapping to out_dtype)."""
    acc = _acc_dtype(out_dtype, a, b)
    if acc.kind == "i":
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        if _exact_in_float64(a64, b64, a.shape[-1] if a.ndim else 1):
            r = np.matmul(a64.astype(np.float64), b64.astype(np.float64))
            r = np.rint(r).astype(np.int64)
        else:
            r = np.matmul(a64, b64)
        return r.astype(out_dtype)
    r = np.matmul(a.astype(acc, copy=False), b.astype(acc, copy=False))
    with np.errstate(over="ignore", invalid="ignore"):  # float16 overflow gives inf, as in TVM
        return r.astype(out_dtype, copy=False)


def conv_nd(x: np.ndarray, w: np.ndarray, strides, pad_before, pad_after, dilation, groups: int,
            out_dtype: str) -> np.ndarray:
    """Convolution (cross-correlation) in canonical layouts: x (N, C, *S), w (O, C/groups, *K)
    -> (N, O, *S_out).  im2col over a strided view, one matrix product per group."""
    n = x.ndim - 2
    N, C = x.shape[:2]
    O, Cg = w.shape[:2]
    K = w.shape[2:]
    G = groups
    Og = O // G
    if any(pad_before) or any(pad_after):
        x = np.pad(x, [(0, 0), (0, 0)] + [(pad_before[i], pad_after[i]) for i in range(n)])
    S = x.shape[2:]
    So = tuple((S[i] - dilation[i] * (K[i] - 1) - 1) // strides[i] + 1 for i in range(n))
    xs = x.strides
    view = np.lib.stride_tricks.as_strided(
        x,
        shape=(N, G, Cg) + tuple(K) + So,
        strides=(xs[0], Cg * xs[1], xs[1]) + tuple(dilation[i] * xs[2 + i] for i in range(n))
        + tuple(strides[i] * xs[2 + i] for i in range(n)),
        writeable=False,
    )
    # (G, Cg, *K, N, *So) -> (G, Cg*prod(K), N*prod(So)): the one copy im2col makes
    order = (1, 2) + tuple(3 + i for i in range(n)) + (0,) + tuple(3 + n + i for i in range(n))
    kc = Cg * int(np.prod(K, dtype=np.int64))
    p = N * int(np.prod(So, dtype=np.int64))
    cols = view.transpose(order).reshape(G, kc, p)
    wg = w.reshape(G, Og, kc)
    out = accumulate_matmul(wg, cols, out_dtype)  # (G, Og, N*P)
    out = out.reshape((G, Og, N) + So)
    out = np.moveaxis(out, 2, 0).reshape((N, O) + So)
    return np.ascontiguousarray(out)


def conv_transpose_nd(x: np.ndarray, w: np.ndarray, strides, pad_before, pad_after, dilation,
                      output_padding, groups: int, out_dtype: str) -> np.ndarray:
    """Transposed convolution in canonical layouts: x (N, C, *S), w (C, O/groups, *K).

    Every input element scatters x * w into out[i*stride + k*dilation - pad_before]; the
    output extent is stride*(S-1) + dilation*(K-1) + 1 - pads + output_padding."""
    n = x.ndim - 2
    N, C = x.shape[:2]
    S = x.shape[2:]
    Og = w.shape[1]
    K = w.shape[2:]
    G = groups
    Cg = C // G
    P = int(np.prod(S, dtype=np.int64))
    nk = int(np.prod(K, dtype=np.int64))
    # contributions[g, o, k, n, p] = sum_c w[g, c, o, k] * x[n, g, c, p]
    wg = w.reshape(G, Cg, Og * nk).transpose(0, 2, 1)  # (G, Og*nk, Cg)
    xg = x.reshape(N, G, Cg, P).transpose(1, 2, 0, 3).reshape(G, Cg, N * P)
    contrib = accumulate_matmul(wg, xg, _acc_name(out_dtype, x, w))
    contrib = contrib.reshape((G, Og) + tuple(K) + (N,) + tuple(S))
    full_len = tuple(strides[i] * (S[i] - 1) + dilation[i] * (K[i] - 1) + 1 for i in range(n))
    out_len = tuple(full_len[i] - pad_before[i] - pad_after[i] + output_padding[i] for i in range(n))
    extent = tuple(max(full_len[i], pad_before[i] + out_len[i]) for i in range(n))
    full = np.zeros((N, G, Og) + extent, dtype=contrib.dtype)
    src = np.moveaxis(contrib, 2 + n, 0)  # (N, G, Og, *K, *S)
    for k in itertools.product(*(range(kk) for kk in K)):
        region = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + strides[i] * (S[i] - 1) + 1,
                             strides[i]) for i in range(n))
        full[(slice(None),) * 3 + region] += src[(slice(None),) * 3 + k]
    crop = tuple(slice(pad_before[i], pad_before[i] + out_len[i]) for i in range(n))
    out = full[(slice(None),) * 3 + crop].reshape((N, G * Og) + out_len)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(out).astype(out_dtype, copy=False)


def _acc_name(out_dtype: str, *inputs: np.ndarray) -> str:
    """The dtype partial results are kept in before the final cast (sums of partial sums
    stay exact for integers: int64)."""
    return str(_acc_dtype(out_dtype, *inputs))


def _conv_compute(spec: ConvSpec):
    def compute(data, weight, attrs):
        plan = conv_plan(spec, attrs)
        out_dtype = result_dtype(attrs, str(data.dtype))
        x = to_canonical(data, plan.data_layout, spec.data_canonical)
        w = to_canonical(weight, plan.kernel_layout, spec.kernel_canonical)
        if spec.transpose:
            out = conv_transpose_nd(x, w, plan.strides, plan.pad_before, plan.pad_after,
                                    plan.dilation, plan.output_padding, plan.groups, out_dtype)
        else:
            C = x.shape[1]
            if is_depthwise(plan.groups, C, w.shape[0]) and w.shape[1] != 1:
                # (C, multiplier, *K): output channel c*m + j reads input c with w[c, j]
                w = w.reshape((C * w.shape[1], 1) + w.shape[2:])
            out = conv_nd(x, w, plan.strides, plan.pad_before, plan.pad_after, plan.dilation,
                          plan.groups, out_dtype)
        return from_canonical(out, plan.out_layout, spec.data_canonical)

    return compute


def _conv_attrs(spec: ConvSpec) -> tuple[Attr, ...]:
    n = spec.ndim
    ones, zeros = (1,) * n, (0,) * n
    pad_default = (0, 0) if n == 1 and not spec.transpose else zeros
    pad_doc = {1: "1 value for both sides or [left, right]",
               2: "1 value for all sides, [h, w] on both sides, or [top, left, bottom, right]",
               3: "1 value, [d, h, w] on both sides, or [front, top, left, back, bottom, right]"}[n]
    common_head = (
        Attr("strides", INTS, ones, "the step of the window along each spatial axis"),
    )
    window = (
        Attr("padding", INTS, pad_default, "implicit zero padding: " + pad_doc),
        Attr("dilation", INTS, ones, "the spacing between kernel elements"),
        Attr("groups", INT, 1, "split the channels into this many independent convolutions"),
    )
    channels = Attr("channels", OPT_INT, None, "the number of output channels (default: from weight)")
    kernel_size = Attr("kernel_size", OPT_INTS, None, "the kernel extents (default: from weight)")
    layouts = (
        Attr("data_layout", STR, spec.data_canonical, "the layout of data"),
        Attr("kernel_layout", STR, spec.kernel_canonical, "the layout of weight"),
        Attr("out_layout", STR, "", "the layout of the result (default: data_layout)"),
        Attr("out_dtype", STR, "", "the result dtype (default: data's dtype)"),
    )
    if spec.transpose:
        return (channels, kernel_size) + common_head + (
            Attr("output_padding", INTS, zeros, "extra rows/columns added at the end of the output"),
        ) + window + layouts
    return common_head + window + (channels, kernel_size) + layouts


def _define_conv(spec: ConvSpec, doc: str, canonical_spec: ConvSpec | None = None):
    opdef = define(spec.name, ("data", "weight"), OUT_EWISE_FUSABLE,
                   attrs=_conv_attrs(canonical_spec or spec), doc=doc)
    opdef.relation(_conv_relation(spec))
    opdef.reference(_conv_compute(spec))
    return opdef


CONV1D = ConvSpec("nn.conv1d", "W")
CONV2D = ConvSpec("nn.conv2d", "HW")
CONV3D = ConvSpec("nn.conv3d", "DHW")
CONV1D_T = ConvSpec("nn.conv1d_transpose", "W", transpose=True)
CONV2D_T = ConvSpec("nn.conv2d_transpose", "HW", transpose=True)
CONV2D_NCHWC = ConvSpec("nn.contrib_conv2d_NCHWc", "HW")
DW_CONV2D_NCHWC = ConvSpec("nn.contrib_depthwise_conv2d_NCHWc", "HW")

conv1d = _define_conv(CONV1D, "1-D convolution: data (N, C, W), weight (O, C/groups, K) -> "
                      "(N, O, (W + pads - dilation*(K-1) - 1) // stride + 1).")
conv2d = _define_conv(CONV2D, "2-D convolution: data (N, C, H, W), weight (O, C/groups, KH, KW) -> "
                      "(N, O, H', W'), H' = (H + pad_top + pad_bottom - dilation*(KH-1) - 1) // "
                      "stride + 1.  Any layout of N, C, H, W (NHWC, NCHW8c) and of O, I, H, W "
                      "(HWIO, OHWI, HWOI) is accepted.")
conv3d = _define_conv(CONV3D, "3-D convolution: data (N, C, D, H, W), weight (O, C/groups, KD, KH, KW) "
                      "-> (N, O, D', H', W'), each by the convolution rule.")
conv1d_transpose = _define_conv(CONV1D_T, "Transposed 1-D convolution (deconvolution): data (N, C, W), "
                                "weight (C, O/groups, K) -> (N, O, (W-1)*stride + dilation*(K-1) + 1 "
                                "- pads + output_padding).")
conv2d_transpose = _define_conv(CONV2D_T, "Transposed 2-D convolution (deconvolution): data "
                                "(N, C, H, W), weight (C, O/groups, KH, KW) -> (N, O, H', W'), H' = "
                                "(H-1)*stride + dilation*(KH-1) + 1 - pad_top - pad_bottom + "
                                "output_padding.")
contrib_conv2d_NCHWc = _define_conv(
    CONV2D_NCHWC, "2-D convolution on channel-blocked layouts (after AlterOpLayout): data "
    "NCHW[x]c (N, C/x, H, W, x), weight OIHW[x]i[y]o (O/y, I/x, KH, KW, x, y) -> "
    "NCHW[y]c.  Same arithmetic as nn.conv2d.", CONV2D)
contrib_depthwise_conv2d_NCHWc = _define_conv(
    DW_CONV2D_NCHWC, "Depthwise 2-D convolution on channel-blocked layouts: data NCHW[x]c, "
    "weight OIHW1i[y]o, groups = channels.", CONV2D)


CONV_SPECS = {s.name: s for s in (CONV1D, CONV2D, CONV3D, CONV1D_T, CONV2D_T)}


def weight_type(op_name: str, data: TensorType, attrs) -> TensorType | None:
    """The weight type TVM derives when the weight's own type is unknown (a constant
    without its metadata, a free variable): from data and `channels` + `kernel_size` for
    the convolutions (groups=1 only: TVM wants the weight for grouped ones), from `units`
    for nn.dense / nn.matmul.  None when it cannot be derived.  `attrs` is normalized or
    as parsed."""
    opdef = get_op(op_name)
    if opdef is None or not isinstance(data, TensorType):
        return None
    if not isinstance(attrs, OpAttrs):
        attrs = opdef.normalize_attrs(attrs)
    if op_name in ("nn.dense", "nn.matmul"):
        if attrs.units is None or data.ndim == 0:
            return None
        transpose_a = getattr(attrs, "transpose_a", False)
        transpose_b = getattr(attrs, "transpose_b", True)
        if transpose_a and data.ndim < 2:
            return None
        k = dims(data)[-2 if transpose_a else -1]
        return TensorType((attrs.units, k) if transpose_b else (k, attrs.units), data.dtype)
    spec = CONV_SPECS.get(op_name)
    if spec is None or attrs.channels is None or attrs.kernel_size is None or attrs.groups != 1:
        return None
    plan = conv_plan(spec, attrs)
    if data.ndim != len(plan.data_layout.axes):
        return None
    in_c = forward_shape(plan.data_layout, dims(data), spec.data_canonical)[1]
    ks = int_list(spec.name, "kernel_size", attrs.kernel_size, spec.ndim)
    canonical = (in_c, attrs.channels) if spec.transpose else (attrs.channels, in_c)
    return TensorType(backward_shape(plan.kernel_layout, canonical + ks, spec.kernel_canonical),
                      data.dtype)


# --------------------------------------------------------------------------------------
# dense, matmul, batch_matmul

_UNITS = Attr("units", OPT_INT, None, "the number of output features (default: from weight)")
_OUT_DTYPE = Attr("out_dtype", STR, "", "the result dtype (default: the first input's dtype)")
_TRANSPOSE_A = Attr("transpose_a", BOOL, False, "the first input holds its last two axes swapped")
_TRANSPOSE_B = Attr("transpose_b", BOOL, False, "the second input holds its last two axes swapped")


def _matmul_relation(op: str, a_name: str, b_name: str, transpose_a: bool, transpose_b: bool,
                     a: TensorType, b: TensorType, attrs: OpAttrs) -> TensorType:
    """TVM's MatmulRel: a (..., M, K) (or (..., K, M) transposed), b (K, U) (or (U, K))."""
    if a.ndim == 0 or (transpose_a and a.ndim < 2):
        need = "at least 2 dimensions with transpose_a" if transpose_a else "at least 1 dimension"
        raise OpTypeError(f"{op}: {a_name} must have {need}, found {type_text(a)}", 0)
    ashape = dims(a)
    reduce = ashape[-2] if transpose_a else ashape[-1]
    oshape = list(ashape)
    if transpose_a:
        oshape[-2] = ashape[-1]
    units = attrs.units
    if units is not None and units < 1:
        raise AttrError(f"{op}: units must be positive, got units={units}", "units")
    if b.ndim != 2:
        raise OpTypeError(f"{op}: {b_name} must be 2-D, found {type_text(b)}", 1)
    bshape = dims(b)
    b_units, b_reduce = (bshape[0], bshape[1]) if transpose_b else (bshape[1], bshape[0])
    if units is not None and not same_dim(b_units, units):
        raise OpTypeError(f"{op}: units={units} but {b_name} has {b_units} output features "
                          f"({b_name} {type_text(b)})", 1)
    if not same_dim(reduce, b_reduce):
        where = "second-to-last dimension" if transpose_a else "last dimension"
        raise OpTypeError(f"{op}: {a_name} has {reduce} input features ({where}) but {b_name} "
                          f"expects {b_reduce} ({a_name} {type_text(a)}, {b_name} {type_text(b)})", 1)
    oshape[-1] = units if units is not None else b_units
    return TensorType(tuple(oshape), result_dtype(attrs, a.dtype))


dense = define("nn.dense", ("data", "weight"), OUT_EWISE_FUSABLE, attrs=(_UNITS, _OUT_DTYPE),
               doc="Fully connected layer, data @ weight^T: data (..., K), weight (units, K) -> "
                   "(..., units).")


@dense.relation
def _(data, weight, attrs):
    a = tensor(data, "nn.dense: data", 0)
    b = tensor(weight, "nn.dense: weight", 1)
    return _matmul_relation("nn.dense", "data", "weight", False, True, a, b, attrs)


@dense.reference
def _(data, weight, attrs):
    return accumulate_matmul(data, weight.T, result_dtype(attrs, str(data.dtype)))


_WEIGHT_LAYOUT = Attr("weight_layout", STR, "NC", "the packed weight's layout, NC[x]n: (units/x, K, x)")

dense_pack = define("nn.contrib_dense_pack", ("data", "weight"), OUT_EWISE_FUSABLE,
                    attrs=(_UNITS, _OUT_DTYPE, _WEIGHT_LAYOUT),
                    doc="nn.dense on a packed weight (after AlterOpLayout): data (M, K), weight "
                        "(units/x, K, x) in layout NC[x]n -> (M, units); out[i, j] = sum_k "
                        "data[i, k] * weight[j // x, k, j % x].")


def dense_pack_block(weight_layout: str) -> int | None:
    """x of an `NC[x]n` weight layout, None for any other layout."""
    m = re.fullmatch(r"NC(\d+)n", weight_layout)
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


@dense_pack.relation
def _(data, weight, attrs):
    """TVM's DensePackRel (2-D data, 3-D weight; the 4-D int8 VNNI packing is not done
    here), with the reduction lengths and the layout's block checked."""
    op = "nn.contrib_dense_pack"
    a = tensor(data, f"{op}: data", 0)
    b = tensor(weight, f"{op}: weight", 1)
    if a.ndim != 2:
        raise OpTypeError(f"{op}: data must be 2-D, found {type_text(a)}", 0)
    if b.ndim != 3:
        raise OpTypeError(f"{op}: weight must be 3-D (units/x, K, x), found {type_text(b)}", 1)
    block = dense_pack_block(attrs.weight_layout)
    if block is None:
        raise AttrError(f"{op}: weight_layout must be NC[x]n, got \"{attrs.weight_layout}\"", "weight_layout")
    ash, bsh = dims(a), dims(b)
    if known(bsh[2]) and bsh[2] != block:
        raise OpTypeError(f"{op}: weight_layout {attrs.weight_layout} packs {block} units per block "
                          f"but weight has {bsh[2]} ({type_text(b)})", 1)
    if not same_dim(ash[1], bsh[1]):
        raise OpTypeError(f"{op}: data has {ash[1]} input features but weight expects {bsh[1]} "
                          f"(data {type_text(a)}, weight {type_text(b)})", 1)
    units = mul(bsh[0], bsh[2])
    if attrs.units is not None and known(units) and units != attrs.units:
        raise OpTypeError(f"{op}: units={attrs.units} but weight packs {units} ({type_text(b)})", 1)
    return TensorType((ash[0], units), result_dtype(attrs, a.dtype))


@dense_pack.reference
def _(data, weight, attrs):
    unpacked = weight.transpose(0, 2, 1).reshape(-1, weight.shape[1])
    return accumulate_matmul(data, unpacked.T, result_dtype(attrs, str(data.dtype)))


matmul = define("nn.matmul", ("tensor_a", "tensor_b"), OUT_EWISE_FUSABLE,
                attrs=(_UNITS, _OUT_DTYPE, _TRANSPOSE_A, _TRANSPOSE_B),
                doc="Matrix product a @ b with optional transposes: a (..., M, K) (transpose_a: "
                    "(..., K, M)), b (K, N) (transpose_b: (N, K)) -> (..., M, N).")


@matmul.relation
def _(tensor_a, tensor_b, attrs):
    a = tensor(tensor_a, "nn.matmul: tensor_a", 0)
    b = tensor(tensor_b, "nn.matmul: tensor_b", 1)
    return _matmul_relation("nn.matmul", "tensor_a", "tensor_b", attrs.transpose_a, attrs.transpose_b,
                            a, b, attrs)


@matmul.reference
def _(a, b, attrs):
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    if attrs.transpose_b:
        b = b.T
    return accumulate_matmul(a, b, result_dtype(attrs, str(a.dtype)))


batch_matmul = define("nn.batch_matmul", ("tensor_a", "tensor_b"), OUT_EWISE_FUSABLE,
                      attrs=(_OUT_DTYPE, _TRANSPOSE_A, _TRANSPOSE_B),
                      doc="Batched matrix product: a (B, M, K) (transpose_a: (B, K, M)), b (B, K, N) "
                          "(transpose_b: (B, N, K)) -> (B, M, N); a batch of 1 broadcasts.  The "
                          "Python API passes transpose_b=True.")


@batch_matmul.relation
def _(tensor_a, tensor_b, attrs):
    op = "nn.batch_matmul"
    a = tensor(tensor_a, f"{op}: tensor_a", 0)
    b = tensor(tensor_b, f"{op}: tensor_b", 1)
    for i, (name, t) in enumerate((("tensor_a", a), ("tensor_b", b))):
        if t.ndim != 3:
            raise OpTypeError(f"{op}: {name} must be 3-D, found {type_text(t)}", i)
    ash, bsh = dims(a), dims(b)
    ab, am, ak = ash[0], (ash[2] if attrs.transpose_a else ash[1]), (ash[1] if attrs.transpose_a else ash[2])
    bb, bk, bn = bsh[0], (bsh[2] if attrs.transpose_b else bsh[1]), (bsh[1] if attrs.transpose_b else bsh[2])
    if known(ab, bb) and ab != bb and 1 not in (ab, bb):
        raise OpTypeError(f"{op}: batch dimensions differ: tensor_a has {ab} and tensor_b has {bb} "
                          f"(tensor_a {type_text(a)}, tensor_b {type_text(b)})", 1)
    if not same_dim(ak, bk):
        raise OpTypeError(f"{op}: tensor_a has {ak} columns to reduce but tensor_b has {bk} "
                          f"(tensor_a {type_text(a)}, tensor_b {type_text(b)}, "
                          f"transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})", 1)
    batch = max(ab, bb) if known(ab, bb) else ANY  # type: ignore[type-var]
    return TensorType((batch, am, bn), result_dtype(attrs, a.dtype))


@batch_matmul.reference
def _(a, b, attrs):
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    if attrs.transpose_b:
        b = np.swapaxes(b, -1, -2)
    return accumulate_matmul(a, b, result_dtype(attrs, str(a.dtype)))
