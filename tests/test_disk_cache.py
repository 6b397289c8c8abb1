"""The kernel cache on disk as storage (lower/disk_cache.py): entries read back whole or
not at all, the size bound evicts the entry used longest ago, and the key changes with
everything that changes machine code."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from relaylens.compiler.lower import cache_keys, disk_cache
from relaylens.compiler.lower.cache_keys import cache_key
from relaylens.compiler.lower.disk_cache import DiskCache, Entry, default_directory, parse_size


def _entry(size: int = 100, tag: str = "a") -> Entry:
    return Entry({"name": tag, "locations": [[1, 2], None]},
                 {"llvm_ir": tag.encode() * size, "object": os.urandom(size)})


def test_an_entry_reads_back_as_written(tmp_path) -> None:
    cache = DiskCache(tmp_path)
    entry = _entry()
    cache.put("k1", entry)
    assert cache.get("k1") == entry
    assert cache.get("k2") is None
    assert (cache.hits, cache.misses) == (1, 1)


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "empty", "not an entry"])
def test_a_damaged_entry_is_a_miss_and_is_removed(tmp_path, damage) -> None:
    cache = DiskCache(tmp_path)
    cache.put("k", _entry(2000))
    path = cache.path("k")
    data = path.read_bytes()
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped byte":
        data = data[:-10] + bytes([data[-10] ^ 0x40]) + data[-9:]
    elif damage == "empty":
        data = b""
    else:
        data = b"int main() { return 0; }\n" * 10
    path.write_bytes(data)
    assert cache.get("k") is None
    assert cache.corrupt == 1 and not path.exists()
    rebuilt = _entry(2000)
    cache.put("k", rebuilt)
    assert cache.get("k") == rebuilt


def _with_arrays() -> Entry:
    weights = [np.arange(n, dtype="float32") for n in (5, 70_000, 3)]
    return Entry({"name": "w"}, {"build": b"pickle"}, [memoryview(w).cast("B") for w in weights])


def test_arrays_are_stored_as_they_are_and_read_back_writable_and_aligned(tmp_path) -> None:
    cache = DiskCache(tmp_path)
    entry = _with_arrays()
    cache.put("k", entry)
    assert cache.path("k").stat().st_size > sum(a.nbytes for a in entry.arrays)  # not compressed
    again = cache.get("k")
    assert again == entry
    for a in again.arrays:
        array = np.frombuffer(a, "float32")
        assert array.ctypes.data % disk_cache.ALIGN == 0 and array.flags.writeable
    np.frombuffer(again.arrays[1], "float32")[:] = 0  # a private copy: the file keeps its bytes
    assert cache.get("k") == entry


@pytest.mark.parametrize("damage", ["an array's byte flipped", "the last array cut short", "a byte appended"])
def test_an_entry_whose_arrays_are_damaged_is_a_miss(tmp_path, damage) -> None:
    cache = DiskCache(tmp_path)
    cache.put("k", _with_arrays())
    path = cache.path("k")
    data = bytearray(path.read_bytes())
    if damage == "an array's byte flipped":
        data[len(data) - 100] ^= 0x01
    elif damage == "the last array cut short":
        del data[-4:]
    else:
        data += b"\0"
    path.write_bytes(bytes(data))
    assert cache.get("k") is None and cache.corrupt == 1 and not path.exists()


def test_the_size_bound_evicts_the_entries_used_longest_ago(tmp_path) -> None:
    probe = DiskCache(tmp_path / "probe")
    probe.put("x", _entry(1000))
    one = probe.path("x").stat().st_size
    cache = DiskCache(tmp_path / "c", max_bytes=3 * one + one // 2)
    for k, key in enumerate(["old", "middle", "new"]):
        cache.put(key, _entry(1000))
        os.utime(cache.path(key), (1000 + k, 1000 + k))
    assert cache.get("old") is not None  # a hit: "old" is now the most recently used
    cache.put("fourth", _entry(1000))
    assert not cache.path("middle").exists()
    assert all(cache.path(k).exists() for k in ("old", "new", "fourth"))
    assert cache.info().bytes <= cache.max_bytes


def test_concurrent_writers_of_one_key_leave_one_whole_entry(tmp_path) -> None:
    cache = DiskCache(tmp_path)
    entries = [_entry(50_000, tag) for tag in "abcdefgh"]
    threads = [threading.Thread(target=DiskCache(tmp_path).put, args=("k", e)) for e in entries]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.get("k") in entries
    assert [p.name for p in tmp_path.iterdir()] == [cache.path("k").name]  # no temporary file left


def test_an_unwritable_directory_never_fails_a_put(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = DiskCache(blocker / "kernels")
    cache.put("k", _entry())
    assert cache.errors == 1 and cache.get("k") is None


def test_clear_removes_every_entry_and_info_counts_them(tmp_path) -> None:
    cache = DiskCache(tmp_path, max_bytes=12345)
    for key in ("a", "b", "c"):
        cache.put(key, _entry())
    info = cache.info()
    assert (info.directory, info.entries, info.max_bytes) == (tmp_path, 3, 12345)
    assert info.bytes == sum(p.stat().st_size for p in tmp_path.iterdir())
    assert cache.clear() == 3 and cache.info().entries == 0


def test_the_key_changes_with_whatever_changes_the_machine_code(monkeypatch) -> None:
    signature = [[[[1, 16], "float32"]], [], [[[1, 8], "float32"]]]
    base = cache_key(123, signature, {"opt_level": 3, "config": {}})
    assert base == cache_key(123, signature, {"config": {}, "opt_level": 3})
    assert base != cache_key(124, signature, {"opt_level": 3, "config": {}})
    assert base != cache_key(123, [[[[1, 16], "float16"]], [], [[[1, 8], "float32"]]], {"opt_level": 3, "config": {}})
    assert base != cache_key(123, signature, {"opt_level": 2, "config": {}})
    assert base != cache_key(123, signature, {"opt_level": 3, "config": {"relay.FuseOps.max_depth": 1}})
    monkeypatch.setattr(cache_keys, "compiler_version", lambda: "0.0.0+another")
    assert base != cache_key(123, signature, {"opt_level": 3, "config": {}})
    monkeypatch.undo()
    monkeypatch.setattr(cache_keys, "target_id", lambda: "x86_64-unknown-linux-gnu another-cpu +avx2")
    assert base != cache_key(123, signature, {"opt_level": 3, "config": {}})


def test_the_compiler_version_changes_with_the_sources_lowering_runs(tmp_path) -> None:
    folders = tuple("compiler/" + f for f in cache_keys.KERNEL_SOURCES)
    for folder in (*folders, "compiler/cli"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "a.py").write_text("x = 1\n")
    before = cache_keys.source_digest(tmp_path, folders)
    (tmp_path / "compiler" / "cli" / "a.py").write_text("x = 2\n")  # the CLI makes no kernel
    assert cache_keys.source_digest(tmp_path, folders) == before
    for folder in folders:
        (tmp_path / folder / "a.py").write_text("x = 2\n")  # the same size, at once: young files are not memoised
        after = cache_keys.source_digest(tmp_path, folders)
        assert after != before
        before = after
    assert cache_keys.compiler_version().endswith("+" + cache_keys.source_digest(cache_keys.PACKAGE, folders)[:16])


def _aged(root, seconds: float = 10.0) -> None:
    """Every file under `root` as if written `seconds` ago (its change time stays now)."""
    for path in root.rglob("*.py"):
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns - int(seconds * 1e9)))


def test_a_digest_is_memoised_under_the_files_stat(tmp_path, monkeypatch) -> None:
    """Files older than RACY_NS are read once: while their stat holds, the digest comes
    from the cache's part sources/; a change of a file (or one added) is seen."""
    monkeypatch.setenv("RELAYLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache_keys, "RACY_NS", 0)  # change times here are all of this second
    root = tmp_path / "pkg"
    (root / "compiler").mkdir(parents=True)
    (root / "compiler" / "a.py").write_text("x = 1\n")
    _aged(root)
    made = cache_keys.source_digest(root, ("compiler",))
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    assert cache_keys.source_digest(root, ("compiler",)) == made
    assert not [p for p in opened if str(p).endswith(".py")]
    (root / "compiler" / "b.py").write_text("y = 1\n")
    assert cache_keys.source_digest(root, ("compiler",)) != made
    (root / "compiler" / "b.py").unlink()
    assert cache_keys.source_digest(root, ("compiler",)) == made
    (root / "compiler" / "a.py").write_text("x = 1234\n")
    assert cache_keys.source_digest(root, ("compiler",)) != made


def test_a_young_file_is_read_each_time(tmp_path, monkeypatch) -> None:
    """A file written within RACY_NS may be written again within one tick of the clock at
    the same size and keep its stat: its digest is not memoised."""
    monkeypatch.setenv("RELAYLENS_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "pkg"
    (root / "compiler").mkdir(parents=True)
    (root / "compiler" / "a.py").write_text("x = 1\n")
    before = cache_keys.source_digest(root, ("compiler",))
    assert not (tmp_path / "cache" / "sources").exists()
    (root / "compiler" / "a.py").write_text("x = 2\n")
    assert cache_keys.source_digest(root, ("compiler",)) != before


def test_where_the_cache_is_and_how_large_it_may_grow(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RELAYLENS_CACHE_DIR", str(tmp_path / "mine"))
    assert default_directory() == tmp_path / "mine"
    monkeypatch.delenv("RELAYLENS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_directory() == tmp_path / "xdg" / "relaylens" / "kernels"
    assert [parse_size(t) for t in ("4096", "512M", "1G", "1.5GiB", "2k")] == [4096, 512 << 20, 1 << 30,
                                                                               3 << 29, 2048]
    with pytest.raises(ValueError, match="'lots'"):
        parse_size("lots")
    monkeypatch.setenv("RELAYLENS_CACHE_SIZE", "10M")
    assert DiskCache.default().max_bytes == 10 << 20
    monkeypatch.setenv("RELAYLENS_NO_CACHE", "1")
    assert disk_cache.environment_cache() is None
