"""Shape and layout transforms (reference §7.6)."""
