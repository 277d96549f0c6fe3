"""ops-nn's Ascend 950 kernels as written (``examples/ascendc/leaky_relu_arch35.py`` and
``prelu_grad_update_arch35.py``: register API compute structs in ATVOSS DAGs, with their host
tilings) for float32, float16 and bfloat16, from one element to several UB tiles, odd sizes and
the block counts the tilings pick: LeakyRelu gives the core's result bit for bit, PReluGradUpdate
gives ``dx`` bit for bit and ``update`` as the device computes it (``x * dy`` rounded once to
the tensor's type, 0 where ``x > 0``); then ops-nn's own kernel and host tiling unit tests of
the two operators, ported."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from _ascendc_testutil import same_bits

from leakyops import _core
from leakyops import _vector_math as vm
from leakyops import ascendc as ac

_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ascendc"
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [pytest.param(np.dtype(np.float16), id="half"), pytest.param(BF16, id="bf16"),
          pytest.param(np.dtype(np.float32), id="float")]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3.0, -3.0, 65504.0, -1e30]


def _load(name):
    spec = importlib.util.spec_from_file_location(f"{name}_example", _EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lrelu():
    yield _load("leaky_relu_arch35")
    sys.modules.pop("leaky_relu_arch35_example", None)


@pytest.fixture(scope="module")
def prelu():
    yield _load("prelu_grad_update_arch35")
    sys.modules.pop("prelu_grad_update_arch35_example", None)


def _data(shape, dtype, seed, special=True):
    x = (np.random.default_rng(seed).standard_normal(shape) * 8).astype(np.float32).astype(dtype)
    if special and x.size:
        flat = x.reshape(-1)
        k = min(flat.size, len(SPECIAL))
        with np.errstate(over="ignore"):      # -1e30 is -inf in half
            flat[:k] = np.array(SPECIAL[:k], np.float32).astype(dtype)
    return x


def _assert_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    f32 = got.astype(np.float32)
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(np.isnan(f32), nan)
    assert same_bits(got[~nan], want[~nan])


# --------------------------------------------------------------------------------- LeakyRelu
def _elewise_blocks(n, bits, core_num):
    """ElewiseTiling's core count and block factor, written out: a core per 4 KiB of the
    narrowest type, the block factor rounded up to 512 elements."""
    cores = min(-(-(n * bits) // 32768), core_num)
    block_former = -(-(-(-n // cores)) // 512) * 512
    return cores, block_former, -(-n // block_former)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (63,), (64,), (65,), (129,), (3, 5, 7), (2, 1000)],
                         ids=lambda s: "x".join(map(str, s)) or "scalar")
def test_leaky_relu_matches_the_core(lrelu, dtype, shape):
    x = _data(shape, dtype, 1)
    for slope in (0.01, -2.5):
        y, ctx = lrelu.run(x, slope)
        _assert_bits(y, _core.leaky_relu_impl(x, slope, compare=">", slope_dtype=np.float32))
    assert ctx.block_dim == _elewise_blocks(max(x.size, 1), 8 * dtype.itemsize, 64)[2]
    assert ctx.tiling_key[0] == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_leaky_relu_odd_slopes(lrelu, dtype):
    x = _data((300,), dtype, 2)
    for slope in (0.0, np.inf, np.nan, 1e-45, 3.0e38):
        y, _ = lrelu.run(x, slope)
        _assert_bits(y, _core.leaky_relu_impl(x, slope, compare=">", slope_dtype=np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,core_num,ub_size", [(5000, 1, 8192), (4099, 3, 8192), (1537, 64, 4096)])
def test_leaky_relu_tiles_and_blocks(lrelu, dtype, n, core_num, ub_size):
    # a small UB makes several tiles per block; the block factor is aligned to 512 elements
    x = _data((n,), dtype, 3)
    y, ctx = lrelu.run(x, 0.2, core_num=core_num, ub_size=ub_size)
    _assert_bits(y, _core.leaky_relu_impl(x, 0.2, compare=">", slope_dtype=np.float32))
    bits = 8 * dtype.itemsize
    cores, block_former, blocks = _elewise_blocks(n, bits, core_num)
    assert ctx.block_dim == blocks and ctx.tiling_data.coreNum == cores
    ub_former = ctx.tiling_data.ubFormer
    assert ub_former == ub_size * 8 // (4 * bits) // (2048 // bits) * (2048 // bits)
    assert -(-min(block_former, n) // ub_former) > 1          # several UB tiles per block


def _block_count_sizes(dtype):
    """Sizes that take 1 to 8 blocks on 8 cores: multiples of half a core's share (a core per
    4 KiB of the type), exactly, one more and 511 more (across a 512-element block factor)."""
    half_share = 32768 // (8 * np.dtype(dtype).itemsize) // 2
    return [half_share * k + r for k in (1, 2, 4, 6, 8, 10, 12, 14) for r in (0, 1, 511)]


@pytest.mark.parametrize("dtype,n", [pytest.param(d.values[0], n, id=f"{d.id}-{n}")
                                     for d in DTYPES for n in _block_count_sizes(d.values[0])])
def test_leaky_relu_every_block_count(lrelu, dtype, n):
    # 8 cores: 1 to 8 blocks as the size grows; block order does not matter
    x = _data((n,), dtype, n)
    want = _core.leaky_relu_impl(x, 0.05, compare=">", slope_dtype=np.float32)
    y, ctx = lrelu.run(x, 0.05, core_num=8, ub_size=16384)
    _assert_bits(y, want)
    blocks = ctx.block_dim
    assert blocks == _elewise_blocks(n, 8 * dtype.itemsize, 8)[2]
    if blocks > 1:
        y2, _ = lrelu.run(x, 0.05, core_num=8, ub_size=16384, block_order=range(blocks)[::-1])
        _assert_bits(y2, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_leaky_relu_block_counts_seen(lrelu, dtype):
    # the sizes above give every block count from 1 to 8, by the host tiling itself
    seen = set()
    for n in _block_count_sizes(dtype):
        ctx = ac.TilingContext([((n,), dtype)], [((n,), dtype)], (np.float32(0.05),), core_num=8,
                               ub_size=16384, node_name="LeakyRelu")
        assert lrelu.TilingForLeakyRelu(ctx) == ac.GRAPH_SUCCESS
        seen.add(ctx.block_dim)
    assert seen == set(range(1, 9))


@pytest.mark.parametrize("dtype", DTYPES)
def test_leaky_relu_at_the_real_ub_size(lrelu, dtype):
    # the platform's UB (tiles of 31744 halves / 15872 floats) on one core: three tiles
    x = _data((80_001,), dtype, 4)
    y, ctx = lrelu.run(x, 0.01, core_num=1)
    _assert_bits(y, _core.leaky_relu_impl(x, 0.01, compare=">", slope_dtype=np.float32))
    assert ctx.block_dim == 1


def test_leaky_relu_host_checks(lrelu):
    with pytest.raises(ValueError, match="The dtype of x must be DT_FLOAT16, DT_BF16, or DT_FLOAT"):
        lrelu.run(np.ones(8, np.float64), 0.1)
    ctx = ac.TilingContext([((4,), np.float32)], [((5,), np.float32)], (np.float32(0.1),))
    assert lrelu.TilingForLeakyRelu(ctx) == ac.GRAPH_FAILED and "must be the same" in ctx.errors[0]
    y, ctx = lrelu.run(np.ones((0, 3), np.float16), 0.1)
    assert y.shape == (0, 3) and ctx is None


# --------------------------------------------------------------------------- PReluGradUpdate
def _update_reference(g, x):
    """The device's update: 0 where x > 0 (IEEE), else x * dy rounded once to T."""
    exact = g.astype(np.float64) * x.astype(np.float64)      # exact: two T significands
    with np.errstate(invalid="ignore"):
        rounded = vm.cast(exact, x.dtype, "rint").reshape(x.shape)
    return np.where(x.astype(np.float64) > 0, np.zeros((), x.dtype), rounded).astype(x.dtype)


