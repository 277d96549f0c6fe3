"""The element-wise rows start their vectors at a 64-byte boundary of the output: the first
elements before it run alone (``_kernels._loops._head``), so that no vector of the rest
straddles two cache lines (NumPy's arrays start at any multiple of 16 bytes). The results
are the same bits at every offset of the operands, each row's first and last elements
included, on one thread and split over the team (each part with a head of its own)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import leakyops
from leakyops._kernels._loops import _head
from refs import (DTYPE_IDS, DTYPES, assert_same, random_values, ref_leaky_relu,
                  ref_leaky_relu_backward)

dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
#: Row lengths: shorter than a head, a vector and a bit, and (40,000) threaded for every dtype
#: out of place (in place float32 on AVX-512 starts its threads later: one part).
LENGTHS = (1, 5, 15, 16, 17, 40, 333, 40_000)


def at(n: int, dtype, offset: int, values=None) -> np.ndarray:
    """A 1-D array of ``n`` elements starting ``offset`` bytes past a 64-byte boundary."""
    dtype = np.dtype(dtype)
    buf = np.empty(n * dtype.itemsize + 128, np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    a = buf[start:start + n * dtype.itemsize].view(dtype)
    if values is not None:
        a[...] = values
    return a


def offsets(dtype) -> list[tuple[int, int]]:
    """(inputs' offset, output's offset) pairs: equal, and the output 16 bytes on."""
    size = np.dtype(dtype).itemsize
    one = sorted({0, size, 16, 32, 48, 64 - size})
    return [(o, o) for o in one] + [(o, (o + 16) % 64) for o in one]


@njit
def _head_of(a):
    return _head(a)


def head_of(a: np.ndarray) -> int:
    """``_head`` of ``a`` as the kernels see it (a half type as its 16-bit storage view)."""
    return _head_of(a.view(np.uint16) if a.itemsize == 2 else a)


@dtypes
def test_the_head_reaches_the_outputs_next_64_byte_boundary(dtype):
    size = np.dtype(dtype).itemsize
    for off in range(0, 64, size):
        for n in (0, 1, 3, 100):
            a = at(n, dtype, off)
            expected = min(n, ((64 - off) % 64) // size)
            assert head_of(a) == expected, (off, n)
            if n > expected:
                assert (a[expected:].ctypes.data % 64) == 0
    assert head_of(at(100, dtype, 16)[::2]) == 0  # (a strided row: no head)


@dtypes
@pytest.mark.parametrize("threads", [1, 2])
def test_every_offset_gives_the_reference_bits(dtype, threads):
    rng = np.random.default_rng(49)
    s = 0.1
    before = leakyops.get_num_threads()
    leakyops.set_num_threads(threads)
    try:
        for n in LENGTHS:
            x0 = random_values(rng, (n,), dtype)
            g0 = random_values(rng, (n,), dtype)
            fwd, bwd = ref_leaky_relu(x0, s), ref_leaky_relu_backward(g0, x0, s)
            for off_in, off_out in offsets(dtype):
                x, g = at(n, dtype, off_in, x0), at(n, dtype, off_in, g0)
                out = at(n, dtype, off_out)
                leakyops.leaky_relu(x, s, out=out)
                assert_same(out, fwd)
                leakyops.leaky_relu_backward(g, x, s, out=out)
                assert_same(out, bwd)
                inplace = at(n, dtype, off_out, x0)
                leakyops.leaky_relu_(inplace, s)
                assert_same(inplace, fwd)
    finally:
        leakyops.set_num_threads(before)
