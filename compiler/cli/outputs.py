"""The one rule for every file a command writes, and the writing itself.

A command first names all it will write (`OutputPlan.add`, `OutputPlan.add_build_dir`),
then `OutputPlan.check()` refuses, with a `UsageError` (exit 2) that names the file and
the flag, and before anything is written:

1. an output that is one of the command's inputs (the same file, by `os.path.samefile`
   or by resolved path): never, not even with `--force`; the one exception is a command
   that rewrites its input in place on request (`print --force`, `replace_inputs=True`);
2. two outputs that are one file: never;
3. an existing file the command did not write itself: only with `--force`.  In a build
   directory, the files that a previous `relaylens build` wrote there and that nobody has
   changed since (the directory's manifest, `BUILD_MANIFEST`, lists each with the SHA-256
   of what was written) are the build's own, and are refreshed without `--force`;
4. an output that is a directory, or whose folder does not exist: never (a build
   directory is the exception: it is created with its parents).

`write_files` then writes every output to a temporary file beside it and moves them into
place only when all were written, so a failure leaves no half-written result.
`commit_build_dir` does the same for a build directory staged in a temporary folder, and
records the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterable

from .common import UsageError

BUILD_MANIFEST = ".relaylens-build.json"
_MANIFEST_KIND = "relaylens build"


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return a.resolve() == b.resolve()


def _digest(path: Path) -> str | None:
    try:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def read_manifest(directory: Path) -> dict[str, str]:
    """name → SHA-256 of the files a previous build wrote into `directory` ({} if none)."""
    try:
        data = json.loads((directory / BUILD_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("written by") == _MANIFEST_KIND else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and "/" not in k and isinstance(v, str)}


def _build_owns(directory: Path, name: str, manifest: dict[str, str]) -> bool:
    """A file a previous build wrote and nobody changed since (the manifest itself included)."""
    if name == BUILD_MANIFEST:
        return (directory / BUILD_MANIFEST).is_file() and bool(manifest)
    return name in manifest and _digest(directory / name) == manifest[name]


@dataclass
class _Output:
    path: Path
    flag: str  # how the command line named it: "-o out.npz", "the default --params out.npz"
    in_build_dir: bool = False
    owned: bool = False  # a previous build's own artefact: refreshed without --force


@dataclass
class OutputPlan:
    """Everything one command will write, checked as a whole before anything is written."""

    inputs: list[Path]
    force: bool = False
    replace_inputs: bool = False  # `print --force`: rewrite the input in place
    outputs: list[_Output] = field(default_factory=list)

    @classmethod
    def of(cls, inputs: Iterable[str | Path | None], *, force: bool = False,
           replace_inputs: bool = False) -> OutputPlan:
        """`-` and None in `inputs` (standard input, an option not given) are skipped."""
        return cls([Path(p) for p in inputs if p not in (None, "-")], force, replace_inputs)

    def add(self, path: str | Path, flag: str) -> Path:
        self.outputs.append(_Output(Path(path), flag))
        return Path(path)

    def add_build_dir(self, directory: str | Path, names: Iterable[str], flag: str) -> None:
        """The files `names` and the manifest in `directory`; those a previous build wrote
        (and nobody changed) are the build's own."""
        directory = Path(directory)
        manifest = read_manifest(directory) if directory.is_dir() else {}
        for name in [*names, BUILD_MANIFEST]:
            self.outputs.append(_Output(directory / name, flag, True, _build_owns(directory, name, manifest)))

    def check(self) -> None:
        """Raise `UsageError` for the first output the rule above refuses."""
        seen: list[_Output] = []
        for out in self.outputs:
            path = out.path
            source = next((s for s in self.inputs if _same(path, s)), None)
            if source is not None and not (self.replace_inputs and self.force):
                hint = "add --force to replace it" if self.replace_inputs else "choose another path"
                raise UsageError(f"refusing to overwrite the input {source}: {out.flag} names it ({hint})")
            for other in seen:
                if _same(path, other.path):
                    raise UsageError(f"{other.flag} and {out.flag} both name {path}: "
                                     f"give them different paths")
            seen.append(out)
            parent = path.parent
            if parent.exists() and not parent.is_dir():
                raise UsageError(f"cannot write {path} ({out.flag}): {parent} is not a directory")
            if not parent.exists() and not out.in_build_dir:  # a build creates its directory
                raise UsageError(f"cannot write {path} ({out.flag}): there is no directory {parent}")
            if path.is_dir():
                raise UsageError(f"cannot write {path} ({out.flag}): it is a directory")
            if (path.exists() or path.is_symlink()) and not (out.owned or self.force):
                what = "relaylens build did not write it, or it changed since" if out.in_build_dir else "it exists"
                raise UsageError(f"refusing to replace {path} ({out.flag}): {what}; add --force to replace it")


# --- writing -------------------------------------------------------------------------


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def write_files(writers: dict[Path, Callable[[BinaryIO], None]]) -> None:
    """Write every file through its writer into a temporary file beside it, then move all
    into place; if any write fails, none is moved and the temporary files are removed.
    Folders are created as needed (the plan checked that none is in the way)."""
    staged: dict[Path, Path] = {}
    try:
        for path, write in writers.items():
            temp = _temporary(path)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
            staged[path] = temp
            with os.fdopen(fd, "wb") as f:
                write(f)
        for path, temp in staged.items():
            os.replace(temp, path)
    except OSError as exc:
        for temp in staged.values():
            temp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {exc.filename or next(iter(writers), '')}: "
                         f"{exc.strerror or exc}") from None


def write_text(path: str | Path, text: str) -> None:
    """One UTF-8 text file, written as `write_files` writes (after the plan's check)."""
    write_files({Path(path): lambda f: f.write(text.encode("utf-8"))})


def staging_dir(directory: str | Path) -> Path:
    """A fresh temporary folder inside `directory` (created if needed) to write a build into."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        staged = directory / f".relaylens-staging-{os.getpid()}-{secrets.token_hex(4)}"
        staged.mkdir()
    except OSError as exc:
        raise UsageError(f"cannot write {directory}: {exc.strerror or exc}") from None
    return staged


def commit_build_dir(staged: Path, directory: str | Path, names: list[str],
                     artefacts: Iterable[str] = ()) -> list[Path]:
    """Move the files `names` of `staged` into `directory` (in that order); remove those of
    `artefacts` (every name a build may write, which the plan checked are no inputs) that
    a previous build wrote, this one did not, and nobody changed since, so that no file of
    an older build is left beside the new ones; record the manifest; remove `staged`.
    The paths written."""
    directory = Path(directory)
    try:
        old = read_manifest(directory)
        files = {name: _digest(staged / name) or "" for name in names}
        written = []
        for name in names:
            os.replace(staged / name, directory / name)
            written.append(directory / name)
        for name in (set(old) & set(artefacts)) - set(names):
            if _build_owns(directory, name, old):
                (directory / name).unlink()
        manifest = {"written by": _MANIFEST_KIND, "files": files}
        write_text(directory / BUILD_MANIFEST, json.dumps(manifest, indent=1) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {exc.filename or directory}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return written
