"""Python calls made by a function, counted with `sys.setprofile`: a measure of work that
does not depend on the machine or its load, for tests that an algorithm is linear or that
an operator's work is numpy's (its calls do not grow with the data), where a timed
assertion would fail on a busy machine.

    calls(fn, *args)   the Python and C-function calls `fn(*args)` makes
"""

from __future__ import annotations

import sys


def calls(fn, *args, **kwargs) -> int:
    made = 0

    def count(frame, event, arg) -> None:
        nonlocal made
        if event in ("call", "c_call"):
            made += 1

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(previous)
    return made
