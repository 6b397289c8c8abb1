"""textDocument/signatureHelp: the signature of the call around the cursor.

For an operator: `op.signature()` (positional inputs, then every attribute with its default)
with one parameter per input and attribute; for an `@` global: its `def` line.  The active
parameter counts the commas at the call's level before the cursor, unless the current
argument already says `name=`, which picks that attribute.  The call is found in the text
around the cursor (`cursor.cursor_context`), so this works while the line does not parse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from .. import convert
from ...compiler.ir.span import Source
from ..cursor import cursor_context
from ..known_ops import known_ops
from . import guarded, text_for
from .hover import signature as global_signature, type_text

if TYPE_CHECKING:
    from ..server import RelayLensServer

TRIGGERS = ["(", ","]
RETRIGGERS = ["="]


def _parameters(label: str, parts: list[tuple[str, str | None]], offsets: bool) -> list[lsp.ParameterInformation]:
    """Each part located in `label` after the previous one (its offsets in UTF-16 units)."""
    out = []
    pos = label.find("(") + 1
    for text, doc in parts:
        at = label.find(text, pos)
        if at < 0:
            at = pos
        pos = at + len(text)
        key = (convert.utf16_len(label[:at]), convert.utf16_len(label[:at + len(text)])) if offsets else text
        out.append(lsp.ParameterInformation(label=key, documentation=doc))
    return out


def op_signature(op, call, offsets: bool) -> lsp.SignatureHelp:
    label = op.signature()
    inputs = list(op.inputs) if op.inputs is not None else ["args..."]
    parts: list[tuple[str, str | None]] = [(name, "input") for name in inputs]
    for attr in op.attrs:
        doc = "; ".join(x for x in (attr.doc, f"{attr.kind.name}, default {attr.default_text()}") if x)
        parts.append((f"{attr.name}={attr.default_text()}", doc))
    if call.keyword is not None:
        names = [a.name for a in op.attrs]
        active = len(inputs) + names.index(call.keyword) if call.keyword in names else None
    elif op.inputs is None:
        active = 0
    else:
        active = call.arg_index if call.arg_index < len(parts) else None
    info = lsp.SignatureInformation(label=label, documentation=op.doc or None,
                                    parameters=_parameters(label, parts, offsets), active_parameter=active)
    return lsp.SignatureHelp(signatures=[info], active_signature=0, active_parameter=active)


def global_signature_help(analyses, name: str, call, offsets: bool) -> lsp.SignatureHelp | None:
    for analysis in analyses:
        module = analysis.result.module
        for symbol in analysis.index.by_kind("global"):
            func = module.functions.get(symbol.node)
            if symbol.name != name or func is None:
                continue
            label = global_signature(name, func)
            parts = []
            for p in func.params:
                ty = type_text(p.type_annotation)
                parts.append((f"%{p.name}" + (f": {ty}" if ty else ""), None))
            active = call.arg_index if call.arg_index < len(parts) else None
            info = lsp.SignatureInformation(label=label, parameters=_parameters(label, parts, offsets),
                                            active_parameter=active)
            return lsp.SignatureHelp(signatures=[info], active_signature=0, active_parameter=active)
    return None


def register(server: "RelayLensServer") -> None:
    options = lsp.SignatureHelpOptions(trigger_characters=TRIGGERS, retrigger_characters=RETRIGGERS)

    @server.feature(lsp.TEXT_DOCUMENT_SIGNATURE_HELP, options)
    @guarded()
    def signature_help(params: lsp.SignatureHelpParams) -> lsp.SignatureHelp | None:
        uri = params.text_document.uri
        text = text_for(server, uri)
        if text is None:
            return None
        offset = convert.offset(Source(uri, text), params.position)
        cursor = cursor_context(text, offset)
        call = cursor.call
        if cursor.in_comment or call is None:
            return None
        offsets = get_capability(
            server.client_capabilities,
            "text_document.signature_help.signature_information.parameter_information.label_offset_support",
            False)
        if call.callee.startswith("@"):
            analyses = [a for a in (server.analyses.latest(uri), server.analyses.good(uri)) if a is not None]
            return global_signature_help(analyses, call.callee[1:], call, offsets)
        op = known_ops().get(call.callee)
        return op_signature(op, call, offsets) if op is not None else None
