"""Compute rules: what each Relay op computes, as tensor expressions (TVM's TOPI).

Importing this package registers every rule onto its op (`get_op(name).compute`)."""

from . import library  # noqa: F401  (each rule file registers its rules on import)
from .registry import lowered_ops, register_compute

__all__ = ["lowered_ops", "register_compute"]
