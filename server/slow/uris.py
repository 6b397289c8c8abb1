"""The `relaylens:` URI scheme of the virtual documents (docs/lsp.md).

    relaylens:/llvm/module.ll?uri=<doc>&version=N          module.opt.ll, <fused>.ll, <fused>.opt.ll
    relaylens:/llvm/module.s?...                           assembly: module.s, <fused>.s
    relaylens:/llvm/module.opt.nodebug.ll?...              any of these without debug information
    relaylens:/schedule/<fused>.txt?uri=<doc>&version=N
    relaylens:/pass/<index>-<PassName>.relay?uri=<doc>&version=N
    relaylens:/pass/<index>-<PassName>.aligned.relay?...  numbered as the snapshot before

`make` writes the canonical form; `parse` reads it and also the form VS Code's
`Uri.toString()` writes (`=` and `&` of the query percent-encoded, the document URI then
encoded twice).  A fragment is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote

SCHEME = "relaylens"
KINDS = ("llvm", "schedule", "pass")
_PASS = re.compile(r"^(\d+)-([^/]+)\.relay$")
_LLVM_NAME = re.compile(r"^[^/.]+(\.opt)?(\.nodebug)?\.ll$|^[^/.]+(\.nodebug)?\.s$")


class BadUri(ValueError):
    """A URI that does not follow the grammar; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class VirtualUri:
    kind: str  # llvm | schedule | pass
    name: str  # the file name: module.ll, <fused>.opt.ll, <fused>.txt, <index>-<Pass>.relay
    document: str  # the .relay document's URI
    version: int | None  # None: the latest build

    @property
    def assembly(self) -> bool:
        return self.kind == "llvm" and self.name.endswith(".s")

    @property
    def nodebug(self) -> bool:
        """Debug metadata (IR) or directives (assembly) left out: codegen/views.py."""
        return self.kind == "llvm" and ".nodebug." in self.name

    @property
    def optimized(self) -> bool:
        """From the O3 module: the .opt.ll views and assembly."""
        return self.kind == "llvm" and (self.assembly or ".opt." in self.name)

    @property
    def function(self) -> str | None:
        """The fused function named (None for the module and the passes)."""
        if self.kind == "llvm":
            stem = self.name.removesuffix(".ll").removesuffix(".s").removesuffix(".nodebug").removesuffix(".opt")
            return None if stem == "module" else stem
        if self.kind == "schedule":
            return self.name.removesuffix(".txt")
        return None

    @property
    def aligned(self) -> bool:
        """A snapshot renumbered as the one before it (for a diff of the two)."""
        return self.kind == "pass" and self.name.endswith(".aligned.relay")

    @property
    def pass_index(self) -> int | None:
        m = _PASS.match(self.name) if self.kind == "pass" else None
        return int(m[1]) if m else None

    @property
    def language_id(self) -> str:
        if self.assembly:
            return "plaintext"
        return {"llvm": "llvm", "pass": "relay"}.get(self.kind, "plaintext")


def is_virtual(uri: str) -> bool:
    return uri.startswith(SCHEME + ":")


def make(kind: str, name: str, document: str, version: int | None) -> str:
    query = "uri=" + quote(document, safe="")
    if version is not None:
        query += f"&version={version}"
    return f"{SCHEME}:/{kind}/{quote(name, safe='.-_')}?{query}"


def parse(uri: str) -> VirtualUri:
    if not is_virtual(uri):
        raise BadUri(f"not a {SCHEME}: URI: {uri}")
    rest = uri[len(SCHEME) + 1:].split("#", 1)[0]
    path, _, query = rest.partition("?")
    if "=" not in query and "%3D" in query.upper():
        query = unquote(query)  # VS Code's Uri.toString() encoded the separators
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if len(parts) != 2 or parts[0] not in KINDS or not parts[1]:
        raise BadUri(f"expected {SCHEME}:/KIND/NAME with KIND one of {', '.join(KINDS)}: {uri}")
    kind, name = parts
    fields = parse_qs(query)
    document = (fields.get("uri") or [""])[0]
    if "%" in document and ":" not in document:
        document = unquote(document)
    if not document:
        raise BadUri(f"no document in {uri} (expected ?uri=<document URI>)")
    version = None
    if fields.get("version"):
        try:
            version = int(fields["version"][0])
        except ValueError:
            raise BadUri(f"version is not a number in {uri}") from None
    found = VirtualUri(kind, name, document, version)
    if kind == "pass" and found.pass_index is None:
        raise BadUri(f"expected pass/<index>-<PassName>.relay: {uri}")
    if kind == "llvm" and not _LLVM_NAME.match(name):
        raise BadUri(f"expected llvm names of the form NAME[.opt][.nodebug].ll or NAME[.nodebug].s: {uri}")
    if kind == "schedule" and not name.endswith(".txt"):
        raise BadUri(f"expected schedule names to end in .txt: {uri}")
    return found
