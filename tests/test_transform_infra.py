"""Pass infrastructure, NameSupply/GlobalVarSupply and SIBuilder."""

from __future__ import annotations

import dataclasses

import pytest

from relaylens.compiler.ir import Call, Constant, LayerSpan, SequentialSpan, Var, op
from relaylens.compiler.parser import parse
from relaylens.compiler.transform import (
    FunctionPass,
    GlobalVarSupply,
    ModulePass,
    NameSupply,
    PassContext,
    PassInstrument,
    SIBuilder,
    Sequential,
    SnapshotRecorder,
    collect_spans,
    mangle_module_name,
)
from relaylens.compiler.transform.span_check import spanless

# --- names -----------------------------------------------------------------------------


def test_prefix_and_dots():
    names = NameSupply(mangle_module_name("default"))
    assert names.fresh_name("fused_nn.conv2d_add") == "tvmgen_default_fused_nn_conv2d_add"
    assert names.contains_name("fused_nn_conv2d_add")
    assert not names.contains_name("fused_nn_conv2d_add", add_prefix=False)
    assert names.fresh_name("x", add_prefix=False) == "x"


def test_integer_suffix_is_kept_apart_from_the_stem():
    names = NameSupply("")
    names.reserve_name("fused_add12")
    names.reserve_name("fused_add13")
    assert names.fresh_name("fused_add12") == "fused_add14"
    assert names.fresh_name("fused_add13") == "fused_add15"
    assert names.fresh_name("fused_add9") == "fused_add9"  # free: kept as asked


def test_freshening_never_stacks_suffixes():
    names = NameSupply("")
    got = [names.fresh_name("fused_add") for _ in range(4)]
    assert got == ["fused_add", "fused_add_1", "fused_add_2", "fused_add_3"]
    assert names.fresh_name("fused_add_2") == "fused_add_4"


def test_reserve_then_fresh():
    names = NameSupply("tvmgen_default")
    assert names.reserve_name("fused_relu") == "tvmgen_default_fused_relu"
    assert names.fresh_name("fused_relu") == "tvmgen_default_fused_relu_1"


def test_global_var_supply():
    supply = GlobalVarSupply(NameSupply("tvmgen_default"))
    a = supply.unique_global_for("fused_add")
    assert supply.unique_global_for("fused_add") is a and a.name == "tvmgen_default_fused_add"
    b = supply.fresh_global("fused_add")
    assert b is not a and b.name == "tvmgen_default_fused_add_1"


def test_global_var_supply_reserves_the_module_names():
    mod = parse('#[version = "0.0.5"]\ndef @fused_add(%x: float32) { %x }\n'
                'def @main(%x: float32) { @fused_add(%x) }').module
    supply = GlobalVarSupply(NameSupply(""), mod)
    assert supply.fresh_global("fused_add").name == "fused_add_1"
    assert supply.unique_global_for("main") is mod.global_vars["main"]
    assert mangle_module_name("default") == "tvmgen_default"


# --- passes -----------------------------------------------------------------------------


def module(text: str):
    return parse('#[version = "0.0.5"]\n' + text).module


class NegateBody(FunctionPass):
    name = "NegateBody"
    opt_level = 2

    def transform_function(self, func, mod, ctx):
        return dataclasses.replace(func, body=Call(op("negative"), (func.body,)))


class Noop(ModulePass):
    name = "Noop"
    opt_level = 0

    def run(self, mod, ctx):
        return mod


def test_opt_level_required_and_disabled():
    mod = module("def @main(%x: float32) { %x }")
    assert NegateBody()(mod, PassContext(opt_level=1)) is mod
    assert NegateBody()(mod, PassContext(opt_level=1, required_pass=("NegateBody",))) is not mod
    assert NegateBody()(mod, PassContext(opt_level=3, disabled_pass=("NegateBody",))) is mod
    out = NegateBody()(mod, PassContext(opt_level=3))
    assert out is not mod and mod["main"].body is mod["main"].params[0]  # the input is untouched


