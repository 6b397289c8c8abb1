"""compiler/lazy_modules.py: a module imported at its first attribute read, each attribute
read once and kept; `deferred` reads a function at its first call."""

from __future__ import annotations

import subprocess
import sys

import pytest

from relaylens.compiler.lazy_modules import LazyModule, deferred, loaded


def test_imported_at_the_first_read_and_kept() -> None:
    code = ("import sys\n"
            "from relaylens.compiler.lazy_modules import LazyModule, deferred, loaded\n"
            "m = LazyModule('colorsys')\n"
            "hsv = deferred(m, 'rgb_to_hsv')\n"
            "print(loaded(m), 'colorsys' in sys.modules)\n"
            "print(hsv(1.0, 0.0, 0.0), loaded(m))\n"
            "print(m.rgb_to_hsv is sys.modules['colorsys'].rgb_to_hsv, 'rgb_to_hsv' in vars(m))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["False False", "(0.0, 1.0, 1.0) True", "True True"]


def test_a_missing_attribute_is_an_attribute_error() -> None:
    m = LazyModule("colorsys")
    with pytest.raises(AttributeError):
        m.no_such_function  # noqa: B018
    with pytest.raises(AttributeError):  # probes of copy, pickle and inspect: not the module's
        m.__reduce_ex_probe__  # noqa: B018
    assert "colorsys" in repr(m) and deferred(m, "hls_to_rgb").__name__ == "hls_to_rgb"


def test_numpy_through_the_stand_in_is_numpy() -> None:
    import numpy  # the real one, for comparison

    from relaylens.compiler.lazy_modules import numpy as np
    assert loaded(np) and np.float32 is numpy.float32 and np.add(1, 2) == 3
