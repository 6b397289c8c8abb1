"""Lowering: fused primitive functions → tensor expressions → scheduled loop nests →
LLVM IR (with debug locations back at the Relay source) → machine code.

One sub-package per job, each importing only those before it: `te/` (tensor
expressions, compute rules, composition), `schedule/` (schedules and the loop nest),
`codegen/` (LLVM IR), `runtime/` (JIT, plan of @main, AOT entry, executable).
`errors.py` is below them all; `pipeline.py` drives them (`lower_build`, the compile
cache) and `artifacts.py` writes a build's files.
"""
