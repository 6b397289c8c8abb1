"""Pass infrastructure: passes, sequences, the pass context and instruments.

    with PassContext(opt_level=3, instruments=[recorder]):
        mod = Sequential([SimplifyInference(), FoldConstant(), FuseOps()])(mod)

A pass maps a module to a new module and never changes its input (snapshots of earlier
modules stay valid).  `ModulePass.run(mod, ctx)` sees the whole module;
`FunctionPass.transform_function(func, mod, ctx)` sees one function at a time and is
skipped on primitive (already fused) functions.  A pass runs when the context's
opt_level reaches its own, or when the context requires it by name; a disabled name
never runs.  Instruments see every pass before and after it runs; `SnapshotRecorder`
keeps the module after each one, which is what provenance is built from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable

from ..ir.expr import Function, GlobalVar
from ..ir.module import IRModule
from ..ir.pickling import fast_pickling


@dataclass
class PassContext:
    opt_level: int = 2
    required_pass: tuple[str, ...] = ()
    disabled_pass: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)
    instruments: list["PassInstrument"] = field(default_factory=list)

    _stack: ClassVar[list["PassContext"]] = []

    def __enter__(self) -> "PassContext":
        PassContext._stack.append(self)
        for inst in self.instruments:
            inst.enter_pass_ctx()
        return self

    def __exit__(self, *exc: object) -> None:
        for inst in self.instruments:
            inst.exit_pass_ctx()
        PassContext._stack.pop()

    @staticmethod
    def current() -> "PassContext":
        return PassContext._stack[-1] if PassContext._stack else _DEFAULT

    def get(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)

    @property
    def si_builder_enabled(self) -> bool:
        """`ir.enable_si_builder`: whether passes record where rewritten code came from."""
        return bool(self.config.get("ir.enable_si_builder", True))

    def enabled(self, p: "Pass") -> bool:
        if p.name in self.disabled_pass:
            return False
        return p.opt_level <= self.opt_level or p.name in self.required_pass


_DEFAULT = PassContext()


class PassInstrument:
    """Hooks around every pass a context runs.  Override what you need."""

    def enter_pass_ctx(self) -> None: ...

    def exit_pass_ctx(self) -> None: ...

    def should_run(self, mod: IRModule, p: "Pass") -> bool:
        return True

    def run_before_pass(self, mod: IRModule, p: "Pass") -> None: ...

    def run_after_pass(self, mod: IRModule, p: "Pass") -> None: ...


@dataclass(frozen=True, slots=True)
class Snapshot:
    pass_name: str
    module: IRModule
    changed: bool  # did the pass return a different module than it got?


class SnapshotRecorder(PassInstrument):
    """Keeps the module after every pass that ran (Sequentials themselves are not passes
    of their own here: only their leaves are recorded)."""

    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self._before: IRModule | None = None

    def record_input(self, mod: IRModule) -> None:
        self.snapshots.append(Snapshot("input", mod, True))

    def run_before_pass(self, mod: IRModule, p: "Pass") -> None:
        self._before = mod

    def run_after_pass(self, mod: IRModule, p: "Pass") -> None:
        if not isinstance(p, Sequential):
            self.snapshots.append(Snapshot(p.name, mod, not same_module(self._before, mod)))


def same_module(a: IRModule | None, b: IRModule) -> bool:
    """The same functions, object for object (passes return unchanged nodes as they are)."""
    if a is b:
        return True
    if a is None or a.functions.keys() != b.functions.keys():
        return False
    return all(a.functions[gv] is b.functions[gv] for gv in a.functions)


class Pass:
    name: ClassVar[str] = "pass"
    opt_level: ClassVar[int] = 0
    required: ClassVar[tuple[str, ...]] = ()

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        ctx = ctx or PassContext.current()
        if not isinstance(self, Sequential) and not ctx.enabled(self):
            return mod
        for inst in ctx.instruments:
            if not inst.should_run(mod, self):
                return mod
        for name in self.required:
            mod = get_pass(name)(mod, ctx)
        for inst in ctx.instruments:
            inst.run_before_pass(mod, self)
        out = self.run(mod, ctx)
        for inst in ctx.instruments:
            inst.run_after_pass(out, self)
        return out

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


class ModulePass(Pass):
    """A pass over the whole module; `run` returns the new module."""


class FunctionPass(Pass):
    """A pass applied to each global function on its own; primitive functions, external
    (`Compiler=...`) functions and those marked `SkipOptimization` are left alone, as TVM
    leaves them."""

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed: dict[GlobalVar, Function] = {}
        for gv, func in mod.functions.items():
            if func.is_primitive or "Compiler" in func.attrs or "SkipOptimization" in func.attrs:
                continue
            new = self.transform_function(func, mod, ctx)
            if new is not func:
                changed[gv] = new
        return mod.with_functions(changed) if changed else mod

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        raise NotImplementedError


class Sequential(Pass):
    name = "sequential"

    def __init__(self, passes: Iterable[Pass], name: str = "sequential") -> None:
        self.passes = list(passes)
        self.name = name  # type: ignore[misc]

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for p in self.passes:
            mod = p(mod, ctx)
        return mod


# --- the registry of passes by name (the CLI's --passes) ------------------------------

_PASSES: dict[str, Callable[[], Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    _PASSES[cls.name] = cls
    return cls


def get_pass(name: str) -> Pass:
    from . import passes  # noqa: F401  (each pass file registers itself)

    try:
        return _PASSES[name]()
    except KeyError:
        known = ", ".join(sorted(_PASSES))
        raise KeyError(f"unknown pass '{name}' (known: {known})") from None


def pass_names() -> list[str]:
    from . import passes  # noqa: F401

    return sorted(_PASSES)


fast_pickling(globals())  # ir/pickling.py: a kept build unpickles thousands of these
