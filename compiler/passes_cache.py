"""A build's check and passes kept on disk: the same text built again, by any process,
restores what they made instead of parsing, checking and running relay.build's passes
again (0.6-0.8 s of a ResNet-50 build whose kernels all come from the kernel cache).

    kept = PassesCache(disk)                           # in the disk cache's part builds/
    key = kept.key(text, name, params, options)        # None: such a build is not kept
    built = kept.get(key)                              # a BuildResult at stage "passes", or None
    kept.put(key, built)                               # after the kernels: see `later`

The key is a SHA-256 of everything the passes' result depends on: the text and its name
(every span names its source), the weights bound (names, dtypes, shapes and bytes), the
driver's options (the pipeline, opt level, PassContext config, the seed of unknown
constants), and a digest of the compiler's whole source and grammar (`compiler_digest`):
a change to the parser, a type relation or a pass makes every key new.

What is kept is the BuildResult as the passes left it, pickled: the checked module,
every pass's snapshot (a node shared by several snapshots is stored once), the
diagnostics, the kernel names and the fusion reasons; so hover, provenance and every
pass's module read as after the build that wrote it.  Operators and `?` unpickle as the
one object of their kind (`Op.__reduce__`, `AnyDim.__reduce__`); spans as plain spans of
a plain source.  Not kept: a build with errors (the next one says why anew), weights
larger than MAX_WEIGHT_BYTES (hashing them would cost what it saves; the kernel cache
still serves the kernels), an entry past MAX_ENTRY_BYTES.  An entry that does not
unpickle is a miss (counted in `corrupt`) and is written again.  The directory is the
user's own cache, as trusted as the object code the kernel cache loads from it.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .build import BuildResult
from .lower.disk_cache import PASSES, DiskCache, Entry, compiler_version

SCHEMA = 1  # of the pickled state; bump when BuildResult's fields change meaning
MAX_WEIGHT_BYTES = 16 << 20
MAX_ENTRY_BYTES = 64 << 20
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
        if sum(a.nbytes for _, a in weights) > MAX_WEIGHT_BYTES:
            return None
        digest = hashlib.sha256(json.dumps({"schema": SCHEMA, "name": name, "options": options,
                                            "compiler": compiler_digest()}, sort_keys=True, default=str).encode())
        digest.update(text.encode())
        for n, a in weights:
            digest.update(f"\0{n}\0{a.dtype}\0{a.shape}\0".encode())
            digest.update(np.ascontiguousarray(a).data)
        return digest.hexdigest()

    def get(self, key: str | None) -> BuildResult | None:
        entry = self.disk.get(key) if key is not None else None
        if entry is None:
            return None
        try:
            state = pickle.loads(entry.blobs["build"])
            return BuildResult(entry.meta["name"], stage="passes", **dict(zip(_KEPT, state)))
        except Exception:  # noqa: BLE001 - any unpickling failure: built again and written over
            self.corrupt += 1
            return None

    def put(self, key: str | None, built: BuildResult) -> None:
        """Keep `built` under `key` now (`later`'s, called at once)."""
        keep = self.later(key, built)
        if keep is not None:
            keep()

    def later(self, key: str | None, built: BuildResult) -> Callable[[], None] | None:
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
            saved = threading.stack_size()
            try:
                threading.stack_size(STACK_BYTES)
                thread = threading.Thread(target=self._write, args=(key, built.name, state),
                                          name="relaylens-keep-passes")
            finally:
                threading.stack_size(saved)
            thread.start()
            thread.join()

        return keep

    def _write(self, key: str, name: str, state: tuple) -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEPTH))
        try:
            data = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
            return
        finally:
            sys.setrecursionlimit(limit)
        if len(data) <= MAX_ENTRY_BYTES:
            self.disk.put(key, Entry({"name": name}, {"build": data}))


def _copy(value: Any) -> Any:
    """A list or dict copied (lowering adds to the build's before it is pickled)."""
    return value.copy() if isinstance(value, (list, dict)) else value


@lru_cache(maxsize=1)
def compiler_digest() -> str:
    """The package version and a SHA-256 of every source file of the compiler and of the grammar."""
    compiler = Path(__file__).resolve().parent
    digest = hashlib.sha256(compiler_version().encode())
    for path in sorted([*compiler.rglob("*.py"), *(compiler.parent / "grammar").glob("*.lark")]):
        digest.update(path.relative_to(compiler.parent).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()
