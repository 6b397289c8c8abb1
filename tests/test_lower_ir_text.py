"""codegen/ir_text.py prints a generated module as llvmlite does, byte for byte, and
codegen/lines.py writes the instructions it makes as text as llvmlite would print them."""

from __future__ import annotations

import llvmlite.ir as ir
import pytest

from relaylens.compiler.build import build_text
from relaylens.compiler.lower.codegen import llvm as codegen
from relaylens.compiler.lower.codegen.ir_text import _Printer, module_text
from relaylens.compiler.lower.codegen.lines import TextBuilder
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


def _both_ways(make):
    """`make(builder, fn)` on llvmlite's IRBuilder and on lines.TextBuilder: the two
    modules' texts."""
    texts = []
    for text_builder in (False, True):
        module = ir.Module("m")
        f32, i32 = ir.FloatType(), ir.IntType(32)
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType(), ir.IntType(64), i32, f32]), "k")
        for arg, name in zip(fn.args, ('p"0', "n", "m", "x\\y")):
            arg.name = name
        block = fn.append_basic_block("entry")
        b = TextBuilder(block, _Printer()) if text_builder else ir.IRBuilder(block)
        di = module.add_debug_info("DILocation", {"line": 3, "column": 4, "scope": module.add_debug_info(
            "DIFile", {"filename": "m.relay", "directory": ""})})
        for debug in (None, di):
            b.debug_metadata = debug
            make(b, fn)
        b.debug_metadata = None
        b.ret_void()
        texts.append((module_text(module), str(module)))
    return texts


def test_text_builder_writes_what_llvmlite_prints():
    """Every instruction lines.TextBuilder writes as text, with and without a debug
    location, named and not (a name taken already, one to escape), as llvmlite prints it."""
    def make(b, fn):
        p, n, m, x = fn.args
        f32, i64, i8 = ir.FloatType(), ir.IntType(64), ir.IntType(8)
        vec, ivec = ir.VectorType(f32, 8), ir.VectorType(ir.IntType(32), 8)
        addr = b.gep(p, [n], inbounds=True, name="p", source_etype=f32)
        plain = b.gep(p, [ir.Constant(i64, 7)], source_etype=vec)
        v = b.load(addr, typ=vec, align=4, name='v"')
        s = b.load(plain, typ=f32)
        w = b.fadd(v, ir.Constant(vec, [1.0] * 8), flags=("contract",))
        w = b.fmul(b.fsub(w, v), b.fdiv(v, w), name="w")
        k = b.add(b.mul(n, ir.Constant(i64, 3), flags=("nuw", "nsw")), b.sub(n, n, flags=("nsw",)))
        bits = b.xor(b.and_(m, m), b.or_(b.shl(m, ir.Constant(m.type, 2)), b.ashr(m, ir.Constant(m.type, 1))))
        lt = b.icmp_signed("<", k, n)
        ge = b.icmp_unsigned(">=", bits, m)
        eq = b.icmp_signed("==", bits, m)
        more = b.fcmp_ordered(">", v, w)
        nan = b.fcmp_unordered("uno", x, x, flags=("fast",))
        ne = b.fcmp_unordered("!=", s, x)
        chosen = b.select(more, v, w)
        b.select(b.and_(lt, ge), s, b.select(eq, x, s, flags=("fast",)))
        casts = [b.sext(m, i64), b.zext(m, i64), b.trunc(n, i8), b.fpext(x, ir.DoubleType()),
                 b.fptrunc(b.fpext(x, ir.DoubleType()), f32), b.bitcast(bits, f32), b.fptosi(x, i64),
                 b.fptoui(x, i64), b.sitofp(m, f32), b.uitofp(n, f32), b.bitcast(chosen, ivec)]
        b.store(chosen, addr, align=4)
        b.store(b.select(nan, x, s), plain)
        b.store(b.zext(ne, i8), b.gep(p, [casts[0]], inbounds=True, source_etype=i8), align=1)

    (text, llvmlite_text), (lines_text, lines_str) = _both_ways(make)
    assert text == llvmlite_text
    assert lines_text == llvmlite_text
    assert lines_str == llvmlite_text
