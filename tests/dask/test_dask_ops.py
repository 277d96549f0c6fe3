"""leakyops.dask against the core, block by block, for several chunkings.

Every lazy result is compared with the core run on the whole in-memory array: bit for bit
for the element-wise results, within the core's accuracy for prelu_backward's grad_weight.
"""

from __future__ import annotations

import cloudpickle
import dask
import dask.array as da
import ml_dtypes
import numpy as np
import pytest

import leakyops
import leakyops.dask as lod
from leakyops import _core

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
DTYPE_IDS = [str(d) for d in DTYPES]
# the half types load their own kernel variants (seconds each on a busy machine): the full
# chunking matrices of prelu run them only in the slow tier
DTYPES_HALF_SLOW = [
    pytest.param(d, marks=pytest.mark.slow) if d.itemsize == 2 else d for d in DTYPES
]

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 65504.0, -65504.0, 3.0e38]


@pytest.fixture(autouse=True)
def _sync_scheduler():
    # the synchronous scheduler keeps these tests small and deterministic; the threaded
    # scheduler and a process cluster are tested separately
    with dask.config.set(scheduler="synchronous"):
        yield


def data(shape, dtype, seed=0, specials=True):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * 4
    if specials and a.size:
        flat = a.reshape(-1)
        k = min(len(SPECIALS), flat.size)
        idx = rng.choice(flat.size, size=k, replace=False)
        flat[idx] = SPECIALS[:k]
    with np.errstate(over="ignore"):
        return a.astype(dtype)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    np.testing.assert_array_equal(a.view(view), b.view(view))


# shape, chunkings (dask `chunks=` values): single block, even, uneven, one element per block
CHUNKINGS = [
    ((11,), [-1, 4, ((3, 1, 7),), 1]),
    ((5, 6), [-1, (2, 3), ((1, 4), (5, 1)), 1]),
    ((3, 4, 5), [-1, (2, 3, 2), ((1, 2), (3, 1), (1, 1, 3))]),
    ((), [-1]),
    ((0, 3), [-1, (1, 2)]),
]
CASES = [(shape, ch) for shape, chs in CHUNKINGS for ch in chs]
CASE_IDS = [f"{shape}-{ch}" for shape, ch in CASES]


# --------------------------------------------------------------------------------------
# leaky_relu / leaky_relu_


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,chunks", CASES, ids=CASE_IDS)
def test_leaky_relu_matches_core(shape, chunks, dtype):
    a = data(shape, dtype)
    x = da.from_array(a, chunks=chunks)
    y = lod.leaky_relu(x, 0.1)
    assert isinstance(y, da.Array)
    assert y.dtype == dtype and y.shape == shape and y.chunks == x.chunks
    same_bits(y.compute(), leakyops.leaky_relu(a, 0.1))


@pytest.mark.parametrize(
    "slope", [0.0, -2.5, 7, True, np.float16(0.3), ml_dtypes.bfloat16(0.3), np.inf, np.nan,
              np.array(0.25), np.uint64(3)])
def test_leaky_relu_slopes(slope):
    a = data((4, 6), np.float32)
    y = lod.leaky_relu(da.from_array(a, chunks=(3, 4)), slope)
    same_bits(y.compute(), leakyops.leaky_relu(a, slope))


def test_leaky_relu_is_lazy(monkeypatch):
    calls = []
    real = _core.leaky_relu_impl

    def spy(x, *args, **kwargs):
        calls.append(np.shape(x))
        return real(x, *args, **kwargs)

    monkeypatch.setattr(_core, "leaky_relu_impl", spy)
    x = da.from_array(data((6, 4), np.float64), chunks=(2, 4))
    y = lod.leaky_relu(x, 0.2)
    # building the graph checks dtypes and the slope with the core's rules, computes nothing
    assert calls == []
    y.compute()
    assert sorted(calls) == [(2, 4)] * 3


