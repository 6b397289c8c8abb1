"""CombineParallelBatchMatmul: batch_matmuls of one input into one, as TVM's pass of that
name (src/relay/transforms/combine_parallel_batch_matmul.cc, opt level 4).

    %1 = nn.batch_matmul(%x, %w1, transpose_b=True);  ...  (w_i: (B, N_i, K))
      =>
    %0 = nn.batch_matmul(%x, concatenate((%w1, %w2, %w3), axis=1), transpose_b=True);
    strided_slice(%0, begin=[0, 0, 0], end=[-1, -1, N1], strides=[1, 1, 1], slice_mode="size"), ...

Walk and grouping: combine_parallel_op.py.  The rules of this op:

* every call is supported;
* two calls combine only in the form TVM supports (transpose_a=False, transpose_b=True;
  TVM logs a warning for the others and leaves them), when the second operands' dtypes,
  the results' dtypes and out_dtype are equal, and the second operands are 3-D with
  the same batch extent;
* the combined call concatenates the second operands on axis 1 (N) and keeps the first
  call's attributes;
* an elementwise/broadcast call that follows in every branch always combines (TVM does
  not check its other arguments); those arguments are concatenated on their last axis;
* each branch's share is a `strided_slice` on the last axis, as wide as its N.

`min_num_branches` defaults to 3.  Expects typed input (required: InferType);
guarantees the same values where TVM's unchecked following arguments are per-column.

Spans: see combine_parallel_op.py.
"""

from __future__ import annotations

from ...ir.expr import Call, Expr, Function, Tuple
from ...ir.module import IRModule
from ...ops import get_op
from ..infra import FunctionPass, PassContext, register_pass
from .combine_parallel_op import Group, ParallelOpCombiner, make, static_int, tensor_type


def _attrs(call: Call):
    return get_op("nn.batch_matmul").normalize_attrs(call.attrs)


class BatchMatmulCombiner(ParallelOpCombiner):
    def __init__(self, min_num_branches: int) -> None:
        super().__init__("nn.batch_matmul", min_num_branches)

    def is_supported(self, call: Call) -> bool:
        return True

    def can_combine(self, a: Call, b: Call) -> bool:
        attrs_a, attrs_b = _attrs(a), _attrs(b)
        if attrs_a.transpose_a or not attrs_a.transpose_b or attrs_b.transpose_a or not attrs_b.transpose_b:
            return False
        rhs_a, rhs_b = tensor_type(a.args[1]), tensor_type(b.args[1])
        return (rhs_a.dtype == rhs_b.dtype and tensor_type(a).dtype == tensor_type(b).dtype
                and rhs_a.ndim == 3 and rhs_b.ndim == 3 and rhs_a.shape[0] == rhs_b.shape[0]
                and attrs_a.out_dtype == attrs_b.out_dtype)

    def make_combined_op(self, group: Group) -> Expr | None:
        root = group[0][0]
        weight = make("concatenate", [Tuple(tuple(b[0].args[1] for b in group))], axis=1)
        return Call(root.op, (root.args[0], weight), root.attrs)

    def is_arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        return True

    def make_following_call(self, data: Expr, group: Group, depth: int, parent: int) -> Expr:
        call = group[0][depth]
        args = [data if i == parent else make("concatenate", [Tuple(tuple(b[depth].args[i] for b in group))], axis=-1)
                for i in range(len(call.args))]
        return Call(call.op, tuple(args), call.attrs)

    def update_outputs(self, data: Expr, group: Group, depth: int, subst: dict[Expr, Expr]) -> None:
        index = 0
        for branch in group:
            features = static_int(tensor_type(branch[0].args[1]).shape[1])
            if features is None:
                raise ValueError("dynamic extent")
            subst[branch[depth]] = make("strided_slice", [data], begin=[0, 0, index], end=[-1, -1, features],
                                        strides=[1, 1, 1], slice_mode="size")
            index += features


@register_pass
class CombineParallelBatchMatmul(FunctionPass):
    name = "CombineParallelBatchMatmul"
    opt_level = 4
    required = ("InferType",)

    def __init__(self, min_num_branches: int = 3) -> None:
        self.min_num_branches = int(min_num_branches)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return BatchMatmulCombiner(self.min_num_branches).combine(func)
