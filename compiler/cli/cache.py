"""`relaylens cache`: the kernel cache on disk that every build shares (lower/disk_cache.py).

    relaylens cache [--info]     where it is, its entries, their size and the bound
    relaylens cache --clear      remove every entry (kernels, kept builds, the editor's build reports,
                                 the digests of the compiler's sources)

Where: $RELAYLENS_CACHE_DIR, else $XDG_CACHE_HOME/relaylens/kernels, else
~/.cache/relaylens/kernels; the bound: $RELAYLENS_CACHE_SIZE (default 1 GiB; entries
used longest ago go first).  `build`, `run` and `explain` use it unless `--no-cache` (or
RELAYLENS_NO_CACHE=1).  A $RELAYLENS_CACHE_SIZE that does not read, and a directory that
cannot be cleared, are usage errors (exit 2).
"""

from __future__ import annotations

import argparse
from typing import TextIO

from ..lower.cache_keys import compiler_version
from ..lower.disk_cache import ENTRIES, ENV_OFF, ENV_SIZE, PASSES, REPORTS, SOURCES, DiskCache, disabled
from .common import EXIT_OK, UsageError

# the cache's parts (subdirectories): how --info names them, and what --clear says it removed
PARTS = {PASSES: ("kept builds (check and passes)", "kept builds"),
         ENTRIES: ("entries' machine code", "entries' machine code"),
         REPORTS: ("editor's build reports", "build reports"),
         SOURCES: ("digests of the compiler's sources", "digests of the sources")}


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "cache",
        help="show or clear the kernel cache on disk",
        description="Show (--info, the default) or clear (--clear) the kernel cache that builds share.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--info", action="store_true", help="where the cache is, its entries and size (default)")
    group.add_argument("--clear", action="store_true", help="remove every entry")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        cache = DiskCache.default()
    except ValueError as exc:
        raise UsageError(f"{ENV_SIZE}: {exc}") from None
    parts = {name: cache.part(name) for name in PARTS}
    if args.clear:
        removed = cache.clear()
        cleared = {name: part.clear() for name, part in parts.items()}
        left = cache.info().entries + sum(part.info().entries for part in parts.values())
        if left:
            raise UsageError(f"cannot clear {cache.directory}: {_entries(left)} left")
        also = ", ".join(f"{n} {PARTS[name][1]}" for name, n in cleared.items() if n)
        out.write(f"removed {_entries(removed)} from {cache.directory}{' and ' + also if also else ''}\n")
        return EXIT_OK
    info = cache.info()
    out.write(f"directory: {info.directory}{'' if info.directory.is_dir() else ' (not created yet)'}\n")
    out.write(f"entries: {info.entries}\n")
    out.write(f"size: {_size(info.bytes)} of at most {_size(info.max_bytes)} (${ENV_SIZE})\n")
    for name, part in parts.items():
        kept = part.info()
        out.write(f"{PARTS[name][0]}: {kept.entries}, {_size(kept.bytes)} of at most {_size(kept.max_bytes)}\n")
    out.write(f"compiler: {compiler_version(memo=info.directory.is_dir())}\n")  # reading creates nothing
    out.write(f"builds use it: {'no' if disabled() else 'yes'} (--no-cache or ${ENV_OFF}=1 turn it off)\n")
    return EXIT_OK


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _entries(n: int) -> str:
    return f"{n} {'entry' if n == 1 else 'entries'}"
