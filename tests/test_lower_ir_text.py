"""codegen/ir_text.py prints a generated module as llvmlite does, byte for byte."""

from __future__ import annotations

import llvmlite.ir as ir
import pytest

from relaylens.compiler.build import build_text
from relaylens.compiler.lower.codegen import llvm as codegen
from relaylens.compiler.lower.codegen.ir_text import module_text
from relaylens.compiler.lower.pipeline import _schedule, compose
from relaylens.compiler.transform.fused_names import name_primitive_functions

MODELS = {
    "conv": """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 14, 14), float32], %w: Tensor[(16, 8, 3, 3), float32], %w2: Tensor[(16, 16, 1, 1), float32],
          %g: Tensor[(16), float32], %b: Tensor[(16), float32], %m: Tensor[(16), float32], %v: Tensor[(16), float32],
          %d: Tensor[(10, 16), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, %g, %b, %m, %v);
  %2 = nn.relu(%1.0);
  %3 = nn.max_pool2d(%2, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]);
  %4 = nn.conv2d(%3, %w2, channels=16, kernel_size=[1, 1]);
  %5 = add(%4, %3);
  %6 = nn.global_avg_pool2d(%5);
  %7 = nn.batch_flatten(%6);
  %8 = nn.dense(%7, %d, units=10);
  nn.softmax(%8)
}
""",
    "norm": """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 12, 64), float32], %g: Tensor[(64), float32], %b: Tensor[(64), float32],
          %w: Tensor[(1, 64, 64), float32]) {
  %0 = nn.layer_norm(%x, %g, %b);
  %1 = nn.batch_matmul(%0, %w, transpose_b=True);
  %2 = divide(%1, 8f);
  %3 = tanh(%2);
  %4 = erf(%3);
  %5 = cast(%4, dtype="float16");
  %6 = cast(%5, dtype="int32");
  %7 = mean(%6, axis=[2], keepdims=True);
  %8 = where(less(%x, 0f), %x, 1f);
  (%7, %8)
}
""",
}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_kernels_print_as_llvmlite_prints_them(model):
    built = build_text(MODELS[model], f"{model}.relay")
    assert built.ok, built.diagnostics
    funcs = name_primitive_functions(built.module)
    assert len(funcs) >= 3
    for func, name in funcs.items():
        prim = _schedule(compose(func), name, func)[1]
        module = codegen.generate([prim], f"{model}.relay")
        assert module_text(module) == str(module), name


def test_what_llvmlite_escapes_or_spells_out():
    """Names to quote, a vector constant that is not a splat, alignments, flags, an address
    without a debug location: each as llvmlite prints it."""
    module = ir.Module("m")
    f32, i64 = ir.FloatType(), ir.IntType(64)
    vec = ir.VectorType(f32, 4)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType(), i64]), 'k"\\1')
    fn.args[0].name = 'p"0'
    b = ir.IRBuilder(fn.append_basic_block('entry'))
    addr = b.gep(fn.args[0], [fn.args[1]], inbounds=True, name='a"b', source_etype=f32)
    plain = b.gep(fn.args[0], [ir.Constant(i64, 3)], source_etype=f32)
    x = b.load(addr, typ=vec, align=16, name="x\\y")
    y = b.fadd(x, ir.Constant(vec, [1.0, -0.0, 2.5, 1.0]), flags=("fast",))
    z = b.fmul(y, ir.Constant(vec, [0.5] * 4))
    n = b.add(fn.args[1], ir.Constant(i64, 1), flags=("nuw", "nsw"))
    b.store(z, plain, align=4)
    b.store(b.load(plain, typ=f32), addr)
    b.store(b.sitofp(n, f32), plain)
    b.ret_void()
    b.debug_metadata = None
    assert module_text(module) == str(module)
