"""CombineParallelConv2D: convolutions of one input into one wider convolution, as TVM's
pass of that name (src/relay/transforms/combine_parallel_conv2d.cc, opt level 4).

    %1 = nn.conv2d(%x, %w1);  %2 = nn.conv2d(%x, %w2);  %3 = nn.conv2d(%x, %w3)
      =>
    %0 = nn.conv2d(%x, concatenate((%w1, %w2, %w3)), channels=C1+C2+C3);
    strided_slice(%0, begin=[0, 0], end=[-1, C1], strides=[1, 1], slice_mode="size"), ...

Walk and grouping: combine_parallel_op.py.  The rules of this op:

* supported: `groups` = 1 (and a typed weight);
* two convolutions combine when strides, padding, dilation, groups, data_layout,
  kernel_layout, out_dtype and out_layout are equal and so are their kernels' H and W
  extents (read through kernel_layout);
* the combined convolution takes the first one's attributes with `channels` = the sum
  of the output channels (each weight's extent at kernel_layout's `O`), the weights
  concatenated on that `O` axis;
* an elementwise/broadcast call that follows in every branch combines when each other
  argument has the same dtype and rank in every branch, its extent at the output's
  channel axis (aligned from the right) equals the branch's output channels, and its
  other extents are equal; those arguments are concatenated on that axis.  An argument
  with too few axes to reach the channel axis stops the combining (a scalar scale);
* each branch's last combined call is replaced by a `strided_slice` of the combined
  result in slice_mode "size", along the channel axis of out_layout (else data_layout).

`min_num_branches` (default 3, what TVM's pipeline uses) is the fewest branches worth
combining.  Expects typed input (required: InferType); guarantees the same values.

Spans: see combine_parallel_op.py (the combined calls take the spans of the calls they
replace; each slice the span of the call of its branch it stands for).
"""

from __future__ import annotations

from ...ir.attrs import Attrs, IntImm
from ...ir.expr import Call, Expr, Function, Tuple, op
from ...ir.module import IRModule
from ...ops import get_op
from ..infra import FunctionPass, PassContext, register_pass
from .combine_parallel_op import Group, ParallelOpCombiner, make, static_int, tensor_type

COMPARED = ("strides", "padding", "dilation", "groups", "data_layout", "kernel_layout", "out_dtype", "out_layout")


def _attrs(call: Call):
    return get_op("nn.conv2d").normalize_attrs(call.attrs)


def out_channels(call: Call) -> int:
    """The weight's extent at kernel_layout's O (TVM's GetConv2DSuperChannelsDim)."""
    layout = _attrs(call).kernel_layout
    channels = static_int(tensor_type(call.args[1]).shape[layout.index("O")])
    if channels is None:
        raise ValueError("dynamic output channels")
    return channels


class Conv2DCombiner(ParallelOpCombiner):
    def __init__(self, min_num_branches: int) -> None:
        super().__init__("nn.conv2d", min_num_branches)
        self.channel_pos = 1

    def is_supported(self, call: Call) -> bool:
        return _attrs(call).groups == 1

    def can_combine(self, a: Call, b: Call) -> bool:
        attrs_a, attrs_b = _attrs(a), _attrs(b)
        if any(attrs_a[k] != attrs_b[k] for k in COMPARED):
            return False
        wa, wb = tensor_type(a.args[1]), tensor_type(b.args[1])
        la, lb = attrs_a.kernel_layout, attrs_b.kernel_layout
        return all(wa.shape[la.index(axis)] == wb.shape[lb.index(axis)] for axis in "HW")

    def make_combined_op(self, group: Group) -> Expr | None:
        root = group[0][0]
        attrs = _attrs(root)
        channels = sum(out_channels(b[0]) for b in group)
        weight = make("concatenate", [Tuple(tuple(b[0].args[1] for b in group))],
                      axis=attrs.kernel_layout.index("O"))
        layout = attrs.out_layout or attrs.data_layout
        self.channel_pos = layout.index("C")
        written = dict(root.attrs)
        new = {}
        for a in get_op("nn.conv2d").attrs:  # in the op's order, as printed
            if a.name == "channels":
                new["channels"] = IntImm(channels)
                written.pop("channels", None)
            elif a.name in written:
                new[a.name] = written.pop(a.name)
        new.update(written)
        return Call(op("nn.conv2d"), (root.args[0], weight), Attrs(new))

    def _arg_channel_pos(self, call: Call, index: int) -> int:
        return self.channel_pos - tensor_type(call).ndim + tensor_type(call.args[index]).ndim

    def is_arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        ta, tb = tensor_type(a.args[index]), tensor_type(b.args[index])
        if ta.dtype != tb.dtype or ta.ndim != tb.ndim:
            return False
        pos = self._arg_channel_pos(a, index)
        if pos < 0 or pos > self.channel_pos:
            return False
        if ta.shape[pos] != tensor_type(a).shape[self.channel_pos]:
            return False
        if tb.shape[pos] != tensor_type(b).shape[self.channel_pos]:
            return False
        return all(ta.shape[i] == tb.shape[i] for i in range(ta.ndim) if i != pos)

    def make_following_call(self, data: Expr, group: Group, depth: int, parent: int) -> Expr:
        call = group[0][depth]
        args = []
        for i in range(len(call.args)):
            if i == parent:
                args.append(data)
            else:
                fields = Tuple(tuple(b[depth].args[i] for b in group))
                args.append(make("concatenate", [fields], axis=self._arg_channel_pos(call, i)))
        return Call(call.op, tuple(args), call.attrs)

    def update_outputs(self, data: Expr, group: Group, depth: int, subst: dict[Expr, Expr]) -> None:
        index = 0
        for branch in group:
            channels = out_channels(branch[0])
            begin = [0] * self.channel_pos + [index]
            end = [-1] * self.channel_pos + [channels]
            index += channels
            subst[branch[depth]] = make("strided_slice", [data], begin=begin, end=end,
                                        strides=[1] * len(begin), slice_mode="size")


@register_pass
class CombineParallelConv2D(FunctionPass):
    name = "CombineParallelConv2D"
    opt_level = 4
    required = ("InferType",)

    def __init__(self, min_num_branches: int = 3) -> None:
        self.min_num_branches = int(min_num_branches)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return Conv2DCombiner(self.min_num_branches).combine(func)
