"""Detection layers: RoiAlign, MaxRoiPool and DeformConv; GridSample.

* RoiAlign becomes `vision.roi_align`, the batch indices cast to the rois' dtype and put
  in front of each roi (TVM's converter).  Opset 16's default coordinate mode
  "half_pixel" moves the scaled roi by half a pixel: here the rois are shifted by
  0.5 / spatial_scale first (TVM's converter ignores the mode).  What still differs from
  onnxruntime: in half_pixel mode onnxruntime does not force a roi to at least one pixel
  (Relay does), so rois narrower than a feature pixel differ; and onnxruntime's "max"
  takes the largest of the four weighted neighbours of each point, where Relay (and
  torchvision) take the largest interpolated point.
* MaxRoiPool becomes `vision.roi_pool`.
* DeformConv (opset 19) becomes `nn.deformable_conv2d` (+ `nn.bias_add`); offset_group is
  deformable_groups.  A mask (modulated deformable convolution, v2) has no Relay form and
  is an error.  Relay reads a point above or left of the data (-1 < y < 0) as 0 where
  ONNX interpolates with the first row; elsewhere they agree.
* GridSample (opset 16; 20's "linear" and "cubic" are "bilinear" and "bicubic") becomes
  `image.grid_sample`, the grid (N, Ho, Wo, 2) transposed to Relay's (N, 2, Ho, Wo) (TVM's
  converter).  The 3-D form (in TVM) is refused: the op library does not have it yet.
"""

from __future__ import annotations

from ...ir.expr import Expr
from .builder import call, dtype, make_tuple, rank, scalar, static_shape
from .context import NodeContext
from .errors import NodeError
from .registry import converter


@converter("RoiAlign", since=10)
def _(ctx: NodeContext) -> Expr:
    x, rois, batch_indices = ctx.input(0), ctx.input(1), ctx.input(2)
    mode = ctx.attrs.string("mode", "avg")
    if mode not in ("avg", "max"):
        raise NodeError(f"mode \"{mode}\" is not supported (avg or max)")
    scale = ctx.attrs.float("spatial_scale", 1.0)
    transform = ctx.attrs.string("coordinate_transformation_mode",
                                 "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if transform not in ("half_pixel", "output_half_pixel"):
        raise NodeError(f"coordinate_transformation_mode \"{transform}\" is not supported")
    if transform == "half_pixel":
        if scale == 0:
            raise NodeError("spatial_scale=0 with half_pixel coordinates")
        rois = call("subtract", rois, scalar(0.5 / scale, rois))
    index = call("expand_dims", call("cast", batch_indices, dtype=dtype(rois)), axis=1, num_newaxis=1)
    rois = call("concatenate", make_tuple([index, rois]), axis=1)
    return call("vision.roi_align", x, rois,
                pooled_size=(ctx.attrs.int("output_height", 1), ctx.attrs.int("output_width", 1)),
                spatial_scale=scale, sample_ratio=ctx.attrs.int("sampling_ratio", 0), mode=mode)


@converter("MaxRoiPool")
def _(ctx: NodeContext) -> Expr:
    x, rois = ctx.input(0), ctx.input(1)
    pooled = ctx.attrs.ints("pooled_shape")
    return call("vision.roi_pool", x, rois, pooled_size=pooled, spatial_scale=ctx.attrs.float("spatial_scale", 1.0))


@converter("DeformConv", since=19)
def _(ctx: NodeContext) -> Expr:
    x, w, offset = ctx.input(0), ctx.input(1), ctx.input(2)
    if ctx.optional(4) is not None:
        raise NodeError("a mask (modulated deformable convolution) is not supported: "
                        "nn.deformable_conv2d has none")
    if rank(x) != 4:
        raise NodeError(f"only 2-D deformable convolution is supported, found rank {rank(x)}")
    wshape = static_shape(w, "the weight of DeformConv")
    kernel = ctx.attrs.ints("kernel_shape", wshape[2:])
    pads = ctx.attrs.ints("pads", (0, 0, 0, 0))
    out = call("nn.deformable_conv2d", x, offset, w,
               strides=ctx.attrs.ints("strides", (1, 1)), padding=pads,
               dilation=ctx.attrs.ints("dilations", (1, 1)),
               deformable_groups=ctx.attrs.int("offset_group", 1), groups=ctx.attrs.int("group", 1),
               channels=wshape[0], kernel_size=kernel)
    bias = ctx.optional(3)
    return out if bias is None else call("nn.bias_add", out, bias, axis=1)


@converter("GridSample", since=16)
def _(ctx: NodeContext) -> Expr:
    x, grid = ctx.input(0), ctx.input(1)
    mode = ctx.attrs.string("mode", "bilinear")
    method = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest", "bicubic": "bicubic",
              "cubic": "bicubic"}.get(mode)
    if method is None:
        raise NodeError(f"mode={mode} is not supported (linear, nearest or cubic; bilinear, bicubic before opset 20)")
    if rank(x) != 4:
        raise NodeError(f"only 4-D data (N, C, H, W) is supported, found rank {rank(x)}")
    padding = ctx.attrs.string("padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        raise NodeError(f"padding_mode={padding} is not supported (zeros, border or reflection)")
    return call("image.grid_sample", x, call("transpose", grid, axes=(0, 3, 1, 2)), method=method,
                padding_mode=padding, align_corners=bool(ctx.attrs.int("align_corners", 0)))
