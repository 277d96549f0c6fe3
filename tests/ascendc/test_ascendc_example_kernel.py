"""examples/ascendc/leaky_relu_kernel.py: the tiled, double-buffered custom kernel and its host
side, against the core (bit for bit), for half and float, many lengths and block counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from _ascendc_testutil import naive_leaky_relu, same_bits

import leakyops
from leakyops import _core
from leakyops import ascendc as ac

_PATH = Path(__file__).resolve().parents[2] / "examples" / "ascendc" / "leaky_relu_kernel.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("leaky_relu_kernel_example", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def _input(n, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 100).astype(dtype)
    if n >= 8:
        x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-4, -1e-4, np.finfo(dtype).max]
    return x


def _check(y, x, slope):
    ref = _core.leaky_relu_impl(x, slope, compare=">=", slope_dtype="storage")
    assert same_bits(y, ref)
    assert same_bits(y, naive_leaky_relu(x, slope))


LENGTHS = [1, 7, 15, 16, 17, 63, 64, 65, 100, 255, 256, 257, 1000, 1024, 4099]


@pytest.mark.parametrize("dtype", [pytest.param(np.float16, id="half"),
                                   pytest.param(np.float32, id="float")])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("block_dim", [1, 3, 8])
def test_many_lengths_and_block_counts(example, dtype, n, block_dim):
    x = _input(n, dtype, n * 31 + block_dim)
    # small tiles so that blocks have several tiles and a tail
    y = example.leaky_relu(x, 0.01, block_dim=block_dim, tile_length=64)
    _check(y, x, 0.01)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_default_tiling_and_shape(example, dtype):
    x = _input(3 * 5 * 777, dtype, 5).reshape(3, 5, 777)
    y = example.leaky_relu(x, -0.3)
    assert y.shape == x.shape and y.dtype == x.dtype
    _check(y.reshape(-1), x.reshape(-1), -0.3)


def test_matches_the_public_operator_away_from_zero(example):
    # leakyops.leaky_relu uses x > 0 and a float32 slope; with no zeros in x and a slope
    # exact in half, Ascend C's rules give the same bits
    x = _input(5000, np.float16, 1)[8:]
    x[x == 0] = 1
    y = example.leaky_relu(x, 0.125, block_dim=5, tile_length=256)
    assert same_bits(y, leakyops.leaky_relu(x, 0.125))
    xf = x.astype(np.float32) * np.float32(1.37)
    assert same_bits(example.leaky_relu(xf, 0.125, block_dim=2), leakyops.leaky_relu(xf, 0.125))


def test_tiling(example):
    t = example.compute_tiling(1000, np.float16, 0.01, 8)
    assert t.blockFactor % 16 == 0 and t.blockFactor * 8 >= 1000 and t.blockFactor == 128
    assert t.ubFactor * 2 * 4 <= ac.DEFAULT_UB_SIZE and t.ubFactor % 16 == 0
    t = example.compute_tiling(1000, np.float32, 0.01, 8, tile_length=50)
    assert t.ubFactor == 48


def test_more_blocks_than_work_and_empty_input(example):
    x = _input(20, np.float32, 3)
    _check(example.leaky_relu(x, 0.5, block_dim=16), x, 0.5)
    empty = np.zeros((0, 3), np.float16)
    assert example.leaky_relu(empty).shape == (0, 3)


def test_block_order_does_not_matter(example):
    x = _input(999, np.float16, 9)
    x_dev, y_dev = x.copy(), np.zeros_like(x)
    tiling = example.compute_tiling(x.size, x.dtype, 0.2, 4, tile_length=32)
    ac.launch(example.leaky_relu_custom, 4, x_dev, y_dev, tiling, block_order=[2, 0, 3, 1])
    _check(y_dev, x, 0.2)


def test_kernel_fits_a_small_unified_buffer_and_fails_cleanly_when_it_cannot(example):
    x = _input(3000, np.float32, 4)
    # the host sizes tiles for the UB it is given
    _check(example.leaky_relu(x, 0.1, block_dim=2, ub_size=4096), x, 0.1)
    # a tiling made for a bigger UB than the device has is an out-of-UB error
    tiling = example.compute_tiling(x.size, x.dtype, 0.1, 2)
    with pytest.raises(ac.UnifiedBufferOverflowError, match="asked for .* bytes"):
        ac.launch(example.leaky_relu_custom, 2, x.copy(), np.zeros_like(x), tiling,
                  ub_size=8192)


def test_rejects_other_dtypes(example):
    with pytest.raises(TypeError, match="float16 or float32"):
        example.leaky_relu(np.zeros(4, np.float64))
