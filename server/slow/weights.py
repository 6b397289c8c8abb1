"""The weights beside a model, as the worker's jobs read them (`<stem>.npz`: builds.py
finds the file, the server decides whether it may be read).

    params, problem = read_weights(path)   # ({name: array}, None) or ({}, "why not")

A file that cannot be read is the user's, not a bug: the job goes on without it and says
why (`problem`), in its own words (a build's warning, a profile's note).
"""

from __future__ import annotations

import os

import numpy as np


def read_weights(path: str | None) -> tuple[dict[str, np.ndarray], str | None]:
    if path is None:
        return {}, None
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}, None
    except Exception as err:  # noqa: BLE001 -- a bad archive is the user's file
        return {}, f"the weights in {os.path.basename(path)} cannot be read ({err})"
