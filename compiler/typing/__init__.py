"""Type inference: every expression's type, and type errors as diagnostics."""

from .infer import infer_types, typing_generation
from .solver import ERROR, Mismatch, Solver

__all__ = ["infer_types", "typing_generation", "ERROR", "Mismatch", "Solver"]
