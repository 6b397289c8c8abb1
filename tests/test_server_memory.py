"""What keeps the language server small (bench/lsp_memory.py measures it on ResNet-50).

* The server process never loads LLVM (llvmlite, 40 MB resident) or the lowering stack:
  builds, profiles and an assembly view's code generation run in the worker
  (test_server_idle_worker.py checks the server's mappings after an assembly view).
* The server imports numpy only when a document needs it (a number literal, a constant
  decoded, an operator's reference evaluated): its type checking of the typed ResNet-50
  does not (`compiler/lazy_modules.py`; 20 MB resident).
* The IR line → Relay location tables of a build report are compact arrays
  (`LineTable`) that read as the dict they replace.
* A build report shares the texts equal to the report before it (`share_texts`).
* A snapshot's printed nodes are four int arrays (`NodeTable`) that read as the tuples
  they replace.
* The worker hands the memory a build freed back to the system, and the server what a
  report's message took (`release_memory`).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tracemalloc
from dataclasses import replace

from relaylens.compiler.lower.codegen.llvm_map import LineTable, line_locations
from relaylens.compiler.support import release_memory
from relaylens.server.slow.node_table import NodeTable
from relaylens.server.slow.report import (BuildReport, Change, ExprReport, FusedReport, Snapshot, _innermost,
                                          share_texts)


def test_the_server_does_not_load_llvm() -> None:
    code = ("import sys, relaylens.server.server\n"
            "loaded = sorted(m for m in sys.modules if m.startswith(('llvmlite', 'relaylens.compiler.lower.runtime',"
            " 'relaylens.compiler.driver')))\n"
            "print(loaded)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


TYPED = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %1 = nn.relu(%0) /* ty=Tensor[(1, 4, 8, 8), float32] */;
  add(%1, %1) /* ty=Tensor[(1, 4, 8, 8), float32] */
}
"""


