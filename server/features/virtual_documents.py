"""relaylens/virtualDocument {uri} -> {uri, text, languageId, version}, and hover and
definition inside the documents of our `relaylens:` scheme (docs/lsp.md).

The texts come from a build report (`server.builds`), never from the client: an LLVM IR
line leads back, through its debug location, to the Relay expression and its frontend
layers; a node of a pass snapshot leads to every source range it came from.  A URI that
does not follow the scheme's grammar is an InvalidParams error; one that names nothing
the report has is a RequestFailed error saying why.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from .. import convert
from ..slow import uris
from ..slow.builds import Built, NotBuilt
from ..slow.report import unpack
from ..slow.uris import BadUri, VirtualUri
from . import Refused, log

if TYPE_CHECKING:
    from ..server import RelayLensServer

METHOD = "relaylens/virtualDocument"
_PARALLEL_PART = re.compile(r"\.par\d+(\.body)?$")  # a parallel loop the code generator outlined


class InvalidUri(Refused):
    """A malformed `relaylens:` URI (JSON-RPC InvalidParams)."""

    CODE = -32602


def uri_param(params: Any) -> str:
    """The `uri` of a custom request's params (a JSON object)."""
    uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
    if not isinstance(uri, str):
        raise InvalidUri("expected params {\"uri\": string}")
    return uri


def text_of(built: Built, vuri: VirtualUri) -> str:
    """The text a virtual URI names in this report (NotBuilt when there is none)."""
    report = built.report
    if vuri.kind == "pass":
        index = vuri.pass_index
        if index is None or not 0 <= index < len(report.snapshots):
            raise NotBuilt(f"there is no snapshot {index} (the build has {len(report.snapshots)})")
        snapshot = report.snapshots[index]
        if vuri.aligned:
            if snapshot.file_name.removesuffix(".relay") + ".aligned.relay" != vuri.name or index == 0:
                raise NotBuilt(f"snapshot {index} is {snapshot.file_name}, and {vuri.name} is not its "
                               "aligned form (there is none for the input)")
            return built.aligned(index).text
        if snapshot.file_name != vuri.name:
            raise NotBuilt(f"snapshot {index} is {snapshot.file_name}, not {vuri.name}")
        return unpack(snapshot.text)
    if vuri.kind == "schedule":
        _lowered(built, vuri.function)
        return built.schedule(vuri)  # the worker's, made when the document was opened
    base = ir_of(built, vuri)
    if vuri.assembly or vuri.nodebug:
        return built.view(vuri, base).text
    return unpack(base)


def _function(built: Built, name: str | None):
    report = built.report
    fn = report.function(name) if name is not None else None
    if fn is None:
        raise NotBuilt(f"there is no fused function {name} in version {report.version} of {report.uri}")
    return fn


def _lowered(built: Built, name: str | None):
    """The fused function `name` of the report, lowered (NotBuilt when it is not)."""
    fn = _function(built, name)
    if not fn.llvm_ir:
        raise NotBuilt(f"{name} was not lowered (see the build diagnostics)")
    return fn


def ir_of(built: Built, vuri: VirtualUri):
    """The report's LLVM IR text (packed or not) an `llvm` URI shows, or its view or
    assembly is made from (NotBuilt when there is none)."""
    report = built.report
    if not report.lowered:
        raise NotBuilt(f"version {report.version} of {report.uri} was not lowered to LLVM IR "
                       "(see its diagnostics)")
    if vuri.function is None:
        return report.optimized_ir if vuri.optimized else report.llvm_ir
    fn = _lowered(built, vuri.function)
    return fn.optimized_ir if vuri.optimized else fn.llvm_ir


def parse(uri: str) -> VirtualUri:
    try:
        return uris.parse(uri)
    except BadUri as err:
        raise InvalidUri(str(err)) from None


def resolve(server: "RelayLensServer", uri: str) -> tuple[Built, VirtualUri, str, Any] | None:
    """For hover and definition: the report, the parsed URI, its text and a `Source` over
    it; None when any of them is missing (the answer is then null).  The `Source` is the
    report's (`Built.text_source`): the text is made again only when it is not kept."""
    try:
        vuri = uris.parse(uri)
        built = server.builds.find(vuri.document, vuri.version)
        if built is None:
            return None
        key = uris.make(vuri.kind, vuri.name, vuri.document, built.report.version)
        source = built.text_source(key, lambda: text_of(built, vuri))
        if vuri.assembly or vuri.nodebug:
            built.view(vuri, ir_of(built, vuri))  # made again if it was let go (its lines are read next)
    except (BadUri, NotBuilt):
        return None
    return built, vuri, source.text, source


def _llvm_target(server, uri: str, position: lsp.Position):
    found = resolve(server, uri)
    if found is None or found[1].kind != "llvm":
        return None
    built, vuri, text, source = found
    if vuri.assembly or vuri.nodebug:
        where = built.view(vuri).lines.get(position.line + 1)  # made with its text
    else:
        where = built.line_map(source.name, text, vuri).get(position.line + 1)
    if where is None:
        return None
    line = min(where[0], len(built.source.line_starts))  # a location past the end: the last line
    return built, vuri, source, position.line + 1, (line, where[1])


def llvm_definition(server, uri: str, position: lsp.Position) -> list[lsp.Location] | None:
    found = _llvm_target(server, uri, position)
    if found is None:
        return None
    built, _, _, _, (line, col) = found
    return [lsp.Location(built.report.uri, _relay_range(built, line, col))]