def _prelu_check(prelu, g, x, w, **kw):
    dx, update, ctx = prelu.run(g, x, w, **kw)
    flat_w = w.reshape(-1)
    axis = 1 if (flat_w.size != 1 and x.ndim > 1) else -1
    gi, _ = _core.prelu_backward_impl(g, x, flat_w if flat_w.size != 1 else flat_w.reshape(()), axis)
    _assert_bits(dx, gi)
    _assert_bits(update, _update_reference(np.broadcast_to(g, x.shape), x))
    return ctx


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,wn", [((3, 5), 5), ((4, 8, 33), 8), ((2, 3, 4, 5), 3), ((2, 16, 64), 16),
                                      ((1000,), 1), ((2, 3, 4, 5), 1), ((), 1), ((1,), 1), ((5, 1, 7), 1)],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_prelu_grad_update_matches(prelu, dtype, shape, wn):
    x = _data(shape, dtype, 5)
    g = _data(shape, dtype, 6, special=False)
    w = _data((wn,), dtype, 7, special=False)
    ctx = _prelu_check(prelu, g, x, w)
    assert ctx.tiling_key[0] in PRELU_SCH_MODES


@pytest.mark.parametrize("dtype", DTYPES)
def test_prelu_grad_update_broadcast_grads(prelu, dtype):
    # gradOutput broadcast to self: (1, C, 1) against (N, C, L)
    x = _data((3, 4, 10), dtype, 8)
    g = _data((1, 4, 1), dtype, 9, special=False)
    _prelu_check(prelu, g, x, _data((4,), dtype, 10, special=False))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,wn,core_num,ub_size", [((4, 8, 100), 8, 3, 16384), ((6, 16, 48), 16, 64, 8192),
                                                       ((3000,), 1, 2, 8192), ((7, 5, 60), 1, 4, 4096)])
