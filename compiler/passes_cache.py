"""A build's check and passes kept on disk: the same text built again, by any process,
restores what they made instead of parsing, checking and running relay.build's passes
again (0.6-0.8 s of a ResNet-50 build whose kernels all come from the kernel cache).

    kept = PassesCache(disk)                           # in the disk cache's part builds/
    key = kept.key(text, name, params, options)        # None: such a build is not kept
    built = kept.get(key, params)                      # a BuildResult at stage "passes", or None
    kept.put(key, built, params)                       # after the kernels: see `later`

The key is a SHA-256 of everything the passes' result depends on: the text and its name
(every span names its source), the weights bound (names, dtypes, shapes and bytes: their
SHA-256s, memoised under their archive's stat when they come from one, weights_digests.py), the
driver's options (the pipeline, opt level, PassContext config, the seed of unknown
constants), and a digest of the compiler's whole source and grammar (`compiler_digest`):
a change to the parser, a type relation or a pass makes every key new (lower/cache_keys.py).

What is kept is the BuildResult as the passes left it, pickled: the checked module,
every pass's snapshot (a node shared by several snapshots is stored once), the
diagnostics, the kernel names and the fusion reasons; so hover, provenance and every
pass's module read as after the build that wrote it.  With them, each kernel's
composition (te/compose.py: its tensor expressions, which the kernel key and the
executable need even when the kernel cache has its code), as the build's lowering made
it (`Lowered.compositions`): a build that reads them composes no kernel again (the GPT-2
block's 19 kernels: composed in 20 ms of CPU, unpickled in 5; kernels lowered from them
give every kernel's LLVM IR as composed ones do, ResNet-50's and GPT-2's byte for byte).  Operators and `?` unpickle as the
one object of their kind (`Op.__reduce__`, `AnyDim.__reduce__`); spans as plain spans of
a plain source.  Weights are not pickled into the stream: the bound ones are the
caller's own arrays (the key holds their bytes), stored as a reference to their name and
given back from `params`; the arrays the passes made of them (folded batch norms, NCHWc
and Winograd layouts: 226 MB for a ResNet-50) go to the entry's uncompressed `arrays`
(pickle's out-of-band buffers) and come back as arrays of the file mapped copy-on-write
(disk_cache.py), 64-byte aligned, which the executable then reads in place.  The key
hashes the weights on every build that reads the cache, the editor's rebuild after an
edit too: about 0.05 s for a ResNet-50's 102 MB on two threads.  Not kept: a build with
errors (the next one says why anew), weights larger than the part's bound (what the
passes make of them would not fit either; the kernel cache still serves the kernels),
an entry past it.
An entry that does not unpickle is a miss (counted in `corrupt`) and is written again.
The directory is the user's own cache, as trusted as the object code the kernel cache
loads from it.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import sys
import threading
from typing import Any, Callable, Mapping

import numpy as np

from .build import BuildResult
from .lower.cache_keys import compiler_digest
from .lower.disk_cache import PASSES, DiskCache, Entry
from .weights_digests import Weights, as_bytes, digests

SCHEMA = 3  # of the pickled state; bump when BuildResult's fields change meaning
OUT_OF_BAND_BYTES = 64 << 10  # arrays from this size on are stored beside the pickle, not in it
STACK_BYTES = 512 << 20  # the pickling thread's stack (reserved, touched as deep as the module nests)
DEPTH = 200_000  # the recursion limit while it pickles (BERT-base's input module nests past the default 1,000)
_KEPT = ("checked", "snapshots", "diagnostics", "fused_names", "fusion_reasons")


class PassesCache:
    """Builds' check and passes in the disk cache's part builds/ (see the module doc)."""

    def __init__(self, disk: DiskCache) -> None:
        self.disk = disk.part(PASSES)
        self.corrupt = 0

    def key(self, text: str, name: str, params: Mapping[str, np.ndarray] | None,
            options: Mapping[str, Any]) -> str | None:
        weights = [(n, np.asarray(params[n])) for n in sorted(params or {})]
        if sum(a.nbytes for _, a in weights) > self.disk.max_bytes:
            return None
        digest = hashlib.sha256(json.dumps({"schema": SCHEMA, "name": name, "options": options,
                                            "compiler": compiler_digest()}, sort_keys=True, default=str).encode())
        digest.update(text.encode())
        made = (params.digests() if isinstance(params, Weights)  # read from an archive (weights_digests.py)
                else dict(zip((n for n, _ in weights), digests([as_bytes(a) for _, a in weights]))))
        for (n, a), bytes_digest in zip(weights, (made[n] for n, _ in weights)):
            digest.update(f"\0{n}\0{a.dtype}\0{a.shape}\0{bytes_digest}".encode())
        return digest.hexdigest()

    def get(self, key: str | None, params: Mapping[str, np.ndarray] | None = None) -> BuildResult | None:
        """The build kept under `key`, its bound weights taken from `params` (the ones the key was made of)."""
        entry = self.disk.get(key) if key is not None else None
        if entry is None:
            return None
        try:
            buffers = _buffers(entry.meta["slots"], params or {}, entry.arrays)
            state = pickle.loads(entry.blobs["build"], buffers=buffers)
            return BuildResult(entry.meta["name"], stage="passes", **dict(zip((*_KEPT, "compositions"), state)))
        except Exception:  # noqa: BLE001 - any unpickling failure: built again and written over
            self.corrupt += 1
            return None

    def put(self, key: str | None, built: BuildResult, params: Mapping[str, np.ndarray] | None = None) -> None:
        """Keep `built` under `key` now (`later`'s, called at once)."""
        keep = self.later(key, built, params)
        if keep is not None:
            keep()

    def later(self, key: str | None, built: BuildResult,
              params: Mapping[str, np.ndarray] | None = None) -> Callable[[], None] | None:
        """A function that keeps what `built` holds now under `key` (None when it is not
        kept): the driver calls it once the kernels are lowered, as lowering adds to the
        build.  It pickles in a thread with a deep stack (a deeply nested module needs one)
        and waits for it.  Not beside the lowering: a thread running while lowering forks
        its children may hold llvmlite's lock then (the garbage collector, run in that
        thread, frees LLVM objects), and a child would wait for it forever."""
        if key is None or not built.ok:
            return None
        state = tuple(_copy(getattr(built, field)) for field in _KEPT)

        def keep() -> None:
            lowered = built.lowered
            compositions = lowered.compositions if lowered is not None else {}
            saved = threading.stack_size()
            try:
                threading.stack_size(STACK_BYTES)
                thread = threading.Thread(target=self._write, args=(key, built.name, (*state, compositions), params or {}),
                                          name="relaylens-keep-passes")
            finally:
                threading.stack_size(saved)
            thread.start()
            thread.join()

        return keep

    def _write(self, key: str, name: str, state: tuple, params: Mapping[str, np.ndarray]) -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEPTH))
        stream = io.BytesIO()
        pickler = _Pickler(stream, params)
        try:
            pickler.dump(state)
        except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
            return
        finally:
            sys.setrecursionlimit(limit)
        data = stream.getvalue()
        if len(data) + sum(a.nbytes for a in pickler.arrays) <= self.disk.max_bytes:
            self.disk.put(key, Entry({"name": name, "slots": pickler.slots}, {"build": data}, pickler.arrays))


