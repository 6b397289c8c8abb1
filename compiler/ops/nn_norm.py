"""Normalisation and dropout (reference §7.1)."""