def test_prelu_grad_update_tiles_and_blocks(prelu, dtype, shape, wn, core_num, ub_size):
    x = _data(shape, dtype, 11)
    g = _data(shape, dtype, 12, special=False)
    ctx = _prelu_check(prelu, g, x, _data((wn,), dtype, 13, special=False), core_num=core_num, ub_size=ub_size)
    t = ctx.tiling_data
    tiles = (t.dimProductBeforeUbInner if hasattr(t, "dimProductBeforeUbInner")
             else -(-x.size // t.ubFormer))
    assert tiles > 1 and 1 <= ctx.block_dim <= core_num


# The schedule modes BroadcastBaseTiling can pick for PReluGradUpdate's DAG (three CopyInBrc
# inputs, two outputs, no Var), read off _elewise.BroadcastBaseTiling.DoTiling: a shape that
# collapses to one dim is 201 (the one-dim-advance tiling, 202, needs at most four inputs and
# outputs); otherwise a UB broadcast (a half type whose last collapsed dim is whole 32-byte
# blocks) is 100 + the dims from the UB split axis inward, 109 past four (so 101..104, 109),
# and NDDMA is 1, or 2 past five dims.
PRELU_SCH_MODES = {1, 2, 101, 102, 103, 104, 109, 201}
SWEEP_CORES = 4


def _mode_case(mode, xs, gs, dtype, ub_size):
    return pytest.param(mode, xs, gs, np.dtype(dtype), ub_size,
                        id=f"{mode}-{'x'.join(map(str, xs))}-{np.dtype(dtype).name}")


# (mode, x shape, grads shape, dtype, UB size): with 1..SWEEP_CORES cores each gives as many
# blocks (the UB sizes found by trying multiples of 1 KiB); the weight has x.shape[1] elements
# (one for a 1-D x)
_MODE_CASES = [
    _mode_case(201, (1000,), (1000,), np.float32, 2048),
    _mode_case(201, (3000,), (3000,), np.float16, 2048),
    _mode_case(1, (4, 8, 33), (4, 8, 33), np.float16, 3072),
    _mode_case(1, (6, 8, 33), (6, 8, 33), np.float32, 3072),
    _mode_case(2, (12, 3, 2, 2, 2, 2, 8), (12, 3, 1, 2, 1, 2, 1), np.float32, 5120),
    _mode_case(101, (3, 4, 2048), (1, 4, 2048), np.float16, 4096),
    _mode_case(102, (48, 32), (48, 32), BF16, 4096),
    _mode_case(103, (12, 8, 32), (12, 8, 32), BF16, 7168),
    _mode_case(104, (12, 3, 4, 16), (12, 3, 1, 16), np.float16, 7168),
    _mode_case(109, (12, 3, 2, 2, 16), (12, 3, 1, 2, 1), np.float16, 7168),
]


def test_prelu_grad_update_mode_cases_cover_every_mode():
    assert {c.values[0] for c in _MODE_CASES} == PRELU_SCH_MODES


@pytest.mark.parametrize("mode,xs,gs,dtype,ub_size", _MODE_CASES)
def test_prelu_grad_update_every_mode_and_block_count(prelu, mode, xs, gs, dtype, ub_size):
    # each schedule mode on 1, 2, ..., SWEEP_CORES blocks: dx bit for bit, update as the device,
    # in either block order
    x = _data(xs, dtype, 20)
    g = _data(gs, dtype, 21, special=False)
    w = _data((xs[1] if len(xs) > 1 else 1,), dtype, 22, special=False)
    seen = []
    for cores in range(1, SWEEP_CORES + 1):
        ctx = _prelu_check(prelu, g, x, w, core_num=cores, ub_size=ub_size)
        seen.append((ctx.tiling_key[0], ctx.block_dim))
        if ctx.block_dim > 1:
            _prelu_check(prelu, g, x, w, core_num=cores, ub_size=ub_size,
                         block_order=range(ctx.block_dim)[::-1])
    assert seen == [(mode, n) for n in range(1, SWEEP_CORES + 1)]


def test_prelu_grad_update_block_order(prelu):
    x = _data((6, 16, 48), np.dtype(np.float32), 14)
    g = _data((6, 16, 48), np.dtype(np.float32), 15)
    w = _data((16,), np.dtype(np.float32), 16)
    a = prelu.run(g, x, w, core_num=5, ub_size=8192)
    b = prelu.run(g, x, w, core_num=5, ub_size=8192, block_order=range(a[2].block_dim)[::-1])
    assert a[2].block_dim > 1
    _assert_bits(a[0], b[0])
    _assert_bits(a[1], b[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_prelu_grad_update_feeds_aclnn_ascend950(prelu, dtype):
    # aclnnPreluBackward on the Ascend950 profile sums exactly the kernel's update per channel
    from leakyops.aclnn import _ascend950

    x = _data((3, 4, 50), dtype, 17)
    g = _data((3, 4, 50), dtype, 18, special=False)
    _, update, _ = prelu.run(g, x, _data((4,), dtype, 19, special=False))
    _assert_bits(update, _ascend950.prelu_update(g, x))


def test_prelu_grad_update_host_checks(prelu):
    f = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="weight shape size must be 1 or features dim1 size"):
        prelu.run(f, f, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="dtype allow"):
        prelu.run(f.astype(np.float64), f.astype(np.float64), np.ones(3))
    ctx = ac.TilingContext([((2, 3), np.float32), ((2, 3), np.float16), ((3,), np.float32)],
                           [((2, 3), np.float32)] * 2)
    assert prelu.Tiling4PReluGradUpdate(ctx) == ac.GRAPH_FAILED
    assert "dtype are not the same" in ctx.errors[0]


# ----------------------------------------------------------------------------- the schedulers
def test_scheduler_rules(lrelu, prelu, core):
    dag = lrelu.LeakyReluDag(np.float16).OpDag
    data = ac.EleBaseTilingData24B(dim0=100, coreNum=1, ubFormer=128)
    sch = ac.ElementwiseSchWithScalar[ac.EleBaseTilingData24B, 1, dag](data)
    with pytest.raises(ac.AscendCTypeError, match="args num should match DAG holders"):
        sch.Init(np.ones(100, np.float16))
    with pytest.raises(ac.ConstraintError, match="call Init first"):
        sch.Process()
    with pytest.raises(ac.AscendCTypeError, match="expected EleBaseTilingData24B"):
        ac.ElementwiseSchWithScalar[ac.EleBaseTilingData24B, 1, dag](ac.EleBaseTilingData32B())
    # a UB factor the UB cannot hold: the tile buffers would run past its end
    big = ac.EleBaseTilingData24B(dim0=10**6, coreNum=1, ubFormer=10**6)
    with pytest.raises(ac.ConstraintError, match="past the .*Unified Buffer"):
        ac.ElementwiseSchWithScalar[ac.EleBaseTilingData24B, 1, dag](big).Init(
            np.ones(10**6, np.float16), np.ones(10**6, np.float16))
    # a broadcast tiling sized for fewer buffers than a tile needs
    pdag = prelu.PReluGradUpdateDAG(np.float32).OpDag
    one = ac.BroadcastSch[201, pdag](ac._elewise.BroadcastOneDimTilingData(
        blockNum=1, ubFormer=64, ubTail=64, blockFormer=1, blockTail=1, bufferNum=3))
    args = [np.ones(64, np.float32) for _ in range(5)]
    with pytest.raises(ac.ConstraintError, match="needs 4 live buffers but the tiling sized"):
        one.Process(*args)


# ------------------------------------------------------------- ops-nn's unit tests, ported
# The kernel tests (tests/ut/op_kernel/test_leaky_relu_apt.cpp, test_p_relu_grad_update_apt.cpp:
# a hand-written tiling, one block, the data of their gen_data.py) and the host tiling tests
# (tests/ut/op_host/arch35/test_leaky_relu_tiling.cpp, test_prelu_grad_update_tiling.cpp:
# Ascend950, 64 cores, UB_SIZE 245760; success with a tiling key > 0, or failure).
UT_CORE_NUM, UT_UB_SIZE = 64, 245760


def _ut_bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


# ------------------------------------------------------------------------------ kernel tests
def test_leaky_relu_kernel_ut_fp32(lrelu):
    # test_case_fp32_1: 256 floats uniform in [-2, 2], EleBaseTilingData24B{dim0 256, coreNum 1,
    # ubFormer 1024}, scalar 0.01f, leaky_relu<1, TPL_FP32> on one block; golden: torch's
    # leaky_relu (x if x > 0 else x * 0.01 in float32)
    x = np.random.default_rng(1).uniform(-2, 2, 256).astype(np.float32)
    tiling = ac.EleBaseTilingData24B(dim0=256, coreNum=1, ubFormer=1024)
    tiling.scalarData[:4] = np.float32(0.01).tobytes()
    y = np.zeros_like(x)
    ac.launch(lrelu.leaky_relu, 1, x, y, None, tiling, schMode=1, dType=lrelu.TPL_FP32,
              ub_size=ac.ASCEND950_UB_SIZE)
    golden = np.where(x > 0, x, x * np.float32(0.01)).astype(np.float32)
    assert _ut_bits(y).tobytes() == _ut_bits(golden).tobytes()


def test_prelu_grad_update_kernel_ut_fp32(prelu):
    # test_case_fp32_1: grads and features uniform in [-2, 2], weights uniform in [0, 1], all of
    # shape (256,); BroadcastOneDimTilingDataAdvance{dimLen 256, tileNum 1024, blockNum 1,
    # scalarFlag 0} (bufferNum left 0), prelu_grad_update<202> on one block
    rng = np.random.default_rng(2)
    g, f = (rng.uniform(-2, 2, 256).astype(np.float32) for _ in range(2))
    w = rng.uniform(0, 1, 256).astype(np.float32)
    tiling = ac.BroadcastOneDimTilingDataAdvance(dimLen=256, tileNum=1024, blockNum=1, scalarFlag=0)
    dx, update = np.zeros_like(f), np.zeros_like(f)
    ac.launch(prelu.prelu_grad_update, 1, g, f, w, dx, update, None, tiling, schMode=202,
              DTYPE_GRADS=np.float32, ub_size=ac.ASCEND950_UB_SIZE)
    # gen_data.py: dx = where(f > 0, g, w * g), update = where(f > 0, 0, f * g) in float32
    assert _ut_bits(dx).tobytes() == _ut_bits(np.where(f > 0, g, w * g).astype(np.float32)).tobytes()
    assert _ut_bits(update).tobytes() == _ut_bits(np.where(f > 0, np.float32(0), f * g)).tobytes()
    # a bufferNum that is given is checked: fewer buffers than a tile needs is refused
    short = ac.BroadcastOneDimTilingDataAdvance(dimLen=256, tileNum=1024, blockNum=1, bufferNum=2)
    with pytest.raises(ac.ConstraintError, match="live buffers but the tiling sized"):
        ac.launch(prelu.prelu_grad_update, 1, g, f, w, dx, update, None, short, schMode=202,
                  DTYPE_GRADS=np.float32, ub_size=ac.ASCEND950_UB_SIZE)


# ------------------------------------------------------------------------------ tiling tests
@pytest.mark.parametrize("dtype,slope", [(np.float16, 0.01), (BF16, 0.01), (np.float32, 0.01),
                                         (np.float16, 0.2)],
                         ids=["fp16_001", "bf16_002", "fp32_003", "negative_slope_004"])
def test_leaky_relu_tiling_ut(lrelu, dtype, slope):
    shape = (1, 64, 2, 64)
    ctx = ac.TilingContext([(shape, dtype)], [(shape, dtype)], (np.float32(slope),),
                           core_num=UT_CORE_NUM, ub_size=UT_UB_SIZE, node_name="LeakyRelu")
    assert lrelu.TilingForLeakyRelu(ctx) == ac.GRAPH_SUCCESS
    key = ctx.tiling_key
    assert key[0] > 0 and key[1] > 0
    # and the tiling runs: the core's result bit for bit
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32).astype(dtype)
    y = np.zeros_like(x).reshape(-1)
    ac.launch(lrelu.leaky_relu, ctx.block_dim, x.reshape(-1).copy(), y, None, ctx.tiling_data,
              schMode=key[0], dType=key[1], ub_size=UT_UB_SIZE)
    want = _core.leaky_relu_impl(x, slope, compare=">", slope_dtype=np.float32)
    assert _ut_bits(y).tobytes() == _ut_bits(want).tobytes()


def test_leaky_relu_tiling_ut_unsupported_dtype_005(lrelu):
    shape = (1, 64, 2, 64)
    ctx = ac.TilingContext([(shape, np.int8)], [(shape, np.int8)], (np.float32(0.01),),
                           core_num=UT_CORE_NUM, ub_size=UT_UB_SIZE, node_name="LeakyRelu")
    assert lrelu.TilingForLeakyRelu(ctx) == ac.GRAPH_FAILED


_PRELU_SHAPES = ((2, 4, 8, 8), (2, 4, 8, 8), (4,))


@pytest.mark.parametrize("dtype,wshape", [(np.float16, (4,)), (BF16, (4,)), (np.float32, (4,)),
                                          (np.float16, (1,))],
                         ids=["fp16_001", "bf16_002", "fp32_003", "scalar_weight_004"])
def test_prelu_grad_update_tiling_ut(prelu, dtype, wshape):
    xs = (2, 4, 8, 8)
    ctx = ac.TilingContext([(xs, dtype), (xs, dtype), (wshape, dtype)], [(xs, dtype)] * 2,
                           core_num=UT_CORE_NUM, ub_size=UT_UB_SIZE, node_name="PReluGradUpdate")
    assert prelu.Tiling4PReluGradUpdate(ctx) == ac.GRAPH_SUCCESS
    assert ctx.tiling_key[0] > 0


@pytest.mark.parametrize("dtypes", [(np.float32, np.float16, np.float16, np.float32),
                                    (np.int8, np.int8, np.int8, np.int8)],
                         ids=["failed_dtype_diff_005", "failed_unsupported_dtype_006"])
def test_prelu_grad_update_tiling_ut_failures(prelu, dtypes):
    xs = (2, 4, 8, 8)
    gd, fd, wd, od = dtypes
    ctx = ac.TilingContext([(xs, gd), (xs, fd), ((4,), wd)], [(xs, od)] * 2,
                           core_num=UT_CORE_NUM, ub_size=UT_UB_SIZE, node_name="PReluGradUpdate")
    assert prelu.Tiling4PReluGradUpdate(ctx) == ac.GRAPH_FAILED