def test_leaky_relu_accepts_numpy_and_keeps_names_deterministic():
    a = data((5,), np.float32)
    y1, y2 = lod.leaky_relu(a, 0.5), lod.leaky_relu(a, 0.5)
    assert y1.name == y2.name
    assert lod.leaky_relu(a, 0.25).name != y1.name
    same_bits(y1.compute(), leakyops.leaky_relu(a, 0.5))


def test_leaky_relu_inplace_returns_new_array_and_leaves_x():
    a = data((4, 5), np.float16)
    x = da.from_array(a, chunks=2)
    y = lod.leaky_relu_(x, 0.5)
    assert y is not x and isinstance(y, da.Array)
    same_bits(y.compute(), leakyops.leaky_relu(a, 0.5))
    same_bits(x.compute(), a)  # dask arrays are immutable: nothing was written
    assert "NEW lazy array" in lod.leaky_relu_.__doc__


@pytest.mark.parametrize("fn", [lod.leaky_relu, lod.leaky_relu_])
@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.complex64, object])
def test_leaky_relu_bad_dtype_raises_at_build(fn, dtype):
    x = da.zeros((4,), chunks=2, dtype=dtype)
    with pytest.raises(TypeError, match=r"^leaky_relu_?: x has dtype"):
        fn(x, 0.1)


@pytest.mark.parametrize("slope,exc", [(1 + 2j, TypeError), ("0.1", TypeError),
                                       (np.array([0.1, 0.2]), ValueError), (None, TypeError)])
def test_leaky_relu_bad_slope_raises_at_build(slope, exc):
    x = da.zeros((4,), chunks=2, dtype=np.float32)
    with pytest.raises(exc, match="^leaky_relu: negative_slope"):
        lod.leaky_relu(x, slope)


# --------------------------------------------------------------------------------------
# leaky_relu_backward


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,chunks", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("self_is_result", [False, True])
def test_leaky_relu_backward_matches_core(shape, chunks, dtype, self_is_result):
    g, a = data(shape, dtype, seed=1), data(shape, dtype, seed=2)
    out = lod.leaky_relu_backward(da.from_array(g, chunks=chunks),
                                  da.from_array(a, chunks=chunks), 0.3, self_is_result)
    assert out.shape == shape and out.dtype == dtype
    same_bits(out.compute(), leakyops.leaky_relu_backward(g, a, 0.3, self_is_result))


@pytest.mark.parametrize(
    "gshape,gchunks,xshape,xchunks",
    [
        ((4, 1, 6), (3, 1, 4), (3, 6), (2, 5)),     # rank and length-1 broadcasting
        ((6,), 4, (5, 6), (2, (1, 3, 2))),          # g right-aligned, different chunks
        ((5, 1), (2, 1), (1, 7), (1, 3)),           # both broadcast
        ((2, 3), 1, (2, 3), (2, 3)),                # same shape, other chunks
        ((), -1, (4, 3), 2),                        # 0-d grad
        ((0, 1), -1, (1, 4), 2),                    # broadcast to an empty result
    ],
)
def test_leaky_relu_backward_broadcasts_between_chunked_arrays(gshape, gchunks, xshape, xchunks):
    g, a = data(gshape, np.float32, seed=3), data(xshape, np.float32, seed=4)
    out = lod.leaky_relu_backward(da.from_array(g, chunks=gchunks),
                                  da.from_array(a, chunks=xchunks), -0.5)
    ref = leakyops.leaky_relu_backward(g, a, -0.5)
    assert out.shape == ref.shape
    same_bits(out.compute(), ref)


