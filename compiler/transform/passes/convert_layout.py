"""ConvertLayout: put the ops a user names in the layouts the user wants, and carry those
layouts through the ops around them (TVM: src/relay/transforms/convert_layout.cc and
the FTVMConvertOpLayout functions of python/tvm/relay/op/nn/_nn.py).

    ConvertLayout({"nn.conv2d": ["NHWC", "default"]})
    relaylens build m.relay --passes ConvertLayout \
        --config 'relay.ConvertLayout.desired_layouts={"nn.conv2d": ["NHWC", "default"]}'

The desired layouts come from the constructor or, when it has none, from the pass
config `relay.ConvertLayout.desired_layouts`: for each op name, the layout of each input
(`"default"`: the one that goes with the data layout).

TVM's `relay.transform.LayoutConfig(skip_layers=[...])` (a Python `with` scope in TVM, not
a PassContext option) is the constructor keyword `skip_layers` or the pass config
`relay.transform.LayoutConfig.skip_layers`:

    relaylens build m.relay --passes ConvertLayout --config 'relay.transform.LayoutConfig.skip_layers=[0]' \
        --config 'relay.ConvertLayout.desired_layouts={"nn.conv2d": ["HWNC", "default"]}'

As in TVM, the converters of nn.conv2d (and nn.deformable_conv2d) count the calls they are
asked about, from 0, in the order the walk meets them (children first, arguments left to
right, function after function in one run), and leave a listed one in its layouts.  The ops that can be converted,
as TVM's:

* nn.conv2d: data as desired; kernel as desired, or by default OIHW for NCHW, HWIO for
  NHWC (HWOI when depthwise), HWOI for HWNC; NCHW[x]c data makes an
  nn.contrib_conv2d_NCHWc with the desired kernel layout (a data variable whose channels
  x does not divide stays as it is);
* qnn.conv2d: as nn.conv2d for NCHW and NHWC (TVM's convert_qnn_conv2d);
* qnn.conv2d_transpose: as nn.conv2d_transpose (TVM's convert_qnn_conv2d_transpose);
* nn.conv2d_transpose (default kernel IOHW for NCHW, HWIO for NHWC) and nn.conv3d
  (OIDHW for NCDHW, DHWIO for NDHWC);
* nn.max_pool2d, nn.avg_pool2d, nn.global_max_pool2d, nn.global_avg_pool2d: layout and
  out_layout set to the desired one;
* image.resize2d: layout set to the desired one;
* nn.deformable_conv2d: as nn.conv2d_transpose, its offset following the data (default
  kernel OIHW for NCHW, HWIO for NHWC);
* vision.roi_align, vision.roi_pool: layout set to the desired data layout (NCHW or
  NHWC); the rois' desired layout must be "default".

The rest follows through the layout rewriter (transform/layout_rewrite.py, shared with
AlterOpLayout) by each op's rule (transform/layout_rules.py): element-wise ops,
broadcasts, pooling, concatenate, split, strided_slice, transpose, squeeze, pad, the
reductions, resize, the normalisations, qnn.requantize, qnn.add, qnn.concatenate,
relay.op.annotation.simulated_quantize; layout_transforms where a layout
changes.  A desired layout that the op cannot take is an error (a diagnostic at the call, in
`diagnostics`) naming the op and the layout, and the function is left as it was.

Expects: typed input (required: InferType, CanonicalizeOps, as TVM's, and InferType
again: TVM types every function pass's result).  Guarantees: the
same values; new nodes have `ty` None until the next InferType.

Spans: as AlterOpLayout (layout_rewrite.py): a converted call keeps its span; a
layout_transform takes the span of the expression it transforms.
"""

from __future__ import annotations

import re
from typing import Any

from ...diagnostics import Diagnostic, Severity
from ...ir.attrs import Attrs
from ...ir.expr import Call, Function, Op, Var, op
from ...ir.module import IRModule
from ...ir.types import TensorType
from ...ops import get_op
from ...ops.conv_geometry import is_depthwise
from ..infra import FunctionPass, PassContext, register_pass
from ..layout_rewrite import LayoutRewriter

CONFIG_KEY = "relay.ConvertLayout.desired_layouts"
SKIP_KEY = "relay.transform.LayoutConfig.skip_layers"
# the converters that ask TVM's LayoutConfig whether to skip their call (python/tvm/relay/op/nn/_nn.py)
COUNTED = ("nn.conv2d", "nn.deformable_conv2d")


class ConvertLayoutError(ValueError):
    """A desired layout an op cannot take, or a malformed desired_layouts; `span` is the
    call's, when it is about one."""

    def __init__(self, message: str, span=None) -> None:
        super().__init__(message)
        self.span = span


def _changed(call: Call, attrs: Attrs, changes: dict[str, str]) -> Attrs:
    """`attrs` with the changes that are changes (a layout already in force is not written
    again, so a conv2d asked for the layouts it has is left as it is)."""
    current = _attrs(call)
    return attrs.with_(**{k: v for k, v in changes.items() if getattr(current, k, None) != v})


