"""Tensor expressions: what each op of a fused function computes.

`expr.py` is the expression language (TVM's `te`: placeholders, `compute`, reductions),
imported as `te`; `arith.py` its index arithmetic; `evaluate.py` evaluates it with numpy
(the reference for compute rules); `topi/` holds one compute rule per Relay op; and
`compose.py` turns a primitive Relay function into tensor expressions by composing them.
Nothing here knows about schedules, loops or LLVM.
"""
