"""Channel-blocked conv2d computes (TVM's NCHWc convolutions), used by nn_conv.py's rule for
float32 sums in NCHW/OIHW/NCHW with at least BLOCK output channels:

* groups 1 (`blocked_conv2d`): the weight is packed into `T_weight_pack` (O/16, I, KH,
  KW, 16), the tagged reduction `T_conv2d_NCHW16c` (N, O/16, OH, OW, 16) sums `T_pad`
  (the padded NCHW input) times the packed weight; a strided 1x1 convolution first
  gathers the pixels it reads into `T_strided`, a quarter of the input for stride 2;
* depthwise, one filter per channel (`blocked_depthwise2d`): the input is padded into
  blocks `T_pad_NCHW16c` (N, C/16, H + pads, W + pads, 16), the weight packed into
  (C/16, KH, KW, 16), and the reduction reads both at the same lane.

16 channels sit side by side (one 64-byte vector of float32), zero-filled past the last
channel when 16 does not divide the count; `T_conv2d` reads the result back in NCHW and
default schedules inline it into the epilogue.  With the channels contiguous a schedule
vectorises over them whatever the output width or the stride (schedule/conv.py).
Packing runs on every call (weights are parameters of the model).
"""

from __future__ import annotations

from typing import Sequence

from ....ops.conv_geometry import is_depthwise
from .. import expr as te

BLOCK = 16


def blocked_kind(op: str, plan, data: te.Tensor, weight: te.Tensor, acc: str) -> str | None:
    """"conv", "depthwise" or None (the canonical compute) for a convolution."""
    if not (op == "nn.conv2d" and acc == "float32" and plan.data_layout.name == "NCHW"
            and plan.kernel_layout.name == "OIHW" and plan.out_layout.name == "NCHW"
            and weight.shape[0] >= BLOCK):
        return None
    if plan.groups == 1:
        return "conv"
    if is_depthwise(plan.groups, data.shape[1], weight.shape[0]) and weight.shape[1] == 1:
        return "depthwise"
    return None


def _lanes(count: int, lane_value, acc: str):
    """`lane_value(channel)` in `acc`, zero for the channels past `count`."""
    def value(block, lane):
        channel = block * BLOCK + lane
        v = te.cast(lane_value(channel), acc)
        return v if count % BLOCK == 0 else te.select(te.lt(channel, count), v, te.const(0, acc))
    return value