def test_function_pass_skips_primitive_functions():
    mod = module("def @f(%x: float32, Primitive=1) { %x }\ndef @main(%x: float32) { @f(%x) }")
    out = NegateBody()(mod, PassContext(opt_level=3))
    assert out["f"] is mod["f"] and out["main"] is not mod["main"]


def test_instruments_and_snapshots():
    calls = []

    class Log(PassInstrument):
        def enter_pass_ctx(self):
            calls.append("enter")

        def exit_pass_ctx(self):
            calls.append("exit")

        def run_before_pass(self, mod, p):
            calls.append("before " + p.name)

        def run_after_pass(self, mod, p):
            calls.append("after " + p.name)

    recorder = SnapshotRecorder()
    mod = module("def @main(%x: float32) { %x }")
    recorder.record_input(mod)
    with PassContext(opt_level=3, instruments=[Log(), recorder]):
        out = Sequential([Noop(), NegateBody()])(mod)
    assert calls == ["enter", "before sequential", "before Noop", "after Noop", "before NegateBody",
                     "after NegateBody", "after sequential", "exit"]
    assert [(s.pass_name, s.changed) for s in recorder.snapshots] == [
        ("input", True), ("Noop", False), ("NegateBody", True)]
    assert recorder.snapshots[-1].module is out


def test_should_run_can_skip_a_pass():
    class SkipNegate(PassInstrument):
        def should_run(self, mod, p):
            return p.name != "NegateBody"

    mod = module("def @main(%x: float32) { %x }")
    with PassContext(opt_level=3, instruments=[SkipNegate()]):
        assert NegateBody()(mod) is mod


def test_unknown_pass_name():
    from relaylens.compiler.transform import get_pass

    with pytest.raises(KeyError, match="unknown pass 'FuseOpz'"):
        get_pass("FuseOpz")
    assert get_pass("InferType").name == "InferType"


# --- SIBuilder ----------------------------------------------------------------------------

L1, L2, L3 = LayerSpan("conv1"), LayerSpan("bias1"), LayerSpan("relu1")


def test_fill_gives_new_nodes_the_span_and_stops_at_inputs():
    x = Var("x", span=L1)
    inner = Call(op("negative"), (x,))
    entry = Call(op("add"), (inner, Constant(None)))
    SIBuilder(L2).recursively_fill_span(entry, [x])
    assert entry.span is L2 and inner.span is L2 and entry.args[1].span is L2
    assert x.span is L1


def test_fill_stops_at_nodes_that_have_a_span():
    old = Call(op("negative"), (Var("y"),), span=L1)
    entry = Call(op("exp"), (old,))
    SIBuilder(L2).recursively_fill_span(entry)
    assert entry.span is L2 and old.span is L1 and old.args[0].span is None


def test_collapse_collects_the_matched_pattern():
    x = Var("x", span=L1)
    one = Constant(None, span=L2)
    entry = Call(op("multiply"), (x, one), span=L3)
    span = SIBuilder(entry, [x]).create_span()
    assert isinstance(span, SequentialSpan) and span.spans == (L3, L2)
    assert collect_spans(entry) == SequentialSpan((L3, L1, L2))


def test_si_builder_switch():
    with PassContext(config={"ir.enable_si_builder": False}):
        builder = SIBuilder(L1)
        entry = Call(op("negative"), (Var("x"),))
        builder.recursively_fill_span(entry)
    assert builder.create_span() is None and entry.span is None


def test_span_checker_finds_a_lost_span():
    mod = module("def @main(%x: float32) {\n  %0 = negative(%x);\n  exp(%0)\n}")
    assert spanless(mod) == []
    body = mod["main"].body
    lost = dataclasses.replace(body, span=None)
    broken = mod.with_functions({mod.global_vars["main"]: dataclasses.replace(mod["main"], body=lost)})
    assert [(name, node) for name, node in spanless(broken)] == [("main", lost)]


def test_function_pass_skips_external_functions():
    mod = module('def @ext(%x: float32, Compiler="dnnl") { %x }\ndef @main(%x: float32) { @ext(%x) }')
    out = NegateBody()(mod, PassContext(opt_level=3))
    assert out["ext"] is mod["ext"] and out["main"] is not mod["main"]
