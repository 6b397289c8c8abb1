"""The operator library by name, loaded on first use, for the editing features.

`known_ops()` is `{name: Op}`, or `{}` while the library cannot be loaded (a broken op
file must not break the editor; it is asked again on the next call).
"""

from __future__ import annotations

_OPS: dict | None = None


def known_ops() -> dict:
    """The operator library by name ({} if it cannot be loaded; then asked again later)."""
    global _OPS
    if _OPS is None:
        try:
            from ..compiler.ops import all_ops  # lazy: the operator library loads on first use

            _OPS = {op.name: op for op in all_ops()}
        except Exception:  # noqa: BLE001 -- a broken op file must not break the editor
            return {}
    return _OPS
