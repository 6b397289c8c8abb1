"""@main's output buffers are kept for the next run once the caller lets go of them
(runtime/output_buffers.py): a result the caller holds, or a view of it, is never written
over; a result it dropped is written again instead of a new buffer (whose pages would be
faulted in inside the kernel)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from relaylens.compiler import driver

TEXT = ('#[version = "0.0.5"]\n'
        'def @main(%x: Tensor[(4, 8), float32]) { (multiply(%x, 2f), (add(%x, 1f), %x)) }')


@pytest.fixture(scope="module")
def executable():
    return driver.compile(TEXT, "t.relay").executable


@pytest.fixture(autouse=True)
def no_cyclic_collector():
    """Reuse must not wait for the cyclic collector (a reference cycle holding the outputs
    kept them alive until it ran)."""
    gc.disable()
    yield
    gc.enable()


def x(value: float) -> np.ndarray:
    return np.full((4, 8), value, np.float32)


def test_results_the_caller_holds_are_never_written_over(executable) -> None:
    held = [executable.run(x(k)) for k in range(4)]
    view = executable.run(x(10))[1][0][1:3]  # a slice of a result, the result itself dropped
    for k in range(5):
        executable.run(x(100 + k))
    for k, (doubled, (plus_one, same)) in enumerate(held):
        assert (doubled == 2 * k).all() and (plus_one == k + 1).all() and (same == k).all()
    assert (view == 11).all()


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_a_dropped_result_is_written_again(executable) -> None:
    first = executable.run(x(1))
    buffers = [address(first[0]), address(first[1][0])]
    del first
    second = executable.run(x(2))  # the last two runs' outputs are kept: a loop `y = run(x)` holds one
    third = executable.run(x(3))
    assert buffers in ([address(r[0]), address(r[1][0])] for r in (second, third))
    assert (second[0] == 4).all() and (third[0] == 6).all() and (third[1][1] == 3).all()


def test_a_run_loop_reuses_its_buffers(executable) -> None:
    seen = set()
    for k in range(6):
        y = executable.run(x(k))
        seen.add(address(y[0]))
        assert (y[0] == 2 * k).all()
    assert len(seen) <= 3  # two kept sets (and the first runs' own)
