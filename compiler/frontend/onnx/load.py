"""Reading a model file, with every failure as an `OnnxImportError` naming the file."""

from __future__ import annotations

from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from .errors import OnnxImportError


def load_model(path: str | Path) -> onnx.ModelProto:
    """The model at `path`, with external data loaded from beside it."""
    try:
        model = onnx.load(str(path))
    except FileNotFoundError:
        raise OnnxImportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise OnnxImportError(f"{path}: is a directory, not an ONNX model") from None
    except OSError as exc:
        raise OnnxImportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise OnnxImportError(f"{path}: not an ONNX model ({exc})") from None
    if not model.HasField("graph"):
        raise OnnxImportError(f"{path}: not an ONNX model (it has no graph)")
    return model
