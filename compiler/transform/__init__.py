"""Passes that keep their source: infrastructure, SIBuilder, NameSupply, the passes."""

from .infra import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInstrument,
    Sequential,
    Snapshot,
    SnapshotRecorder,
    get_pass,
    pass_names,
    register_pass,
)
from .names import GlobalVarSupply, NameSupply, mangle_module_name
from .si_builder import SIBuilder, collect_spans

__all__ = [
    "FunctionPass", "ModulePass", "Pass", "PassContext", "PassInstrument", "Sequential", "Snapshot",
    "SnapshotRecorder", "get_pass", "pass_names", "register_pass", "GlobalVarSupply", "NameSupply",
    "mangle_module_name", "SIBuilder", "collect_spans",
]
