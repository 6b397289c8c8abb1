"""Forget the source text of generated code: `forget_generated_sources()`.

attrs (lsprotocol's ~1,000 LSP types) and cattrs (the converters pygls makes for each
message type, on first use) compile the methods they generate from source text and keep
that text in `linecache`, for tracebacks: 1.6 MB of the server's heap, for lines a
traceback through an `__init__` of an LSP type would show.  This drops those entries
(keys in angle brackets, never a file's path); a traceback then shows the generated
frame's name without its line.  The server calls it after its imports and whenever it
stores a build report (by then the message types in use have their converters).
"""

from __future__ import annotations

import linecache


def forget_generated_sources() -> int:
    """Drop linecache's entries for generated code (`<...>` names); how many were dropped."""
    generated = [key for key in list(linecache.cache) if isinstance(key, str) and key.startswith("<")]
    for key in generated:
        linecache.cache.pop(key, None)
    return len(generated)
