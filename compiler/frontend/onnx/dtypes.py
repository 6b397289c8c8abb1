"""ONNX element types as Relay dtypes, and ONNX tensors as numpy arrays.

Only the element types our op library computes with are mapped; the others (strings,
complex numbers, bfloat16, the float8 and 4-bit types) raise `NodeError` naming the type,
so the caller can say which node or input needs it.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper

from .errors import NodeError

_DTYPES = {
    TensorProto.FLOAT: "float32",
    TensorProto.DOUBLE: "float64",
    TensorProto.FLOAT16: "float16",
    TensorProto.INT8: "int8",
    TensorProto.INT16: "int16",
    TensorProto.INT32: "int32",
    TensorProto.INT64: "int64",
    TensorProto.UINT8: "uint8",
    TensorProto.UINT16: "uint16",
    TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64",
    TensorProto.BOOL: "bool",
}


def type_name(elem_type: int) -> str:
    """The ONNX spelling of an element type (`FLOAT16`), for messages."""
    try:
        return TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"element type {elem_type}"


def relay_dtype(elem_type: int) -> str:
    dtype = _DTYPES.get(elem_type)
    if dtype is None:
        raise NodeError(f"tensors of type {type_name(elem_type)} are not supported")
    return dtype


def to_array(tensor: TensorProto) -> np.ndarray:
    """The value of an initializer or attribute tensor (external data already loaded)."""
    relay_dtype(tensor.data_type)
    if tensor.data_location == TensorProto.EXTERNAL and not tensor.raw_data:
        raise NodeError(f"the data of tensor '{tensor.name}' is stored outside the model; load the "
                        f"model from its file so that the data beside it is found")
    return np.asarray(numpy_helper.to_array(tensor))
