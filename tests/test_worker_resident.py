"""The build worker unmaps the clean library pages it is not running (server/slow/resident.py):
LLVM's code, which loading llvmlite maps by the tens of MB (a build no longer loads it in
the worker; an assembly view does).  Structural checks, no sizes that depend on the
machine: what is unmapped, that nothing written is lost, that LLVM still works after, and
that the worker does it after a job that ran LLVM.  Linux only."""

from __future__ import annotations

import ctypes
import mmap
import subprocess
import sys
import time
from pathlib import Path

import pytest

from relaylens.server.slow import frames
from relaylens.server.slow.report import unpack
from relaylens.server.slow.resident import drop_clean_mappings, mappings

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux's /proc/self/smaps")

LLVM_AFTER_DROP = """
import llvmlite.binding as llvm
from relaylens.server.slow.resident import drop_clean_mappings, mappings
def code(ms):
    return [m for m in ms if m.path.endswith("libllvmlite.so") and "x" in m.perms]
before = code(mappings())
dropped = drop_clean_mappings()
after = code(mappings())
assert any(m.path.endswith("libllvmlite.so") for m in dropped), dropped
assert sum(m.rss_kb for m in after) < sum(m.rss_kb for m in before), (before, after)
module = llvm.parse_assembly("define i32 @f(i32 %x) {\\n  %y = add i32 %x, 1\\n  ret i32 %y\\n}\\n")
module.verify()
assert "add i32 %x, 1" in str(module)
print("ok")
"""


def test_llvm_code_is_unmapped_and_llvm_still_works() -> None:
    out = subprocess.run([sys.executable, "-c", LLVM_AFTER_DROP], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_a_private_mapping_with_written_pages_is_left_alone(tmp_path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b"f" * (64 * mmap.PAGESIZE))
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    m[:4] = b"copy"  # a copied-on-write page: in this process only
    address = ctypes.addressof(ctypes.c_char.from_buffer(m))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(address, len(m), mmap.PROT_READ) == 0  # as a RELRO segment after relocation
    try:
        ours = next(x for x in mappings() if x.start == address)
        assert ours.perms.startswith("r--") and ours.anonymous_kb > 0 and not ours.clean_file
        dropped = drop_clean_mappings(min_kb=0)
        assert all(x.start != address for x in dropped)
        assert m[:5] == b"copyf"  # what was written is still there
    finally:
        libc.mprotect(address, len(m), mmap.PROT_READ | mmap.PROT_WRITE)
        m.close()


def test_mappings_reads_smaps(tmp_path) -> None:
    smaps = tmp_path / "smaps"
    smaps.write_text(
        "7f00-7f10 r-xp 00000000 fd:01 42                 /usr/lib/libx.so\n"
        "Size:                 64 kB\nRss:                  60 kB\nAnonymous:              0 kB\nVmFlags: rd ex mr mw me\n"
        "7f10-7f20 r--p 00010000 fd:01 42                 /usr/lib/libx.so\n"
        "Rss:                  8 kB\nAnonymous:              4 kB\n"
        "7f20-7f30 rw-p 00000000 00:00 0 \n"
        "Rss:                  4 kB\nAnonymous:              4 kB\n"
        "7f30-7f40 r--p 00000000 fd:01 43                 /tmp/gone (deleted)\n"
        "Rss:                  4 kB\nAnonymous:              0 kB\n")
    found = mappings(str(smaps))
    assert [(m.start, m.end, m.perms, m.path, m.rss_kb, m.anonymous_kb) for m in found] == [
        (0x7F00, 0x7F10, "r-xp", "/usr/lib/libx.so", 60, 0),
        (0x7F10, 0x7F20, "r--p", "/usr/lib/libx.so", 8, 4),
        (0x7F20, 0x7F30, "rw-p", "", 4, 4),
        (0x7F30, 0x7F40, "r--p", "/tmp/gone (deleted)", 4, 0)]
    assert [m.clean_file for m in found] == [True, False, False, False]


TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(4, 4), float32]) {
  %0 = nn.dense(%x, %w);
  nn.relu(%0)
}
"""


def _until(proc, kind: str) -> tuple:
    while (message := frames.read(proc.stdout))[0] != kind:
        pass
    return message


def _llvm_code(pid: int) -> list:
    return [m for m in mappings(f"/proc/{pid}/smaps") if m.path.endswith("libllvmlite.so") and "x" in m.perms]


def test_a_build_leaves_llvm_out_of_the_worker_and_an_assembly_view_unmaps_it() -> None:
    """A build stops at LLVM IR and runs LLVM in forked children; the host's facts come
    from a child (compiler/host.py): the worker never loads LLVM for it.  An assembly view
    does load LLVM's code generator here, and the worker unmaps its code once it waits."""
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("build", 1, "file:///r.relay", 1, TEXT, None))
        done = _until(proc, "done")
        assert done[1] == 1 and not done[2].diagnostics
        assert "define" in unpack(done[2].llvm_ir), "the build's LLVM IR, from its children"
        frames.write(proc.stdin, ("graph", 2, "file:///r.relay", 7, None))
        assert _until(proc, "graph")[2] is None
        assert not _llvm_code(proc.pid), "the worker loaded LLVM for a build"
        frames.write(proc.stdin, ("assembly", 3, unpack(done[2].llvm_ir)))
        assert _until(proc, "assembly")[3] is None
        assert _llvm_code(proc.pid), "an assembly view runs LLVM in the worker"
        # LLVM's code is 80 MB; the worker unmaps it once it waits for a message again
        deadline = time.monotonic() + 30
        while (resident := sum(m.rss_kb for m in _llvm_code(proc.pid))) * 8 >= \
                sum(m.end - m.start for m in _llvm_code(proc.pid)) // 1024 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert resident * 8 < sum(m.end - m.start for m in _llvm_code(proc.pid)) // 1024
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_the_worker_says_ready_without_loading_llvm() -> None:
    """The server sends its first build as soon as the worker is ready, so that build is
    taken before any wait: LLVM (95 MB resident once its initialisers ran) must not be
    loaded by then, nor by the host's facts, which a child reads (compiler/host.py)."""
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        assert "libllvmlite" not in Path(f"/proc/{proc.pid}/maps").read_text()
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


