"""A cached kernel re-pointed at a moved function (`llvm_map.relocate`, called by the
compile cache): its LLVM texts are the ones lowering the moved function afresh gives,
the subprograms of its outlined parallel loops included."""

from __future__ import annotations

import pytest

from relaylens.compiler.build import build_text
from relaylens.compiler.lower.codegen.llvm_map import relocate
from relaylens.compiler.lower.pipeline import LoweringCache, lower_build
from relaylens.compiler.lower.runtime.jit import JIT

# the add is large enough for a parallel loop (an outlined body and trampoline), on a line
# of its own below the function's
MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 32, 40, 40), float32], %y: Tensor[(1, 32, 40, 40), float32]) {
  %0 = nn.relu(%x);
  %1 = add(%0,
           %y);
  %2 = exp(%1);
  multiply(%2, 2f)
}
"""


def _moved(text: str) -> str:
    """Two lines inserted under the header and every line of the body indented by one."""
    header, rest = text.split("\n", 1)
    body = "\n".join(" " + line if line.startswith("  ") else line for line in rest.split("\n"))
    return f"{header}\n// one\n// two\n{body}"


@pytest.fixture(scope="module")
def jit():
    return JIT()


def _lower(text: str, cache: LoweringCache | None, jit):
    built = build_text(text, "moved.relay")
    assert built.ok, built.diagnostics
    lowered = lower_build(built, cache=cache, jit=jit, machine_code=False)
    assert lowered.ok, lowered.diagnostics
    return lowered


def test_a_relocated_kernel_reads_as_if_lowered_where_it_now_is(jit):
    cache = LoweringCache()
    before = _lower(MODEL, cache, jit)
    moved = _lower(_moved(MODEL), cache, jit)
    assert cache.hits == len(moved.functions) and cache.misses == len(before.functions)
    fresh = _lower(_moved(MODEL), None, jit)
    assert any(".par0" in f.llvm_ir for f in fresh.functions.values())
    for name, f in moved.functions.items():
        assert f.llvm_ir != before.functions[name].llvm_ir  # it did move
        assert f.llvm_ir == fresh.functions[name].llvm_ir, name
        assert f.optimized_ir == fresh.functions[name].optimized_ir, name


def test_relocate_moves_locations_and_subprograms_by_the_first_instruction():
    text = "\n".join([
        'define void @"k"(ptr %"a") !dbg !1',
        "entry:",
        "  ret void, !dbg !2",
        "}",
        'define internal void @"k.par0"(ptr %"a") !dbg !3',
        "entry:",
        "  br label %body, !dbg !4",
        "}",
        '!1 = distinct !DISubprogram(name: "k", line: 5, scopeLine: 5)',
        "!2 = !DILocation(line: 5, column: 1, scope: !1)",
        '!3 = distinct !DISubprogram(name: "k.par0", line: 7, scopeLine: 7)',
        "!4 = !DILocation(column: 3, line: 7, scope: !3)",
        "!5 = !DILocation(line: 8, column: 4, scope: !3)",
    ])
    optimized = '!9 = distinct !DISubprogram(name: "k.par0", scope: !1, line: 7, scopeLine: 7)'
    moved, moved_optimized = relocate([text, optimized], {(5, 1): (6, 1), (7, 3): (9, 4)})
    lines = moved.split("\n")
    assert lines[8] == '!1 = distinct !DISubprogram(name: "k", line: 6, scopeLine: 6)'
    assert lines[9] == "!2 = !DILocation(line: 6, column: 1, scope: !1)"
    assert lines[10] == '!3 = distinct !DISubprogram(name: "k.par0", line: 9, scopeLine: 9)'
    assert lines[11] == "!4 = !DILocation(column: 4, line: 9, scope: !3)"
    assert lines[12] == "!5 = !DILocation(line: 8, column: 4, scope: !3)"  # not moved: left alone
    assert moved_optimized == '!9 = distinct !DISubprogram(name: "k.par0", scope: !1, line: 9, scopeLine: 9)'
