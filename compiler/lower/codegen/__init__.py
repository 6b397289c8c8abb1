"""LLVM code generation: loop nests → LLVM IR with debug locations at the Relay source.

`llvm.py` emits an `llvmlite.ir.Module` from loop-nest `PrimFunc`s; `llvm_map.py` reads
LLVM IR text (as generated or optimised) back to Relay lines.
"""