@pytest.mark.parametrize(
    "gdt,xdt,rdt",
    [(np.float16, BF16, np.float32), (BF16, np.float16, np.float32),
     (np.float16, np.float32, np.float32), (BF16, np.float64, np.float64),
     (np.float32, np.float64, np.float64), (BF16, BF16, BF16)],
)
def test_leaky_relu_backward_promotes(gdt, xdt, rdt):
    g, a = data((3, 4), gdt, seed=5), data((3, 4), xdt, seed=6)
    out = lod.leaky_relu_backward(da.from_array(g, chunks=2), da.from_array(a, chunks=(3, 1)), 0.1)
    assert out.dtype == np.dtype(rdt)
    same_bits(out.compute(), leakyops.leaky_relu_backward(g, a, 0.1))


def test_leaky_relu_backward_errors_at_build():
    x = da.zeros((4, 3), chunks=2, dtype=np.float32)
    with pytest.raises(ValueError, match=r"^leaky_relu_backward: .*negative"):
        lod.leaky_relu_backward(x, x, -0.1, self_is_result=True)
    lod.leaky_relu_backward(x, x, 0.0, self_is_result=True)  # a zero slope is allowed
    with pytest.raises(TypeError, match=r"^leaky_relu_backward: grad_output has dtype int64"):
        lod.leaky_relu_backward(da.zeros((4, 3), chunks=2, dtype=np.int64), x, 0.1)
    with pytest.raises(TypeError, match=r"^leaky_relu_backward: x has dtype"):
        lod.leaky_relu_backward(x, x.astype(np.complex64), 0.1)
    with pytest.raises(ValueError, match=r"grad_output of shape \(4, 2\) and x of shape \(4, 3\)"):
        lod.leaky_relu_backward(da.zeros((4, 2), chunks=2, dtype=np.float32), x, 0.1)


# --------------------------------------------------------------------------------------
# prelu


def _prelu_cases():
    # (x shape, x chunks, weight shape, axis): 1-D weight along an axis split into uneven
    # chunks, channels-last, shared weights of several shapes, ONNX-style weights
    return [
        ((4, 5, 3), (3, (2, 1, 2), 2), (5,), 1),
        ((4, 5, 3), ((1, 3), 5, 3), (5,), 1),
        ((4, 5, 3), (2, 2, (1, 1, 1)), (3,), -1),
        ((6, 3), (4, 1), (3,), 1),
        ((7,), ((2, 5),), (7,), 0),
        ((3, 4), 2, (), 1),
        ((3, 4), 2, (1,), 1),
        ((3, 4), 2, (1, 1, 1), 1),
        ((2, 3, 4), (1, 2, 3), (3, 1), 1),
        ((2, 3, 4), (2, (2, 1), (1, 3)), (3, 4), 1),
        ((2, 3, 4), (1, 1, 2), (2, 1, 4), 1),
        ((0, 3), (1, 2), (3,), 1),
        ((2, 0, 4), 2, (1, 4), 1),
    ]


PRELU_IDS = [f"{c[0]}-{c[1]}-w{c[2]}-a{c[3]}" for c in _prelu_cases()]


def _weight(shape, dtype, seed=7):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 2, shape)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES_HALF_SLOW, ids=DTYPE_IDS)
@pytest.mark.parametrize("xshape,xchunks,wshape,axis", _prelu_cases(), ids=PRELU_IDS)
def test_prelu_matches_core(xshape, xchunks, wshape, axis, dtype):
    a, w = data(xshape, dtype), _weight(wshape, dtype)
    y = lod.prelu(da.from_array(a, chunks=xchunks), w, axis=axis)
    assert y.shape == xshape and y.dtype == dtype
    same_bits(y.compute(), leakyops.prelu(a, w, axis=axis))


def test_prelu_accepts_dask_weight_chunked_differently():
    a, w = data((4, 6, 2), np.float32), _weight((6,), np.float32)
    y = lod.prelu(da.from_array(a, chunks=(2, 4, 1)), da.from_array(w, chunks=5))
    same_bits(y.compute(), leakyops.prelu(a, w))
    w1 = _weight((1, 1), np.float32)
    same_bits(lod.prelu(da.from_array(a, chunks=3), da.from_array(w1)).compute(),
              leakyops.prelu(a, w1))


