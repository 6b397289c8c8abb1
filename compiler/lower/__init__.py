"""Lowering: fused primitive functions → tensor expressions → scheduled loop nests →
LLVM IR (with debug locations back at the Relay source) → machine code."""
