"""Reading a model file, with every failure as an `OnnxImportError` saying what is wrong
(the caller names the model file).

    load_model(path) -> ModelProto
    load_model_with_files(path) -> (ModelProto, [external data files read])

External data (tensors whose bytes live in another file, `location` relative to the
model's folder) is read here, not by onnx: each location must be a relative path that
stays inside the model's folder once every `..` and symbolic link is resolved, and must
name a regular file holding `offset + length` bytes.  Anything else (a missing file,
`../../etc/passwd`, `/etc/passwd`, a link out of the folder, a file too short) is an
`OnnxImportError` naming the tensor and the location, whatever the onnx version.
So is a tensor whose data does not match its shape (checked before numpy allocates it).
"""

from __future__ import annotations

import math
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Iterator

import onnx
from google.protobuf.message import DecodeError
from onnx import AttributeProto, GraphProto, TensorProto

from .errors import OnnxImportError


def load_model(path: str | Path) -> onnx.ModelProto:
    """The model at `path`, with external data loaded from beside it."""
    return load_model_with_files(path)[0]


def load_model_with_files(path: str | Path) -> tuple[onnx.ModelProto, list[Path]]:
    """The model at `path` with its external data loaded, and the files that data came from."""
    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise OnnxImportError("no such file") from None
    except IsADirectoryError:
        raise OnnxImportError("is a directory, not an ONNX model") from None
    except OSError as exc:
        raise OnnxImportError(f"cannot read: {exc.strerror or exc}") from None
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise OnnxImportError(f"not an ONNX model ({exc})") from None
    if not model.HasField("graph"):
        raise OnnxImportError("not an ONNX model (it has no graph)")
    folder = Path(path).resolve().parent
    files: list[Path] = []
    for tensor in _tensors(model.graph):
        if tensor.data_location == TensorProto.EXTERNAL:
            files.append(_load_external(tensor, folder))
        _check_size(tensor)
    return model, sorted(set(files))


# Types stored several values to a byte (or of no fixed width): their sizes are not checked here.
_PACKED = {getattr(TensorProto, n, None) for n in ("INT4", "UINT4", "INT2", "UINT2", "FLOAT4E2M1",
                                                   "FLOAT6E2M3", "FLOAT6E3M2")}


def _check_size(tensor: TensorProto) -> None:
    """A tensor whose data does not hold the values its shape declares is an error here,
    before anything is allocated from the shape."""
    if any(d < 0 for d in tensor.dims):
        raise OnnxImportError(f"tensor '{tensor.name}' has a negative dimension: {list(tensor.dims)}")
    if tensor.data_type in _PACKED or tensor.HasField("segment"):
        return
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        field = onnx.helper.tensor_dtype_to_field(tensor.data_type)
    except (KeyError, ValueError, TypeError):
        return  # an unknown type: the conversion names it
    count = math.prod(tensor.dims)
    if tensor.HasField("raw_data"):
        held, needed, unit = len(tensor.raw_data), count * itemsize, "bytes"
    else:
        per_value = 2 if tensor.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128) else 1
        held, needed, unit = len(getattr(tensor, field)), count * per_value, "values"
    if held != needed:
        raise OnnxImportError(f"tensor '{tensor.name}' of shape {list(tensor.dims)} needs {needed} {unit} "
                              f"of data but holds {held}")


def _tensors(graph: GraphProto) -> Iterator[TensorProto]:
    """Every tensor of `graph` and its subgraphs: initializers, sparse ones, attributes."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.TENSOR:
                yield attr.t
            elif attr.type == AttributeProto.TENSORS:
                yield from attr.tensors
            elif attr.type == AttributeProto.GRAPH:
                yield from _tensors(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _tensors(g)


def _load_external(tensor: TensorProto, folder: Path) -> Path:
    """Read the tensor's bytes from its external file into `raw_data`; the file read."""
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    where = f"tensor '{tensor.name}' keeps its data in '{location}'"
    if not location:
        raise OnnxImportError(f"tensor '{tensor.name}' has external data without a location")
    if PurePosixPath(location).is_absolute() or PureWindowsPath(location).is_absolute() \
            or PureWindowsPath(location).drive:
        raise OnnxImportError(f"{where}, an absolute path: external data must lie in the model's folder")
    file = (folder / location).resolve()
    if not file.is_relative_to(folder):
        raise OnnxImportError(f"{where}, outside the model's folder {folder}: refusing to read it")
    if not file.exists():
        raise OnnxImportError(f"{where}, which does not exist")
    if not file.is_file():
        raise OnnxImportError(f"{where}, which is not a regular file")
    try:
        offset = int(info.get("offset", 0))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise OnnxImportError(f"{where} at a bad offset or length "
                              f"({info.get('offset')!r}, {info.get('length')!r})") from None
    size = file.stat().st_size
    if offset < 0 or (length is not None and length < 0) or offset + (length or 0) > size:
        raise OnnxImportError(f"{where} at offset {offset}, length {length}, but the file holds "
                              f"{size} bytes")
    try:
        with file.open("rb") as f:
            f.seek(offset)
            tensor.raw_data = f.read() if length is None else f.read(length)
    except OSError as exc:
        raise OnnxImportError(f"{where}, which cannot be read: {exc.strerror or exc}") from None
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]
    return file
