"""RelayLens compiler: parser, IR, printer and (later) types, passes and lowering."""
