"""Numerics of a run: comparing outputs as a numerical engineer does (compare.py), finding
the expression that first made a NaN or an infinity (nonfinite.py), and the first fused
kernel whose outputs part from the reference interpreter's (bisect.py); all of it in one
call, as data (check.py).  The CLI's `relaylens run --check` and the language server's
Check Numerics command both call these."""

from .bisect import KernelCheck, bisect_kernels
from .check import NumericsCheck, check_numerics
from .compare import Comparison, compare, tolerance
from .nonfinite import Origin, find_nonfinite_compiled, find_nonfinite_interpreted, nonfinite_counts

__all__ = ["Comparison", "KernelCheck", "NumericsCheck", "Origin", "bisect_kernels", "check_numerics", "compare", "find_nonfinite_compiled",
           "find_nonfinite_interpreted", "nonfinite_counts", "tolerance"]
