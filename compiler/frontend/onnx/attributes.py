"""A node's attributes, read by name and kind: `attrs.int("axis", 1)`.

Each reader takes a default; without one the attribute is required.  A missing required
attribute or one of the wrong kind raises `NodeError` naming it.  Floats are read as the
float32 ONNX stores, kept as the shortest decimal that reads back to it (`0.1`, not
`0.10000000149011612`), so that printed text and the IR agree exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import AttributeProto, NodeProto

from .dtypes import to_array
from .errors import NodeError

_REQUIRED: Any = object()

_KINDS = {
    AttributeProto.INT: "an integer",
    AttributeProto.INTS: "a list of integers",
    AttributeProto.FLOAT: "a float",
    AttributeProto.FLOATS: "a list of floats",
    AttributeProto.STRING: "a string",
    AttributeProto.STRINGS: "a list of strings",
    AttributeProto.TENSOR: "a tensor",
    AttributeProto.GRAPH: "a graph",
}


def float32_value(value: float) -> float:
    """The shortest decimal naming the same float32 as `value`."""
    return float(str(np.float32(value)))


class NodeAttrs:
    def __init__(self, node: NodeProto) -> None:
        self._by_name = {a.name: a for a in node.attribute}

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def names(self) -> list[str]:
        return list(self._by_name)

    def _get(self, name: str, kind: int, default: Any) -> AttributeProto | None:
        attr = self._by_name.get(name)
        if attr is None:
            if default is _REQUIRED:
                raise NodeError(f"attribute {name} is required")
            return None
        if attr.type != kind:
            found = _KINDS.get(attr.type, "of another kind")
            raise NodeError(f"attribute {name} is {found}, expected {_KINDS[kind]}")
        return attr

    def int(self, name: str, default: Any = _REQUIRED) -> int:
        attr = self._get(name, AttributeProto.INT, default)
        return default if attr is None else int(attr.i)

    def ints(self, name: str, default: Any = _REQUIRED) -> tuple[int, ...]:
        attr = self._get(name, AttributeProto.INTS, default)
        return default if attr is None else tuple(int(i) for i in attr.ints)

    def float(self, name: str, default: Any = _REQUIRED) -> float:
        attr = self._get(name, AttributeProto.FLOAT, default)
        return default if attr is None else float32_value(attr.f)

    def floats(self, name: str, default: Any = _REQUIRED) -> tuple[float, ...]:
        attr = self._get(name, AttributeProto.FLOATS, default)
        return default if attr is None else tuple(float32_value(f) for f in attr.floats)

    def string(self, name: str, default: Any = _REQUIRED) -> str:
        attr = self._get(name, AttributeProto.STRING, default)
        return default if attr is None else attr.s.decode("utf-8", errors="replace")

    def strings(self, name: str, default: Any = _REQUIRED) -> tuple[str, ...]:
        attr = self._get(name, AttributeProto.STRINGS, default)
        return default if attr is None else tuple(v.decode("utf-8", errors="replace") for v in attr.strings)

    def tensor(self, name: str, default: Any = _REQUIRED) -> np.ndarray:
        attr = self._get(name, AttributeProto.TENSOR, default)
        return default if attr is None else to_array(attr.t)