def test_prelu_errors_at_build_name_real_shapes():
    x = da.zeros((10, 5, 3), chunks=2, dtype=np.float32)
    with pytest.raises(ValueError, match=r"^prelu: weight has 4 elements but x has size 5 along axis 1"):
        lod.prelu(x, np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"axis=3 is out of range for x of shape \(10, 5, 3\)"):
        lod.prelu(x, np.ones(5, np.float32), axis=3)
    with pytest.raises(ValueError, match=r"weight of shape \(4, 3\) does not broadcast to x of "
                                         r"shape \(10, 5, 3\)"):
        lod.prelu(x, np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"does not broadcast"):
        lod.prelu(x, np.ones((2, 10, 5, 3), np.float32))
    with pytest.raises(TypeError, match=r"^prelu: weight has dtype float64 but x has dtype float32"):
        lod.prelu(x, np.ones(5))
    with pytest.raises(TypeError, match=r"^prelu: x has dtype int8"):
        lod.prelu(x.astype(np.int8), np.ones(5, np.int8))
    with pytest.raises(TypeError, match=r"^prelu: axis must be an int"):
        lod.prelu(x, np.ones(5, np.float32), axis="1")
    with pytest.raises(TypeError, match=r"^prelu: weight"):
        lod.prelu(x, None)
    # a 1-D x with a 1-D weight of length > 1 needs axis=0
    x1 = da.zeros((7,), chunks=3, dtype=np.float64)
    with pytest.raises(ValueError, match=r"for a 1-D x pass axis=0"):
        lod.prelu(x1, np.ones(7))
    lod.prelu(x1, np.ones(7), axis=0)


def test_prelu_unknown_channel_chunks_is_an_error():
    a = da.from_array(data((6, 4), np.float32), chunks=2)
    x = a[a[:, 0] > -100]  # unknown number of rows
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        lod.prelu(x.T, np.ones(6, np.float32))
    # unknown sizes on axes the weight does not vary along are fine
    y = lod.prelu(x, np.ones(4, np.float32) / 2)
    assert np.isnan(y.shape[0])


# --------------------------------------------------------------------------------------
# prelu_backward


def _assert_grad_weight_close(gw, ref_acc, dtype, terms):
    """grad_weight within the core's accuracy: the float64 sums may differ only by their
    summation order (~n eps64 sum|terms|), and are rounded once to ``dtype``."""
    gw64 = gw.astype(np.float64)
    tol64 = terms * np.finfo(np.float64).eps * 4 + 0.0
    rounded = _core.round_grad_weight(ref_acc, dtype).astype(np.float64)
    if np.dtype(dtype) == np.float64:
        np.testing.assert_allclose(gw64, ref_acc, rtol=0, atol=tol64.max() if tol64.size else 0)
    else:
        # equal to the core's rounding, or its neighbour when the float64 sum sits on a tie
        eps = float(ml_dtypes.finfo(dtype).eps)
        np.testing.assert_allclose(gw64, rounded, rtol=eps, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES_HALF_SLOW, ids=DTYPE_IDS)
@pytest.mark.parametrize("xshape,xchunks,wshape,axis", _prelu_cases(), ids=PRELU_IDS)
def test_prelu_backward_matches_core(xshape, xchunks, wshape, axis, dtype):
    a, w = data(xshape, dtype, specials=False), _weight(wshape, dtype)
    g = data(xshape, dtype, seed=9, specials=False)
    gi, gw = lod.prelu_backward(da.from_array(g, chunks=xchunks),
                                da.from_array(a, chunks=xchunks), w, axis=axis)
    assert gi.shape == xshape and gi.dtype == dtype
    assert gw.shape == np.shape(w) and gw.dtype == dtype
    gi_v, gw_v = dask.compute(gi, gw)
    ref_gi, ref_acc = _core.prelu_backward_parts(g, a, w, axis)
    same_bits(gi_v, ref_gi)
    terms = np.abs(_core.prelu_backward_parts(np.abs(g), -np.abs(a), w, axis)[1])
    _assert_grad_weight_close(gw_v, ref_acc, dtype, terms)


