"""The operator library: attribute schemas, type relations, fusion patterns, docs and
numpy reference semantics, one definition per op (see registry.py).

Importing the package defines every op (library.py imports each op file once); the
lowering adds each op's compute rule when `lower.te.topi` is imported."""

from .attrs import Attr, AttrError, OpAttrs
from . import library  # noqa: F401  (each op file registers its ops on import)
from .registry import OpDef, OpPattern, OpTypeError, all_ops, attr_schema, get_op

__all__ = ["Attr", "AttrError", "OpAttrs", "OpDef", "OpPattern", "OpTypeError", "all_ops", "attr_schema", "get_op"]
