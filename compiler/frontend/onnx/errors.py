"""The two errors of the ONNX frontend.

* `NodeError`: what a converter raises about the node it converts ("auto_pad=VALID is not
  supported").  It knows nothing of the node; the graph walk adds that.
* `OnnxImportError`: what `import_onnx` raises, with the full message a user reads:
  `node 'conv7' (Conv, opset 13): auto_pad=VALID is not supported`.
"""

from __future__ import annotations


class NodeError(Exception):
    """A node cannot be converted: an op or a feature we lack, or a node that does not fit
    its inputs.  Either way `--allow-unsupported` may stand an opaque call in for it.
    `needs_value` is the index of an input that must be known before run time and is not."""

    def __init__(self, message: str, needs_value: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.needs_value = needs_value


class OnnxImportError(Exception):
    """A model that cannot be imported, with a message naming where (file, node, op).
    `needs_value` names the tensor that had to be known before run time, if that is why
    (binding it to a value, as a constant, would let the import go on)."""

    def __init__(self, message: str, needs_value: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.needs_value = needs_value