def _unblock(blocked: te.Tensor, out_shape: Sequence[int]) -> te.Tensor:
    return te.compute(tuple(out_shape), lambda b, c, y, x: blocked[b, c // BLOCK, y, x, c % BLOCK],
                      "T_conv2d")


def _strided(source: te.Tensor, out_shape: Sequence[int], strides: Sequence[int]) -> te.Tensor:
    """`T_strided`: the pixels a strided 1x1 convolution reads, gathered from `source`
    (NCHW, or NCHW[x]c: any axes after W kept), each read once instead of once per block
    of filters."""
    (sy, sx), (oh, ow) = strides, out_shape[2:4]
    shape = (source.shape[0], source.shape[1], oh, ow, *source.shape[4:])
    return te.compute(shape, lambda b, c, y, x, *rest: source[(b, c, y * sy, x * sx, *rest)], "T_strided")


def blocked_conv2d(padded: te.Tensor, weight: te.Tensor, out_shape: Sequence[int],
                   strides: Sequence[int], dilation: Sequence[int], acc: str) -> te.Tensor:
    """NCHW `padded` (padding applied) convolved with OIHW `weight`, summed in `acc`."""
    o, i, kh, kw = weight.shape
    blocks = -(-o // BLOCK)
    packed = te.compute((blocks, i, kh, kw, BLOCK), lambda ob, ic, y, x, lane: _lanes(
        o, lambda c: weight[c, ic, y, x], acc)(ob, lane), "T_weight_pack")
    n, _, oh, ow = out_shape
    if kh == kw == 1 and tuple(strides) != (1, 1):  # read only the pixels used, once
        padded, strides = _strided(padded, out_shape, strides), (1, 1)
    rc, ry, rx = te.reduce_axis(i, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    (sy, sx), (dy, dx) = strides, dilation

    def body(b, ob, y, x, lane):
        value = te.cast(padded[b, rc, y * sy + ry * dy, x * sx + rx * dx], acc)
        return te.sum(value * packed[ob, rc, ry, rx, lane], axis=[rc, ry, rx])

    blocked = te.compute((n, blocks, oh, ow, BLOCK), body, f"T_conv2d_NCHW{BLOCK}c", tag="nn.conv2d")
    return _unblock(blocked, out_shape)


def blocked_depthwise2d(data: te.Tensor, weight: te.Tensor, out_shape: Sequence[int], plan,
                        acc: str) -> te.Tensor:
    """NCHW `data` convolved channel by channel with OIHW `weight` (C, 1, KH, KW)."""
    n, c, h, w = data.shape
    _, _, kh, kw = weight.shape
    blocks = -(-c // BLOCK)
    (pt, pl), (pb, pr) = plan.pad_before, plan.pad_after

    def pad(b, cb, y, x, lane):
        inside = te.all_of(*[cond for cond, needed in (
            (te.ge(y, pt), pt), (te.lt(y, h + pt), pb), (te.ge(x, pl), pl), (te.lt(x, w + pl), pr)) if needed])
        channel = _lanes(c, lambda ch: data[b, ch, y - pt, x - pl], acc)(cb, lane)
        return te.select(inside, channel, te.const(0, acc)) if pt or pb or pl or pr else channel

    padded = te.compute((n, blocks, h + pt + pb, w + pl + pr, BLOCK), pad, f"T_pad_NCHW{BLOCK}c")
    packed = te.compute((blocks, kh, kw, BLOCK), lambda cb, y, x, lane: _lanes(
        c, lambda ch: weight[ch, 0, y, x], acc)(cb, lane), "T_weight_pack")
    _, _, oh, ow = out_shape
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    (sy, sx), (dy, dx) = plan.strides, plan.dilation

    def body(b, cb, y, x, lane):
        value = padded[b, cb, y * sy + ry * dy, x * sx + rx * dx, lane]
        return te.sum(value * packed[cb, ry, rx, lane], axis=[ry, rx])

    blocked = te.compute((n, blocks, oh, ow, BLOCK), body, f"T_conv2d_NCHW{BLOCK}c", tag="nn.conv2d")
    return _unblock(blocked, out_shape)


def nchwc_kind(op: str, plan, acc: str, data_channels: int | None = None,
               out_channels: int | None = None) -> bool:
    """Whether `nn.contrib_conv2d_NCHWc` has the layouts AlterOpLayout gives it: data
    NCHW[x]c, kernel OIHW[x]i[y]o, output NCHW[y]c, summed in float32; grouped only when
    a group's input and output channels are whole blocks (x divides the input channels of
    a group, y the output channels of a group: then a block of outputs reads the input
    blocks of its own group only)."""
    d, k, o = plan.data_layout, plan.kernel_layout, plan.out_layout
    if not (op == "nn.contrib_conv2d_NCHWc" and acc == "float32"
            and [a for a, _ in d.axes] == list("NCHWc") and [a for a, _ in k.axes] == list("OIHWio")
            and [a for a, _ in o.axes] == list("NCHWc") and d.factor("C") == k.factor("I")
            and o.factor("C") == k.factor("O")):
        return False
    return plan.groups == 1 or (data_channels is not None and out_channels is not None
                                and grouped_blocks_fit(data_channels, out_channels, plan.groups,
                                                       d.factor("C"), o.factor("C")))


def grouped_blocks_fit(in_channels: int, out_channels: int, groups: int, ic_bn: int, oc_bn: int) -> bool:
    """Whether every group of a grouped convolution is whole blocks of ic_bn input and oc_bn
    output channels."""
    return (in_channels % groups == 0 and out_channels % groups == 0
            and (in_channels // groups) % ic_bn == 0 and (out_channels // groups) % oc_bn == 0)


def nchwc_conv2d(padded: te.Tensor, weight: te.Tensor, out_shape: Sequence[int],
                 strides: Sequence[int], dilation: Sequence[int], acc: str, groups: int = 1) -> te.Tensor:
    """TVM's conv2d_NCHWc: `padded` (N, C/x, H, W, x) convolved with the packed `weight`
    (O/y, C/x, KH, KW, x, y) into (N, O/y, OH, OW, y), summed over the input channel
    blocks, the kernel window, then the channels of a block, TVM's order (the x channels
    of one pixel are contiguous; the sums round a little differently from nn.conv2d's).
    The schedule vectorises over the y output channels of a block, the weight's last axis.
    A strided 1x1 convolution reads `T_strided` (`_strided`), as blocked_conv2d's does:
    read in place, every group of filter blocks went through the input again (every line
    of every other row, for half of each; ResNet-50's 1024 -> 2048 at 14x14 reads 800 KB,
    past L2), while the copy, a quarter of it, stays in L2.  Measured (1 thread, each
    kernel alone in a graph, its data warm, the two computes alternated, 60 rounds, load
    3.6): 1024 -> 2048 to 7x7 7.5 -> 3.7 ms, 512 -> 1024 to 14x14 5.9 -> 2.9, 256 -> 512
    to 28x28 6.7 -> 3.7.  In ResNet-50 (each build twice, alternated, 40 rounds, load
    3.3-4.1) the three took 12.9-13.4 -> 10.9-11.2 ms at 1 thread and the model
    0.980-0.985x the CPU time (paired; the same build against itself 0.992-0.998);
    13.7-13.9 -> 11.3-11.4 ms with 2 threads on the loaded machine.  The sums are the
    same, the outputs bit-identical.

    Grouped (`groups` > 1, nchwc_kind checked that a group is whole blocks): the weight is
    (O/y, I/groups/x, KH, KW, x, y), and output block ob reads the input blocks of its
    group, from (ob // (O/groups/y)) * (I/groups/x) on (TVM's group_conv2d_NCHWc reads
    so); with 16 channels a group and blocks of 16, one input block per output block."""
    obs, icb, kh, kw, ic_bn, _ = weight.shape
    if kh == kw == 1 and tuple(strides) != (1, 1):  # read only the pixels used, once
        padded, strides = _strided(padded, out_shape, strides), (1, 1)
    rcb, ry, rx = te.reduce_axis(icb, "rcb"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    rci = te.reduce_axis(ic_bn, "rci")
    (sy, sx), (dy, dx) = strides, dilation

    group_obs = obs // groups  # output blocks a group

    def first_block(ob):
        """The first input block that output block `ob` reads."""
        group = ob if group_obs == 1 else ob // group_obs
        return group if icb == 1 else group * icb

    def body(b, ob, y, x, lane):
        cb = rcb if groups == 1 else first_block(ob) + rcb
        value = te.cast(padded[b, cb, y * sy + ry * dy, x * sx + rx * dx, rci], acc)
        return te.sum(value * te.cast(weight[ob, rcb, ry, rx, rci, lane], acc), axis=[rcb, ry, rx, rci])

    return te.compute(tuple(out_shape), body, "T_conv2d_NCHWc", tag="nn.contrib_conv2d_NCHWc")


def nchwc_depthwise_kind(op: str, plan, acc: str) -> bool:
    """Whether `nn.contrib_depthwise_conv2d_NCHWc` has AlterOpLayout's layouts: data and
    output NCHW[x]c, kernel OIHW1i[x]o (one filter per channel), summed in float32."""
    d, k, o = plan.data_layout, plan.kernel_layout, plan.out_layout
    return (op == "nn.contrib_depthwise_conv2d_NCHWc" and acc == "float32"
            and [a for a, _ in d.axes] == list("NCHWc") and [a for a, _ in k.axes] == list("OIHWio")
            and [a for a, _ in o.axes] == list("NCHWc") and k.factor("I") == 1
            and d.factor("C") == k.factor("O") == o.factor("C"))


def nchwc_depthwise2d(padded: te.Tensor, weight: te.Tensor, out_shape: Sequence[int],
                      strides: Sequence[int], dilation: Sequence[int], acc: str) -> te.Tensor:
    """TVM's depthwise_conv2d_NCHWc: `padded` (N, C/x, H, W, x) with the packed `weight`
    (C/x, 1, KH, KW, 1, x), channel by channel: both read at the same lane."""
    _, _, kh, kw, _, _ = weight.shape
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    (sy, sx), (dy, dx) = strides, dilation

    def body(b, cb, y, x, lane):
        value = te.cast(padded[b, cb, y * sy + ry * dy, x * sx + rx * dx, lane], acc)
        return te.sum(value * te.cast(weight[cb, 0, ry, rx, 0, lane], acc), axis=[ry, rx])

    return te.compute(tuple(out_shape), body, "T_depthwise_conv2d_NCHWc",
                      tag="nn.contrib_depthwise_conv2d_NCHWc")