def _conv2d(call: Call, attrs: Attrs, args: list, desired: list[str]) -> Call:
    data_layout, kernel_layout = _two(call, desired)
    tile = re.fullmatch(r"NCHW(\d*)c", data_layout)
    new = {"data_layout": data_layout}
    if kernel_layout != "default" and not tile:
        new["kernel_layout"] = kernel_layout
    elif data_layout == "NCHW":
        new["kernel_layout"] = "OIHW"
    elif data_layout == "NHWC":
        data, weight = (a.ty for a in call.args)
        old = _attrs(call)
        depthwise = (isinstance(data, TensorType) and isinstance(weight, TensorType)
                     and _is_depthwise(data, weight, old))
        new["kernel_layout"] = "HWOI" if depthwise else "HWIO"
    elif data_layout == "HWNC":
        new["kernel_layout"] = "HWOI"
    elif tile:
        if kernel_layout == "default":
            raise ConvertLayoutError("ConvertLayout: nn.conv2d with data layout "
                                     f"{data_layout} needs a kernel layout, not \"default\"")
        size = int(tile.group(1))
        data_ty = call.args[0].ty
        if (args[0] is call.args[0] and _is_var(call.args[0]) and isinstance(data_ty, TensorType)
                and isinstance(data_ty.shape[1], int) and data_ty.shape[1] % size):
            return Call(call.op, tuple(args), call.attrs)
        new["kernel_layout"] = kernel_layout
        return Call(op("nn.contrib_conv2d_NCHWc"), tuple(args), attrs.with_(**new))  # all layouts written
    else:
        raise ConvertLayoutError(f"ConvertLayout: nn.conv2d layout {data_layout} is not supported")
    return Call(call.op, tuple(args), _changed(call, attrs, new))


def _qnn_conv2d(call: Call, attrs: Attrs, args: list, desired: list[str]) -> Call:
    """TVM's convert_qnn_conv2d: as nn.conv2d, for NCHW and NHWC only when the kernel layout
    is "default" (no blocked NCHW[x]c form)."""
    data_layout, kernel_layout = _two(call, desired)
    new = {"data_layout": data_layout}
    if kernel_layout != "default":
        new["kernel_layout"] = kernel_layout
    elif data_layout == "NCHW":
        new["kernel_layout"] = "OIHW"
    elif data_layout == "NHWC":
        data, weight = (a.ty for a in call.args[:2])
        depthwise = (isinstance(data, TensorType) and isinstance(weight, TensorType)
                     and _is_depthwise(data, weight, _attrs(call)))
        new["kernel_layout"] = "HWOI" if depthwise else "HWIO"
    else:
        raise ConvertLayoutError(f"ConvertLayout: qnn.conv2d layout {data_layout} is not supported")
    return Call(call.op, tuple(args), _changed(call, attrs, new))


def _is_var(e) -> bool:
    return isinstance(e, Var)


def _attrs(call: Call):
    return get_op(call.op.name).normalize_attrs(call.attrs)


def _is_depthwise(data: TensorType, weight: TensorType, a) -> bool:
    if a.data_layout != "NCHW" and a.data_layout != "NHWC":
        return False
    channels = data.shape[a.data_layout.index("C")]
    out = weight.shape[a.kernel_layout.index("O")]
    return is_depthwise(a.groups, channels, out)


def _with_kernel_default(name: str, defaults: dict[str, str]):
    def convert(call: Call, attrs: Attrs, args: list, desired: list[str]) -> Call:
        data_layout, kernel_layout = _two(call, desired)
        new = {"data_layout": data_layout}
        if kernel_layout != "default":
            new["kernel_layout"] = kernel_layout
        elif data_layout in defaults:
            new["kernel_layout"] = defaults[data_layout]
        else:
            raise ConvertLayoutError(f"ConvertLayout: {name} layout {data_layout} is not supported")
        return Call(call.op, tuple(args), _changed(call, attrs, new))
    return convert


def _pool(call: Call, attrs: Attrs, args: list, desired: list[str]) -> Call:
    if not desired:
        raise ConvertLayoutError(f"ConvertLayout: {call.op.name} needs one desired layout")
    return Call(call.op, tuple(args), _changed(call, attrs, {"layout": desired[0], "out_layout": desired[0]}))


def _resize(call: Call, attrs: Attrs, args: list, desired: list[str]) -> Call:
    """TVM's convert_image_resize*: one desired layout, not "default"."""
    if len(desired) != 1 or desired[0] == "default":
        raise ConvertLayoutError(f"ConvertLayout: {call.op.name} needs one desired layout (not \"default\"), "
                                 f"got {desired}")
    return Call(call.op, tuple(args), _changed(call, attrs, {"layout": desired[0]}))


def _two(call: Call, desired: list[str]) -> tuple[str, str]:
    if len(desired) != 2:
        raise ConvertLayoutError(f"ConvertLayout: {call.op.name} needs a desired layout for both "
                                 f"inputs (data, kernel), got {desired}")
    if desired[0] == "default":
        raise ConvertLayoutError(f"ConvertLayout: {call.op.name}'s data layout cannot be \"default\"")
    return desired[0], desired[1]


