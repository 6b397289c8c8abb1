"""relaylens/checkNumerics {uri, seed?} -> `relaylens run --check` on the document (docs/lsp.md).

The build worker builds the document's current version to machine code, draws random
inputs by role from `seed` (default 0), runs compiled code and the reference interpreter,
compares them, bisects the kernels when they differ and traces the first NaN or infinity
(server/slow/numerics.py).  Generated code runs, so this happens only on the request (the
editor's Check Numerics command), never on open or edit.

The findings are published as diagnostics of their own stage ("numerics", source
`relaylens-numerics`): a warning on each run of the culprit kernel's Relay lines, and one
at the expression that made the first NaN (in compiled code; the interpreter's, when it is
another expression, as information).  They belong to the version checked: the next edit
removes them, as it does the fast path's.  The answer is `NumericsReport.to_json()` plus
`current` (the document is still at the version checked) and `diagnostics` (what was
published, as LSP diagnostics; none when the document changed meanwhile).  A document
that is not open, a cancelled request or a worker that died is a RequestFailed error;
one that does not build or cannot run on
random inputs answers with `error` set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from lsprotocol.converters import get_converter

from ...compiler.ir.span import Source
from ..slow.builds import _diagnostic
from ..slow.editor_jobs import JobFailed
from ..slow.report import NUMERICS_SEED as SEED, NUMERICS_STAGE as STAGE
from . import Refused, log
from .virtual_documents import uri_param

if TYPE_CHECKING:
    from ..server import RelayLensServer

METHOD = "relaylens/checkNumerics"
SOURCE = "relaylens-numerics"


def register(server: "RelayLensServer") -> None:
    @server.feature(METHOD)
    async def check_numerics(params: Any) -> dict:
        uri = uri_param(params)
        seed = params.get("seed", SEED) if isinstance(params, dict) else getattr(params, "seed", SEED)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise Refused(f"seed must be an integer >= 0, not {seed!r}")
        try:
            report = await server.builds.numerics.run(uri, seed)
        except JobFailed as err:
            raise Refused(str(err)) from None
        except Exception as err:  # noqa: BLE001 -- an error answer, never a dead request
            log.exception("%s failed", METHOD)
            raise Refused(f"internal error: {type(err).__name__}: {err}") from None
        items = _publish(server, report)
        doc = server.documents.opened(report.uri)
        return {**report.to_json(), "current": doc is not None and doc.version == report.version,
                "diagnostics": [get_converter().unstructure(d) for d in items]}


def _publish(server: "RelayLensServer", report) -> list[lsp.Diagnostic]:
    """The report's findings as diagnostics of the version checked, published while the
    document is still at that version (none after an edit: their offsets are the old text's)."""
    doc = server.documents.opened(report.uri)
    if doc is None or doc.version != report.version:
        return []
    source = Source(report.uri, doc.text)
    items = []
    for finding in report.findings:
        item = _diagnostic(finding, source, report.uri)
        item.source = SOURCE
        items.append(item)
    server.diagnostics.set(STAGE, report.uri, report.version, items)
    server.diagnostics.sync(report.uri, doc.version)
    return items
