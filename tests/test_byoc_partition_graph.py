"""PartitionGraph, after TVM's tests/python/relay/test_pass_partition_graph.py: regions
become external functions (`Compiler`, `global_symbol`, `Primitive`, `Inline`), named as
TVM names them, expected modules as Relay text compared structurally; and the whole BYOC
flow still computes what the model computed, interpreted and compiled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from byoc_cases import NPU_MODEL_BODY, NPU_TABLE, assert_module, assert_same_values, byoc_config, parse_typed, random_inputs, run_byoc
from conftest import CORPUS, needs_corpus
from relaylens.compiler.build import relay_build_passes
from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.lower.disk_cache import environment_cache
from relaylens.compiler.check import check_text
from relaylens.compiler.ir.expr import Call, Function
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.printer import print_expr

BYOC = ["MergeComposite", "AnnotateTarget", "MergeCompilerRegions", "PartitionGraph"]
ATTRS = 'Primitive=1, Compiler="{t}", global_symbol="{name}", Inline=1'


def begin(x: str, target: str) -> str:
    return f'annotation.compiler_begin({x}, compiler="{target}")'


def end(x: str, target: str) -> str:
    return f'annotation.compiler_end({x}, compiler="{target}")'


D, W, V = "Tensor[(1, 3, 8, 8), float32]", "Tensor[(4, 3, 3, 3), float32]", "Tensor[(4), float32]"
O = "Tensor[(1, 4, 8, 8), float32]"
MULTIPLE_OUTPUTS = f"""def @main(%data: {D}, %weight: {W}, %g: {V}, %b: {V}, %m: {V}, %v: {V}) {{
  %0 = {begin("%data", "t")};
  %1 = {begin("%weight", "t")};
  %2 = {begin("%g", "t")};
  %3 = {begin("%b", "t")};
  %4 = {begin("%m", "t")};
  %5 = {begin("%v", "t")};
  %6 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %7 = nn.batch_norm(%6, %2, %3, %4, %5);
  %8 = %7.0;
  %9 = nn.relu(%8);
  %10 = {end("%9", "t")};
  %11 = %7.1;
  %12 = {end("%11", "t")};
  %13 = %7.2;
  %14 = {end("%13", "t")};
  %15 = abs(%12);
  %16 = abs(%14);
  (%10, %15, %16)
}}"""


def test_multiple_outputs():
    """One region, three outputs: the function returns their tuple, main projects it
    (TVM: test_multiple_outputs)."""
    out = run_byoc(MULTIPLE_OUTPUTS, ["PartitionGraph"])
    name = "tvmgen_default_t_main_0"
    assert_module(out, f"""def @main(%data: {D}, %weight: {W}, %g: {V}, %b: {V}, %m: {V}, %v: {V}) {{
  %0 = @{name}(%data, %weight, %g, %b, %m, %v);
  %1 = %0.1;
  %2 = %0.2;
  (%0.0, abs(%1), abs(%2))
}}

