"""Reductions (reference §7.5)."""
