"""The worker protocol's framing: an 8-byte big-endian length, then a pickled tuple.

Messages (all tuples, first item the kind):

    server -> worker   ("build", job, uri, version, text, weights)   build this version (weights: an .npz path or None)
                       ("profile", job, uri, version, text, weights, runs)   run it, every kernel timed
                       ("cancel", job)                       stop it (or never start it)
                       ("forget", uri)                       drop the document's lowering cache
    worker -> server   ("ready", pid)                        imports done, taking jobs
                       ("started", job)
                       ("progress", job, message, fraction)  fraction in [0, 1]
                       ("done", job, report)                 a `BuildReport`
                       ("profiled", job, report)             a `ProfileReport` (profiling.py)
                       ("cancelled", job)

A newer "build" for a URI cancels the worker's older jobs for that URI by itself.  Both
ends are the same program, so pickle carries the plain dataclasses of `report.py`.
"""

from __future__ import annotations

import pickle
from typing import BinaryIO

HEADER = 8


def encode(message: tuple) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(body).to_bytes(HEADER, "big") + body


def decode_length(header: bytes) -> int:
    return int.from_bytes(header, "big")


def decode(body: bytes) -> tuple:
    return pickle.loads(body)


def read(stream: BinaryIO) -> tuple | None:
    """The next message from a blocking stream; None at its end."""
    header = stream.read(HEADER)
    if len(header) < HEADER:
        return None
    length = decode_length(header)
    body = stream.read(length)
    return decode(body) if body is not None and len(body) == length else None


def write(stream: BinaryIO, message: tuple) -> None:
    stream.write(encode(message))
    stream.flush()
