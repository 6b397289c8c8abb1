"""The meaning of number and string literals, with TVM's rules (reference §1.7, §1.8).

A number token is what TVM's lexer takes: leading minus signs (their parity is the sign),
then digits and `. e E + -`, then an optional `f`/`i` suffix with a width.  This module
decides what it means or says, in words, why it means nothing.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

_BODY = re.compile(r"(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)(?:([fi])(16|32|64)?)?")
_INT_RANGE = {"int16": 1 << 15, "int32": 1 << 31, "int64": 1 << 63}
_FLOAT_MAX = {"float16": 65504.0, "float32": 3.4028234663852886e38, "float64": math.inf}
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "'": "'", "0": "\0"}


class LiteralError(ValueError):
    pass


@lru_cache(maxsize=8192)
def parse_number(text: str) -> tuple[int | float, str]:
    """(value, dtype) of a number token, or LiteralError with a readable reason."""
    body = text.lstrip("-")
    negative = (len(text) - len(body)) % 2 == 1
    if body == "inff":
        return (-math.inf if negative else math.inf), "float32"
    m = _BODY.fullmatch(body)
    if m is None:
        raise LiteralError(_why_bad(text))
    digits, kind, width = m.groups()
    is_fractional = any(c in digits for c in ".eE")
    if kind == "f":
        dtype = f"float{width or 32}"
        value = float(digits)
        if value > _FLOAT_MAX[dtype]:
            raise LiteralError(f"{text} is out of range for {dtype}")
        return (-value if negative else value), dtype
    if is_fractional:
        raise LiteralError(f"a floating-point literal needs the f suffix: write {text}f")
    value = int(digits)
    value = -value if negative else value
    if kind == "i":
        dtype = f"int{width or 32}"
    else:  # no suffix: int32, widened silently to int64 as TVM does
        dtype = "int32" if -(1 << 31) <= value < (1 << 31) else "int64"
    bound = _INT_RANGE[dtype]
    if not -bound <= value < bound:
        raise LiteralError(f"{text} is out of range for {dtype}")
    return value, dtype


def _why_bad(text: str) -> str:
    body = text.lstrip("-")
    if re.fullmatch(r"\d+[+\-]\S*", body) or re.search(r"\d[+\-]\d", body):
        return f"'{text}' is not a number: put spaces around an infix '+' or '-'"
    if re.fullmatch(r"\d+(?:\.\d*)?i\d*", body) and "." not in body:
        return f"'{text}': integer widths are i16, i32 and i64"
    if re.fullmatch(r"[\d.eE+\-]+f\d*", body):
        return f"'{text}': float widths are f16, f32 and f64"
    return f"'{text}' is not a valid number"


def parse_string(token: str) -> str:
    """The value of a string token (with its quotes).  TVM's lexer takes the characters as
    they are; its printer writes C escapes, so we read those (a superset of TVM)."""
    inner = token[1:-1]
    if "\\" not in inner:
        return inner
    out: list[str] = []
    i = 0
    while i < len(inner):
        c = inner[i]
        if c == "\\" and i + 1 < len(inner):
            nxt = inner[i + 1]
            if nxt == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", inner[i + 2 : i + 4] or ""):
                out.append(chr(int(inner[i + 2 : i + 4], 16)))
                i += 4
                continue
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out)
