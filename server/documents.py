"""What the server reads: the documents the client opened, and regular files inside the
workspace folders it was given, each under a size limit.

pygls's workspace answers a URI it does not hold with a document that reads that path
from disk whenever its text is asked for (`TextDocument.source`, every time): any
`file:` URI named in any request, at any size, wherever it points (a hover on
`file:///dev/zero` grew the server until the kernel killed it).  So the server asks for
documents only here (tests/test_server_reads.py checks that nothing else does):

    documents.get(uri)      an opened document, else a file read as below; else `Unreadable`
    documents.opened(uri)   an opened document, or None (what the fast path and builds use)
    documents.open_uris()   the URIs of the opened documents

A document the client did not open is read only when it is a `file:` URI of a regular
file inside a workspace folder (or the root URI) once symlinks are resolved, of at most
`limit.bytes` bytes of UTF-8: opened without following a last symlink and without
blocking (a FIFO), checked with fstat (a regular file, its size), and read up to one byte
past the limit (a file that grows meanwhile).  Anything else is `Unreadable`: an error
answer (RequestFailed) naming the URI and the reason.

The limit (initializationOptions `{"files": {"maxBytes": N}}`, 64 MiB by default: the
largest real model is under 1 MiB) is one `SizeLimit`, shared with analysis.py, which
only parses an opened document over it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from pygls.uris import to_fs_path

from .features import Refused

if TYPE_CHECKING:
    from .server import RelayLensServer

DEFAULT_MAX_BYTES = 64 << 20
OPTION = "initializationOptions files.maxBytes"


class Unreadable(Refused):
    """A document the server will not read; the message names it and says why."""


class SizeLimit:
    """The most bytes of one document that the server reads, or analyses in full."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.bytes = max_bytes

    def configure(self, options: Any) -> None:
        """Read `{"files": {"maxBytes": N}}` (initializationOptions); N > 0."""
        files = options.get("files") if isinstance(options, dict) else None
        value = files.get("maxBytes") if isinstance(files, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            self.bytes = value

    def size_over(self, text: str) -> int | None:
        """The size of `text` in UTF-8 when that is over the limit, else None."""
        if 4 * len(text) <= self.bytes:  # a character is at most 4 bytes: no need to count
            return None
        size = len(text.encode("utf-8", "surrogatepass"))
        return size if size > self.bytes else None

    def describe(self, size: int) -> str:
        return f"{size} bytes, over the server's limit of {self.bytes} bytes ({OPTION})"


@dataclass(frozen=True, slots=True)
class Document:
    uri: str
    version: int | None  # None: read from disk
    text: str
    opened: bool


class Documents:
    def __init__(self, server: "RelayLensServer", limit: SizeLimit) -> None:
        self.server = server
        self.limit = limit

    def opened(self, uri: str) -> Document | None:
        try:
            held = self.server.workspace.text_documents.get(unquote(uri))  # pygls's key
        except RuntimeError:  # not initialized: nothing is open
            return None
        return None if held is None else Document(uri, held.version, held.source, True)

    def open_uris(self) -> list[str]:
        """The URIs of the documents the client has open (as pygls keys them)."""
        try:
            return list(self.server.workspace.text_documents)
        except RuntimeError:  # not initialized: nothing is open
            return []

    def get(self, uri: str) -> Document:
        """The opened document, else the workspace file (see the module docstring)."""
        found = self.opened(uri)
        return found if found is not None else Document(uri, None, self._read(uri), False)

    def workspace_file(self, uri: str) -> str:
        """The real path of a regular file inside the workspace folders, no larger than the
        limit, that `uri` names (the rule of the module docstring, for a file that is not
        text: the weights beside a model); else `Unreadable`."""
        real = self._located(uri)
        try:
            info = os.stat(real)
        except OSError as err:
            raise Unreadable(f"{uri} cannot be read: {err.strerror or err}") from None
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{uri} is not a regular file; it is not read")
        if info.st_size > self.limit.bytes:
            raise Unreadable(f"{uri} is {self.limit.describe(info.st_size)}; it is not read")
        return real

    def _read(self, uri: str) -> str:
        return self._read_file(uri, self._located(uri))

    def _located(self, uri: str) -> str:
        """The real path `uri` names, when it is a file: URI inside the workspace folders."""
        try:
            parts = urlparse(uri)
        except ValueError as err:  # a host that NFKC turns into '/', '?', '#', '@' or ':'
            raise Unreadable(f"{uri} is not open in the editor, and does not read as a URI: {err}") from None
        if parts.scheme != "file":
            raise Unreadable(f"{uri} is not open in the editor, and is not a file: URI")
        if parts.netloc not in ("", "localhost"):
            raise Unreadable(f"{uri} is not open in the editor, and names another host")
        path = to_fs_path(uri)
        roots = self._roots()
        if path is None or not os.path.isabs(path):
            raise Unreadable(f"{uri} is not open in the editor, and names no absolute path")
        if not roots:
            raise Unreadable(f"{uri} is not open in the editor, and the server has no workspace folder")
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError) as err:
            raise Unreadable(f"{uri} cannot be read: {err}") from None
        if not any(_inside(real, root) for root in roots):
            lexical = os.path.abspath(path)
            if any(_inside(lexical, root) for root in roots):
                raise Unreadable(f"{uri} is a symlink out of the workspace folders; it is not read")
            raise Unreadable(f"{uri} is not open in the editor, and is outside the workspace folders")
        return real

    def _read_file(self, uri: str, real: str) -> str:
        most = self.limit.bytes
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (OSError, ValueError) as err:
            raise Unreadable(f"{uri} cannot be read: {getattr(err, 'strerror', None) or err}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Unreadable(f"{uri} is not a regular file (a device, FIFO, socket or "
                                 "directory); it is not read")
            if info.st_size > most:
                raise Unreadable(f"{uri} is {self.limit.describe(info.st_size)}; it is not read")
            data = _read_at_most(fd, most + 1)
        except OSError as err:
            raise Unreadable(f"{uri} cannot be read: {err.strerror or err}") from None
        finally:
            os.close(fd)
        if len(data) > most:
            raise Unreadable(f"{uri} is over the server's limit of {most} bytes ({OPTION}); it is not read")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise Unreadable(f"{uri} is not UTF-8 text (byte {err.start}); it is not read") from None

    def _roots(self) -> list[str]:
        """The workspace folders and the root URI, as real paths."""
        try:
            workspace = self.server.workspace
        except RuntimeError:  # not initialized
            return []
        uris = [*(folder.uri for folder in workspace.folders.values()), workspace.root_uri]
        paths = (to_fs_path(u) for u in uris if u)
        return [os.path.realpath(p) for p in paths if p and os.path.isabs(p)]


def _read_at_most(fd: int, most: int) -> bytes:
    chunks, left = [], most
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False
