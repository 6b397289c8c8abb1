"""Reading the .npy and .npz files a user hands to `relaylens run`, `build` and `explain`.

    load_array(path, what) -> np.ndarray              one .npy array
    load_archive(path, what) -> {name: np.ndarray}    the arrays of an .npz archive

Every failure is a `UsageError` (exit 2) starting `cannot read WHAT:`: a missing or
unreadable file, a file of the other kind, a corrupt or truncated archive, a header
numpy cannot parse, an array of objects (never unpickled).  A header is checked before
anything is allocated: the array it declares must fit in the bytes the file (or the
archive member) holds, so a header that claims a huge shape is refused, not allocated.

Arrays come back in native byte order and C order (a big-endian or Fortran-order file is
converted), which is what compiled code reads.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from typing import IO

import numpy as np

from .common import UsageError

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
                OverflowError, MemoryError)


class _Bad(Exception):
    """Why a file cannot be read (the reason only; the caller names the file)."""


def _read(f: IO[bytes], size: int) -> np.ndarray:
    """The array of the .npy stream `f` of `size` bytes, its header checked first."""
    try:
        version = np.lib.format.read_magic(f)
        header = np.lib.format.read_array_header_2_0 if version >= (2, 0) else np.lib.format.read_array_header_1_0
        shape, fortran, dtype = header(f)  # never unpickles
    except zipfile.BadZipFile as exc:
        raise _Bad(f"the archive is corrupt ({exc})") from None
    except _READ_ERRORS as exc:
        raise _Bad(f"not an .npy array ({exc})") from None
    if dtype.hasobject:
        raise _Bad("it holds Python objects, which RelayLens does not unpickle")
    declared = math.prod(shape) * dtype.itemsize
    available = size - f.tell()
    if declared > available:
        raise _Bad(f"its header declares {dtype} of shape {tuple(shape)} ({declared} bytes), "
                   f"but only {available} bytes follow")
    array = np.empty(shape, dtype, order="F" if fortran else "C")
    buffer = memoryview(array.reshape(-1, order="A").view(np.uint8)) if declared else memoryview(b"")
    done = 0
    try:
        while done < declared:
            n = f.readinto(buffer[done:])
            if not n:
                raise _Bad(f"it ends after {done} of the {declared} bytes its header declares")
            done += n
    except _READ_ERRORS as exc:
        raise _Bad(str(exc)) from None
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return np.ascontiguousarray(array)


def _kind(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(6)
    except OSError as exc:
        raise UsageError(f"cannot read {what}: {exc.strerror or exc}") from None


def load_array(path: str, what: str) -> np.ndarray:
    """The one array of the .npy file `path`; `what` names it in errors (`--input x=x.npy`)."""
    magic = _kind(path, what)
    if magic.startswith(_ZIP_MAGIC):
        raise UsageError(f"{what}: {path} is an .npz archive; --input wants one .npy array "
                         f"(use --params for archives)")
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(0)
            return _read(f, size)
    except _Bad as exc:
        raise UsageError(f"cannot read {what}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what}: {exc.strerror or exc}") from None


def load_archive(path: str, what: str) -> dict[str, np.ndarray]:
    """name → array of the .npz archive `path` (each member `NAME.npy`)."""
    magic = _kind(path, what)
    if magic.startswith(_NPY_MAGIC):
        raise UsageError(f"{what} is a single .npy array; --params wants an .npz archive "
                         f"(use --input NAME={path} for one array)")
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if not info.filename.endswith(".npy"):
                    raise _Bad(f"its member {info.filename} is not an .npy array")
                with archive.open(info) as member:
                    try:
                        arrays[info.filename[:-4]] = _read(member, info.file_size)
                    except _Bad as exc:
                        raise _Bad(f"{info.filename}: {exc}") from None
    except _Bad as exc:
        raise UsageError(f"cannot read {what}: {exc}") from None
    except zipfile.BadZipFile as exc:
        raise UsageError(f"cannot read {what}: not a valid .npz archive ({exc})") from None
    except _READ_ERRORS as exc:
        raise UsageError(f"cannot read {what}: {getattr(exc, 'strerror', None) or exc}") from None
    return arrays
