"""CombineParallelDense: dense layers of one input into one op, as TVM's pass of that name
(src/relay/transforms/combine_parallel_dense.cc, opt level 4).

Two forms, chosen by `to_batch` (default True, as TVM's pipeline runs it):

* to_batch: the branches become one `nn.batch_matmul(stack(x...), stack(w...),
  transpose_b=True)` (TVM's ParallelDenseToBatchCombiner, on combine_parallel_op_batch.py):
  two denses combine when their out_dtype and weight shapes are equal; the result is
  split and squeezed back per branch.
* flat (to_batch=False): the weights are concatenated on axis 0 and one `nn.dense`
  computes every branch (`units` = the sum), each branch sliced back out of its last
  axis (TVM's ParallelDenseToDenseCombiner): two denses combine when their out_dtype
  and the weights' input extent are equal.  A following elementwise/broadcast call
  combines when each other argument has the same dtype and rank in every branch, no
  more axes than the call's result, and equal extents but the last; those arguments are
  concatenated on their last axis, an argument whose last extent is 1 where the branch
  has more outputs (or a scalar, given that axis first) repeated to the branch's width.
  Each branch's share is a `strided_slice` in slice_mode "size" on the last axis of its
  result whose extent is the dense's output width (TVM reads that width at axis 1 of
  the dense's result, which is its last axis for the 2-D data its tests use; here the
  last axis, whatever the rank).

Walk and grouping: combine_parallel_op.py.  `min_num_branches` defaults to 3.  Expects
typed input (required: InferType); guarantees the same values.

Spans: see combine_parallel_op.py.
"""

from __future__ import annotations

from ...ir.expr import Call, Expr, Function, Tuple
from ...ir.module import IRModule
from ...ops import get_op
from ..infra import FunctionPass, PassContext, register_pass
from .combine_parallel_op import Group, ParallelOpCombiner, make, static_int, tensor_type
from .combine_parallel_op_batch import BatchCombiner, stack


def _out_dtype(call: Call) -> str:
    return get_op("nn.dense").normalize_attrs(call.attrs).out_dtype


def _static(dim) -> int:
    value = static_int(dim)
    if value is None:
        raise ValueError("dynamic extent")
    return value


class DenseToBatchCombiner(BatchCombiner):
    def __init__(self, min_num_branches: int) -> None:
        super().__init__("nn.dense", "nn.batch_matmul", min_num_branches)

    def can_combine(self, a: Call, b: Call) -> bool:
        wa, wb = tensor_type(a.args[1]), tensor_type(b.args[1])
        return _out_dtype(a) == _out_dtype(b) and wa.shape[:2] == wb.shape[:2]

    def make_combined_op(self, group: Group) -> Expr | None:
        root = group[0][0]
        data = stack([b[0].args[0] for b in group])
        weight = stack([b[0].args[1] for b in group])
        return make("nn.batch_matmul", [data, weight], out_dtype=_out_dtype(root), transpose_a=False,
                    transpose_b=True)


class DenseToDenseCombiner(ParallelOpCombiner):
    def __init__(self, min_num_branches: int) -> None:
        super().__init__("nn.dense", min_num_branches)

    def is_supported(self, call: Call) -> bool:
        return True

    def can_combine(self, a: Call, b: Call) -> bool:
        wa, wb = tensor_type(a.args[1]), tensor_type(b.args[1])
        return _out_dtype(a) == _out_dtype(b) and wa.shape[1] == wb.shape[1]

    def make_combined_op(self, group: Group) -> Expr | None:
        units = sum(_static(tensor_type(b[0].args[1]).shape[0]) for b in group)
        weight = make("concatenate", [Tuple(tuple(b[0].args[1] for b in group))], axis=0)
        return make("nn.dense", [group[0][0].args[0], weight], units=units, out_dtype=_out_dtype(group[0][0]))

    def is_arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        ta, tb = tensor_type(a.args[index]), tensor_type(b.args[index])
        if ta.dtype != tb.dtype or ta.ndim != tb.ndim:
            return False
        if tensor_type(a).ndim < ta.ndim or tensor_type(b).ndim < tb.ndim:
            return False  # not elementwise or broadcast
        return ta.shape[:-1] == tb.shape[:-1]

    def make_following_call(self, data: Expr, group: Group, depth: int, parent: int) -> Expr:
        call = group[0][depth]
        args = []
        for i in range(len(call.args)):
            if i == parent:
                args.append(data)
                continue
            ndim = tensor_type(call.args[i]).ndim
            axis = max(ndim - 1, 0)
            fields = []
            for branch in group:
                width = _static(tensor_type(branch[depth].args[parent]).shape[-1])
                arg = branch[depth].args[i]
                repeat = ndim == 0
                if repeat:
                    arg = make("expand_dims", [arg], axis=-1)
                elif width > 1 and _static(tensor_type(arg).shape[-1]) == 1:
                    repeat = True
                fields.append(make("repeat", [arg], repeats=width, axis=axis) if repeat else arg)
            args.append(make("concatenate", [Tuple(tuple(fields))], axis=axis))
        return Call(call.op, tuple(args), call.attrs)

    def update_outputs(self, data: Expr, group: Group, depth: int, subst: dict[Expr, Expr]) -> None:
        index = 0
        for branch in group:
            shape = [_static(d) for d in tensor_type(branch[depth]).shape]
            width = _static(tensor_type(branch[0]).shape[-1])
            axis = max(i for i, d in enumerate(shape) if d == width)  # TVM: the last such axis
            begin, end = [0] * len(shape), [-1] * len(shape)
            begin[axis], end[axis] = index, width
            index += width
            subst[branch[depth]] = make("strided_slice", [data], begin=begin, end=end,
                                        strides=[1] * len(shape), slice_mode="size")


@register_pass
class CombineParallelDense(FunctionPass):
    name = "CombineParallelDense"
    opt_level = 4
    required = ("InferType",)

    def __init__(self, min_num_branches: int = 3, to_batch: bool = True) -> None:
        self.min_num_branches = int(min_num_branches)
        self.to_batch = bool(to_batch)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        combiner = DenseToBatchCombiner if self.to_batch else DenseToDenseCombiner
        return combiner(self.min_num_branches).combine(func)
