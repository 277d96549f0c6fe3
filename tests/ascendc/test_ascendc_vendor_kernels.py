"""The vendor's own LeakyRelu kernels, ported line by line in examples/ascendc/, run as written:
``leakyrelu_v2`` (hicann/ops-nn experimental), ``fused_bias_leaky_relu`` (hicann/ops-nn arch35)
and the asc-devkit custom-op sample ``leaky_relu_custom``. Each is tested with its own tiling
over several block counts, lengths with tails, half and float, bit for bit against the core
with the Ascend C options on finite inputs; where a kernel's own formula gives other bits than
LeakyRelu (at ±0, and where a product underflows to -0), the device's result for that
formula is pinned."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from _ascendc_testutil import same_bits

from leakyops import _core
from leakyops import ascendc as ac

_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ascendc"
DTYPES = [pytest.param(np.float16, id="half"), pytest.param(np.float32, id="float")]


def _load(name):
    spec = importlib.util.spec_from_file_location(f"{name}_example", _EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def v2():
    yield _load("leakyrelu_v2")
    sys.modules.pop("leakyrelu_v2_example", None)


@pytest.fixture(scope="module")
def fused():
    yield _load("fused_bias_leaky_relu")
    sys.modules.pop("fused_bias_leaky_relu_example", None)


@pytest.fixture(scope="module")
def custom():
    yield _load("leaky_relu_custom")
    sys.modules.pop("leaky_relu_custom_example", None)


def _core_lrelu(x, slope):
    return _core.leaky_relu_impl(x, slope, compare=">=", slope_dtype="storage")


def _max_min_formula(reference):
    """``max(x, 0) + min(x, 0) * s`` from LeakyRelu's result: the same bits except that every
    -0.0 becomes +0.0 (``x = -0.0``: ``+0 + -0 = +0``; a negative product that underflows
    to -0.0: ``+0 + -0 = +0``). Holds for every finite slope, at ±inf and NaN too."""
    out = reference.copy()
    out[(out == 0) & np.signbit(out)] = 0
    return out


def _finite_input(n, dtype, seed, scale=100.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * scale).astype(dtype)
    x[::17] = 0.0                                  # some exact zeros
    if n > 40:                                     # negatives whose product underflows
        x[5] = -np.finfo(dtype).smallest_subnormal
        x[7] = -np.finfo(dtype).smallest_subnormal * 3
        x[11] = -0.0
    return x


def _assert_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert same_bits(got[~nan], want[~nan])


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.5, -2.5]


# ------------------------------------------------------------------------------ leakyrelu_v2

def test_leakyrelu_v2_tiling_is_the_vendors(v2):
    # 1000 floats on 3 cores with a 2 KiB UB: 125 blocks -> 2 big cores of 42 blocks, 1 small
    # of 41; tiles of 10 blocks (80 floats); the last tile of each core is shorter
    t, block_dim = v2.LeakyreluV2TilingFunc(1000, np.float32, 0.01, 3, 2048)
    assert block_dim == 3
    assert (t.bigCoreDataNum, t.smallCoreDataNum, t.tailBlockNum) == (336, 328, 2)
    assert (t.tileDataNum, t.finalBigTileNum, t.finalSmallTileNum) == (80, 5, 5)
    assert (t.bigTailDataNum, t.smallTailDataNum) == (16, 8)
    # more cores than 32-byte blocks: one core per block
    t, block_dim = v2.LeakyreluV2TilingFunc(20, np.float16, 0.01, 40, ac.DEFAULT_UB_SIZE)
    assert block_dim == 2 and t.smallCoreDataNum == 16
    # the default UB is split into 6 tiles exactly (2 queues x 2 buffers + 2 TBufs)
    t, _ = v2.LeakyreluV2TilingFunc(10**6, np.float16, 0.01, 40, ac.DEFAULT_UB_SIZE)
    assert 6 * t.tileDataNum * 2 == ac.DEFAULT_UB_SIZE
    with pytest.raises(TypeError, match="invalid dtype"):
        v2.LeakyreluV2TilingFunc(10, np.float64, 0.01, 1, 2048)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("core_num", [1, 3, 8, 40])
@pytest.mark.parametrize("n, ub_size", [(1, 2048), (15, 2048), (17, 2048), (1000, 2048),
                                        (4101, 2048), (30_007, ac.DEFAULT_UB_SIZE)])
def test_leakyrelu_v2_against_the_core(v2, dtype, core_num, n, ub_size):
    x = _finite_input(n, dtype, n + core_num)
    y = v2.run(x, 0.01, core_num=core_num, ub_size=ub_size)
    ref = _core_lrelu(x, 0.01)
    _assert_bits(y, _max_min_formula(ref))
    if n > 40:   # the differences are exactly the pinned -0.0 cases
        differ = np.flatnonzero(y.view(f"u{x.itemsize}") != ref.view(f"u{x.itemsize}"))
        assert set(differ.tolist()) <= {5, 7, 11} and 11 in differ


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slope", [0.01, -0.5, 0.0, 3.0])
def test_leakyrelu_v2_special_values_pinned(v2, dtype, slope):
    x = np.array(SPECIALS * 4, dtype=dtype)
    y = v2.run(x, slope, core_num=2)
    ref = _core_lrelu(x, slope)
    _assert_bits(y, _max_min_formula(ref))
    t = dtype
    assert not np.signbit(y[1]) and np.signbit(ref[1])             # -0.0 -> +0.0 (LeakyRelu -0.0)
    assert y[2] == np.inf and np.isnan(y[4])
    assert (y[3] == -np.inf) if slope > 0 else (np.isnan(y[3]) if slope == 0 else y[3] == np.inf)
    if slope == 0:   # x < 0 with a zero slope: LeakyRelu -0.0, the formula +0.0
        assert same_bits(y[6:7], np.array([0.0], t)) and np.signbit(ref[6])


def test_leakyrelu_v2_empty_and_shapes(v2):
    assert v2.run(np.zeros((0, 3), np.float16)).shape == (0, 3)
    x = _finite_input(2 * 3 * 50, np.float32, 1).reshape(2, 3, 50)
    _assert_bits(v2.run(x, 0.2, core_num=4), _max_min_formula(_core_lrelu(x, 0.2)))


# --------------------------------------------------------------------- fused_bias_leaky_relu

def _round_half_away(v32: np.ndarray) -> np.ndarray:
    """float32 -> float16, to nearest with ties away from zero (CAST_ROUND), written without
    leakyops: take NumPy's nearest-even and, on an exact tie, the neighbour farther from 0."""
    with np.errstate(invalid="ignore", over="ignore"):     # inf - inf at ±inf, NaN
        h = v32.astype(np.float16)
        v = v32.astype(np.float64)
        hv = h.astype(np.float64)
        toward = np.where(v > hv, np.float16(np.inf), np.float16(-np.inf))
        other = np.nextafter(h, toward).astype(np.float64)
        tie = (v != hv) & (np.abs(v - hv) == np.abs(other - v))
        away = np.where(np.abs(other) > np.abs(hv), other, hv).astype(np.float16)
    return np.where(tie, away, h)


