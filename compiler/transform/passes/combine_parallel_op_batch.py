"""Parallel calls of one op into one call of its batched form: the base of
CombineParallelDense (to_batch), as TVM's ParallelOpBatchCombiner
(src/relay/transforms/combine_parallel_op_batch.cc).  TVM also exposes it as a pass,
CombineParallelOpBatch(op_name, batch_op_name); its only use in TVM is dense, so it is
not registered here (a pass by name takes no required arguments).

    %1 = OP(%x, %w1);  %2 = OP(%x, %w2);  %3 = OP(%x, %w3)
      =>
    %0 = BATCH_OP(stack((%x, %x, %x)), stack((%w1, %w2, %w3)));
    %s = split(%0, indices_or_sections=3);  squeeze(%s.0, axis=[0]), ...

Walk and grouping: combine_parallel_op.py.  The rules (`BatchCombiner`, which
CombineParallelDense's default `to_batch` form extends):

* every call of the op is supported;
* two calls combine when their arguments have equal shapes and dtypes, one by one;
* the combined call stacks each argument of the branches on a new axis 0 and calls
  `batch_op` (without attributes);
* an elementwise/broadcast call that follows in every branch combines when each other
  argument has the same shape and dtype in every branch; those arguments are stacked on
  a new axis 0, a 1-D one first given a leading axis (`expand_dims(axis=0)`) so that it
  still broadcasts against the last axis;
* the result is split into one section per branch on axis 0 and each section squeezed
  back (`squeeze(axis=[0])`).

Expects typed calls (an untyped argument is not combined); guarantees the same values.

Spans: see combine_parallel_op.py; the split, shared by the branches, takes the spans of
the calls of every branch it splits.
"""

from __future__ import annotations

from ...ir.expr import Call, Expr, Tuple, TupleGetItem, op
from ..si_builder import SIBuilder
from .combine_parallel_op import Group, ParallelOpCombiner, make, tensor_type


def same_tensor_type(a: Expr, b: Expr) -> bool:
    ta, tb = tensor_type(a), tensor_type(b)
    if ta is None or tb is None:
        raise ValueError("untyped argument")
    return ta.dtype == tb.dtype and ta.shape == tb.shape


def stack(exprs: list[Expr]) -> Call:
    return make("stack", [Tuple(tuple(exprs))], axis=0)


class BatchCombiner(ParallelOpCombiner):
    def __init__(self, op_name: str, batch_op_name: str, min_num_branches: int) -> None:
        super().__init__(op_name, min_num_branches)
        self.batch_op_name = batch_op_name

    def is_supported(self, call: Call) -> bool:
        return True

    def can_combine(self, a: Call, b: Call) -> bool:
        return len(a.args) == len(b.args) and all(same_tensor_type(x, y) for x, y in zip(a.args, b.args))

    def make_combined_op(self, group: Group) -> Expr | None:
        args = [stack([b[0].args[i] for b in group]) for i in range(len(group[0][0].args))]
        return Call(op(self.batch_op_name), tuple(args))

    def is_arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        return same_tensor_type(a.args[index], b.args[index])

    def make_following_call(self, data: Expr, group: Group, depth: int, parent: int) -> Expr:
        call = group[0][depth]
        args = []
        for i in range(len(call.args)):
            if i == parent:
                args.append(data)
                continue
            fields = []
            for branch in group:
                arg = branch[depth].args[i]
                fields.append(make("expand_dims", [arg], axis=0) if tensor_type(arg).ndim == 1 else arg)
            args.append(stack(fields))
        return Call(call.op, tuple(args), call.attrs)

    def update_outputs(self, data: Expr, group: Group, depth: int, subst: dict[Expr, Expr]) -> None:
        split = make("split", [data], indices_or_sections=len(group), axis=0)
        SIBuilder([b[depth].span for b in group]).recursively_fill_span(split, inputs=[data])
        for index, branch in enumerate(group):
            subst[branch[depth]] = make("squeeze", [TupleGetItem(split, index)], axis=[0])

