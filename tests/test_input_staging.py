"""@main's inputs that are not 64-byte aligned are copied into buffers made once and used
again (runtime/input_staging.py): the results stay right run after run, from several
threads at once, and for an input that is also an output; an aligned input is read where
it is."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from relaylens.compiler import driver
from relaylens.compiler.lower.runtime.input_staging import InputStaging
from relaylens.compiler.support import ALIGN, aligned_empty

TEXT = ('#[version = "0.0.5"]\n'
        'def @main(%x: Tensor[(4, 8), float32], %y: Tensor[(8,), float32]) { (add(%x, %y), %x) }')


@pytest.fixture(scope="module")
def executable():
    return driver.compile(TEXT, "t.relay").executable


def unaligned(value: float, shape=(4, 8)) -> np.ndarray:
    """A float32 array whose data starts 4 bytes past a 64-byte line."""
    raw = aligned_empty((int(np.prod(shape)) + 1,), "float32")
    a = raw[1:].reshape(shape)
    a[...] = value
    assert a.ctypes.data % ALIGN == 4
    return a


def test_unaligned_inputs_give_the_right_results_run_after_run(executable) -> None:
    for k in range(5):
        total, same = executable.run(unaligned(k), unaligned(10 * k, (8,)))
        assert (total == 11 * k).all() and (same == k).all()
    earlier, _ = executable.run(unaligned(1), unaligned(1, (8,)))
    executable.run(unaligned(7), unaligned(7, (8,)))
    assert (earlier == 2).all()


def test_strided_input(executable) -> None:
    wide = np.arange(64, dtype=np.float32).reshape(4, 16)
    total, same = executable.run(wide[:, ::2], np.zeros(8, np.float32))
    assert (same == wide[:, ::2]).all() and (total == wide[:, ::2]).all()


def test_runs_from_several_threads(executable) -> None:
    wrong = []

    def runs(offset: int) -> None:
        for k in range(200):
            v = offset + k
            total, same = executable.run(unaligned(v), unaligned(1, (8,)))
            if not ((total == v + 1).all() and (same == v).all()):
                wrong.append(v)

    threads = [threading.Thread(target=runs, args=(1000 * t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_a_set_copies_into_its_own_buffer_and_reads_aligned_arrays_in_place() -> None:
    staging = InputStaging([((4, 8), np.dtype("float32"))])
    staged = staging.take()
    first, address = staging.place(staged, 0, unaligned(1))
    again, _ = staging.place(staged, 0, unaligned(2))
    assert again is first and address % ALIGN == 0 and (first == 2).all()
    aligned = aligned_empty((4, 8), "float32")
    assert staging.place(staged, 0, aligned)[0] is aligned
    staging.give_back(staged)
    assert staging.take() is staged and staging.take() == [None]  # a second run at once: a set of its own
