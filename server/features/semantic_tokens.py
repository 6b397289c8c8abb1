"""textDocument/semanticTokens/full: the meaning of every name, keyword and literal.

The tokens are computed once per analysis (`Syntax.tokens`: the symbol index for names the
parser resolved, a lexer on the grammar's own terminals for the rest, the comments with
their `ty=`/`span=` annotations taken apart); the handler only encodes them.  The legend:

    variable        `%x` let/pattern/free variables, `%N` graph bindings (+readonly)
    parameter       function parameters
    function        `@f` globals; operators with +defaultLibrary
    type            type names; `Tensor` and dtypes with +defaultLibrary
    typeParameter   type variables          enumMember  constructors
    keyword, number, string, comment, property (attribute names in calls),
    decorator       `#[version]`, `#[metadata]`, and the `ty=`/`span=` keys in comments
    macro           `meta[relay.Constant][k]`
    modifiers       declaration (at a binder), readonly, defaultLibrary, and `annotation`
                    on every piece of a `/* ty=... span=... */` comment
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from ..tokens import TOKEN_MODIFIERS, TOKEN_TYPES
from . import current_analysis_for, guarded

if TYPE_CHECKING:
    from ..server import RelayLensServer

LEGEND = lsp.SemanticTokensLegend(token_types=list(TOKEN_TYPES), token_modifiers=list(TOKEN_MODIFIERS))


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @guarded()
    def semantic_tokens(params: lsp.SemanticTokensParams) -> lsp.SemanticTokens | None:
        analysis = current_analysis_for(server, params.text_document.uri)
        if analysis is None:
            return None
        return lsp.SemanticTokens(data=convert.semantic_tokens(analysis.source, analysis.syntax.tokens))
