"""The persistent kernel cache: lowered kernels on disk, shared by every process that
builds (the CLI, the editor's build worker, the benchmarks), so a model built once opens
fast anywhere.

    cache = DiskCache.default()              # $RELAYLENS_CACHE_DIR, else the XDG cache dir
    cache = environment_cache()              # the same, or None when $RELAYLENS_NO_CACHE is set
    key = cache_key(structural_hash(func), signature, options)   # cache_keys.py
    entry = cache.get(key)                   # an Entry, or None (absent, corrupt, truncated)
    cache.put(key, Entry(meta, {"llvm_ir": b"...", "object": b"..."}))
    cache.info(), cache.clear()              # `relaylens cache --info / --clear`

Where: `$RELAYLENS_CACHE_DIR`, else `$XDG_CACHE_HOME/relaylens/kernels`, else
`~/.cache/relaylens/kernels`.  Size bound: `$RELAYLENS_CACHE_SIZE` (bytes, or with a
K/M/G suffix; default 1 GiB); when a `put` takes the directory past it, the entries used
longest ago are removed (a hit sets its file's modification time: LRU by access time).

The key (`cache_key`, cache_keys.py) is a SHA-256 of everything that decides the machine
code: the primitive function's structural hash (spans are not part of it: the same
kernel at another line is a hit), its tensor signature, the target
(`runtime/target.py`), LLVM's options (`target.OPTIONS`), the build's options, the
package version and a digest of the compiler's own source files that lowering runs
(`compiler_version()`: lower/, ops/, ir/), so that any change to the compiler
invalidates every entry.  The structural hash reads a sample of a large constant's
values; that is enough, because a non-scalar constant is a buffer the kernel is passed
(te/compose.py), never part of its code, and the signature counts those buffers and
their shapes.

One file per entry, `<key>.kernel`: a magic line, the SHA-256 and length of the head, the
head (the length of the header, the header: zlib of a JSON with the caller's `meta` and
each blob's name and length, then the blobs, each compressed on its own: a blob is
decompressed when it is first read, so a build that loads a kernel's object code does
not decompress its LLVM texts, 85% of its bytes: GPT-2's 19 kernels 5.5 ms),
and after it the entry's `arrays` as they are, uncompressed, each at a 64-byte aligned
offset with its length and `checksum` in the header (large weights: compressing or
hashing them would cost a good part of the build they save; mapped from the file, they
become numpy arrays the kernels read in place).  A file whose magic, checksums or
contents do not read is removed and reported as a miss, so a corrupt or truncated entry
is rebuilt, never trusted.  Writers write a temporary file in the directory and rename
it over the entry (atomic on POSIX): concurrent writers of one key leave one whole
entry, and no file is ever changed in place, which a reader mapping it relies on.  The
cache never fails a build: a directory that cannot be written is counted in `errors` and
the build goes on without it.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping


ENV_DIR = "RELAYLENS_CACHE_DIR"
ENV_SIZE = "RELAYLENS_CACHE_SIZE"
ENV_OFF = "RELAYLENS_NO_CACHE"  # set (to anything but 0): builds use no disk cache
DEFAULT_MAX_BYTES = 1 << 30
SCHEMA = 3  # of the entry format and of what callers put in it; bump on a change
MAGIC = b"relaylens-kernel 3\n"
ALIGN = 64  # of each stored array, in the file and in memory
SUFFIX = ".kernel"
REPORTS = "reports"  # the part (subdirectory) that holds the editor's build reports
PASSES = "builds"  # the part that holds builds' check and passes (compiler/passes_cache.py)
ENTRIES = "entries"  # the part that holds the AOT entries' machine code (runtime/executable.py)
SOURCES = "sources"  # the part that memoises the digests of the compiler's sources (cache_keys.py)
PART_SHARE = 0.25  # of the cache's size bound, for a part's entries on top of it
SHARES = {PASSES: 0.5}  # a part's own share: a ResNet-50 kept with its weights bound takes 228 MB
_DIGEST = hashlib.sha256().digest_size
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def default_directory() -> Path:
    """$RELAYLENS_CACHE_DIR, else $XDG_CACHE_HOME/relaylens/kernels, else ~/.cache/relaylens/kernels."""
    explicit = os.environ.get(ENV_DIR, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "relaylens" / "kernels"


def parse_size(text: str) -> int:
    """Bytes from `1073741824`, `512M`, `1G`, `1.5GiB`; ValueError naming the text otherwise."""
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"a cache size must be a number of bytes, optionally with K, M, G or T, not {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def default_max_bytes() -> int:
    """$RELAYLENS_CACHE_SIZE if set (ValueError when it does not read), else 1 GiB."""
    text = os.environ.get(ENV_SIZE, "").strip()
    return parse_size(text) if text else DEFAULT_MAX_BYTES


def environment_cache() -> DiskCache | None:
    """`DiskCache.default()`, or None when $RELAYLENS_NO_CACHE is set to anything but 0
    (ValueError for a $RELAYLENS_CACHE_SIZE that does not read)."""
    return None if disabled() else DiskCache.default()


def disabled() -> bool:
    """$RELAYLENS_NO_CACHE is set to anything but 0."""
    return os.environ.get(ENV_OFF, "").strip() not in ("", "0")


@dataclass
class Entry:
    """What one key holds: `meta` (JSON-able), named byte blobs (compressed on disk; read
    back as `Blobs`, decompressed when read), and `arrays`: buffers stored as they are,
    read back as writable, 64-byte aligned memoryviews of one buffer
    (compiler/passes_cache.py's weights)."""

    meta: dict[str, Any]
    blobs: Mapping[str, bytes]
    arrays: list[Any] = field(default_factory=list)


class Blobs(Mapping):
    """An entry's blobs as read: each decompressed when it is first read, then kept.  The
    head they are in was checked whole (its SHA-256) before."""

    def __init__(self, compressed: dict[str, bytes]) -> None:
        self._compressed = compressed
        self._read: dict[str, bytes] = {}

    def __getitem__(self, name: str) -> bytes:
        if name not in self._read:
            self._read[name] = zlib.decompress(self._compressed[name])
        return self._read[name]

    def __contains__(self, name: object) -> bool:
        return name in self._compressed

    def __iter__(self) -> Iterator[str]:
        return iter(self._compressed)

    def __len__(self) -> int:
        return len(self._compressed)


@dataclass(frozen=True)
class CacheInfo:
    directory: Path
    entries: int
    bytes: int
    max_bytes: int


class DiskCache:
    """Entries in one directory, at most `max_bytes` of them (see the module doc)."""

    def __init__(self, directory: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.hits = self.misses = self.corrupt = self.errors = 0
        self._total: int | None = None  # bytes on disk, as last counted plus what we wrote

    @classmethod
    def default(cls) -> DiskCache:
        """The cache the environment names (ValueError for a $RELAYLENS_CACHE_SIZE that does not read)."""
        return cls(default_directory(), default_max_bytes())

    def part(self, name: str) -> DiskCache:
        """A cache of its own in the subdirectory `name`, for entries of another kind (the
        editor's build reports: server/slow/report_cache.py), bounded by its share of this
        cache's bound (`SHARES`, else PART_SHARE); this cache's own entries and bound do not
        count it."""
        return DiskCache(self.directory / name, int(self.max_bytes * SHARES.get(name, PART_SHARE)))

    def path(self, key: str) -> Path:
        return self.directory / (key + SUFFIX)

    def get(self, key: str) -> Entry | None:
        """The entry under `key`, or None.  A file that does not read whole is removed."""
        path = self.path(key)
        try:
            data = _mapped(path)
        except OSError:
            self.misses += 1
            return None
        entry = _decode(data)
        if entry is None:
            self.corrupt += 1
            self.misses += 1
            _remove(path)
            return None
        self.hits += 1
        try:
            os.utime(path)  # used now: the last to be evicted
        except OSError:
            pass
        return entry

    def put(self, key: str, entry: Entry) -> None:
        """Store `entry` under `key` (replacing any), then evict past the size bound."""
        chunks = _encode(entry)
        size = sum(len(c) for c in chunks)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.writelines(chunks)
                os.replace(temporary, self.path(key))
            except BaseException:
                _remove(Path(temporary))
                raise
        except OSError:
            self.errors += 1
            return
        if self._total is None:
            self._total = self._count()
        else:
            self._total += size
        if self._total > self.max_bytes:
            self.evict()

    def _files(self) -> list[tuple[Path, int, float]]:
        """(path, size, last use) of every entry; temporary files of writers are not entries."""
        found = []
        try:
            with os.scandir(self.directory) as it:
                for e in it:
                    if e.name.endswith(SUFFIX) and not e.name.startswith("."):
                        try:
                            st = e.stat()
                        except OSError:  # removed by another process meanwhile
                            continue
                        found.append((Path(e.path), st.st_size, st.st_mtime))
        except OSError:
            pass
        return found

    def _count(self) -> int:
        return sum(size for _, size, _ in self._files())

    def evict(self) -> int:
        """Remove the entries used longest ago until the rest fit in `max_bytes`; how many went."""
        files = sorted(self._files(), key=lambda f: f[2])
        total = sum(size for _, size, _ in files)
        removed = 0
        for path, size, _ in files:
            if total <= self.max_bytes:
                break
            if _remove(path):
                removed += 1
            total -= size
        self._total = total
        return removed

    def info(self) -> CacheInfo:
        files = self._files()
        return CacheInfo(self.directory, len(files), sum(size for _, size, _ in files), self.max_bytes)

    def clear(self) -> int:
        """Remove every entry (and writers' leftovers); how many entries went."""
        removed = sum(1 for path, _, _ in self._files() if _remove(path))
        try:
            for leftover in self.directory.glob(".tmp-*" + SUFFIX):
                _remove(leftover)
        except OSError:
            pass
        self._total = 0
        return removed


def _encode(entry: Entry) -> list[Any]:
    """The entry's file as chunks to write: magic, the head's digest and length, the head,
    then each array after padding to its aligned offset."""
    arrays = [memoryview(a).cast("B") for a in entry.arrays]
    offsets, at = [], 0
    for a in arrays:
        offsets.append(at)
        at = _aligned(at + a.nbytes)
    blobs = {name: zlib.compress(blob, 1) for name, blob in entry.blobs.items()}
    header = zlib.compress(json.dumps({"schema": SCHEMA, "meta": entry.meta,
                                       "blobs": [[name, len(blob)] for name, blob in blobs.items()],
                                       "arrays": [[offset, a.nbytes, check] for offset, a, check
                                                  in zip(offsets, arrays, map(checksum, arrays))]}).encode(), 1)
    head = len(header).to_bytes(4, "little") + header + b"".join(blobs.values())
    chunks: list[Any] = [MAGIC, hashlib.sha256(head).digest(), len(head).to_bytes(8, "little"), head]
    at = _head_end(len(head))
    for offset, a in zip(offsets, arrays):
        chunks += [bytes(_aligned(at) - at), a]
        at = _aligned(at) + a.nbytes
    return chunks


def _decode(data: memoryview) -> Entry | None:
    """The entry in `data` (a page-aligned buffer), or None for anything that is not a
    whole, intact entry."""
    fixed = len(MAGIC) + _DIGEST + 8
    if bytes(data[:len(MAGIC)]) != MAGIC or len(data) < fixed:
        return None
    digest = bytes(data[len(MAGIC):len(MAGIC) + _DIGEST])
    size = int.from_bytes(data[len(MAGIC) + _DIGEST:fixed], "little")
    head = data[fixed:fixed + size]
    if len(head) != size or hashlib.sha256(head).digest() != digest:
        return None
    try:
        header_size = int.from_bytes(head[:4], "little")
        header = json.loads(zlib.decompress(head[4:4 + header_size]))
        if header.get("schema") != SCHEMA:
            return None
        blobs, at = {}, 4 + header_size
        for name, length in header["blobs"]:
            blobs[name] = bytes(head[at:at + length])
            at += length
        if at != len(head):
            return None
        start, end = _aligned(_head_end(size)), _head_end(size)
        arrays = []
        for offset, length, _ in header["arrays"]:
            arrays.append(data[start + offset:start + offset + length])
            end = start + offset + length
        if end != len(data) or [checksum(a) for a in arrays] != [c for _, _, c in header["arrays"]]:
            return None  # truncated, grown, or an array's bytes changed
        return Entry(header["meta"], Blobs(blobs), arrays)
    except (zlib.error, ValueError, KeyError, TypeError):
        return None


def _head_end(head_size: int) -> int:
    return len(MAGIC) + _DIGEST + 8 + head_size


def _aligned(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


def checksum(buffer: memoryview) -> str:
    """A stored array's checksum: the wrapping 64-bit sum of its 8-byte words, and its
    last bytes.  It catches what damages a file by accident (a bit flipped, a page
    zeroed or overwritten; truncation shows in the length) at memory speed, a sixth of a
    SHA-256's time over a ResNet-50's 226 MB; not deliberate tampering, which the object
    code beside it would not resist either."""
    import numpy as np  # here: the server reads its kept reports through this module before numpy loads
    data = np.frombuffer(buffer, np.uint8)
    whole = len(data) // 8 * 8
    return f"{int(data[:whole].view(np.uint64).sum(dtype=np.uint64)):016x}{bytes(data[whole:]).hex()}"


def _mapped(path: Path) -> memoryview:
    """The file's bytes, mapped copy-on-write (writable, page-aligned, read from the
    page cache as they are touched: no copy of a large entry's arrays)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return memoryview(b"")
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY))


def _remove(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except OSError:
        return False
