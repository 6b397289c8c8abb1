"""The geometry of the pooling, padding and resizing ops, shared by their relations and
numpy references (pooling.py) and their compute rules (lower/te/topi/pooling.py): layouts
by letter, the sliding window, adaptive cells, pad widths, resize checks and sizes, and
the resize arithmetic itself (source coordinates, cubic weights).

The resize arithmetic is written once for both sides: `source_coord` and `cubic_weights`
take the index or fraction `x` (a float32 numpy array, or a tensor expression) and a
`const` that makes a float32 constant of the same kind (`np.float32`, or `te.const` at
float32), and use only `+ - * /` on them, so the reference and the compiled kernel round
alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from ..lazy_modules import numpy as np
from ..ir.types import ANY, TensorType
from .registry import OpTypeError
from .shapes import dims, expand_padding, known, type_text


_LAYOUT = re.compile(r"(?:\d*[A-Za-z])+")


SPATIAL_LETTERS = {1: "W", 2: "HW", 3: "DHW"}


AXIS_NAMES = {"D": "depth", "H": "height", "W": "width"}


def layout_axes(op: str, layout: str) -> list[str]:
    """`NCHW16c` -> ['N', 'C', 'H', 'W', 'c'] (a split axis by its lowercase letter)."""
    if not _LAYOUT.fullmatch(layout):
        raise OpTypeError(f"{op}: '{layout}' is not a layout (expected letters such as NCHW or NHWC)")
    axes = re.findall(r"\d*([A-Za-z])", layout)
    if len(set(axes)) != len(axes):
        raise OpTypeError(f"{op}: layout {layout} names an axis twice")
    return axes


def spatial_axes(op: str, layout: str, letters: str, data: TensorType, attr: str = "layout") -> tuple[int, ...]:
    """The indices of the spatial axes `letters` (e.g. "HW") of `data` laid out as `layout`."""
    axes = layout_axes(op, layout)
    for letter in letters:
        if letter not in axes:
            raise OpTypeError(f"{op}: {attr} {layout} has no {letter} ({AXIS_NAMES.get(letter, letter)}) axis")
        if letter.lower() in axes:
            raise OpTypeError(f"{op}: {attr} {layout} splits the {letter} axis; {op} needs it whole")
    if len(axes) != data.ndim:
        raise OpTypeError(f"{op}: {attr} {layout} has {len(axes)} axes but data has rank {data.ndim} "
                          f"(data {type_text(data)})", 0)
    return tuple(axes.index(letter) for letter in letters)


def _values(op: str, values: tuple[int, ...], n: int, name: str, minimum: int) -> tuple[int, ...]:
    """An attribute list of n values (one value stands for all), each at least `minimum`."""
    if len(values) == 1 and n > 1:
        values = values * n
    if len(values) != n:
        raise OpTypeError(f"{op}: attribute {name} expects {n} value{'s' * (n != 1)}, got "
                          f"{len(values)} ({list(values)})")
    for v in values:
        if v < minimum:
            raise OpTypeError(f"{op}: attribute {name} must be {'positive' if minimum else 'non-negative'}, "
                              f"got {list(values)}")
    return tuple(values)


@dataclass(frozen=True)
class Window:
    axes: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilation: tuple[int, ...]
    before: tuple[int, ...]
    after: tuple[int, ...]
    ceil_mode: bool


def pool_window(op: str, nd: int, data: TensorType, attrs) -> Window:
    axes = spatial_axes(op, attrs.layout, SPATIAL_LETTERS[nd], data)
    kernel = _values(op, attrs.pool_size, nd, "pool_size", 1)
    strides = _values(op, attrs.strides, nd, "strides", 1)
    dilation = _values(op, attrs.dilation, nd, "dilation", 1)
    try:
        before, after = expand_padding(attrs.padding, nd, f"{op}: attribute padding")
    except OpTypeError as err:
        raise OpTypeError(f"{err.message} ({list(attrs.padding)})") from None
    if min(before + after) < 0:
        raise OpTypeError(f"{op}: attribute padding must be non-negative, got {list(attrs.padding)}")
    return Window(axes, kernel, strides, dilation, before, after, attrs.ceil_mode)


def adaptive_sizes(op: str, nd: int, data: TensorType, attrs) -> tuple[tuple[int, ...], tuple]:
    axes = spatial_axes(op, attrs.layout, SPATIAL_LETTERS[nd], data)
    size = tuple(attrs.output_size)
    if len(size) not in (0, 1, nd):
        raise OpTypeError(f"{op}: attribute output_size expects 0, 1 or {nd} values, got {len(size)} ({list(size)})")
    if any(s < 1 for s in size):
        raise OpTypeError(f"{op}: attribute output_size must be positive, got {list(size)}")
    out = tuple(data.shape[ax] for ax in axes) if not size else size * nd if len(size) == 1 else size
    return axes, out



def adaptive_cell(i: Any, n: int, o: int) -> tuple[Any, Any]:
    """Output cell i of o over an extent n covers [floor(i*n/o), ceil((i+1)*n/o)); `i` is
    an int or an index expression."""
    return (i * n) // o, ((i + 1) * n + o - 1) // o

PAD_MODES = ("constant", "edge", "reflect")


def pad_widths(data: TensorType, attrs) -> list[tuple[int, int]]:
    if attrs.pad_mode not in PAD_MODES:
        raise OpTypeError(f"nn.pad: attribute pad_mode is '{attrs.pad_mode}'; expected one of {', '.join(PAD_MODES)}")
    widths = attrs.pad_width
    if len(widths) != data.ndim:
        raise OpTypeError(f"nn.pad: pad_width has {len(widths)} pairs but data has rank {data.ndim} "
                          f"(data {type_text(data)})", 0)
    for i, pair in enumerate(widths):
        if len(pair) != 2:
            raise OpTypeError(f"nn.pad: pad_width[{i}] must be a pair [before, after], got {list(pair)}")
    return [tuple(p) for p in widths]  # type: ignore[misc]


METHODS = ("nearest_neighbor", "linear", "cubic")


COORDINATE_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize")


ROUNDING_METHODS = ("", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")



def int_div_shortcut(in_size: int, out_size: int) -> bool:
    """TVM replaces coordinate math by index division for an integer upscale."""
    ratio = np.float32(out_size) / np.float32(in_size)
    if ratio % 1 != 0:
        return False
    return bool(ratio <= np.float32(1) / (np.float32(1e-5) * np.float32(in_size) + np.float32(1e-5)))


def resize_check(op: str, data: TensorType, layout: str, method: str, mode: str | None = None,
                 rounding: str | None = None, letters: str = "HW") -> tuple[int, ...]:
    """The indices of the resized axes (`letters`: "W" for resize1d, "HW" for resize2d) in
    a layout convertible to NC + letters, after checking method, mode and rounding."""
    axes = layout_axes(op, layout)
    for letter in "NC":
        if letter not in axes:
            raise OpTypeError(f"{op}: layout {layout} has no {letter} axis; expected a layout convertible to "
                              f"NC{letters}")
    found = spatial_axes(op, layout, letters, data)
    if method.lower() not in METHODS:
        raise OpTypeError(f"{op}: attribute method is '{method}'; expected one of {', '.join(METHODS)}")
    if mode is not None and mode not in COORDINATE_MODES:
        raise OpTypeError(f"{op}: attribute coordinate_transformation_mode is '{mode}'; expected one of "
                          f"{', '.join(COORDINATE_MODES)}")
    if rounding is not None and rounding not in ROUNDING_METHODS:
        raise OpTypeError(f"{op}: attribute rounding_method is '{rounding}'; expected one of "
                          f"{', '.join(repr(r) for r in ROUNDING_METHODS)}")
    return found


_SIZE_TEXT = {1: "[width]", 2: "[height, width]"}


def resize_size(attrs, op: str = "image.resize2d", n: int = 2) -> tuple[int, ...]:
    """The output extents of the n resized axes (attribute size), after checking size and roi
    (2n values: the starts, then the ends)."""
    if attrs.size is None or len(attrs.size) != n:
        got = "none" if attrs.size is None else f"{list(attrs.size)}"
        raise OpTypeError(f"{op}: attribute size must be {_SIZE_TEXT[n]}, got {got}")
    if min(attrs.size) < 1:
        raise OpTypeError(f"{op}: attribute size must be positive, got {list(attrs.size)}")
    if attrs.roi is not None and len(attrs.roi) != 2 * n:
        raise OpTypeError(f"{op}: attribute roi must have {2 * n} values, got {list(attrs.roi)}")
    return attrs.size


UPSAMPLING_METHODS = ("nearest_neighbor", "bilinear", "bicubic", "linear", "cubic")


def upsampled(op: str, data: TensorType, attrs) -> tuple[int, int, list]:
    if attrs.method not in UPSAMPLING_METHODS:
        raise OpTypeError(f"{op}: attribute method is '{attrs.method}'; expected one of "
                          f"{', '.join(UPSAMPLING_METHODS[:3])}")
    h, w = resize_check(op, data, attrs.layout, attrs.method.removeprefix("bi"))
    shape = list(data.shape)
    for ax, scale, name in ((h, attrs.scale_h, "scale_h"), (w, attrs.scale_w, "scale_w")):
        if scale <= 0:
            raise OpTypeError(f"{op}: attribute {name} must be positive, got {scale}")
        size = dims(data)[ax]
        if known(size):
            out = round(size * scale)  # halves to even, as TVM's constant folding (nearbyint)
            if out < 1:
                raise OpTypeError(f"{op}: {name}={scale} turns extent {size} into {out}")
            shape[ax] = out
        else:
            shape[ax] = ANY
    return h, w, shape


def source_coord(x: Any, out_size: int, in_size: int, mode: str, start: float, end: float,
                 const: Callable[[float], Any]) -> Any:
    """Where output index `x` (float32) samples the input along one axis, in float32
    (topi's get_inx); `start`/`end` are the roi fractions of tf_crop_and_resize.  An
    unknown mode is an OpTypeError (the relation refuses it first)."""
    scale = const(np.float32(in_size) / np.float32(out_size))
    half = const(0.5)
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and out_size > 1):
        return (x + half) * scale - half
    if mode == "align_corners":  # TVM divides by zero for out_size 1
        return const(0) if out_size == 1 else const(np.float32(in_size - 1) / np.float32(out_size - 1)) * x
    if mode == "asymmetric":
        return scale * x
    if mode == "pytorch_half_pixel":
        return const(0)
    if mode == "tf_half_pixel_for_nn":
        return (x + half) * scale
    if mode == "tf_crop_and_resize":
        if out_size > 1:
            return (const(np.float32(start) * np.float32(in_size - 1))
                    + x * const(np.float32(end) - np.float32(start)) * const(in_size - 1) / const(out_size - 1))
        return const(np.float32(0.5) * (np.float32(start) + np.float32(end)) * np.float32(in_size - 1))
    raise OpTypeError(f"image.resize2d: coordinate_transformation_mode {mode} is not supported")


def cubic_weights(t: Any, alpha: float, const: Callable[[float], Any]) -> list[Any]:
    """The four cubic-convolution weights of the samples at -1, 0, 1, 2 around a source
    coordinate whose fractional part is `t` (Keys' kernel with coefficient `alpha`)."""
    t2 = t * t
    t3 = t * t * t
    a = const(alpha)
    return [a * (t3 - const(2) * t2 + t),
            const(alpha + 2) * t3 - const(3 + alpha) * t2 + const(1),
            const(-(alpha + 2)) * t3 + const(3 + 2 * alpha) * t2 - a * t,
            const(-alpha) * t3 + a * t2]
