"""RelayLens language server (pygls)."""
