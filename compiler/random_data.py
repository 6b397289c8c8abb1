"""Random data that means something: values for @main's parameters (`relaylens run` with
no `--input`) and for constants printed without their metadata (unknown_values.py), drawn
by the role of the value where an op says what its argument is.

    roles = find_roles(module)                 # {Var | key of a constant: Role}
    array = draw(rng, ty, roles.get(var, DATA))

A value's role comes from how it is used: the op it is an argument of and the name the op
registry gives that argument (`OpDef.inputs`), so every op that calls an argument `gamma`
or `moving_var` gets the same rule without a table per op.  A value used several ways keeps
its first role in evaluation order.  The rule (RULE, printed once by `run`):

  role      where                                         floats                  integers
  weight    `weight` (conv, dense, qnn), `tensor_b`        normal(0, 1/sqrt(fan_in))   [0, 2)
            (matmul, batch_matmul)                         as He/LeCun initialisers
  scale     `gamma`, `moving_var`, qnn `*_scale`,          uniform(0.5, 1.5)       [1, 3)
            the divisor of divide/floor_divide/floor_mod,
            the argument of sqrt/rsqrt/log                 (positive, near 1)
  small     `beta`, `moving_mean`, `bias`, `mean`          normal(0, 0.1)          [0, 2)
  index     `indices` (take, gather, gather_nd, one_hot),  -                       [0, bound): the size
            also through a reshape or cast before them                             of the axis indexed
  rois      `rois` (vision.roi_align, vision.roi_pool)     boxes: a batch index in [0, N), then
                                                           w_start, h_start in the image (the data's
                                                           extent / spatial_scale), the ends after them
  mask      a parameter named a mask (attention_mask)      0 or 1                  0 or 1
  data      a parameter of @main with no other role        normal(0, 1)            [0, 10)
  other     a constant with no other role                  normal(0, 0.1)          [0, 2)

Booleans are fair coins whatever the role.  `fan_in` is the size of one output channel's
slice (size / shape[0]) for `weight`, the contracted dimension for `tensor_b`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .ir.expr import Call, Constant, Expr, Op, Var
from .ir.functor import children
from .ir.module import IRModule
from .ir.types import TensorType
from .ops import get_op


@dataclass(frozen=True)
class Role:
    name: str  # weight | scale | small | index | data | other
    what: str = ""  # "nn.batch_norm moving_var", for the note per parameter
    bound: int | None = None  # index: values in [0, bound); rois: the batch
    image: tuple[float, float] | None = None  # rois: the image's (height, width)
    fan_in: int | None = None  # weight: the contracted size, when the op says which

    def describe(self) -> str:
        rule = {"weight": "normal(0, 1/sqrt(fan_in))", "scale": "uniform(0.5, 1.5)", "small": "normal(0, 0.1)",
                "index": f"integers in [0, {self.bound or 1})", "data": "normal(0, 1)", "mask": "0 or 1",
                "rois": "boxes [batch, w_start, h_start, w_end, h_end] inside the image",
                "other": "normal(0, 0.1)"}[self.name]
        return f"{self.name} ({self.what}): {rule}" if self.what else f"{self.name}: {rule}"


DATA = Role("data")
OTHER = Role("other")
MASK = Role("mask", "named a mask")

# argument name (OpDef.inputs) -> role, for every op that names its argument so
BY_INPUT_NAME = {"weight": "weight", "tensor_b": "weight", "gamma": "scale", "moving_var": "scale",
                 "input_scale": "scale", "kernel_scale": "scale", "output_scale": "scale",
                 "beta": "small", "moving_mean": "small", "bias": "small", "mean": "small",
                 "indices": "index", "rois": "rois"}
# qnn.add's scales, simulated_quantize's
BY_INPUT_NAME.update({"lhs_scale": "scale", "rhs_scale": "scale", "dom_scale": "scale"})
# (op, argument position) -> role, where the argument's name does not say it
BY_OP_ARGUMENT = {("divide", 1): "scale", ("floor_divide", 1): "scale", ("floor_mod", 1): "scale",
                  ("sqrt", 0): "scale", ("rsqrt", 0): "scale", ("log", 0): "scale"}

RULE = ("parameters by role: weights normal(0, 1/sqrt(fan_in)); variances, gammas, scales and divisors "
        "uniform(0.5, 1.5); means, betas and biases normal(0, 0.1); indices below the axis size; rois boxes "
        "inside the image; parameters named a mask 0 or 1; "
        "other inputs normal(0, 1), integers in [0, 10), booleans fair coins")


def role_of(call: Call, position: int) -> Role | None:
    """The role of argument `position` of `call`, or None when the op does not say."""
    if not isinstance(call.op, Op):
        return None
    name = call.op.name
    opdef = get_op(name)
    inputs = opdef.inputs if opdef is not None and opdef.inputs is not None else ()
    arg_name = inputs[position] if position < len(inputs) else ""
    kind = BY_OP_ARGUMENT.get((name, position)) or BY_INPUT_NAME.get(arg_name)
    if kind is None:
        return None
    what = f"{name} {arg_name}".strip()
    if kind == "index":
        return Role(kind, what, bound=_index_bound(call, opdef))
    if kind == "weight":
        return Role(kind, what, fan_in=_fan_in(call, opdef, position))
    if kind == "rois":
        return _rois_role(call, opdef, what)
    return Role(kind, what)


# Ops whose first argument's values are their result's, rearranged or of another integer
# dtype: indices pass through them on their way to a take or gather in an exporter's graph
# (token ids flattened and cast to int32 before the Gather).
SAME_VALUES = frozenset({"reshape", "cast", "expand_dims", "squeeze", "transpose", "copy", "reshape_like",
                         "layout_transform", "nn.batch_flatten"})


def find_roles(module: IRModule, key=lambda e: e) -> dict[object, Role]:
    """The role of each parameter (Var) and constant used directly as an op's argument,
    or, for indices, through ops that keep their values (SAME_VALUES: a reshape or a
    cast before a take), keyed by `key(expr)`; the first use (in evaluation order of the
    walk) wins."""
    roles: dict[object, Role] = {}
    seen: set[int] = set()
    for func in module.functions.values():
        stack: list[Expr] = [func]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, Call) and isinstance(node.op, Op):
                for i, arg in enumerate(node.args):
                    role = role_of(node, i)
                    if role is not None and role.name == "index":
                        arg = _same_values_source(arg)
                    if role is not None and isinstance(arg, (Var, Constant)) and key(arg) not in roles:
                        roles[key(arg)] = role
            stack.extend(reversed([c for c in children(node) if isinstance(c, Expr)]))
    for func in module.functions.values():  # no op says what a mask is; its name does
        for param in func.params:
            if key(param) not in roles and _MASK.search(param.name):
                roles[key(param)] = MASK
    return roles


def _same_values_source(arg: Expr) -> Expr:
    """`arg` followed back through ops that keep its values (SAME_VALUES)."""
    while isinstance(arg, Call) and isinstance(arg.op, Op) and arg.op.name in SAME_VALUES and arg.args:
        arg = arg.args[0]
    return arg


# An exporter's attention_mask, input_mask, padding_mask: 0 or 1 (GPT-2's exporter sums
# it into position ids, which index the position table: a mask of [0, 10) ran past it)
_MASK = re.compile(r"(^|[^a-z])mask($|[^a-z])", re.IGNORECASE)


def draw(rng: np.random.Generator, ty: TensorType, role: Role = DATA) -> np.ndarray:
    """An array of the static tensor type `ty` drawn from `rng` by `role` (the module's rule)."""
    shape = tuple(int(d) for d in ty.shape)
    dtype = np.dtype(bool) if ty.dtype == "bool" else np.dtype(ty.dtype)
    kind = role.name
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if kind == "rois" and dtype.kind == "f" and len(shape) == 2 and shape[1] == 5:
        return _draw_rois(rng, shape[0], role).astype(dtype)
    if kind == "mask":
        return rng.integers(0, 2, size=shape).astype(dtype)
    if dtype.kind in "iu":
        low, high = {"index": (0, max(role.bound or 1, 1)), "scale": (1, 3), "data": (0, 10)}.get(kind, (0, 2))
        return rng.integers(low, high, size=shape).astype(dtype)
    if kind == "scale":
        values = rng.uniform(0.5, 1.5, shape)
    elif kind == "weight":
        fan_in = role.fan_in or (math.prod(shape) // max(1, shape[0]) if shape else 1)
        values = rng.normal(0.0, 1.0 / math.sqrt(max(1, fan_in)), shape)
    elif kind == "index":  # a float used as indices (rare): small non-negative integers
        values = rng.integers(0, max(role.bound or 1, 1), size=shape)
    elif kind == "data" or kind == "rois":  # rois of another shape: plain data
        values = rng.standard_normal(shape)
    else:
        values = rng.normal(0.0, 0.1, shape)
    return np.asarray(values).astype(dtype)


# --- what the op says about sizes ---------------------------------------------------------


def _shape(expr: Expr) -> tuple[int, ...] | None:
    ty = getattr(expr, "ty", None) or (expr.type_annotation if isinstance(expr, Var) else None)
    if isinstance(ty, TensorType) and ty.is_static:
        return tuple(int(d) for d in ty.shape)
    return None


def _attrs(call: Call, opdef):
    try:
        return opdef.normalize_attrs(call.attrs)
    except Exception:  # noqa: BLE001 -- attributes the checker reports elsewhere
        return None


def _index_bound(call: Call, opdef) -> int | None:
    """The exclusive upper bound of valid indices: the size of the axis they index."""
    attrs = _attrs(call, opdef)
    name = call.op.name
    if name == "one_hot":
        depth = getattr(attrs, "depth", None)
        return int(depth) if isinstance(depth, (int, np.integer)) and depth > 0 else None
    shape = _shape(call.args[0])
    if not shape:
        return None
    if name == "gather_nd":
        return min(shape)
    axis = getattr(attrs, "axis", 0)
    if axis is None:  # take without an axis indexes the flattened data
        return math.prod(shape)
    axis = int(axis)
    return shape[axis] if -len(shape) <= axis < len(shape) else None


def _fan_in(call: Call, opdef, position: int) -> int | None:
    shape = _shape(call.args[position])
    if not shape:
        return None
    if opdef is not None and opdef.inputs is not None and opdef.inputs[position] == "tensor_b":
        attrs = _attrs(call, opdef)
        transposed = bool(getattr(attrs, "transpose_b", call.op.name == "nn.batch_matmul"))
        return shape[-1] if transposed else shape[-2] if len(shape) >= 2 else shape[0]
    return math.prod(shape) // max(1, shape[0])


def _rois_role(call: Call, opdef, what: str) -> Role:
    """Boxes for vision.roi_align / roi_pool: the batch from the data's N, the image from
    its spatial extents over spatial_scale (NCHW or NHWC)."""
    attrs, shape = _attrs(call, opdef), _shape(call.args[0])
    if attrs is None or not shape or len(shape) != 4 or not attrs.spatial_scale:
        return Role("rois", what)
    h, w = (shape[2], shape[3]) if attrs.layout == "NCHW" else (shape[1], shape[2])
    return Role("rois", what, bound=shape[0], image=(h / attrs.spatial_scale, w / attrs.spatial_scale))


def _draw_rois(rng: np.random.Generator, count: int, role: Role) -> np.ndarray:
    height, width = role.image or (16.0, 16.0)
    batch = rng.integers(0, max(role.bound or 1, 1), size=count)
    x0, y0 = rng.uniform(0, width * 0.75, count), rng.uniform(0, height * 0.75, count)
    x1 = x0 + rng.uniform(0.1, 1.0, count) * (width - x0)
    y1 = y0 + rng.uniform(0.1, 1.0, count) * (height - y0)
    return np.stack([batch, x0, y0, x1, y1], axis=1)
