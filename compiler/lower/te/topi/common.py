"""Index helpers shared by the compute rules."""

from __future__ import annotations

from typing import Sequence

from .. import expr as te


def broadcast_read(t: te.Tensor, out_indices: Sequence[te.PrimExpr]) -> te.PrimExpr:
    """`t` read at an output position under numpy broadcasting: its dimensions align
    with the trailing output dimensions, and a dimension of 1 reads index 0."""
    out_indices = tuple(out_indices)
    lead = len(out_indices) - t.ndim
    idx = [0 if d == 1 else out_indices[lead + k] for k, d in enumerate(t.shape)]
    return t[tuple(idx)] if idx else t[()]


def scalar_or_read(t: te.Tensor, out_indices: Sequence[te.PrimExpr]) -> te.PrimExpr:
    return t[()] if t.ndim == 0 else broadcast_read(t, out_indices)