class _Pickler(pickle.Pickler):
    """Protocol 5 with large arrays out of band: each either one of the caller's weights
    (`slots` names it) or stored in `arrays` (the module doc)."""

    def __init__(self, file: io.BytesIO, params: Mapping[str, np.ndarray]) -> None:
        super().__init__(file, protocol=5, buffer_callback=self._out_of_band)
        self.params = {_where(a): n for n, a in params.items() if isinstance(a, np.ndarray) and a.flags.c_contiguous}
        self.slots: list[str | int] = []  # per out-of-band buffer: a weight's name, or its index in `arrays`
        self.arrays: list[memoryview] = []

    def _out_of_band(self, buffer: pickle.PickleBuffer) -> bool:
        raw = buffer.raw()
        if raw.nbytes < OUT_OF_BAND_BYTES:
            return True  # in the stream
        name = self.params.get(_where(np.frombuffer(raw, np.uint8)))
        if name is None:
            self.slots.append(len(self.arrays))
            self.arrays.append(raw)
        else:
            self.slots.append(name)
        return False


def _buffers(slots: list[str | int], params: Mapping[str, np.ndarray], arrays: list) -> list:
    """The out-of-band buffers in the order the pickle reads them (`_Pickler.slots`)."""
    return [arrays[slot] if isinstance(slot, int) else as_bytes(params[slot]) for slot in slots]


def _where(a: np.ndarray) -> tuple[int, int]:
    return a.ctypes.data, a.nbytes


def _copy(value: Any) -> Any:
    """A list or dict copied (lowering adds to the build's before it is pickled)."""
    return value.copy() if isinstance(value, (list, dict)) else value
