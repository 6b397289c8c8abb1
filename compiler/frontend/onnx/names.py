"""Names of @main's parameters, from ONNX tensor names.

A parameter keeps its ONNX name when our parser reads it at a binding site (`input.1`,
`onnx::Conv_7`, `conv1.weight`; docs/text-format-extensions.md).  Other names are mended:
every character outside `[A-Za-z0-9_]` becomes `_`, and a name that does not start with a
letter or `_` gets a `v` in front (`1` → `v1`, as our printer does).  Names are made
unique with `_1`, `_2`...  The printer then writes each one verbatim, so the keys of the
params archive and `relaylens run --input NAME=` match the text.
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
    def __init__(self) -> None:
        self._taken: set[str] = set()

    def fresh(self, onnx_name: str) -> str:
        base = mend(onnx_name)
        name, k = base, 0
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name
