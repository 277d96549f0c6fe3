"""Differential tests against PyTorch on the CPU: bit-identical results (NaN payloads aside)."""

from __future__ import annotations

import numpy as np
import pytest

import leakyops
from refs import DTYPE_IDS, DTYPES, assert_same, from_torch, random_values, to_torch

torch = pytest.importorskip("torch")
F = torch.nn.functional

dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
SLOPES = [0.01, -0.37, 0.0, 1.0, 5.5, np.inf, np.nan, 2 ** -20]
SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4, 5), (1000,), (4, 1, 33)]


def _views(rng, shape, dtype):
    """The array in several layouts: contiguous, reversed, sliced, transposed."""
    base = random_values(rng, shape, dtype)
    yield base
    if base.ndim:
        yield np.flip(random_values(rng, shape, dtype), axis=-1)
        big = random_values(rng, tuple(2 * n for n in shape), dtype)
        yield big[tuple(slice(None, None, 2) for _ in shape)]
        yield random_values(rng, shape[::-1], dtype).T


@dtypes
@pytest.mark.parametrize("slope", SLOPES, ids=str)
def test_leaky_relu_matches_torch(dtype, slope):
    rng = np.random.default_rng(100)
    for shape in SHAPES:
        for x in _views(rng, shape, dtype):
            expected = from_torch(F.leaky_relu(to_torch(x), slope), dtype)
            assert_same(leakyops.leaky_relu(x, slope), expected)
            y = x.copy()
            leakyops.leaky_relu_(y, slope)
            assert_same(y, expected)


@dtypes
@pytest.mark.parametrize("slope", SLOPES, ids=str)
def test_leaky_relu_backward_matches_torch(dtype, slope):
    rng = np.random.default_rng(101)
    for shape in SHAPES:
        for x in _views(rng, shape, dtype):
            g = random_values(rng, shape, dtype)
            expected = from_torch(torch.ops.aten.leaky_relu_backward(to_torch(g), to_torch(x), slope, False), dtype)
            assert_same(leakyops.leaky_relu_backward(g, x, slope), expected)
            if slope >= 0:
                y = leakyops.leaky_relu(x, slope)
                expected = from_torch(torch.ops.aten.leaky_relu_backward(to_torch(g), to_torch(y), slope, True), dtype)
                assert_same(leakyops.leaky_relu_backward(g, y, slope, True), expected)


@dtypes
def test_prelu_matches_torch(dtype):
    rng = np.random.default_rng(102)
    for shape in [(2, 3), (2, 3, 4), (2, 3, 4, 5), (1, 16, 7, 7)]:
        for x in _views(rng, shape, dtype):
            for w in (random_values(rng, shape[1], dtype), random_values(rng, 1, dtype)):
                expected = from_torch(F.prelu(to_torch(x), to_torch(w)), dtype)
                assert_same(leakyops.prelu(x, w), expected)


@dtypes
def test_prelu_backward_matches_torch(dtype):
    rng = np.random.default_rng(103)
    for shape in [(2, 3), (2, 3, 4), (2, 3, 4, 5), (3, 16, 9, 9)]:
        for x in _views(rng, shape, dtype):
            g = random_values(rng, shape, dtype, special_share=0)
            for w in (random_values(rng, shape[1], dtype), random_values(rng, 1, dtype)):
                tx = to_torch(x).requires_grad_()
                tw = to_torch(w).requires_grad_()
                F.prelu(tx, tw).backward(to_torch(g))
                gi, gw = leakyops.prelu_backward(g, x, w)
                assert_same(gi, from_torch(tx.grad, dtype))
                got = gw.astype(np.float64)
                tol = 2e-2 if dtype.itemsize == 2 else (1e-5 if dtype == np.float32 else 1e-12)
                # where PyTorch stays finite, agree with it; everywhere, agree with the exact
                # float64 sum (PyTorch rounds each half product before summing, so it can
                # overflow to inf - inf = NaN where the true sum is finite or ±inf)
                ref = from_torch(tw.grad, dtype).astype(np.float64)
                finite = np.isfinite(ref)
                np.testing.assert_allclose(got[finite], ref[finite], rtol=tol, atol=tol)
                with np.errstate(all="ignore"):
                    x64, g64 = x.astype(np.float64), g.astype(np.float64)
                    terms = np.where(x64 > 0, 0.0, x64 * g64)
                    axes = tuple(a for a in range(x.ndim) if a != 1 or w.size == 1)
                    exact = terms.sum(axis=axes).reshape(-1).astype(dtype).astype(np.float64)
                np.testing.assert_allclose(got, exact, rtol=tol, atol=tol)


@pytest.mark.parametrize("gd,xd", [(a, b) for a in DTYPES for b in DTYPES if a != b],
                         ids=[f"{a}-{b}" for a in DTYPE_IDS for b in DTYPE_IDS if a != b])
def test_mixed_dtype_backward_matches_torch(gd, xd):
    rng = np.random.default_rng(104)
    g = random_values(rng, (5, 7), gd)
    x = random_values(rng, (5, 7), xd)
    expected = torch.ops.aten.leaky_relu_backward(to_torch(g), to_torch(x), 0.3, False)
    got = leakyops.leaky_relu_backward(g, x, 0.3)
    assert_same(got, from_torch(expected, got.dtype))
