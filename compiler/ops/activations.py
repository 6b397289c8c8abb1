"""Activations with attributes: relu family, softmax (reference §7.3)."""