def test_prelu_backward_grad_weight_float32_equals_core_on_typical_data():
    a = data((64, 6, 33), np.float32, specials=False)
    g = data((64, 6, 33), np.float32, seed=3, specials=False)
    w = _weight((6,), np.float32)
    for chunks in [(16, 6, 33), (7, (2, 3, 1), 10), 5]:
        gi, gw = lod.prelu_backward(da.from_array(g, chunks=chunks), da.from_array(a, chunks=chunks), w)
        gi_v, gw_v = dask.compute(gi, gw)
        ref_gi, ref_gw = leakyops.prelu_backward(g, a, w)
        same_bits(gi_v, ref_gi)
        np.testing.assert_allclose(gw_v, ref_gw, rtol=np.finfo(np.float32).eps)


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["float32", "bfloat16"])
def test_prelu_backward_special_values_propagate(dtype):
    a = np.array([[-1.0, np.nan], [-np.inf, 2.0], [-0.0, -3.0]], dtype)
    g = np.array([[1.0, 1.0], [0.0, 1.0], [1.0, np.inf]], dtype)
    w = np.array([0.5, 2.0], dtype)
    gi, gw = dask.compute(*lod.prelu_backward(da.from_array(g, chunks=1), da.from_array(a, chunks=1), w))
    ref_gi, ref_gw = leakyops.prelu_backward(g, a, w)
    same_bits(gi, ref_gi)
    same_bits(gw, ref_gw)  # NaN and -inf sums: -inf*0 = NaN in channel 0, NaN in channel 1


def test_prelu_backward_grad_output_broadcasts_and_dask_weight():
    a = data((4, 3, 5), np.float64, specials=False)
    g = data((3, 1), np.float64, seed=2, specials=False)
    w = _weight((3,), np.float64)
    gi, gw = lod.prelu_backward(da.from_array(g, chunks=(2, 1)), da.from_array(a, chunks=(3, 2, 2)),
                                da.from_array(w, chunks=2))
    gi_v, gw_v = dask.compute(gi, gw)
    ref_gi, ref_gw = leakyops.prelu_backward(g, a, w)
    same_bits(gi_v, ref_gi)
    np.testing.assert_allclose(gw_v, ref_gw, rtol=1e-14)


def test_prelu_backward_is_one_pass(monkeypatch):
    calls = []
    real = _core.prelu_backward_parts

    def spy(g, x, *args, **kwargs):
        calls.append(np.shape(x))
        return real(g, x, *args, **kwargs)

    monkeypatch.setattr(_core, "prelu_backward_parts", spy)
    a = data((6, 4, 5), np.float32)
    x = da.from_array(a, chunks=(2, 3, 5))  # 3 x 2 blocks
    gi, gw = lod.prelu_backward(da.ones_like(x), x, _weight((4,), np.float32))
    assert calls == []  # building the graph checks shapes and dtypes only
    dask.compute(gi, gw)
    assert len(calls) == x.npartitions == 6  # each block read once


def test_prelu_backward_is_deterministic_for_a_fixed_chunking():
    a = data((40, 3, 17), np.float32, specials=False)
    g = data((40, 3, 17), np.float32, seed=4, specials=False)
    w = _weight((3,), np.float32)
    x, gd = da.from_array(a, chunks=(3, 2, 5)), da.from_array(g, chunks=(3, 2, 5))
    first = dask.compute(*lod.prelu_backward(gd, x, w))
    with dask.config.set(scheduler="threads", num_workers=2):
        again = dask.compute(*lod.prelu_backward(gd, x, w))
    for r1, r2 in zip(first, again):
        same_bits(r1, r2)


