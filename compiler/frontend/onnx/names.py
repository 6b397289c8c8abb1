"""Names of @main's parameters, from ONNX tensor names.

A parameter keeps its ONNX name when our parser reads it at a binding site (`input.1`,
`onnx::Conv_7`, `conv1.weight`; docs/text-format-extensions.md).  Other names are mended:
every character outside `[A-Za-z0-9_]` becomes `_`, and a name that does not start with a
letter or `_` gets a `v` in front (`1` → `v1`, as our printer does).  Names are made
unique with `_1`, `_2`...  The printer then writes each one verbatim, so the keys of the
params archive and `relaylens run --input NAME=` match the text.

A mended name never takes the name another tensor of the graph has as it is (`reserved`):
the initializer `a b` mended to `a_b` took the graph input `a_b`'s name (read after the
initializers, it became `%a_b_1`), so `relaylens run --input a_b=x.npy` replaced the weight
and left the input missing.
"""

from __future__ import annotations

import re

_VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_/]*(?:(?:\.|::|:(?=[0-9])|-)[A-Za-z0-9_/]+)*")
_BAD = re.compile(r"[^A-Za-z0-9_]")


def mend(name: str) -> str:
    if _VALID.fullmatch(name):
        return name
    mended = _BAD.sub("_", name)
    if not mended or not (mended[0].isalpha() or mended[0] == "_"):
        mended = "v" + mended
    return mended


class VarNames:
    def __init__(self, reserved=()) -> None:
        self._taken: set[str] = set()
        self._reserved = {name for name in reserved if mend(name) == name}  # kept by their own tensors

    def fresh(self, onnx_name: str) -> str:
        base = mend(onnx_name)
        name, k = base, 0
        while name in self._taken or (name in self._reserved and name != onnx_name):
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name
