"""Pools, Pad and Resize.

MaxPool/AveragePool become `nn.max_pool{1,2,3}d` / `nn.avg_pool{1,2,3}d`; the global pools
`nn.global_avg_pool2d` / `nn.global_max_pool2d` on 4-D inputs and a keepdims reduction
otherwise.  Resize (and the older Upsample) becomes `image.resize2d` on NCHW tensors and
`image.resize1d` on NCW ones, with the output size known before run time: from `sizes`,
or floor(extent × scale).  Only the resized axes need static extents: `scales` of 1 keep
an unknown batch (a model exported with a dynamic batch axis) unknown.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Expr
from ...ir.types import ANY
from ...ops.pooling_geometry import COORDINATE_MODES, PAD_MODES
from .builder import call, rank, scalar, shape, static_shape
from .context import NodeContext
from .errors import NodeError
from .registry import converter
from .windows import read_window

POOLS = {"MaxPool": "nn.max_pool", "AveragePool": "nn.avg_pool"}


@converter(*POOLS)
def _(ctx: NodeContext) -> Expr:
    return pool(ctx, ctx.input(0), ctx.op_type)


def pool(ctx: NodeContext, x: Expr, kind: str) -> Expr:
    """The `kind` pool (MaxPool or AveragePool) of x, with the node's window attributes."""
    window = read_window(ctx, x)
    if window.ndim > 3:
        raise NodeError(f"{window.ndim}-D pooling is not supported")
    ceil_mode = bool(ctx.attrs.int("ceil_mode", 0)) and _ceil_adds_window(x, window)
    attrs = dict(pool_size=window.kernel, strides=window.strides, dilation=window.dilations,
                 padding=window.pads, ceil_mode=ceil_mode)
    if kind == "MaxPool":
        if ctx.attrs.int("storage_order", 0):
            raise NodeError("storage_order=1 is not supported")
    else:
        attrs["count_include_pad"] = bool(ctx.attrs.int("count_include_pad", 0))
    return call(f"{POOLS[kind]}{window.ndim}d", x, **attrs)


