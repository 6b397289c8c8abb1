"""FlattenAtrousConv: TensorFlow's dilated-convolution idiom back into one dilated conv.

As TVM's pass of that name (src/relay/transforms/flatten_atrous_conv.cc):

    %0 = nn.space_to_batch_nd(%x, block_shape=[2, 2], paddings=[[2, 3], [2, 3]]);
    %1 = nn.conv2d(%0, %w, kernel_size=[3, 3], data_layout="NHWC", ...);
    nn.batch_to_space_nd(%1, block_shape=[2, 2], crops=[[0, 1], [0, 1]])
      =>
    nn.conv2d(%x, %w, padding=[2, 2, 2, 2], dilation=[2, 2], kernel_size=[3, 3], data_layout="NHWC", ...)

* Matching is TVM's: calls are visited in post-order (operands first) and a counter
  advances while they are, in turn, a space_to_batch_nd, an nn.conv2d or qnn.conv2d,
  and a batch_to_space_nd; any other call in between (or a call of a function) sets it
  back to 0.  So the three must be the three calls visited one after the other: a
  weight computed by a call (`layout_transform(%w)`) sits between the first two and
  stops the match.  Then the batch_to_space_nd must read the convolution and the
  convolution the space_to_batch_nd; when anything does not fit, nothing changes.
* The new convolution reads the space_to_batch_nd's input and the conv's weight (and a
  qnn.conv2d's four quantization arguments), with `dilation` = the batch_to_space_nd's
  block_shape, strides 1, and "SAME" padding for stride 1: pad = (k - 1) * d per axis,
  half of it (rounded down) before; padding = [top, left, bottom, right].  Groups,
  channels, kernel_size, layouts and out_dtype are kept.  The paddings and crops of the
  space/batch ops are not read (TVM assumes them consistent).
* Requires `data_layout="NHWC"`, a written `kernel_size`, and a 4-D data type; without
  them TVM's checks fail inside its try block and the calls stay, and so here.

RelayLens has no `nn.space_to_batch_nd` / `nn.batch_to_space_nd` ops (no type relation,
no compute, no lowering), so a program that uses them does not typecheck or build; the
pass still recognises and removes the idiom, which is how TVM's pipeline makes such
programs buildable.  Only the data's type is needed; the new conv takes the
batch_to_space_nd's type, or when that is unknown the one its relation gives, so that a
following match can read it.

Expects: the data type of each space_to_batch_nd (required: InferType).  Guarantees: the
same values where the space/batch ops are the consistent TF idiom.

Spans: the new convolution replaces three calls: it takes the SequentialSpan of the
batch_to_space_nd, the convolution and the space_to_batch_nd (root first).
"""

from __future__ import annotations

from typing import Any

from ...ir.attrs import Attrs, IntImm
from ...ir.expr import Call, Expr, Function, Op
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ...ir.types import TensorType
from ...ops import get_op
from ..infra import FunctionPass, PassContext, register_pass
from ..si_builder import SIBuilder

STEPS = ({"nn.space_to_batch_nd"}, {"nn.conv2d", "qnn.conv2d"}, {"nn.batch_to_space_nd"})


def _op(e: Expr) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in value)


def _conv_attrs(name: str, written: Attrs, changes: dict[str, tuple[int, ...]]) -> Attrs:
    """The conv's attributes with `changes`, in the op's order; a changed value equal to
    the default is left out, as the printer would."""
    out: dict[str, Any] = {}
    schema = get_op(name).attrs
    for attr in schema:
        if attr.name in changes:
            value = changes[attr.name]
            if tuple(value) != tuple(attr.default or ()):
                out[attr.name] = tuple(IntImm(v) for v in value)
        elif attr.name in written:
            out[attr.name] = written[attr.name]
    known = {a.name for a in schema}
    out.update({k: v for k, v in written.items() if k not in known})
    return Attrs(out)


def flatten(b2s: Call, original: Call) -> Call | None:
    """The dilated convolution for `b2s(conv(s2b(x), w))`, or None when it does not fit."""
    conv = b2s.args[0] if b2s.args else None
    if _op(conv) not in STEPS[1] or not conv.args:
        return None
    s2b = conv.args[0]
    if _op(s2b) not in STEPS[0] or len(s2b.args) != 1:
        return None
    data = s2b.args[0]
    data_ty = data.ty
    if data_ty is None and _op(original.args[0]) in STEPS[1] and _op(original.args[0].args[0]) in STEPS[0]:
        data_ty = original.args[0].args[0].args[0].ty
    try:
        block = _ints(b2s.attrs["block_shape"])[:2]
        kernel = _ints(conv.attrs["kernel_size"])
        layout = conv.attrs.get("data_layout", "NCHW")
        if layout != "NHWC" or len(block) != 2 or len(kernel) != 2:
            return None
        if not isinstance(data_ty, TensorType) or data_ty.ndim != 4:
            return None
    except (KeyError, TypeError, ValueError):
        return None
    before, after = [], []
    for k, d in zip(kernel, block):
        pad = max((k - 1) * d, 0)  # stride 1, "SAME": out = in, pad = dilated kernel - 1
        before.append(pad // 2)
        after.append(pad - pad // 2)
    attrs = _conv_attrs(_op(conv), conv.attrs, {
        "strides": (1, 1), "padding": (before[0], before[1], after[0], after[1]), "dilation": block})
    args = (data, *conv.args[1:])
    span = SIBuilder(b2s, inputs=args).create_span()
    return Call(conv.op, args, attrs, span=span, ty=original.ty or _infer(_op(conv), args, attrs))


def _infer(name: str, args: tuple[Expr, ...], attrs: Attrs) -> Any:
    """The new conv's type from its operands' (a later match reads it as its data type,
    as TVM's InferTypeLocal would compute it); None when unknown."""
    if any(a.ty is None for a in args):
        return None
    try:
        return get_op(name).infer([a.ty for a in args], attrs)
    except Exception:  # noqa: BLE001 -- a type error: the next InferType reports it
        return None


class _Flattener(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        self.flattened = 0

    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        if _op(new) not in STEPS[self.step]:
            self.step = 0
            return new
        self.step += 1
        if self.step < len(STEPS):
            return new
        self.step = 0
        out = flatten(new, original)
        if out is None:
            return new
        self.flattened += 1
        return out


@register_pass
class FlattenAtrousConv(FunctionPass):
    name = "FlattenAtrousConv"
    opt_level = 0
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return _Flattener().visit(func)
