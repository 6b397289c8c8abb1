"""Builds through the kernel cache on disk: a kernel built by another process is loaded,
not lowered, and reads as if lowered where it now is; a damaged entry is rebuilt; the
CLI manages the cache and the editor's worker uses it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import numpy as np

from relaylens.compiler.cli import main
from relaylens.compiler.driver import compile
from relaylens.compiler.lower.cache_keys import compiler_version
from relaylens.compiler.lower.disk_cache import DiskCache
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.server.slow import frames
from relaylens.server.slow.report import unpack

# a parallel loop (outlined body), a kernel on two lines, and a constant passed as a buffer
MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 32, 40, 40), float32], %y: Tensor[(1, 32, 40, 40), float32]) {
  %0 = nn.relu(%x);
  %1 = add(%0,
           %y);
  %2 = exp(%1);
  %3 = multiply(%2, 2f);
  nn.dense(reshape(%3, newshape=[32, 1600]), ones(shape=[8, 1600], dtype="float32"), units=8)
}
"""


def _moved(text: str) -> str:
    """Two lines inserted under the header and every line of the body indented by one."""
    header, rest = text.split("\n", 1)
    body = "\n".join(" " + line if line.startswith("  ") else line for line in rest.split("\n"))
    return f"{header}\n// one\n// two\n{body}"


def _inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((1, 32, 40, 40)).astype("float32") for _ in range(2)]


