"""The error of every lowering stage: something it cannot do, at a Relay span.

`LoweringError(message, span)`: an op without a compute rule, a dtype, a dynamic shape,
a schedule primitive used where it does not apply, code generation given what it cannot
emit.  `span` is the Relay expression at fault when known; the driver (pipeline.py)
turns the error into a diagnostic there, or at the fused function when it is None.
"""

from __future__ import annotations

from typing import Any


class LoweringError(Exception):
    """Something a lowering cannot do; `span` is the Relay expression at fault, if known."""

    def __init__(self, message: str, span: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
