"""The keys of the disk cache's entries (disk_cache.py), and what every key knows of
RelayLens's own code: digests of its source files, so that an entry made by other code
is never read.

    key = cache_key(structural_hash(func), signature, options)    # a kernel
    key = entry_key(entry_calls(plan), source_name)              # the AOT entry's machine code
    compiler_version()          # "0.1.0+<16 hex>": the sources lowering runs (KERNEL_SOURCES)
    compiler_digest()           # every source of the compiler and the grammar (kept builds)
    source_digest(root, folders, suffixes)                        # SHA-256 of such files

Each process asks for each digest it uses once (the callers keep it: lru_cache).

A digest is a SHA-256 of the files' paths (relative to `root`) and contents.  Hashing
the compiler's 2.2 MB in 286 files costs about 15 ms of CPU, listing them with pathlib
10 more, and a process that reads the cache asks for two or three digests over mostly
the same files (kernels: lower/, ops/, ir/; kept builds: the compiler and the grammar,
`compiler_digest`; the editor's reports: the compiler and server/slow): 35-40 ms, a
quarter of building GPT-2 again in another process.  So a digest is memoised in the
cache's part `sources/` (`digest_memo`, which keeps the digests of weights archives too:
weights_digests.py), one entry per set of folders, under the files' stat: path,
size, modification and change times (ns) and inode.  Listing and stat-ing them costs
3 ms; the files are read again only when one of them changed, came or went.  As git
does with its index, a digest is not memoised while a file is younger than RACY_NS:
file times advance in coarse ticks, and a file written again within one tick, at the
same size, would keep its stat.  Tried: one listing of the compiler's files for both
digests a process reading the cache makes (compiler_version's folders are among
compiler_digest's): 0.95x their CPU, within the noise (8 pairs of processes, load 9.7);
not kept.  Without a cache (`RELAYLENS_NO_CACHE`) or a directory
that cannot be written, the digest is made from the files each time.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..version import RELEASE
from .disk_cache import SCHEMA, SOURCES, DiskCache, Entry, disabled
from .runtime.target import OPTIONS, target_id

KERNEL_SOURCES = ("lower", "ops", "ir")  # the compiler's folders whose code decides a kernel
PACKAGE = Path(__file__).resolve().parents[2]  # the package's root: compiler/, server/, grammar/
RACY_NS = 2_000_000_000  # a file younger than this keeps its digest from the memo


def cache_key(structural: int, signature: Any, options: Any) -> str:
    """A kernel's key: SHA-256 of its structural hash and tensor `signature`, the build's
    `options`, the target, LLVM's options and the compiler's version (JSON-able)."""
    parts = {"schema": SCHEMA, "structural": structural, "signature": signature, "options": options,
             "target": target_id(), "llvm": OPTIONS, "compiler": compiler_version()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def entry_key(calls: list, source_name: str) -> str:
    """The key of the AOT entry's machine code (runtime/executable.py): the calls it is
    made of (runtime/aot.py `entry_calls`: it reads the plan through them alone), the
    source its debug information names, the target, LLVM's options and the compiler's
    version (whose sources hold the code that makes the entry from its calls)."""
    parts = {"schema": SCHEMA, "entry": calls, "source": source_name, "target": target_id(),
             "llvm": OPTIONS, "compiler": compiler_version()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@lru_cache(maxsize=2)
def compiler_version(memo: bool = True) -> str:
    """The package's release (compiler/version.py) and a digest of the source files
    lowering runs: a change to any of them makes every key new.  `memo=False` neither
    reads nor writes the digests' memo (`relaylens cache` names the version of a cache
    not created yet without creating it)."""
    digest = source_digest(PACKAGE, tuple("compiler/" + f for f in KERNEL_SOURCES), memo=memo)
    return f"{RELEASE}+{digest[:16]}"


@lru_cache(maxsize=1)
def compiler_digest() -> str:
    """A SHA-256 of every source file of the compiler and of the grammar (what a kept
    build's key holds: passes_cache.py)."""
    return source_digest(PACKAGE, ("compiler", "grammar"), (".py", ".lark"))


def source_digest(root: Path, folders: tuple[str, ...], suffixes: tuple[str, ...] = (".py",), *,
                  memo: bool = True) -> str:
    """SHA-256 of the files under `root`'s `folders` whose names end in `suffixes`: their
    paths relative to `root` and their contents (from the memo while their stat holds,
    unless `memo` is False)."""
    files = sorted(_listed(root, folders, suffixes))
    stat = hashlib.sha256(json.dumps([[rel, *fields] for rel, fields, _ in files]).encode()).hexdigest()
    memo = digest_memo() if memo else None
    key = hashlib.sha256(json.dumps([str(root), folders, suffixes]).encode()).hexdigest()
    if memo is not None:
        kept = memo.get(key)
        if kept is not None and kept.meta.get("stat") == stat and isinstance(kept.meta.get("digest"), str):
            return kept.meta["digest"]
    digest = hashlib.sha256()
    for rel, _, path in files:
        digest.update(rel.encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(f.read())
    made = digest.hexdigest()
    newest = max((max(fields[1], fields[2]) for _, fields, _ in files), default=0)
    if memo is not None and time.time_ns() - newest >= RACY_NS:
        memo.put(key, Entry({"stat": stat, "digest": made}, {}))
    return made


def _listed(root: Path, folders: tuple[str, ...], suffixes: tuple[str, ...]):
    """(path relative to root, [size, mtime, ctime, inode], path) of each file, walked with
    os.scandir and plain strings (pathlib's rglob and relative_to took ten times as long);
    caches (__pycache__) skipped."""
    stack = [(str(root / folder), folder) for folder in folders]
    while stack:
        directory, rel = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        if e.name != "__pycache__":
                            stack.append((e.path, f"{rel}/{e.name}"))
                    elif e.name.endswith(suffixes):
                        st = e.stat()
                        yield f"{rel}/{e.name}", [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino], e.path
        except FileNotFoundError:
            continue


def digest_memo() -> DiskCache | None:
    """The cache's part that memoises digests (of the sources; of weights archives:
    weights_digests.py), or None without a cache."""
    if disabled():
        return None
    try:
        return DiskCache.default().part(SOURCES)
    except ValueError:  # a $RELAYLENS_CACHE_SIZE that does not read: the build says so elsewhere
        return None
