"""AlterOpLayout: let the target choose the layout of each op, and carry that layout
through the ops around it (TVM: src/relay/transforms/alter_op_layout.cc).

First, on a 16-lane host (unless tvm_blocks), a conv2d with a bound weight whose output
channels fill the vectors badly in any block (1000: blocks of 20) computes them padded
with zero filters to a multiple of the lanes and slices them back
(transform/x86_pad_channels.py).

On this machine's target (x86, TVM's untuned defaults) a float32 NCHW conv2d becomes
`nn.contrib_conv2d_NCHWc` on channel-blocked data (transform/x86_conv2d_layout.py), and
a 2-D dense `nn.contrib_dense_pack` on a weight packed NC[bn]n (x86_dense_layout.py); the
layout rewriter (transform/layout_rewrite.py) then puts `layout_transform`s where a
tensor changes layout, and lets the ops with a layout rule (transform/layout_rules.py:
element-wise ops, broadcasts — a bias beside blocked data gets expand_dims +
layout_transform —, pooling, concatenate, reductions, pad, slices...) work in the blocked layout,
so that consecutive convolutions pass blocked data to each other with no transform in
between.  With bound weights, the FoldConstant after this pass packs them (the conv2d
kernels, the dense weights) at build time.

    AlterOpLayout()                     # x86 defaults, the host's vector width
    AlterOpLayout(simd_lanes=8)         # as for an AVX2 target
    AlterOpLayout(tvm_blocks=True)      # TVM's channel blocks on AVX-512 too (x86_channel_blocks.py)
    AlterOpLayout(rules={"nn.conv2d": {"data_layout": "NCHW16c"}})

`rules` replaces the target's rule by fixed rewrites, as TVM's tests register their own
FTVMAlterOpLayout: for each op name, the attributes to set, and optionally `"op"`, the op
to call instead.  A call the rule does not change keeps its op.

Expects: typed input (required: InferType; a call whose inputs have no type is left
alone).  Guarantees: the same values; new nodes have `ty` None until the next InferType.

Spans: see layout_rewrite.py (a rewritten call keeps its span; a layout_transform or
expand_dims takes the span of the expression it transforms).
"""

from __future__ import annotations

from typing import Any

from ...ir.attrs import Attrs
from ...ops.attrs import to_ir_value
from ...ir.expr import Call, Function, Op, op
from ...ir.module import IRModule
from ..infra import FunctionPass, PassContext, register_pass
from ..layout_rewrite import LayoutRewriter
from ..x86_conv2d_layout import alter_conv2d, host_simd_lanes
from ..x86_dense_layout import alter_dense
from ..x86_pad_channels import pad_out_channels


def fixed_rules(rules: dict[str, dict[str, Any]]):
    """A change_call from `{op name: {attr: value, ..., "op": new op name}}`."""
    def change(call: Call, attrs: Attrs, args: list) -> Call | None:
        rule = rules.get(call.op.name) if isinstance(call.op, Op) else None
        if rule is None:
            return None
        changes = {k: to_ir_value(v) for k, v in rule.items() if k != "op"}
        return Call(op(rule.get("op", call.op.name)), tuple(args), attrs.with_(**changes))
    return change


def x86_rules(simd_lanes: int, tvm_blocks: bool = False):
    def change(call: Call, attrs: Attrs, args: list) -> Call | None:
        if isinstance(call.op, Op) and call.op.name == "nn.conv2d":
            return alter_conv2d(call, attrs, args, simd_lanes, tvm_blocks)
        if isinstance(call.op, Op) and call.op.name == "nn.dense":
            return alter_dense(call, attrs, args, simd_lanes)
        return None
    return change


@register_pass
class AlterOpLayout(FunctionPass):
    name = "AlterOpLayout"
    opt_level = 3
    required = ("InferType",)

    def __init__(self, simd_lanes: int | None = None, rules: dict[str, dict[str, Any]] | None = None,
                 tvm_blocks: bool = False) -> None:
        self.simd_lanes = simd_lanes
        self.rules = rules
        self.tvm_blocks = tvm_blocks

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        if self.rules is not None:
            change = fixed_rules(self.rules)
        else:
            lanes = self.simd_lanes or host_simd_lanes()
            change = x86_rules(lanes, self.tvm_blocks)
            if lanes >= 16 and not self.tvm_blocks:
                func = pad_out_channels(func, lanes)
        return LayoutRewriter(change).rewrite(func)
