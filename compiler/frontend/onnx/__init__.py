"""The ONNX frontend: ONNX models in, Relay modules out, every expression tagged with the
ONNX node it came from (RFC 0092's span filling).

    import_onnx(model, shapes=None, allow_unsupported=False) -> OnnxImport
        .module   IRModule with @main(inputs..., initializers...)
        .params   {parameter name: initializer array}
        .inputs   {ONNX graph input: @main parameter name}
    load_model(path) -> ModelProto           (raises OnnxImportError for unreadable files)
    supported_ops() -> sorted ONNX op types
    OnnxImportError                          the message names the node, op and opset

Needs the `onnx` package (`pip install relaylens[onnx]`).  docs/onnx.md is the user's
guide; graph.py describes the walk.
"""

from .errors import OnnxImportError
from .graph import OnnxImport, import_onnx, model_opset
from .load import load_model
from .registry import supported_ops

__all__ = ["OnnxImport", "OnnxImportError", "import_onnx", "load_model", "model_opset", "supported_ops"]