def test_the_server_types_a_model_without_numpy() -> None:
    broken = TYPED.replace("(4, 3, 3, 3)", "(4, 2, 3, 3)")  # a type error: typing ran
    code = ("import sys, relaylens.server.server\n"
            "from relaylens.server.analysis import analyse\n"
            "print('numpy' in sys.modules)\n"
            "for text in sys.stdin.read().split('@@'):\n"
            "    found = analyse('file:///m.relay', 1, text)\n"
            "    found.prepare()\n"
            "    print(sorted({d.source for d in found.diagnostics}), 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], input=TYPED + "@@" + broken, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["False", "[] False", "['types'] False"], out.stdout


IR = """define void @f() !dbg !3 {
  %a = fadd float 1.0, 2.0, !dbg !7
  %b = fadd float %a, 2.0
  ret void, !dbg !8
}
!7 = !DILocation(line: 5, column: 8, scope: !3)
!8 = !DILocation(line: 0, column: 0, scope: !3, inlinedAt: !9)
!9 = !DILocation(line: 6, column: 2, scope: !3)
"""


def test_line_table_reads_as_a_dict() -> None:
    table = line_locations(IR)
    assert isinstance(table, LineTable)
    assert dict(table) == {2: (5, 8), 4: (6, 2)}
    assert table.get(2) == (5, 8) and table.get(3) is None and 4 in table and 3 not in table
    assert sorted(table.items()) == [(2, (5, 8)), (4, (6, 2))] and len(table) == 2 and table
    assert not LineTable() and pickle.loads(pickle.dumps(table)) == table


def _allocated(make) -> int:
    tracemalloc.start()
    try:
        kept = make()  # noqa: F841 -- held while measured
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_line_table_is_compact() -> None:
    items = [(n, n // 3 + 1000, n % 80) for n in range(1, 50_001)]
    as_dict = _allocated(lambda: {n: (line, col) for n, line, col in items})
    as_table = _allocated(lambda: LineTable({n: (line, col) for n, line, col in items}))
    assert as_table * 5 < as_dict


def test_release_memory_runs() -> None:
    release_memory()  # glibc or not, it returns
    release_memory(collect=False)


def _text(*parts: str) -> str:
    return "".join(parts)  # a new str object each call


def _report(version: int, kernel: str) -> BuildReport:
    fn = FusedReport(name="fused_add", display_name="add", anchor=(0, 1), ranges=((0, 1),), layers=(),
                     schedule_steps=1, llvm_ir=_text("define ", kernel),
                     optimized_ir=_text("define ", "opt"), module_lines=((1, 2),), optimized_lines=((1, 2),),
                     snapshot=1, printed=None, passes=0)
    return BuildReport("file:///m.relay", version, "text", snapshots=[Snapshot(0, "Input", False, _text("def ", "@main"))],
                       functions=[fn], llvm_ir=_text("module ", kernel), optimized_ir=_text("module ", "opt"))


def test_a_report_shares_the_texts_of_the_report_before() -> None:
    old, new = _report(1, "same"), _report(2, "same")
    assert new.llvm_ir == old.llvm_ir and new.llvm_ir is not old.llvm_ir
    share_texts(new, [old])
    assert new.llvm_ir is old.llvm_ir and new.optimized_ir is old.optimized_ir
    assert new.snapshots[0].text is old.snapshots[0].text
    f, g = new.functions[0], old.functions[0]
    assert f.llvm_ir is g.llvm_ir and f.optimized_ir is g.optimized_ir
    assert (new.version, f.name, f.module_lines) == (2, "fused_add", ((1, 2),))  # the rest as it was


def test_a_changed_text_is_its_own() -> None:
    old, new = _report(1, "old"), _report(2, "new")
    share_texts(new, [old])
    assert new.llvm_ir == "module new" and new.functions[0].llvm_ir == "define new"
    assert new.functions[0].optimized_ir is old.functions[0].optimized_ir  # unchanged: shared


def _nodes(n: int) -> list:
    """Nested printed nodes as reporting._snapshots sorts them: (start, -end)."""
    nodes = []
    for i in range(n):
        nodes.append((i * 10, i * 10 + 9, ((i * 7, i * 7 + 3),) * (i % 3)))
        nodes.append((i * 10 + 2, i * 10 + 5, ((i, i + 1), (i + 2, i + 4))))
    nodes.append((0, n * 10, ((0, 1),)))
    return sorted(nodes, key=lambda x: (x[0], -x[1]))


def test_node_table_reads_as_the_tuple_it_replaces() -> None:
    nodes = _nodes(40)
    table = NodeTable(nodes)
    assert list(table) == nodes and len(table) == len(nodes) and table[-1] == nodes[-1]
    assert table == tuple(nodes) and table == NodeTable(nodes) and hash(table) == hash(NodeTable(nodes))
    assert pickle.loads(pickle.dumps(table)) == table and not NodeTable()
    for offset in range(-1, 405):
        assert table.innermost(offset) == _innermost(nodes, offset)
        snapshot = Snapshot(1, "FuseOps", True, "text", table)
        assert snapshot.node_at(offset) == Snapshot(1, "FuseOps", True, "text", tuple(nodes)).node_at(offset)


def test_node_table_is_compact() -> None:
    nodes = _nodes(20_000)
    as_tuples = _allocated(lambda: tuple((s, e, tuple(tuple(r) for r in keys)) for s, e, keys in nodes))
    as_table = _allocated(lambda: NodeTable(nodes))
    assert as_table * 4 < as_tuples


def test_a_built_report_keeps_its_snapshots_nodes_in_tables() -> None:
    from relaylens.server.slow.reporting import build_report

    report = build_report("file:///n.relay", 1, NODES_MODEL)
    assert report.snapshots and all(isinstance(s.nodes, NodeTable) for s in report.snapshots)
    assert any(len(s.nodes) for s in report.snapshots)


NODES_MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32]) {
  %0 = nn.relu(%x);
  add(%0, %x)
}
"""


def test_a_report_shares_the_node_tables_of_the_report_before() -> None:
    old, new, other = _report(1, "same"), _report(2, "same"), _report(3, "same")
    old.snapshots = [replace(old.snapshots[0], nodes=NodeTable(_nodes(5)))]
    new.snapshots = [replace(new.snapshots[0], nodes=NodeTable(_nodes(5)))]
    other.snapshots = [replace(other.snapshots[0], nodes=NodeTable(_nodes(6)))]
    assert new.snapshots[0].nodes is not old.snapshots[0].nodes
    share_texts(new, [old])
    share_texts(other, [old])
    assert new.snapshots[0].nodes is old.snapshots[0].nodes
    assert other.snapshots[0].nodes is not old.snapshots[0].nodes and len(other.snapshots[0].nodes) == 13


def test_a_report_shares_the_entries_equal_to_the_report_before() -> None:
    old, new = _report(1, "same"), _report(2, "same")
    expr = ExprReport((3, 9), ("conv1/Conv",), (Change(36, "FuseOps", ((4, "nn.relu(%p0)"),), "nn.relu(%3)"),),
                      "fused_add")
    old.exprs = [expr, replace(expr, range=(10, 12))]
    new.exprs = [replace(expr), replace(expr, range=(10, 13))]
    share_texts(new, [old])
    assert new.functions[0] is old.functions[0]  # equal once its texts are shared
    assert new.exprs[0] is old.exprs[0] and new.exprs[1] is not old.exprs[1] and new.exprs[1].range == (10, 13)


def test_the_server_forgets_the_source_of_generated_code() -> None:
    code = ("import linecache, relaylens.server.server\n"
            "from relaylens.server.generated_sources import forget_generated_sources\n"
            "assert any(k.startswith('<attrs generated') for k in linecache.cache)\n"
            "linecache.getlines(relaylens.server.server.__file__)\n"
            "dropped = forget_generated_sources()\n"
            "assert dropped > 100 and not [k for k in linecache.cache if k.startswith('<')]\n"
            "assert linecache.cache.get(relaylens.server.server.__file__)  # a file's lines stay\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