def _fused_reference(x, bias, slope, scale):
    t = x.astype(np.float32) + bias.astype(np.float32)          # IEEE float32 add
    l = _core_lrelu(t, np.float32(slope))                         # the core, Ascend C options
    y = l * np.float32(scale)                                     # IEEE float32 multiply
    return _round_half_away(y) if x.dtype == np.float16 else y


def test_fused_tiling_is_the_vendors(fused):
    # 1000 halves on 4 cores, 4 KiB UB: block factor 256 (32-byte aligned), 4 cores used;
    # two UB loops per block -> double buffering; 24 bytes per element -> ub factor 160
    t, block_dim, mode = fused.FusedBiasLeakyReluTilingFunc(1000, np.float16, 0.2, 1.5, 4, 4096)
    assert (t.blockFactor, block_dim, mode, t.ubFactor) == (256, 4, 1, 160)
    t, block_dim, mode = fused.FusedBiasLeakyReluTilingFunc(100, np.float32, 0.2, 1.5, 4, 65536)
    assert (t.blockFactor, block_dim, mode) == (32, 4, 0)
    assert t.ubFactor == 65536 // 4 // 3 // 8 * 8


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("core_num", [1, 3, 8])
@pytest.mark.parametrize("n, ub_size", [(1, 4096), (13, 4096), (1000, 4096), (5003, 8192),
                                        (20_001, ac.DEFAULT_UB_SIZE)])
def test_fused_against_the_core(fused, dtype, core_num, n, ub_size):
    rng = np.random.default_rng(n * 7 + core_num)
    x = (rng.standard_normal(n) * 8).astype(dtype)
    bias = (rng.standard_normal(n)).astype(dtype)
    y = fused.run(x, bias, 0.2, 1.414213562373, core_num=core_num, ub_size=ub_size)
    _assert_bits(y, _fused_reference(x, bias, 0.2, 1.414213562373))


