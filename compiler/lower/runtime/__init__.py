"""Running what was generated: the JIT, the execution plan of @main and its AOT entry.

`jit.py` optimises LLVM IR for the host and loads it as machine code; `plan.py` plans
@main as kernel calls on planned buffers; `aot.py` writes that plan as one LLVM entry
function; `executable.py` runs @main through it, or through the interpreter calling the
compiled kernels when @main has control flow.
"""