class _Counter:
    """A stand-in for the file-backed resident size and the drop `Trim` calls."""

    def __init__(self, kb: int) -> None:
        self.kb = kb
        self.drops = 0

    def resident(self) -> int:
        return self.kb

    def drop(self) -> list:
        self.drops += 1
        self.kb -= 500  # what a drop gives back
        return []


def test_trim_reads_smaps_only_when_file_pages_grew() -> None:
    from relaylens.server.slow.resident import Trim

    pages = _Counter(10_000)
    trim = Trim(grow_kb=2048, resident=pages.resident, drop=pages.drop)
    trim()
    assert pages.drops == 1  # the first time: right after the imports
    pages.kb += 1000  # an answer from what is kept maps a little
    trim()
    assert pages.drops == 1
    pages.kb += 1100  # a build maps LLVM's parser and linker: 2,100 kB since the last drop
    trim()
    assert pages.drops == 2
    trim()
    assert pages.drops == 2


def test_trim_drops_every_time_without_proc() -> None:
    from relaylens.server.slow.resident import Trim, file_resident_kb

    assert file_resident_kb("/nonexistent/statm") is None
    pages = _Counter(0)
    trim = Trim(resident=lambda: None, drop=pages.drop)
    trim()
    trim()
    assert pages.drops == 2


def test_a_waiting_message_is_taken_before_any_trim() -> None:
    from relaylens.server.slow.worker import Jobs, _next

    calls = []
    jobs = Jobs()
    jobs.take(("graph", 1, "file:///a.relay", 1, None))
    assert _next(jobs, lambda: calls.append("trim"))[0] == "graph"
    assert calls == []  # a message was waiting: taken at once


def test_the_worker_trims_before_it_waits() -> None:
    from relaylens.server.slow.worker import Jobs, _next

    calls = []
    jobs = Jobs()

    def trim() -> None:  # the queue is empty: the trim comes first, then the wait
        calls.append("trim")
        jobs.queue.put(None)

    assert _next(jobs, trim) is None
    assert calls == ["trim"]


def test_file_resident_kb_reads_statm() -> None:
    from relaylens.server.slow.resident import file_resident_kb

    kb = file_resident_kb()
    assert kb is not None and kb > 0