def test_fused_uses_both_buffer_modes(fused):
    modes = {fused.FusedBiasLeakyReluTilingFunc(n, np.float16, 0.2, 1.0, 2, 4096)[2]
             for n in (100, 5000)}
    assert modes == {0, 1}


def test_fused_half_rounds_ties_away_from_zero(fused):
    # find float32 results that are exact ties between two halves: CAST_ROUND takes the one
    # farther from zero, where a round-to-nearest-even cast would take the even one
    x = np.arange(1, 4096, dtype=np.float32).astype(np.float16)
    y32 = x.astype(np.float32) * np.float32(1.5)
    ties = (y32.astype(np.float16).astype(np.float32) != y32) & (
        _round_half_away(y32) != y32.astype(np.float16))
    assert ties.sum() > 100
    xs = x[ties][:64]
    y = fused.run(xs, np.zeros_like(xs), 0.2, 1.5, core_num=2)
    assert same_bits(y, _round_half_away(xs.astype(np.float32) * np.float32(1.5)))
    assert not same_bits(y, (xs.astype(np.float32) * np.float32(1.5)).astype(np.float16))


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_special_values_pinned(fused, dtype):
    x = np.array(SPECIALS * 2, dtype=dtype)
    bias = np.zeros_like(x)
    y = fused.run(x, bias, 0.2, 1.0, core_num=2)
    _assert_bits(y, _fused_reference(x, bias, 0.2, 1.0))
    # -0.0 + 0.0 = +0.0 before LeakyRelu: +0.0, where LeakyRelu(-0.0) alone is -0.0
    assert not np.signbit(y[1]) and np.signbit(_core_lrelu(x, 0.2)[1])
    assert y[2] == np.inf and y[3] == -np.inf and np.isnan(y[4])


# -------------------------------------------------------------------------- leaky_relu_custom

@pytest.mark.parametrize("blocks", [1, 2, 8])
@pytest.mark.parametrize("tile_num", [1, 3, 16])
def test_custom_sample_against_the_core(custom, blocks, tile_num):
    n = blocks * tile_num * 2 * 64
    x = _finite_input(n, np.float32, n)
    y = custom.run(x, 0.01, num_blocks=blocks, tile_num=tile_num)
    _assert_bits(y, _max_min_formula(_core_lrelu(x, 0.01)))


def test_custom_sample_special_values_pinned(custom):
    x = np.resize(np.array(SPECIALS, np.float32), 128)
    y = custom.run(x, 0.25, num_blocks=1, tile_num=1)
    ref = _core_lrelu(x, 0.25)
    _assert_bits(y, _max_min_formula(ref))
    assert not np.signbit(y[1]) and np.signbit(ref[1])


def test_custom_sample_lengths_the_vendor_does_not_handle(custom):
    # a tail shorter than the block count passes the kernel's assert and is never computed
    n = 8 * 16 * 128 + 5
    x = _finite_input(n, np.float32, 3)
    y = custom.run(x, 0.01, y_device=np.full(n, 7.0, np.float32))
    _assert_bits(y[:-5], _max_min_formula(_core_lrelu(x[:-5], 0.01)))
    assert np.all(y[-5:] == 7.0)
    # other lengths trip "runtime tileLength must match template tileLength"
    with pytest.raises(AssertionError, match="runtime tileLength must match"):
        custom.run(_finite_input(8 * 16 * 128 + 1000, np.float32, 4), 0.01)
    with pytest.raises(AssertionError, match="tileNum can not be zero"):
        custom.run(_finite_input(128, np.float32, 4), 0.01, num_blocks=1, tile_num=0)
    # the op registers DT_FLOAT only
    with pytest.raises(TypeError, match="DT_FLOAT only"):
        custom.run(np.zeros(16384, np.float16), 0.01)


@pytest.mark.parametrize("name", ["leakyrelu_v2", "fused_bias_leaky_relu", "leaky_relu_custom",
                                  "leaky_relu_arch35", "prelu_grad_update_arch35"])
def test_examples_run_as_scripts(name):
    import subprocess

    out = subprocess.run([sys.executable, str(_EXAMPLES / f"{name}.py")], capture_output=True,
                         text=True, timeout=120, check=True)
    assert "float" in out.stdout and "False" not in out.stdout
    if name.endswith("_arch35"):  # one line per dtype, each ending in its bit-exactness check
        lines = out.stdout.splitlines()
        assert len(lines) == 3 and all(line.endswith(": True") for line in lines), out.stdout
