"""LLVM code generation: loop nests → LLVM IR with debug locations at the Relay source.

`llvm.py` emits an `llvmlite.ir.Module` from loop-nest `PrimFunc`s (statements, loops,
parallel regions), with the scalar operations of `scalar.py` and the debug information
of `debuginfo.py`; most of its instructions are made as their text (`lines.py`), and
`ir_text.py` prints the module; `llvm_map.py` reads LLVM IR text (as generated or
optimised) back to Relay lines.
"""
