"""Whole build reports on disk: a model opened again, unchanged since a build by any
worker, gets its lenses, hovers and views from the report that build made, without
parsing, passes or lowering.

    key = report_key(uri, text, weights, byoc)   # None: this build's report is not kept
    report = load(disk, key, version)            # a BuildReport (texts packed), or None
    store(disk, key, report)                     # after the report was sent

The reports live beside the kernels, in the kernel cache's part `reports/`
(lower/disk_cache.py `DiskCache.part`): entries like a kernel's, under a quarter of the
cache's size bound, evicted least recently used first; a corrupt or truncated entry is a
miss and removed; `relaylens cache --clear` empties both.  The key is a SHA-256 of what
decides a report: the document's URI (its name is in the LLVM IR's debug information)
and text, the weights file's path, size and modification time (a build binds them), the
target, LLVM's options and a digest of the package's source (the compiler, and this
folder, which makes the report), so that any change to the code makes every key new.

Not kept: a BYOC build's report (it depends on a pattern-table file the key does not
read), and a report with errors (the next open should try again and say why anew).
A report is pickled with its texts packed (report.pack_texts), as the worker sends it.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import time
from dataclasses import replace
from functools import lru_cache

from ...compiler.lower.cache_keys import PACKAGE, compiler_version, source_digest
from ...compiler.lower.disk_cache import REPORTS, DiskCache, Entry
from ...compiler.lower.runtime.target import OPTIONS, target_id
from .report import BuildReport

SCHEMA = 2  # of the pickled report; bump when BuildReport's fields change meaning
KIND = "build-report"
REPORT_SOURCES = ("compiler", "server/slow")  # relative to the package's root: what makes a report


@lru_cache(maxsize=1)
def package_digest() -> str:
    """SHA-256 of the .py files of REPORT_SOURCES."""
    return source_digest(PACKAGE, REPORT_SOURCES)


def weights_stamp(weights: str | None) -> list | None:
    """What decides the weights a build binds, without reading them: path, size, mtime."""
    if weights is None:
        return None
    try:
        st = os.stat(weights)
    except OSError:
        return [weights, "missing"]
    return [weights, st.st_size, st.st_mtime_ns]


def report_key(uri: str, text: str, weights: str | None, byoc=None) -> str | None:
    """The key of the report of building `text` (None for a BYOC build: not kept)."""
    if byoc is not None:
        return None
    parts = {"schema": SCHEMA, "kind": KIND, "uri": uri, "text": hashlib.sha256(text.encode()).hexdigest(),
             "weights": weights_stamp(weights), "target": target_id(), "llvm": OPTIONS,
             "compiler": compiler_version(), "package": package_digest()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def load(disk: DiskCache | None, key: str | None, version: int | None) -> BuildReport | None:
    """The report kept under `key`, for document `version`; None when there is none, or
    it does not read."""
    if disk is None or key is None:
        return None
    started = time.monotonic()
    entry = disk.part(REPORTS).get(key)
    if entry is None or entry.meta.get("kind") != KIND or entry.meta.get("schema") != SCHEMA:
        return None
    try:
        report = pickle.loads(entry.blobs["report"])
    except Exception:  # noqa: BLE001 -- a class renamed since: a miss, built again
        return None
    if not isinstance(report, BuildReport):
        return None
    return replace(report, version=version, seconds=time.monotonic() - started, kept=True)


def store(disk: DiskCache | None, key: str | None, report: BuildReport) -> None:
    """Keep `report` (its texts packed) under `key`, unless it has errors."""
    if disk is None or key is None or any(d.is_error for d in report.diagnostics):
        return
    blob = pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)
    disk.part(REPORTS).put(key, Entry({"kind": KIND, "schema": SCHEMA}, {"report": blob}))
