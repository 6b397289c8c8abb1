"""Plumbing ops seen in printed IR: annotations, devices, memory, lowered calls, qnn (reference §7.7)."""
