"""Schedules: how the tensor expressions of a fused function become a loop nest.

`primitives.py` is the `Schedule` (TVM's primitives with a record of every step, and the
builder of the loop nest of `loopnest.py`, what the code generator reads); `defaults.py` picks a
schedule per kind of fused function, with `conv.py` for channel-blocked convolutions.
"""
