"""Schedules: how the tensor expressions of a fused function become a loop nest.

`primitives.py` is the `Schedule` (TVM's primitives with a record of every step) over the
stages of `stage.py`; `builder.py` builds the loop nest of a schedule as it stands, in the
loop-nest IR of `loopnest.py` (what the code generator reads); `defaults.py` picks a
schedule per kind of fused function, with `conv.py` for channel-blocked convolutions.
"""
