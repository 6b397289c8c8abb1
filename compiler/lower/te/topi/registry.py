"""The table of compute rules, one per op name.

A rule is called like the op's numpy compute, with tensors for arrays:

    @lowering("nn.relu")
    def _(data: te.Tensor, attrs: OpAttrs, out_type: TensorType) -> te.Tensor:
        return te.compute(data.shape, lambda *i: te.maximum(data[i], 0), "T_relu")

`args` arrive one per op input (a tuple argument, as for `concatenate`, arrives as a
Python tuple of tensors); a 0-d tensor is a scalar (`x[()]`).  `out_type` is the call's
inferred type, fully static (a TupleType for ops with several results, which then return
a tuple of tensors).  A rule raises `te.LoweringError` for what it cannot do (a layout, an
attribute value), naming it; the driver adds where.
"""

from __future__ import annotations

from typing import Callable

Rule = Callable[..., object]

_RULES: dict[str, Rule] = {}


def lowering(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            if name in _RULES:
                raise ValueError(f"two compute rules for {name}")
            _RULES[name] = fn
        return fn

    return register


def get_lowering(name: str) -> Rule | None:
    _load()
    return _RULES.get(name)


def lowered_ops() -> list[str]:
    _load()
    return sorted(_RULES)


_loaded = False


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        # lazy: the rule files import this module to register themselves
        from . import library  # noqa: F401
