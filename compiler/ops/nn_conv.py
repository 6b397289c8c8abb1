"""Convolutions, dense and matmul (reference §7.1)."""
