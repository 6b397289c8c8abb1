"""Compute rules: what each Relay op computes, as tensor expressions (TVM's TOPI)."""

from .registry import get_lowering, lowering, lowered_ops

__all__ = ["get_lowering", "lowering", "lowered_ops"]
