"""The operator library: attribute schemas, type relations, fusion patterns, docs and
numpy reference semantics, one definition per op (see registry.py)."""

from .attrs import Attr, AttrError, OpAttrs
from .registry import OpDef, OpPattern, OpTypeError, all_ops, attr_schema, get_op

__all__ = ["Attr", "AttrError", "OpAttrs", "OpDef", "OpPattern", "OpTypeError", "all_ops", "attr_schema", "get_op"]