def _ceil_adds_window(x: Expr, window) -> bool:
    """Whether ceil_mode gives any axis an extra window.  ONNX drops a last window that
    would start in the end padding; Relay's ceil_mode keeps it, so where every extra
    window starts there, rounding down gives ONNX's result."""
    extents = shape(x)[2:]
    if any(not isinstance(e, int) for e in extents):
        return True
    kept, dropped = False, False
    for i, extent in enumerate(extents):
        n = window.ndim
        span = extent + window.pads[i] + window.pads[n + i] - (window.kernel[i] - 1) * window.dilations[i] - 1
        if span % window.strides[i] == 0:
            continue  # ceil and floor agree on this axis
        last_start = (span // window.strides[i] + 1) * window.strides[i]
        if last_start < extent + window.pads[i]:
            kept = True
        else:
            dropped = True
    if kept and dropped:
        raise NodeError("ceil_mode=1 here keeps the last window on one axis and drops it on another, "
                        "which Relay's pools cannot express")
    return kept


@converter("GlobalAveragePool", "GlobalMaxPool")
def _(ctx: NodeContext) -> Expr:
    return global_pool(ctx.input(0), ctx.op_type == "GlobalAveragePool")


def global_pool(x: Expr, average: bool) -> Expr:
    if rank(x) == 4:
        return call("nn.global_avg_pool2d" if average else "nn.global_max_pool2d", x)
    if rank(x) < 3:
        raise NodeError(f"the input needs a spatial axis, found rank {rank(x)}")
    return call("mean" if average else "max", x, axis=tuple(range(2, rank(x))), keepdims=True)


# --- Pad (the modes nn.pad knows) -----------------------------------------------------------


@converter("Pad")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    n = rank(x)
    mode = ctx.attrs.string("mode", "constant")
    if mode not in PAD_MODES:
        raise NodeError(f"mode={mode} is not supported ({', '.join(PAD_MODES)})")
    if ctx.opset < 11:
        pads = ctx.attrs.ints("pads" if ctx.opset >= 2 else "paddings")
        value = scalar(ctx.attrs.float("value", 0.0), x)
    else:
        pads = tuple(int(p) for p in ctx.value(1, "pads"))
        given = ctx.optional(2)
        value = scalar(0, x) if given is None else _scalar_of(given)
    given = ctx.maybe_value(3, "axes") if ctx.opset >= 18 else None
    axes = tuple(range(n)) if given is None else tuple(int(a) % n for a in given)
    if len(pads) != 2 * len(axes):
        raise NodeError(f"pads has {len(pads)} values for {len(axes)} axes")
    width = [[0, 0] for _ in range(n)]
    for k, axis in enumerate(axes):
        width[axis] = [pads[k], pads[len(axes) + k]]
    return call("nn.pad", x, value, pad_width=width, pad_mode=mode)


def _scalar_of(value: Expr) -> Expr:
    """A one-element tensor as a scalar (ONNX allows shape [1] for constant_value)."""
    dims = shape(value)
    return value if not dims else call("reshape", value, newshape=())


# --- Resize -------------------------------------------------------------------------------------

MODES = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic", "bilinear": "linear"}


@converter("Resize", "Upsample")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    dims = shape(x)
    if ANY in dims[2:]:
        static_shape(x, f"{ctx.op_type} (on its resized axes)")
    if len(dims) not in (3, 4):
        raise NodeError(f"only 3-D (NCW) and 4-D (NCHW) inputs are supported, found rank {len(dims)}")
    n = len(dims)
    mode = ctx.attrs.string("mode", "nearest")
    method = MODES.get(mode)
    if method is None:
        raise NodeError(f"mode={mode} is not supported")
    if ctx.attrs.int("antialias", 0):
        raise NodeError("antialias=1 is not supported")
    old = ctx.op_type == "Upsample" or ctx.opset < 11
    size = _output_size(ctx, dims, old)
    coordinates = "asymmetric" if old else ctx.attrs.string("coordinate_transformation_mode", "half_pixel")
    if coordinates not in COORDINATE_MODES:  # those image.resize1d/2d know
        raise NodeError(f"coordinate_transformation_mode={coordinates} is not supported")
    attrs = dict(size=size[2:], layout="NCHW" if n == 4 else "NCW", method=method,
                 coordinate_transformation_mode=coordinates)
    if not old:
        rounding = ctx.attrs.string("nearest_mode", "round_prefer_floor") if mode == "nearest" else ""
        attrs.update(rounding_method=rounding,
                     cubic_alpha=ctx.attrs.float("cubic_coeff_a", -0.75),
                     cubic_exclude=ctx.attrs.int("exclude_outside", 0),
                     extrapolation_value=ctx.attrs.float("extrapolation_value", 0.0))
        if coordinates == "tf_crop_and_resize":
            roi = _per_axis(ctx, ctx.value(1, "roi").astype(float).tolist(), [0.0] * n + [1.0] * n, pairs=True)
            attrs["roi"] = tuple(roi[2:n]) + tuple(roi[n + 2:])  # the starts, then the ends, of the resized axes
    return call("image.resize2d" if n == 4 else "image.resize1d", x, **attrs)


def _output_size(ctx: NodeContext, dims: tuple[int, ...], old: bool) -> list[int]:
    """The extent of every axis after resizing: from `sizes` (adjusted by
    keep_aspect_ratio_policy), else floor(extent × scale)."""
    if ctx.op_type == "Upsample" and ctx.opset < 9:
        scales, sizes = list(ctx.attrs.floats("scales")), None
    elif old:
        scales, sizes = ctx.value(1, "scales").tolist(), None
    else:
        found = ctx.maybe_value(2, "scales")
        scales = None if found is None or found.size == 0 else found.tolist()
        found = ctx.maybe_value(3, "sizes")
        sizes = None if found is None else [int(s) for s in found]
    if sizes is not None:
        if ANY in dims:  # sizes must then say an extent only run time knows
            static_shape(ctx.input(0), f"{ctx.op_type} with sizes")
        sizes = _per_axis(ctx, sizes, list(dims))
        policy = ctx.attrs.string("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            axes = _axes(ctx, len(dims))
            ratios = [sizes[a] / dims[a] for a in axes]
            if policy not in ("not_larger", "not_smaller"):
                raise NodeError(f"keep_aspect_ratio_policy={policy} is not supported")
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            sizes = [int(scale * d + 0.5) if a in axes else d for a, d in enumerate(dims)]
    elif scales is not None:
        scales = _per_axis(ctx, scales, [1.0] * len(dims))
        if any(d is ANY and s != 1 for d, s in zip(dims, scales)):
            raise NodeError(f"resizing the N or C axis ({list(dims)} by {scales}) is not supported")
        sizes = [d if d is ANY else int(np.floor(d * np.float32(s))) for d, s in zip(dims, scales)]
    else:
        raise NodeError("one of scales and sizes is required")
    if tuple(sizes[:2]) != dims[:2]:
        raise NodeError(f"resizing the N or C axis ({list(dims)} to {sizes}) is not supported")
    return sizes


def _axes(ctx: NodeContext, n: int) -> list[int]:
    return [a % n for a in ctx.attrs.ints("axes", tuple(range(n)))]


def _per_axis(ctx: NodeContext, values: list, full: list, pairs: bool = False) -> list:
    """Values given for the axes of the `axes` attribute, spread over all the axes (for
    roi, the starts then the ends)."""
    n = len(full) // 2 if pairs else len(full)
    axes = _axes(ctx, n)
    count = len(axes) * (2 if pairs else 1)
    if len(values) != count:
        raise NodeError(f"expected {count} values for axes {axes}, found {len(values)}")
    out = list(full)
    for k, axis in enumerate(axes):
        out[axis] = values[k]
        if pairs:
            out[n + axis] = values[len(axes) + k]
    return out


@converter("LpPool")
def _(ctx: NodeContext) -> Expr:
    """(Σ |x|^p)^(1/p) over each window: an average pool that counts the padding, times
    the window size."""
    x = ctx.input(0)
    window = read_window(ctx, x)
    if window.ndim > 3:
        raise NodeError(f"{window.ndim}-D pooling is not supported")
    p = ctx.attrs.int("p", 2)
    powered = call("power", call("abs", x), scalar(p, x))
    ceil_mode = bool(ctx.attrs.int("ceil_mode", 0)) and _ceil_adds_window(x, window)
    mean = call(f"nn.avg_pool{window.ndim}d", powered, pool_size=window.kernel, strides=window.strides,
                dilation=window.dilations, padding=window.pads, ceil_mode=ceil_mode, count_include_pad=True)
    total = call("multiply", mean, scalar(int(np.prod(window.kernel)), x))
    return call("power", total, scalar(1 / p, x))