def _build_in_another_process(text: str, name: str, directory) -> None:
    script = textwrap.dedent(f"""
        from relaylens.compiler.driver import compile
        from relaylens.compiler.lower.disk_cache import DiskCache
        result = compile({text!r}, {name!r}, disk_cache=DiskCache({str(directory)!r}))
        assert result.executable is not None, result.diagnostics
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)


def test_a_kernel_built_by_another_process_is_loaded_and_moved_to_its_new_lines(tmp_path) -> None:
    _build_in_another_process(MODEL, "first.relay", tmp_path)
    written = sorted(tmp_path.iterdir())
    disk = DiskCache(tmp_path)
    warm = compile(_moved(MODEL), "sub/second.relay", disk_cache=disk, jit=JIT())
    cold = compile(_moved(MODEL), "sub/second.relay", jit=JIT())
    assert warm.executable is not None and cold.executable is not None
    kernels = len(cold.lowered.functions)
    assert (disk.hits, disk.misses, disk.corrupt) == (kernels, 0, 0)
    assert sorted(tmp_path.iterdir()) == written  # nothing lowered, no kernel written
    for name, fn in cold.lowered.functions.items():
        got = warm.lowered.functions[name]
        assert got.llvm_ir == fn.llvm_ir, name  # the new file, lines and kernel name
        assert got.optimized_ir == fn.optimized_ir, name
        assert got.schedule_steps == fn.schedule_steps and got.scheduled is None, name  # the entry's count
        assert got.schedule_text == fn.schedule_text, name  # made when read, under the kernel's new name
    assert any(".par0" in f.llvm_ir for f in cold.lowered.functions.values())
    np.testing.assert_array_equal(warm.executable.run(*_inputs()), cold.executable.run(*_inputs()))
    assert warm.lowered.functions[name].prim.name == name  # made again on demand


def test_damaged_entries_are_rebuilt_and_the_build_runs(tmp_path) -> None:
    disk = DiskCache(tmp_path)
    first = compile(MODEL, "m.relay", disk_cache=disk, jit=JIT())
    expected = first.executable.run(*_inputs())
    entries = sorted(p for p in tmp_path.iterdir() if p.is_file())  # the kernels (the parts are folders)
    assert len(entries) == len(first.lowered.functions) >= 2
    entries[0].write_bytes(entries[0].read_bytes()[:100])  # truncated
    data = bytearray(entries[1].read_bytes())
    data[len(data) // 2] ^= 0xFF  # one bit pattern changed
    entries[1].write_bytes(bytes(data))
    disk = DiskCache(tmp_path)
    again = compile(MODEL, "m.relay", disk_cache=disk, jit=JIT())
    assert again.ok, again.diagnostics
    assert disk.corrupt == 2 and disk.misses == 2 and disk.hits == len(entries) - 2
    np.testing.assert_array_equal(again.executable.run(*_inputs()), expected)
    disk = DiskCache(tmp_path)
    compile(MODEL, "m.relay", disk_cache=disk, jit=JIT())
    assert (disk.hits, disk.corrupt) == (len(entries), 0)  # written whole again


def test_an_entry_without_machine_code_gets_it_when_a_build_needs_it(tmp_path) -> None:
    disk = DiskCache(tmp_path)
    shown = compile(MODEL, "m.relay", disk_cache=disk, stop_after="llvm", jit=JIT())  # the editor's build
    assert shown.lowered.ok and shown.executable is None
    disk = DiskCache(tmp_path)
    ran = compile(MODEL, "m.relay", disk_cache=disk, jit=JIT())
    assert disk.hits == len(ran.lowered.functions) and disk.misses == 0
    expected = compile(MODEL, "m.relay", jit=JIT()).executable.run(*_inputs())
    np.testing.assert_array_equal(ran.executable.run(*_inputs()), expected)
    assert all("object" in DiskCache(tmp_path).get(p.stem).blobs for p in tmp_path.iterdir() if p.is_file())  # kept


def test_another_opt_level_is_another_entry(tmp_path) -> None:
    disk = DiskCache(tmp_path)
    compile(MODEL, "m.relay", disk_cache=disk, stop_after="llvm", jit=JIT())
    disk = DiskCache(tmp_path)
    compile(MODEL, "m.relay", disk_cache=disk, stop_after="llvm", jit=JIT(), opt_level=2)
    assert disk.hits == 0 and disk.misses > 0


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        status = main(list(args))
    finally:
        sys.stdout, sys.stderr = saved
    return status, out.getvalue(), err.getvalue()


def test_relaylens_cache_says_where_and_how_much_and_clears(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RELAYLENS_CACHE_DIR", str(tmp_path / "kernels"))
    compiler_version.cache_clear()  # as in a fresh process: reading the version must not create the cache
    model = tmp_path / "m.relay"
    model.write_text(MODEL)
    status, out, _ = _cli("cache")
    assert status == 0 and f"directory: {tmp_path / 'kernels'} (not created yet)" in out and "entries: 0" in out
    assert _cli("build", str(model), "--emit", "llvm", "--no-cache")[0] == 0
    assert not (tmp_path / "kernels").exists()
    assert _cli("build", str(model), "--emit", "llvm")[0] == 0
    entries = [p for p in (tmp_path / "kernels").iterdir() if p.is_file()]  # not the parts' folders
    count, size = len(entries), sum(p.stat().st_size for p in entries)
    status, out, _ = _cli("cache", "--info")
    assert status == 0 and f"entries: {count}\n" in out and "of at most 1.0 GiB" in out
    assert "kept builds (check and passes): 0, 0 bytes of at most 512.0 MiB" in out  # the share builds use
    assert f"size: {size / 1024:.1f} KiB" in out
    status, out, _ = _cli("cache", "--clear")
    assert status == 0 and out.startswith(f"removed {count} entries from {tmp_path / 'kernels'}")  # and the
    # sources' digests the build memoised, if this process had not made them before
    assert "entries: 0\n" in _cli("cache", "--info")[1]
    monkeypatch.setenv("RELAYLENS_CACHE_SIZE", "huge")
    status, _, err = _cli("cache")
    assert status == 2 and err.startswith("relaylens: RELAYLENS_CACHE_SIZE: ") and "'huge'" in err


def test_relaylens_cache_shows_and_clears_the_reports(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RELAYLENS_CACHE_DIR", str(tmp_path))
    from relaylens.server.slow import report_cache
    from relaylens.server.slow.report import BuildReport

    compiler_version.cache_clear()  # as in a fresh process: --info names the compiler, whose
    # sources' digest it then keeps in this cache (whatever other tests computed before)
    report_cache.store(DiskCache.default(), "k", BuildReport("file:///a.relay", 1, MODEL))
    status, out, _ = _cli("cache", "--info")
    assert status == 0 and "editor's build reports: 1, " in out and "entries: 0\n" in out
    status, out, _ = _cli("cache", "--clear")
    assert (status, out) == (0, f"removed 0 entries from {tmp_path} and 1 build reports, 1 digests of the sources\n")
    assert "editor's build reports: 0, " in _cli("cache", "--info")[1]


def test_the_editors_worker_reads_and_writes_the_cache(tmp_path) -> None:
    env = {**os.environ, "RELAYLENS_CACHE_DIR": str(tmp_path)}

    def worker_build(text: str, uri: str):
        proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        try:
            assert frames.read(proc.stdout) == ("ready", proc.pid)
            frames.write(proc.stdin, ("build", 1, uri, 1, text, None))
            while (message := frames.read(proc.stdout))[0] != "done":
                pass
            return message[2]
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)

    first = worker_build(MODEL, "file:///w/a.relay")
    entries = sorted(tmp_path.glob("*.kernel"))
    assert len(entries) == len(first.functions) >= 2
    for path in entries:
        os.utime(path, (1000, 1000))  # long unused
    second = worker_build(_moved(MODEL), "file:///w/b.relay")
    assert sorted(tmp_path.glob("*.kernel")) == entries  # nothing new lowered
    assert all(p.stat().st_mtime > 1000 for p in entries)  # every entry read (a hit marks it used)
    assert unpack(second.optimized_ir) == compile(_moved(MODEL), "file:///w/b.relay", stop_after="llvm").lowered.optimized_ir


def test_the_servers_cache_options_reach_the_worker(tmp_path) -> None:
    import asyncio

    from relaylens.server.slow.builds import cache_environment
    from relaylens.server.slow.process import WorkerProcess

    assert cache_environment({"enabled": False, "maxBytes": "64M", "directory": str(tmp_path)}) == {
        "RELAYLENS_NO_CACHE": "1", "RELAYLENS_CACHE_SIZE": "64M", "RELAYLENS_CACHE_DIR": str(tmp_path)}
    assert cache_environment({"enabled": True, "maxBytes": 1 << 20}) == {
        "RELAYLENS_NO_CACHE": "0", "RELAYLENS_CACHE_SIZE": "1048576"}
    assert cache_environment({"enabled": "yes", "maxBytes": True, "directory": 3}) == {}

    async def build() -> tuple:
        loop = asyncio.get_running_loop()
        done, ended = loop.create_future(), loop.create_future()
        worker = WorkerProcess(lambda m: m[0] == "done" and not done.done() and done.set_result(m),
                               lambda *_: ended.done() or ended.set_result(None))
        worker.env.update(cache_environment({"directory": str(tmp_path / "kernels")}))
        worker.send(("build", 1, "file:///w/a.relay", 1, MODEL, None))
        try:
            return await asyncio.wait_for(done, 120)
        finally:
            worker.kill()  # on_exit follows, once the process is reaped
            await asyncio.wait_for(ended, 30)

    report = asyncio.run(build())[2]
    assert len(list((tmp_path / "kernels").glob("*.kernel"))) == len(report.functions) >= 2


def test_object_code_loads_again_under_another_name_with_the_jits_thread_count() -> None:
    import ctypes

    from relaylens.compiler.lower.codegen.llvm import NUM_THREADS_GLOBAL
    from relaylens.compiler.lower.errors import LoweringError

    text = (f"@{NUM_THREADS_GLOBAL} = global i32 1\n"
            "define void @k(ptr %out) {\n"
            f"  %n = load i32, ptr @{NUM_THREADS_GLOBAL}\n  store i32 %n, ptr %out\n  ret void\n}}\n")
    _, obj = JIT(num_threads=2).load_keeping_object(text)
    jit = JIT(num_threads=3)
    jit.load_object(obj, {"renamed": "k"})
    out = np.zeros(1, "int32")
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(jit.address("renamed"))(out.ctypes.data)
    assert out[0] == 3
    try:  # (damaged object code is never loaded: LLVM would crash; the entry's checksum guards it)
        JIT().load_object(obj, {"renamed": "missing"})
    except LoweringError as err:
        assert "defines no missing" in err.message
    else:
        raise AssertionError("loaded a symbol the object lacks")


def test_objects_share_an_engine_until_a_symbol_would_clash_and_the_latest_load_wins() -> None:
    import ctypes

    from relaylens.compiler.lower.codegen.llvm import NUM_THREADS_GLOBAL

    def kernel(symbol: str, add: int) -> bytes:  # out[0] = the thread count + add, as kernels read it
        text = (f"@{NUM_THREADS_GLOBAL} = linkonce_odr global i32 0\n"
                f"define void @{symbol}(ptr %out) {{\n"
                f"  %n = load i32, ptr @{NUM_THREADS_GLOBAL}\n  %m = add i32 %n, {add}\n"
                "  store i32 %m, ptr %out\n  ret void\n}\n")
        return JIT().load_keeping_object(text)[1]

    def run(jit: JIT, name: str) -> int:
        out = np.zeros(1, "int32")
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(jit.address(name))(out.ctypes.data)
        return int(out[0])

    jit = JIT(num_threads=3)
    first = jit.load_object(kernel("a", 10), {"a": "a"})
    assert jit.load_object(kernel("b", 20), {"b": "b", "b2": "b"}) is first  # one engine for both
    assert (run(jit, "a"), run(jit, "b"), run(jit, "b2")) == (13, 23, 23)  # one thread-count global, set
    other = jit.load_object(kernel("a", 30), {"a": "a"})  # "a" again: MCJIT would shadow it silently
    assert other is not first and run(jit, "a") == 33 and run(jit, "b") == 23
    assert jit.load_object(kernel("c", 40), {"b": "c"}) is other  # a name taken by another symbol: the latest wins
    assert run(jit, "b") == 43 and run(jit, "b2") == 23


def test_a_kernel_given_machine_code_is_not_compiled_again_from_memory() -> None:
    from relaylens.compiler.lower.pipeline import LoweringCache

    class CountingJIT(JIT):
        loads = 0

        def load(self, text):
            CountingJIT.loads += 1
            return super().load(text)

    cache, jit = LoweringCache(), CountingJIT()
    compile(MODEL, "m.relay", cache=cache, jit=jit, stop_after="llvm")
    compile(MODEL, "m.relay", cache=cache, jit=jit)
    after_first = CountingJIT.loads
    compile(MODEL, "m.relay", cache=cache, jit=jit)
    assert CountingJIT.loads - after_first == 1  # the AOT entry alone


def test_an_entry_wired_otherwise_is_not_the_one_kept(tmp_path) -> None:
    """The entry's machine code is keyed by its calls, not by its IR (not made when the
    code is kept): a model whose one kernel is the same but takes its inputs the other way
    round gets its own entry, and its own result."""
    x, y = _inputs()
    one, other = (f"#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(1, 32, 40, 40), float32], "
                  f"%y: Tensor[(1, 32, 40, 40), float32]) {{\n  {body}\n}}\n" for body in ("subtract(%x, %y)",
                                                                                         "subtract(%y, %x)"))
    first = compile(one, "m.relay", disk_cache=DiskCache(tmp_path))
    second = compile(other, "m.relay", disk_cache=DiskCache(tmp_path))
    assert second.executable.lowered.functions.keys() == first.executable.lowered.functions.keys()  # one kernel
    np.testing.assert_array_equal(first.executable.run(x, y), x - y)
    np.testing.assert_array_equal(second.executable.run(x, y), y - x)


def test_the_entrys_machine_code_is_kept_and_a_damaged_one_compiled_again(tmp_path) -> None:
    from relaylens.compiler.lower.cache_keys import entry_key
    from relaylens.compiler.lower.disk_cache import ENTRIES
    from relaylens.compiler.lower.runtime.aot import entry_calls

    class CountingJIT(JIT):
        compiled = 0

        def load_keeping_object(self, text):
            CountingJIT.compiled += 1
            return super().load_keeping_object(text)

    first = compile(MODEL, "m.relay", disk_cache=DiskCache(tmp_path), jit=CountingJIT())
    expected = first.executable.run(*_inputs())
    entries = DiskCache(tmp_path).part(ENTRIES)
    key = entry_key(entry_calls(first.executable.plan), "m.relay")
    assert "object" in entries.get(key).blobs and CountingJIT.compiled == 1
    again = compile(MODEL, "m.relay", disk_cache=DiskCache(tmp_path), jit=CountingJIT())
    assert CountingJIT.compiled == 1  # neither kernels nor the entry compiled
    np.testing.assert_array_equal(again.executable.run(*_inputs()), expected)
    entries.path(key).write_bytes(entries.path(key).read_bytes()[:-100])  # truncated
    third = compile(MODEL, "m.relay", disk_cache=DiskCache(tmp_path), jit=CountingJIT())
    assert CountingJIT.compiled == 2 and third.ok, third.diagnostics
    np.testing.assert_array_equal(third.executable.run(*_inputs()), expected)
    assert "object" in entries.get(key).blobs  # written whole again


def test_a_kernel_whose_parameter_shared_its_call_s_location_is_moved_by_the_call(tmp_path, monkeypatch) -> None:
    """An entry written when a weight's layout_transform took the parameter's span (the
    def line, before layout_rewrite.input_span): its parameter and its call had one
    location.  Read back where the call now has its reader's line, the kernel's debug
    lines follow the call, as a cold build's do, not the parameter (which emits none)."""
    from relaylens.compiler.transform import layout_rewrite

    text = ('#[version = "0.0.5"]\n'
            "def @main(%x: Tensor[(1, 16), float32], %w: Tensor[(8, 16), float32]) -> Tensor[(1, 8), float32] {\n"
            "  %0 = nn.dense(%x, %w, units=8);\n"
            "  exp(%0)\n"
            "}\n")
    real = layout_rewrite.input_span
    monkeypatch.setattr(layout_rewrite, "input_span", lambda value, call: value.span or call.span)
    assert compile(text, "packed.relay", disk_cache=DiskCache(tmp_path), jit=JIT()).executable is not None
    monkeypatch.setattr(layout_rewrite, "input_span", real)
    text = text.replace("\n", "\n// a line more\n", 1)  # (another text: not the kept build of the first)
    disk = DiskCache(tmp_path)
    warm = compile(text, "packed.relay", disk_cache=disk, jit=JIT())
    cold = compile(text, "packed.relay", jit=JIT())
    assert disk.hits == len(cold.lowered.functions) and disk.misses == 0
    for name, fn in cold.lowered.functions.items():
        assert warm.lowered.functions[name].llvm_ir == fn.llvm_ir, name
