"""Weights read from an archive, with their SHA-256s memoised under the archive's stat: a
model built before, run again from the same .npz, hashes no weight for its kept build's
key (passes_cache.py).

    weights = archive_weights(path, read)     # read(path) -> {name: array}: the CLI's reader
    compile(text, name, params=weights)       # a kept build's key takes weights.digests()
    weights.without({"x"})                    # an --input took %x's place

The kept build's key holds every bound weight's SHA-256: a GPT-2 block's 28 MB took 20-36
ms of the 110-150 ms of CPU a build read from the cache takes (load 3-6), ResNet-50's 102
MB about 0.1 s.  The digests of the arrays an archive gave are kept in the disk cache's
part `sources/` beside the compiler's (lower/cache_keys.py), under the archive's real
path, its stat (size, modification and change times in ns, inode, device; taken before
and after reading, and equal) and the compiler's digest (its reader's code among it), and
taken from there while that stat holds (looked up when the key is made: a build with no
disk cache looks up nothing).  As for the sources, an archive younger than
RACY_NS is not memoised: a file written again within one tick of its clock, at the same
size, would keep its stat.  The strength of the key is the SHA-256's: a changed weight
changes the archive's stat, and its digests are made again from the bytes.

The arrays are made read-only: the digests are of their bytes as read, and an array
written in place would be built with a kept build of other weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Mapping

import numpy as np

from .lower.cache_keys import RACY_NS, compiler_digest, digest_memo
from .lower.disk_cache import Entry

PARALLEL_DIGEST_BYTES = 32 << 20  # weights past this are hashed on two threads


class Weights(Mapping):
    """Arrays by name, read-only, and their digests (`digests`), which the memo holds
    when `archive` (the path and stat the arrays were read at) is the one they were made
    under; else made when first asked for, and memoised then."""

    def __init__(self, arrays: Mapping[str, np.ndarray], archive: tuple[str, list[int]] | None = None) -> None:
        self._arrays = dict(arrays)
        for array in self._arrays.values():
            array.flags.writeable = False
        self._archive = archive
        self._digests: dict[str, str] | None = None

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def digests(self) -> dict[str, str]:
        """Each array's SHA-256 (hex): the memo's, or made now (`digests`) and memoised."""
        if self._digests is None:
            memo, key = _memo(self._archive)
            kept = memo.get(key) if memo is not None else None
            known = kept.meta.get("digests") if kept is not None and kept.meta.get("stat") == self._archive[1] else None
            if isinstance(known, dict) and set(self._arrays) <= set(known):
                self._digests = {n: known[n] for n in self._arrays}
            else:
                names = list(self._arrays)
                self._digests = dict(zip(names, digests([as_bytes(self._arrays[n]) for n in names])))
                stat = self._archive[1] if self._archive is not None else None
                if memo is not None and time.time_ns() - max(stat[1], stat[2]) >= RACY_NS:
                    memo.put(key, Entry({"stat": stat, "digests": self._digests}, {}))
        return self._digests

    def without(self, names: Iterable[str]) -> Weights:
        """These weights but `names`."""
        dropped = set(names)
        return Weights({n: a for n, a in self._arrays.items() if n not in dropped}, self._archive)


def archive_weights(path: str, read: Callable[[str], Mapping[str, np.ndarray]]) -> Weights:
    """`read(path)`'s arrays as `Weights` of the archive `path`, when its stat is the same
    before and after they are read (else of no archive: their digests are made)."""
    before = _stat(path)
    arrays = read(path)
    after = _stat(path)
    return Weights(arrays, (os.path.realpath(path), after) if after is not None and after == before else None)


def _memo(archive: tuple[str, list[int]] | None):
    """The memo and the key of `archive`'s digests, or (None, None).  The key holds the
    compiler's digest: the reader's code is part of it."""
    memo = digest_memo() if archive is not None else None
    if memo is None:
        return None, None
    return memo, hashlib.sha256(json.dumps(["weights", archive[0], compiler_digest()]).encode()).hexdigest()


def digests(buffers: list[memoryview]) -> list[str]:
    """Each buffer's SHA-256 (hex), on two threads when they are large (a ResNet-50's
    102 MB of weights: 0.09 s on one).  The pool is joined before this returns: no
    thread of ours may outlive it into the lowering, which forks."""
    def digest(buffer: memoryview) -> str:
        return hashlib.sha256(buffer).hexdigest()
    if sum(b.nbytes for b in buffers) < PARALLEL_DIGEST_BYTES:
        return [digest(b) for b in buffers]
    with ThreadPoolExecutor(2) as pool:  # hashlib lets go of the GIL
        return list(pool.map(digest, buffers))


def as_bytes(a: np.ndarray) -> memoryview:
    """The bytes a digest is made of: the array's, C-contiguous."""
    return memoryview(np.ascontiguousarray(a)).cast("B")


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
