"""Pooling, padding, resizing (reference §7.2)."""
