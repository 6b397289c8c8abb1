"""The weights' digests a kept build's key holds, memoised under their archive's stat
(compiler/weights_digests.py): read again from the same archive, they are not made
again; a changed weight, in an archive written again, gets its own digests and its own
build, never the kept build of the old weights; a young archive is not memoised."""

from __future__ import annotations

import os

import numpy as np
import pytest

from relaylens.compiler import weights_digests
from relaylens.compiler.driver import compile
from relaylens.compiler.lower.disk_cache import DiskCache
from relaylens.compiler.passes_cache import PassesCache
from relaylens.compiler.weights_digests import Weights, archive_weights

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16), float32], %w: Tensor[(8, 16), float32], %b: Tensor[(8), float32]) {
  nn.bias_add(nn.dense(%x, %w, units=8), %b)
}
"""


@pytest.fixture()
def memo(tmp_path, monkeypatch):
    """The memo in a directory of the test's; `made` counts the digests made."""
    monkeypatch.setenv("RELAYLENS_CACHE_DIR", str(tmp_path / "cache"))
    made = []
    real = weights_digests.digests
    monkeypatch.setattr(weights_digests, "digests", lambda buffers: made.append(len(buffers)) or real(buffers))
    return made


def _write(path, w: np.ndarray, b: np.ndarray, age_ns: int) -> None:
    """The archive written anew (a new inode, as an export writes it), its times `age_ns` ago."""
    np.savez(str(path) + ".new.npz", w=w, b=b)
    os.replace(str(path) + ".new.npz", path)
    then = os.stat(path).st_mtime_ns - age_ns
    os.utime(path, ns=(then, then))


def _read(path) -> Weights:
    return archive_weights(str(path), lambda p: dict(np.load(p)))


def _weights(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((8, 16)).astype("float32"), rng.standard_normal(8).astype("float32")


def test_an_archive_read_again_is_not_hashed_again_and_a_changed_weight_is_built_anew(tmp_path, memo,
                                                                                     monkeypatch) -> None:
    monkeypatch.setattr(weights_digests, "RACY_NS", 0)  # the change time is now: take it as settled
    path = tmp_path / "m.npz"
    w, b = _weights(0)
    _write(path, w, b, 0)
    x = np.random.default_rng(9).standard_normal((1, 16)).astype("float32")
    disk = DiskCache(tmp_path / "kernels")
    first = compile(MODEL, "m.relay", params=_read(path), disk_cache=disk)
    np.testing.assert_allclose(first.executable.run(x), x @ w.T + b, rtol=1e-5, atol=1e-5)
    assert memo == [2]  # made once, for the key
    again = _read(path)
    assert again.digests() == _read(path).digests() and memo == [2]  # from the memo
    changed = w.copy()
    changed[3, 5] += 1.0  # one weight, the same size: the archive's bytes differ in four
    _write(path, changed, b, 0)
    weights = _read(path)
    assert weights.digests()["w"] != again.digests()["w"] and memo == [2, 2]
    second = compile(MODEL, "m.relay", params=weights, disk_cache=disk)
    np.testing.assert_allclose(second.executable.run(x), x @ changed.T + b, rtol=1e-5, atol=1e-5)
    key = PassesCache(disk).key
    options = {"params_origin": "params", "passes": None, "opt_level": 3, "config": None, "unknown_seed": None}
    assert key(MODEL, "m.relay", weights, options) == key(MODEL, "m.relay", {"w": changed, "b": b}, options)


def test_a_young_archive_is_not_memoised(tmp_path, memo) -> None:
    path = tmp_path / "m.npz"
    _write(path, *_weights(0), 0)
    _read(path).digests()
    _read(path).digests()
    assert memo == [2, 2]


def test_the_weights_are_read_only_and_an_input_drops_one(tmp_path, memo) -> None:
    path = tmp_path / "m.npz"
    _write(path, *_weights(0), 0)
    weights = _read(path)
    with pytest.raises(ValueError):
        weights["w"][0, 0] = 1.0
    digests = weights.digests()
    assert set(weights.without({"b"})) == {"w"} and weights.without({"b"}).digests() == {"w": digests["w"]}