def _relay_range(built: Built, line: int, col: int) -> lsp.Range:
    """The expression that starts at Relay (line, col), or that whole line."""
    source = built.source
    offset = source.offset(line, col)
    expr = built.report.expr_starting(offset)
    if expr is not None:
        return convert.offset_range(source, *expr.range)
    start = source.line_starts[line - 1]
    return convert.offset_range(source, start, start + len(source.line_text(line)))


def llvm_hover(server, uri: str, position: lsp.Position) -> lsp.Hover | None:
    found = _llvm_target(server, uri, position)
    if found is None:
        return None
    built, vuri, source, ir_line, (line, col) = found
    report = built.report
    offset = built.source.offset(line, col)
    expr = report.expr_starting(offset) or report.expr_at(offset)
    name = report.uri.rsplit("/", 1)[-1]
    parts = [f"**Relay** `{name}:{line}:{col}`", "",
             f"```relay\n{built.source.line_text(line).strip()}\n```"]
    if expr is not None and expr.layers:
        parts += ["", "frontend layer" + "s" * (len(expr.layers) > 1) + ": "
                  + ", ".join(f"`{layer}`" for layer in expr.layers)]
    fused = vuri.function or _function_of(built, ir_line, vuri)
    if fused:
        parts += ["", f"in fused function `{fused}`"]
    start = source.line_starts[ir_line - 1]
    where = convert.offset_range(source, start, start + len(source.line_text(ir_line)))
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n".join(parts)),
                     range=where)


def _function_of(built, ir_line: int, vuri: VirtualUri) -> str | None:
    if vuri.assembly or vuri.nodebug:  # the view's own lines: a function of it, or an outlined part
        name = built.view(vuri).function_at(ir_line)
        fn = built.report.function(_PARALLEL_PART.sub("", name)) if name else None
    else:
        fn = built.report.function_of_line(ir_line, optimized=vuri.optimized)
    return fn.name if fn is not None else None


def _snapshot_node(server, uri: str, position: lsp.Position):
    found = resolve(server, uri)
    if found is None or found[1].kind != "pass":
        return None
    built, vuri, _, source = found
    snapshot = built.report.snapshots[vuri.pass_index]
    offset = convert.offset(source, position)
    if vuri.aligned:  # the node is found where the snapshot's own text has it
        aligned = built.aligned(vuri.pass_index)
        start, end, keys = snapshot.node_at(aligned.original_offset(offset)) or (0, 0, None)
        node = (aligned.aligned_offset(start), aligned.aligned_offset(end), keys) if keys else None
    else:
        node = snapshot.node_at(offset)
    return (built, snapshot, source, node) if node is not None else None


def snapshot_definition(server, uri: str, position: lsp.Position) -> list[lsp.Location] | None:
    found = _snapshot_node(server, uri, position)
    if found is None:
        return None
    built, _, _, (_, _, keys) = found
    return [lsp.Location(built.report.uri, convert.offset_range(built.source, *key)) for key in keys]


def snapshot_hover(server, uri: str, position: lsp.Position) -> lsp.Hover | None:
    found = _snapshot_node(server, uri, position)
    if found is None:
        return None
    built, snapshot, source, (start, end, keys) = found
    name = built.report.uri.rsplit("/", 1)[-1]
    parts = [f"**after {snapshot.pass_name}** (snapshot {snapshot.index}), from:"]
    for key in keys[:4]:
        line, col = built.source.location(key[0])
        first = built.source.text[key[0]:key[1]].split("\n", 1)[0]
        parts += ["", f"`{name}:{line}:{col}`", f"```relay\n{first}\n```"]
        expr = built.report.expr(key)
        if expr is not None and expr.layers:
            parts.append("frontend layers: " + ", ".join(f"`{layer}`" for layer in expr.layers))
    if len(keys) > 4:
        parts += ["", f"… and {len(keys) - 4} more"]
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n".join(parts)),
                     range=convert.offset_range(source, start, end))


def hover(server: "RelayLensServer", params: lsp.HoverParams) -> lsp.Hover | None:
    uri = params.text_document.uri
    return llvm_hover(server, uri, params.position) or snapshot_hover(server, uri, params.position)


def definition(server: "RelayLensServer", params: lsp.DefinitionParams) -> list[lsp.Location] | None:
    uri = params.text_document.uri
    return (llvm_definition(server, uri, params.position)
            or snapshot_definition(server, uri, params.position))


def register(server: "RelayLensServer") -> None:
    @server.feature(METHOD)
    async def virtual_document(params: Any) -> dict:
        uri = uri_param(params)
        vuri = parse(uri)
        try:
            built = await server.builds.wait(vuri.document, vuri.version)
            if vuri.assembly and not built.has_made(vuri):  # LLVM's code generator: the worker's
                built.keep_made(vuri, await server.builds.assembly(unpack(ir_of(built, vuri))))
            if vuri.kind == "schedule" and not built.has_made(vuri):  # no build makes it: the worker, now
                built.keep_made(vuri, await server.builds.schedule(built, _lowered(built, vuri.function).name))
            text = text_of(built, vuri)
        except NotBuilt as err:
            raise Refused(str(err)) from None
        except JsonRpcException:
            raise
        except Exception as err:  # noqa: BLE001 -- an error answer, never a dead request
            log.exception("%s failed", METHOD)
            raise Refused(f"internal error: {type(err).__name__}: {err}") from None
        return {"uri": uri, "text": text, "languageId": vuri.language_id, "version": built.report.version}
