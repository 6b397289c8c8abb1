"""The ONNX frontend: ONNX models in, Relay modules out, every expression tagged with the
ONNX node it came from (RFC 0092's span filling).

    import_onnx(model, shapes=None, allow_unsupported=False) -> OnnxImport
        .module   IRModule with @main(inputs..., initializers...)
        .params   {parameter name: initializer array}
        .inputs   {ONNX graph input: @main parameter name}
    load_model(path) -> ModelProto           (raises OnnxImportError for unreadable files)
    load_model_with_files(path) -> (ModelProto, [external data files it read])
    supported_ops() -> sorted ONNX op types
    OnnxImportError                          the message names the node, op and opset

Needs the `onnx` package (`pip install relaylens[onnx]`); the names above are imported
on first use, so `relaylens` itself (whose `import` command, compiler/cli/import_.py,
calls them) works without it.  The frontend knows nothing of the CLI.  docs/onnx.md is
the user's guide; graph.py describes the walk.
"""

from importlib import import_module
from typing import Any

_HOME = {"OnnxImport": "graph", "import_onnx": "graph", "model_opset": "graph", "load_model": "load",
         "load_model_with_files": "load", "supported_ops": "registry", "OnnxImportError": "errors"}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_HOME[name]}", __name__), name)