def @{name}(%t_0_i0: {D}, %t_0_i1: {W}, %t_0_i2: {V}, %t_0_i3: {V}, %t_0_i4: {V}, %t_0_i5: {V},
            {ATTRS.format(t="t", name=name)}) -> ({O}, {V}, {V}) {{
  %0 = nn.conv2d(%t_0_i0, %t_0_i1, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, %t_0_i2, %t_0_i3, %t_0_i4, %t_0_i5);
  %2 = %1.0;
  (nn.relu(%2), %1.1, %1.2)
}}""")
    assert_same_values(MULTIPLE_OUTPUTS, out)


T = "Tensor[(8, 8), float32]"
CHAIN = f"def @main(%x: {T}, %y: {T}) {{\n  %0 = add(%x, %y);\n  %1 = tanh(%0);\n  %2 = nn.relu(%1);\n  subtract(%2, %y)\n}}"


def test_regions_split_by_a_host_op_become_two_functions():
    """Region ids count begins in post-order, so the second region is 2 (its two begins
    came after the first region's two); a `default` region stays in main."""
    out = run_byoc(CHAIN, ["AnnotateTarget", "MergeCompilerRegions", "PartitionGraph"],
                   targets=["npu"], ops=["add", "nn.relu", "subtract"])
    a, b = "tvmgen_default_npu_main_0", "tvmgen_default_npu_main_2"
    assert_module(out, f"""def @main(%x: {T}, %y: {T}) {{
  %0 = @{a}(%x, %y);
  %1 = tanh(%0);
  @{b}(%1, %y)
}}

def @{a}(%npu_0_i0: {T}, %npu_0_i1: {T}, {ATTRS.format(t="npu", name=a)}) -> {T} {{
  add(%npu_0_i0, %npu_0_i1)
}}

def @{b}(%npu_2_i0: {T}, %npu_2_i1: {T}, {ATTRS.format(t="npu", name=b)}) -> {T} {{
  %0 = nn.relu(%npu_2_i0);
  subtract(%0, %npu_2_i1)
}}""")
    assert_same_values(CHAIN, out)


def test_constant_inputs_are_bound_inside():
    """bind_constants (TVM's default): a constant input is not a parameter."""
    before = f"def @main(%x: {T}) {{\n  %0 = {begin('%x', 't')};\n  %1 = {begin('1f', 't')};\n  %2 = add(%0, %1);\n  {end('%2', 't')}\n}}"
    out = run_byoc(before, ["PartitionGraph"])
    name = "tvmgen_default_t_main_0"
    assert_module(out, f"""def @main(%x: {T}) {{ @{name}(%x) }}
def @{name}(%t_0_i0: {T}, {ATTRS.format(t="t", name=name)}) -> {T} {{ add(%t_0_i0, 1f) }}""")


def test_names_are_fresh_against_the_module():
    before = f"def @main(%x: {T}) {{\n  %0 = {begin('%x', 't')};\n  %1 = exp(%0);\n  {end('%1', 't')}\n}}\n" \
             f"def @tvmgen_default_t_main_0(%a: {T}) {{ %a }}"
    out = run_byoc(before, ["PartitionGraph"])
    assert "tvmgen_default_t_main_1" in out and out["tvmgen_default_t_main_1"].attrs["global_symbol"] == \
        "tvmgen_default_t_main_1"


def test_spans_of_the_external_call():
    out = run_byoc(CHAIN, ["AnnotateTarget", "MergeCompilerRegions", "PartitionGraph"],
                   targets=["npu"], ops=["add", "nn.relu", "subtract"])
    call = out["main"].body
    assert [o.line for o in call.span.origins()] == [5, 6]  # relu and subtract of the input text
    assert [o.line for o in out["tvmgen_default_npu_main_2"].span.origins()] == [5]


TABLE = NPU_TABLE
MODEL = NPU_MODEL_BODY


def test_the_whole_flow_with_composites():
    out = run_byoc(MODEL, BYOC, patterns=TABLE, targets=["mynpu"])
    a, b = "tvmgen_default_mynpu_main_0", "tvmgen_default_mynpu_main_3"
    cbr = ('fn (%p0: {D}, %p1: {W}, %p2: {V}, PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_", '
           'Composite="mynpu.conv2d_bias_relu") {{ %10 = nn.conv2d(%p0, %p1, padding=[1, 1, 1, 1], channels=4, '
           'kernel_size=[3, 3]); %11 = nn.bias_add(%10, %p2); nn.relu(%11) }}').format(D=D, W=W, V=V)
    ar = (f'fn (%q0: {O}, %q1: {O}, PartitionedFromPattern="add_nn.relu_", Composite="mynpu.add_relu") '
          '{ %20 = add(%q0, %q1); nn.relu(%20) }')
    assert_module(out, f"""def @main(%x: {D}, %w: {W}, %b: {V}) {{
  %0 = @{a}(%x, %w, %b);
  %1 = exp(%0);
  @{b}(%1, %0)
}}

def @{a}(%i0: {D}, %i1: {W}, %i2: {V}, {ATTRS.format(t="mynpu", name=a)}) -> {O} {{
  %0 = {cbr};
  %0(%i0, %i1, %i2)
}}

def @{b}(%j0: {O}, %j1: {O}, {ATTRS.format(t="mynpu", name=b)}) -> {O} {{
  %0 = {ar};
  %0(%j0, %j1)
}}""")
    assert_same_values(MODEL, out)


@pytest.mark.parametrize("ops", [None, ["exp"]])
def test_compiled_equals_interpreter_before_and_after_partitioning(ops):
    """The reference external codegen: each external function is lowered by our own LLVM
    path as one kernel named by its global_symbol, and the AOT entry calls it."""
    mod = parse_typed(MODEL)
    args = random_inputs(mod)
    want = Interpreter(mod).call("main", args)
    text = '#[version = "0.0.5"]\n' + MODEL
    plain = compile(text, "m.relay", strict=True)
    config = byoc_config(patterns=TABLE, targets=["mynpu"], ops=ops)
    parted = compile(text, "m.relay", passes=[*BYOC, *relay_build_passes(3)], config=config, strict=True)
    assert plain.ok and parted.ok
    kernels = set(parted.fused_names.values())
    if ops is None:
        assert kernels == {"tvmgen_default_mynpu_main_0", "tvmgen_default_mynpu_main_3", "tvmgen_default_fused_exp"}
    else:  # exp offloaded as well: the whole graph is one region
        assert kernels == {"tvmgen_default_mynpu_main_0"}
    assert parted.executable.mode == "aot"
    for result in (plain, parted):
        np.testing.assert_allclose(result.executable.run(*args), want, rtol=1e-5, atol=1e-3)


def test_an_external_function_with_bound_weights_is_one_kernel_named_by_its_global_symbol():
    """Weights bound (as the editor binds model.npz) and kept inside the composite
    (`Constants=`): the external function is still compiled whole by its codegen under its
    `global_symbol`, as TVM hands it to relay.ext.<target>, not fused into a `fused_*`
    kernel; the weights are the kernel's own constants and the AOT entry calls it."""
    table = TABLE.replace("(%x, %w, %b) {", '(%x, %w, %b, Constants=["w", "b"]) {')
    mod = parse_typed(MODEL)
    x, w, b = random_inputs(mod)
    want = Interpreter(mod).call("main", [x, w, b])
    parted = compile('#[version = "0.0.5"]\n' + MODEL, "m.relay", params={"w": w, "b": b},
                     passes=[*BYOC, *relay_build_passes(3)], config=byoc_config(patterns=table, targets=["mynpu"]),
                     strict=True)
    assert parted.ok
    external = next(f for f in parted.module.functions.values() if f.attrs.get("Compiler") == "mynpu"
                    and "conv2d" in print_expr(f))
    symbol = external.attrs["global_symbol"]
    assert external.is_primitive
    assert symbol in set(parted.fused_names.values())
    assert not [n for n in parted.fused_names.values() if "conv2d" in n], parted.fused_names
    assert parted.executable.mode == "aot"
    np.testing.assert_allclose(parted.executable.run(x), want, rtol=1e-5, atol=1e-3)


REALISTIC = Path(__file__).resolve().parents[1] / "examples" / "byoc" / "mynpu_patterns.relay"


@needs_corpus
@pytest.mark.parametrize("model, composites", [
    ("005.relay", {"mynpu.conv2d_bn_relu", "mynpu.bn_relu", "mynpu.conv2d"}),  # a ResNet-50 v2 (batch norms)
    ("009.relay", {"mynpu.conv2d_relu", "mynpu.conv2d", "mynpu.add_relu"}),  # float16 ResNeXt blocks
])
def test_realistic_table_on_corpus_cnns(model, composites):
    """The example table on the corpus CNNs: every conv2d ends up in an external function
    for mynpu, through the composites expected; the partitioned module typechecks and
    keeps its spans (run_byoc's checks)."""
    path = CORPUS / model
    checked = check_text(path.read_text(), str(path))
    assert not [d for d in checked.diagnostics if d.is_error]
    out = run_byoc(checked.module, BYOC, patterns=REALISTIC.read_text(), targets=["mynpu"])
    externals = [f for f in out.functions.values() if f.attrs.get("Compiler") == "mynpu"]
    assert externals, "some region goes to mynpu"
    assert "nn.conv2d" not in print_expr(out["main"]), "every conv2d is offloaded"
    found = {n.op.attrs["Composite"] for f in externals for n in post_order(f.body)
             if isinstance(n, Call) and isinstance(n.op, Function)}
    assert found == composites


TWO_CONVS = f"""def @main(%x: {D}, %w: {W}, %w2: Tensor[(4, 4, 3, 3), float32]) {{
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.relu(%0);
  %2 = nn.conv2d(%1, %w2, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  nn.relu(%2)
}}"""


def test_a_region_of_two_convolutions_runs_through_its_fused_kernels():
    """Two convolutions are more than one kernel can hold: the reference codegen fuses the
    external function's body (external_codegen.py) and @main runs in the interpreter with
    the compiled kernels, still equal to the interpreter alone."""
    table = "def @conv2d_relu(%x, %w) { nn.relu(nn.conv2d(%x, %w)) }"
    mod = parse_typed(TWO_CONVS)
    args = random_inputs(mod)
    want = Interpreter(mod).call("main", args)
    config = byoc_config(patterns=table, targets=["mynpu"])
    parted = compile('#[version = "0.0.5"]\n' + TWO_CONVS, "m.relay", passes=[*BYOC, *relay_build_passes(3)],
                     config=config, strict=True)
    assert parted.ok
    external = parted.module["tvmgen_default_mynpu_main_0"]
    assert external.attrs["Compiler"] == "mynpu" and not external.is_primitive
    assert sorted(parted.fused_names.values()) == ["tvmgen_default_fused_nn_conv2d_nn_relu",
                                                   "tvmgen_default_fused_nn_conv2d_nn_relu_1"]
    assert parted.executable.mode == "interpreter"
    np.testing.assert_allclose(parted.executable.run(*args), want, rtol=1e-5, atol=1e-4)


@pytest.mark.slow
@needs_corpus
def test_partitioned_corpus_cnn_runs_as_before():
    """The example table on a corpus CNN (float16, constants drawn from a seed): the
    partitioned build computes exactly what the plain build computes (about 40 s)."""
    path = CORPUS / "009.relay"
    text = path.read_text()
    config = byoc_config(patterns=REALISTIC.read_text(), targets=["mynpu"])
    parted = compile(text, str(path), passes=[*BYOC, *relay_build_passes(3)], config=config, unknown_seed=0)
    plain = compile(text, str(path), unknown_seed=0, disk_cache=environment_cache())  # kept for the corpus tests
    assert parted.ok and plain.ok
    assert any(f.attrs.get("Compiler") == "mynpu" for f in parted.module.functions.values())
    args = random_inputs(plain.snapshots[0].module)
    np.testing.assert_array_equal(parted.executable.run(*args), plain.executable.run(*args))
