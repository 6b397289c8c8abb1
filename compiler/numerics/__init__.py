"""Numerics of a run: comparing outputs as a numerical engineer does (compare.py), finding
the expression that first made a NaN or an infinity (nonfinite.py), and the first fused
kernel whose outputs part from the reference interpreter's (bisect.py).  The CLI's
`relaylens run --check` and the language server's command both call these."""

from .bisect import KernelCheck, bisect_kernels
from .compare import Comparison, compare, tolerance
from .nonfinite import Origin, find_nonfinite_compiled, find_nonfinite_interpreted, nonfinite_counts

__all__ = ["Comparison", "KernelCheck", "Origin", "bisect_kernels", "compare", "find_nonfinite_compiled",
           "find_nonfinite_interpreted", "nonfinite_counts", "tolerance"]