def test_prelu_backward_empty_gives_zero_grad_weight():
    x = da.zeros((0, 3), chunks=(1, 2), dtype=np.float32)
    gi, gw = dask.compute(*lod.prelu_backward(x, x, np.ones(3, np.float32)))
    assert gi.shape == (0, 3)
    same_bits(gw, np.zeros(3, np.float32))


def test_prelu_backward_errors_at_build():
    x = da.zeros((10, 5, 3), chunks=2, dtype=np.float32)
    w = np.ones(5, np.float32)
    with pytest.raises(ValueError, match=r"^prelu_backward: grad_output of shape \(10, 4, 3\) "
                                         r"does not broadcast to x's shape \(10, 5, 3\)"):
        lod.prelu_backward(da.zeros((10, 4, 3), dtype=np.float32), x, w)
    with pytest.raises(ValueError, match=r"does not broadcast"):
        lod.prelu_backward(da.zeros((2, 10, 5, 3), dtype=np.float32), x, w)
    with pytest.raises(TypeError, match=r"^prelu_backward: grad_output has dtype float64 but x "
                                        r"has dtype float32"):
        lod.prelu_backward(x.astype(np.float64), x, w)
    with pytest.raises(ValueError, match=r"^prelu_backward: weight has 5 elements but x has "
                                         r"size 3 along axis 2"):
        lod.prelu_backward(x, x, w, axis=-1)
    with pytest.raises(TypeError, match=r"^prelu_backward: weight has dtype float16"):
        lod.prelu_backward(x, x, da.ones(5, dtype=np.float16))


# --------------------------------------------------------------------------------------
# workers: pickling and threads


@pytest.mark.parametrize("name", ["_leaky_relu_block", "_leaky_relu_backward_block",
                                  "_prelu_block", "_prelu_backward_block", "_sum_partials",
                                  "_round_block", "_first", "_second"])
def test_tasks_pickle_by_reference(name):
    fn = getattr(lod, name)
    blob = cloudpickle.dumps(fn)
    assert b"leakyops.dask" in blob and len(blob) < 120  # a reference, not the code
    assert cloudpickle.loads(blob) is fn


def test_graph_tasks_reference_module_functions():
    x = da.from_array(data((4, 4), np.float32), chunks=2)
    gi, gw = lod.prelu_backward(x, x, _weight((4,), np.float32))
    blob = cloudpickle.dumps(dict(dask.base.collections_to_expr([gi, gw]).__dask_graph__()))
    assert b"co_code" not in blob and b"_prelu_backward_block" in blob


def test_tasks_run_kernels_on_one_thread_and_restore(monkeypatch):
    seen = []
    real = _core.leaky_relu_impl

    def spy(*args, **kwargs):
        seen.append(leakyops.get_num_threads())
        return real(*args, **kwargs)

    x = da.from_array(data((8, 3), np.float32), chunks=2)
    leakyops.set_num_threads(3, this_thread_only=True)
    try:
        monkeypatch.setattr(_core, "leaky_relu_impl", spy)
        y = lod.leaky_relu(x, 0.1)
        assert seen == []  # building the graph computes nothing
        y.compute()  # synchronous: tasks run on this very thread
        n = x.npartitions
        assert seen == [1] * n
        from numba.core import config
        assert leakyops.get_num_threads() == min(3, config.NUMBA_NUM_THREADS)  # restored
        with dask.config.set(scheduler="threads", num_workers=2):
            y.compute()
        assert seen[n:] == [1] * n
    finally:
        del leakyops._threads._state.num_threads


def test_task_threads_env_override(monkeypatch):
    seen = []
    real = _core.leaky_relu_impl
    monkeypatch.setattr(_core, "leaky_relu_impl",
                        lambda *a, **k: seen.append(leakyops.get_num_threads()) or real(*a, **k))
    monkeypatch.setenv("LEAKYOPS_DASK_TASK_THREADS", "2")
    lod.leaky_relu(da.ones(4, chunks=2), 0.1).compute()
    assert seen == [2, 2]
