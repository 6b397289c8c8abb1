"""Imports every file of compute rules (each registers its rules on import)."""

from . import broadcast  # noqa: F401
