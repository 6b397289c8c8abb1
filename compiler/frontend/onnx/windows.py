"""Sliding-window attributes shared by Conv, ConvTranspose and the pools.

ONNX writes pads as `[x1_begin, x2_begin, ..., x1_end, x2_end, ...]`, which is also the
2·n-value padding convention of Relay's convolutions and pools.  `auto_pad` (SAME_UPPER,
SAME_LOWER, VALID) is resolved here into explicit pads; SAME needs the static extents
of the spatial axes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.expr import Expr
from .builder import shape
from .context import NodeContext
from .errors import NodeError

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(frozen=True)
class Window:
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]  # 2 * n values: all befores, then all afters

    @property
    def ndim(self) -> int:
        return len(self.kernel)


def read_window(ctx: NodeContext, x: Expr, kernel: tuple[int, ...] | None = None) -> Window:
    """The window of a Conv or pool over `x` (N, C, spatial...); `kernel` from the weight,
    when the node may leave `kernel_shape` out."""
    n = len(shape(x)) - 2
    if n < 1:
        raise NodeError(f"the input needs a batch, a channel and a spatial axis, found rank {n + 2}")
    kernel = ctx.attrs.ints("kernel_shape", kernel)
    if kernel is None:
        raise NodeError("attribute kernel_shape is required")
    if len(kernel) != n:
        raise NodeError(f"kernel_shape {list(kernel)} does not fit {n} spatial axes")
    strides = ctx.attrs.ints("strides", (1,) * n)
    dilations = ctx.attrs.ints("dilations", (1,) * n)
    pads = ctx.attrs.ints("pads", (0,) * (2 * n))
    for name, values, length in (("strides", strides, n), ("dilations", dilations, n), ("pads", pads, 2 * n)):
        if len(values) != length:
            raise NodeError(f"{name} {list(values)} should have {length} values")
    auto_pad = ctx.attrs.string("auto_pad", "NOTSET")
    if auto_pad not in AUTO_PADS:
        raise NodeError(f"auto_pad={auto_pad} is not supported")
    if auto_pad == "VALID":
        pads = (0,) * (2 * n)
    elif auto_pad.startswith("SAME"):
        pads = same_pads(x, kernel, strides, dilations, auto_pad == "SAME_UPPER")
    return Window(kernel, strides, dilations, pads)


def same_pads(x: Expr, kernel, strides, dilations, upper: bool) -> tuple[int, ...]:
    """Pads that give ceil(extent / stride) outputs, the odd one at the end (SAME_UPPER) or
    at the beginning (SAME_LOWER)."""
    extents = shape(x)[2:]
    before, after = [], []
    for extent, k, s, d in zip(extents, kernel, strides, dilations):
        if not isinstance(extent, int):
            raise NodeError("auto_pad=SAME needs static spatial extents; fix them with --shape")
        out = -(-extent // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - extent)
        small, large = total // 2, total - total // 2
        before.append(small if upper else large)
        after.append(large if upper else small)
    return (*before, *after)