def _roi(call: Call, attrs: Attrs, args: list, desired: list[str]) -> Call:
    """TVM's convert_roi_align / convert_roi_pool: a desired layout for data (NCHW or NHWC,
    not "default") and for the rois ("default": they keep theirs)."""
    name = call.op.name
    if len(desired) != 2:
        raise ConvertLayoutError(f"ConvertLayout: {name} needs a desired layout for both inputs "
                                 f"(data, rois), got {desired}")
    data_layout, rois_layout = desired
    if data_layout == "default":
        raise ConvertLayoutError(f"ConvertLayout: {name}'s data layout cannot be \"default\"")
    if rois_layout != "default":
        raise ConvertLayoutError(f"ConvertLayout: {name}'s rois layout must be \"default\", got "
                                 f"\"{rois_layout}\"")
    if data_layout not in ("NCHW", "NHWC"):
        raise ConvertLayoutError(f"ConvertLayout: {name} layout {data_layout} is not supported")
    return Call(call.op, tuple(args), _changed(call, attrs, {"layout": data_layout}))


CONVERTERS = {
    "nn.conv2d": _conv2d,
    "qnn.conv2d": _qnn_conv2d,
    "nn.conv2d_transpose": _with_kernel_default("nn.conv2d_transpose", {"NCHW": "IOHW", "NHWC": "HWIO"}),
    "nn.conv3d": _with_kernel_default("nn.conv3d", {"NCDHW": "OIDHW", "NDHWC": "DHWIO"}),
    "nn.max_pool2d": _pool, "nn.avg_pool2d": _pool,
    "nn.global_max_pool2d": _pool, "nn.global_avg_pool2d": _pool,
    "image.resize2d": _resize,
    # TVM's convert_qnn_conv2d_transpose (python/tvm/relay/qnn/op/layout_conversions.py)
    "qnn.conv2d_transpose": _with_kernel_default("qnn.conv2d_transpose", {"NCHW": "IOHW", "NHWC": "HWIO"}),
    "nn.deformable_conv2d": _with_kernel_default("nn.deformable_conv2d", {"NCHW": "OIHW", "NHWC": "HWIO"}),
    "vision.roi_align": _roi, "vision.roi_pool": _roi,
}


def skip_layers(value: Any) -> frozenset[int]:
    """The layers LayoutConfig skips, checked: a list of integers."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise ConvertLayoutError(f"{SKIP_KEY} must be a list of layer indices, e.g. [0]; got {value!r}")
    return frozenset(value)


def desired_layouts(value: Any) -> dict[str, list[str]]:
    """The desired layouts checked: {op name: [layout, ...]}."""
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)
            for k, v in value.items()):
        raise ConvertLayoutError(f"{CONFIG_KEY} must map op names to lists of layouts, e.g. "
                                 '{"nn.conv2d": ["NHWC", "default"]}; got ' + repr(value))
    return {k: list(v) for k, v in value.items()}


@register_pass
class ConvertLayout(FunctionPass):
    name = "ConvertLayout"
    opt_level = 3
    required = ("InferType", "CanonicalizeOps", "InferType")  # TVM types a function pass's output

    def __init__(self, desired_layouts: dict[str, list[str]] | None = None,
                 skip_layers: list[int] | None = None) -> None:
        self.desired = desired_layouts
        self.skip = skip_layers
        self.diagnostics: list[Diagnostic] = []
        self.counter = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.counter = 0  # TVM's LayoutConfig counts from 0 in its scope: one run here
        return super().run(mod, ctx)

    def _skipped(self, ctx: PassContext) -> bool:
        """TVM's LayoutConfig.check_skip: whether this counted layer is listed (and count it)."""
        given = self.skip if self.skip is not None else ctx.get(SKIP_KEY)
        if given is None:
            return False
        index, self.counter = self.counter, self.counter + 1
        return index in skip_layers(given)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        def change(call: Call, attrs: Attrs, args: list) -> Call | None:
            if not isinstance(call.op, Op) or call.op.name not in wanted:
                return None
            if call.op.name in COUNTED and self._skipped(ctx):
                return Call(call.op, tuple(args), call.attrs)  # this layer keeps its layouts
            convert = CONVERTERS.get(call.op.name)
            try:
                return None if convert is None else convert(call, attrs, args, wanted[call.op.name])
            except ConvertLayoutError as err:
                err.span = err.span or call.span
                raise

        try:
            wanted = desired_layouts(self.desired if self.desired is not None else ctx.get(CONFIG_KEY, {}))
            return LayoutRewriter(change).rewrite(func)
        except ConvertLayoutError as err:  # the user's layouts: an error in the input, function unchanged
            self.diagnostics.append(Diagnostic(str(err), err.span, Severity.ERROR, source="ConvertLayout"))
            return func
