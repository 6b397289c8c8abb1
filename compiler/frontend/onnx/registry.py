"""The table of converters: one function per ONNX op type (or per family, reading
`ctx.op_type`), registered with the first opset it handles.

    @converter("Relu", "Sigmoid")
    def _(ctx: NodeContext) -> Expr: ...

Conversions follow the semantics of TVM's relay/frontend/onnx.py; differences between
opset versions are handled inside the converter (`ctx.opset`).  `supported_ops()` is what
the node-test suite and the coverage report read.
"""

from __future__ import annotations

from typing import Callable, Sequence, Union

from ...ir.expr import Expr
from .context import NodeContext

Result = Union[Expr, Sequence[Union[Expr, None]]]
Converter = Callable[[NodeContext], Result]

_CONVERTERS: dict[str, tuple[Converter, int]] = {}


def converter(*op_types: str, since: int = 1, domain: str = "") -> Callable[[Converter], Converter]:
    """`domain`: an op of another domain than ONNX's own (com.microsoft), kept as
    `domain.OpType`; `since` is then that domain's opset."""
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            key = f"{domain}.{op_type}" if domain else op_type
            if key in _CONVERTERS:
                raise ValueError(f"two converters for {key}")
            _CONVERTERS[key] = (fn, since)
        return fn

    return register


def lookup(op_type: str, domain: str = "") -> tuple[Converter, int] | None:
    _load()
    return _CONVERTERS.get(f"{domain}.{op_type}" if domain else op_type)


def supported_ops() -> list[str]:
    _load()
    return sorted(_CONVERTERS)


_loaded = False


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import (  # noqa: F401
            convert_activation,
            convert_elementwise,
            convert_index,
            convert_nn,
            convert_norm,
            convert_pool,
            convert_reduce,
            convert_shape,
        )
        from . import convert_qlinear  # noqa: F401  (com.microsoft QLinearAdd, QLinearConcat)
        from . import convert_quantize  # noqa: F401  (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear)
        from . import convert_integer  # noqa: F401  (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger)
        from . import convert_vision  # noqa: F401  (RoiAlign, MaxRoiPool, DeformConv)
        from . import convert_rnn  # noqa: F401  (LSTM, GRU, RNN, unrolled)
