"""Imports every file of compute rules (each registers its rules on import)."""

from . import activations, broadcast, elemwise, transform, transform_index  # noqa: F401
