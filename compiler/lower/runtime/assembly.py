"""The host assembly of an LLVM module, for a reader (the editor's assembly view).

    assembly(optimized_ir) -> str

The module is parsed and verified as for loading, then code-generated for the host CPU
and its features by the JIT's target machine, so it is the code that runs, with its
`.loc` directives (codegen/views.py reads them back to Relay lines).  Nothing is loaded.
"""

from __future__ import annotations

from .jit import JIT


def assembly(optimized_ir: str) -> str:
    jit = JIT(num_threads=1)
    return jit.target_machine.emit_assembly(jit.parse(optimized_ir))
