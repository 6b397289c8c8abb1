"""The client's settings that change what the server answers (docs/lsp.md, "Settings").

    relaylens.inlayHints.types   bool, default true: type hints after bindings (inlay_hints.py)
    relaylens.params.bind        bool, default true: a build binds the weights in `<stem>.npz`
                                 beside a model, as `relaylens build` does (slow/builds.py)
    relaylens.byoc.patterns      a BYOC pattern table (a path relative to the workspace folder),
    relaylens.byoc.target        "mynpu" or "mynpu,dsp", relaylens.byoc.targetOps "exp,nn.relu":
                                 builds partition for them (slow/byoc_setup.py; a model's
                                 `// relaylens: --patterns ...` line wins); a change rebuilds
    relaylens.worker.idleExitSeconds  number, default 60: the build worker exits after this
                                 long with nothing to do, 0 = never (slow/builds.py)

Read from initializationOptions at `initialize` (`{"inlayHints": {"types": false}}`, called
from server.py) and from every workspace/didChangeConfiguration: its `settings` carry the
`relaylens` section as the client holds it (`{"relaylens": {"inlayHints": {"types": false}}}`,
what vscode-languageclient sends for `synchronize.configurationSection`; the section's
content alone is accepted too).  A value of the wrong type, or a missing one, leaves the
setting as it was.  After a change the server asks the client to refresh its inlay hints
(workspace/inlayHint/refresh) when the client says it can.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from lsprotocol import types as lsp

from . import guarded

if TYPE_CHECKING:
    from ..server import RelayLensServer

log = logging.getLogger("relaylens.server")
SECTION = "relaylens"


@dataclass
class Settings:
    inlay_types: bool = True
    bind_params: bool = True
    byoc_patterns: str = ""
    byoc_targets: tuple[str, ...] = ()
    byoc_ops: tuple[str, ...] = ()

    def update(self, options: Any) -> bool:
        """Take what `options` (the section's content) sets; True if the inlay hints changed."""
        byoc = options.get("byoc") if isinstance(options, dict) else None
        if isinstance(byoc, dict):
            if isinstance(byoc.get("patterns"), str):
                self.byoc_patterns = byoc["patterns"].strip()
            self.byoc_targets = _names(byoc.get("target"), self.byoc_targets)
            self.byoc_ops = _names(byoc.get("targetOps"), self.byoc_ops)
        weights = options.get("params") if isinstance(options, dict) else None
        bind = weights.get("bind") if isinstance(weights, dict) else None
        if isinstance(bind, bool):
            self.bind_params = bind
        hints = options.get("inlayHints") if isinstance(options, dict) else None
        types = hints.get("types") if isinstance(hints, dict) else None
        if isinstance(types, bool) and types != self.inlay_types:
            self.inlay_types = types
            return True
        return False


def _names(value: Any, default: tuple[str, ...]) -> tuple[str, ...]:
    """"a,b" or ["a", "b"] as names; anything else leaves `default`."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return default
    return tuple(v.strip() for v in value if v.strip())


_SETTINGS: "WeakKeyDictionary[Any, Settings]" = WeakKeyDictionary()


def of(server: "RelayLensServer") -> Settings:
    """The settings of this server (the defaults until the client says otherwise)."""
    found = _SETTINGS.get(server)
    if found is None:
        found = _SETTINGS[server] = Settings()
    return found


def configure(server: "RelayLensServer", options: Any) -> None:
    """Read initializationOptions."""
    of(server).update(options)


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded()
    def changed(params: lsp.DidChangeConfigurationParams) -> None:
        settings = params.settings
        section = settings.get(SECTION, settings) if isinstance(settings, dict) else None
        chosen = of(server)
        byoc = (chosen.byoc_patterns, chosen.byoc_targets, chosen.byoc_ops)
        if chosen.update(section):
            _refresh(server)
        server.builds.configure_worker(section)
        if byoc != (chosen.byoc_patterns, chosen.byoc_targets, chosen.byoc_ops):
            server.builds.reconsider(server.documents.open_uris())


def _refresh(server: "RelayLensServer") -> None:
    """Ask the client to request inlay hints again, when it supports that."""
    caps = server.client_capabilities.workspace
    hints = caps.inlay_hint if caps is not None else None
    if hints is not None and hints.refresh_support:
        server.workspace_inlay_hint_refresh(None)
