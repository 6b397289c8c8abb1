"""The slow path of the language server: passes, lowering and LLVM in a worker process.

    report.py     BuildReport: what one build produced, as plain (picklable) data
    reporting.py  text -> BuildReport (runs in the worker)
    worker.py     the worker process: `python -m relaylens.server.slow.worker`
    frames.py     the framing of the messages between server and worker
    process.py    the worker as the server sees it: start, send, read, restart
    builds.py     when to build what, and what the client is told
    uris.py       the `relaylens:` URIs of the virtual documents

docs/lsp.md describes the protocol the features built on these offer.
"""
