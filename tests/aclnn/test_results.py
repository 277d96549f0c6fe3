"""Results equal the core's (bit for bit) for every dtype, shape and stride; the scalar goes
through ToFloat(); out is cast; the vendor's non-contiguous unit-test layout works."""

import ml_dtypes
import numpy as np
import pytest

import leakyops
from leakyops import _core, aclnn

BF16 = ml_dtypes.bfloat16
DTYPES = [np.float16, BF16, np.float32, np.float64]
# prelu kernels cost about a second of compile/cache load per dtype and rank: the float32 row
# runs always, the half types only with the slow tests
PRELU_DTYPES = [np.float32] + [pytest.param(d, marks=pytest.mark.slow) for d in (np.float16, BF16)]
SPECIALS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 65504.0, -3.5]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(int(np.prod(shape))) * 4
    a[: min(a.size, len(SPECIALS))] = SPECIALS[: min(a.size, len(SPECIALS))]
    rng.shuffle(a)
    with np.errstate(over="ignore"):
        return a.reshape(shape).astype(dtype)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def assert_same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(bits(got), bits(want))


def launch(first, second, *args, stream=None):
    ws_size, ex, st = first(*args)
    assert st == 0, aclnn.aclGetRecentErrMsg()
    ws = None
    if ws_size:
        ws, ret = aclnn.aclrtMalloc(ws_size)
        assert ret == 0
    assert second(ws, ws_size, ex, stream) == 0
    assert aclnn.aclrtSynchronizeStream(stream) == 0


def S(v, dt=aclnn.ACL_FLOAT):
    return aclnn.aclCreateScalar(v, dt)


def tofloat_ref(x, slope):
    """The aclnn rule: the slope through float32 for every dtype (DOUBLE too)."""
    return _core.leaky_relu_impl(x, np.float32(slope), compare=">", slope_dtype=np.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("slope", [0.01, -0.3, 0.0, 2.5])
def test_leaky_relu_equals_core(dtype, shape, slope):
    x = data(shape, dtype)
    out = np.full(shape, 9, dtype=dtype)
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu,
           aclnn.from_numpy(x), S(slope), aclnn.from_numpy(out))
    assert_same(out, tofloat_ref(x, slope))
    if dtype is not np.float64:  # for the half types and float32 this is also the public function
        assert_same(out, leakyops.leaky_relu(x, np.float32(slope)))


def test_double_uses_tofloat_slope():
    """A DOUBLE tensor with a DOUBLE scalar 0.1 is multiplied by float32(0.1), not 0.1."""
    x = np.array([-1.0, -3.0, 2.0])
    out = np.zeros(3)
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu,
           aclnn.from_numpy(x), S(0.1, aclnn.ACL_DOUBLE), aclnn.from_numpy(out))
    f = float(np.float32(0.1))
    np.testing.assert_array_equal(out, [-1.0 * f, -3.0 * f, 2.0])
    assert out[0] != -0.1


@pytest.mark.parametrize("value,dt,expected", [
    (2**24 + 1, aclnn.ACL_INT64, float(2**24)),      # integers beyond 2**24 round to float32
    (300, aclnn.ACL_INT8, 44.0),                      # stored as int8 first (wraps, like a C store)
    (True, aclnn.ACL_BOOL, 1.0),
    (0.1, aclnn.ACL_FLOAT16, float(np.float16(0.1))),
    (0.1, aclnn.ACL_BF16, float(BF16(0.1))),
    (1e300, aclnn.ACL_DOUBLE, np.inf),
    (-7, aclnn.ACL_UINT8, 249.0),
])
def test_scalar_to_float(value, dt, expected):
    s = aclnn.aclCreateScalar(value, dt)
    assert s is not None
    assert s.to_float() == np.float32(expected)
    x = np.array([-1.0], dtype=np.float32)
    out = np.zeros(1, np.float32)
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu,
           aclnn.from_numpy(x), s, aclnn.from_numpy(out))
    assert out[0] == np.float32(-expected)


@pytest.mark.parametrize("src", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dst", DTYPES + [np.complex64], ids=lambda d: np.dtype(d).name)
def test_out_dtype_cast(src, dst):
    """Computed in self's dtype, then cast into out (round to nearest even)."""
    x = data((4, 6), src, seed=3)
    out = np.zeros((4, 6), dtype=dst)
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu,
           aclnn.from_numpy(x), S(0.2), aclnn.from_numpy(out))
    want = tofloat_ref(x, 0.2)
    with np.errstate(all="ignore"):
        if dst is np.complex64 and src is BF16:
            want = want.astype(np.float32)
        assert_same(out, want.astype(dst))


def test_vendor_non_contiguous_case(h):
    """ops-nn UT case_not_contiguous: view {3,5,6}, strides {30,1,5}, storage {3,6,5}."""
    storage = data((3, 6, 5), np.float32, seed=1)
    ptr, _ = h.device_tensor(storage)
    x = aclnn.aclCreateTensor([3, 5, 6], aclnn.ACL_FLOAT, [30, 1, 5], 0, aclnn.ACL_FORMAT_ND, [3, 6, 5], ptr)
    optr, out = h.device_tensor(np.zeros((3, 5, 6), np.float32))
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu, x, S(0.1), out)
    res = np.zeros((3, 5, 6), np.float32)
    assert aclnn.aclrtMemcpy(res, res.nbytes, optr, res.nbytes, aclnn.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    assert_same(res, tofloat_ref(storage.transpose(0, 2, 1), 0.1))


def test_strided_views_in_and_out():
    """Offsets, negative and zero strides, a strided out: all honoured."""
    base = data((6, 8), np.float32, seed=2)
    x = base[::-2, 1::3]                       # negative and step strides
    outbuf = np.full((3, 3, 2), 5.0, np.float32)
    out = outbuf[:, :, 0]                      # strided output
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu,
           aclnn.from_numpy(x), S(-0.5), aclnn.from_numpy(out))
    assert_same(np.ascontiguousarray(out), tofloat_ref(x, -0.5))
    assert (outbuf[:, :, 1] == 5.0).all()      # the elements between were not written
    row = np.broadcast_to(base[0], (4, 8))      # zero stride input
    out2 = np.zeros((4, 8), np.float32)
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu,
           aclnn.from_numpy(row), S(0.25), aclnn.from_numpy(out2))
    assert_same(out2, tofloat_ref(row, 0.25))


def test_create_tensor_with_offset(h):
    host = np.arange(-6, 6, dtype=np.float32)
    ptr, _ = h.device_tensor(host)
    x = aclnn.aclCreateTensor([2, 2], aclnn.ACL_FLOAT, [4, 2], 3, aclnn.ACL_FORMAT_ND, [12], ptr)
    out = np.zeros((2, 2), np.float32)
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu, x, S(0.5), aclnn.from_numpy(out))
    view = host[3:].reshape(-1)[[0, 2, 4, 6]].reshape(2, 2)
    assert_same(out, tofloat_ref(view, 0.5))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_inplace_leaky_relu(dtype):
    x = data((5, 4), dtype, seed=4)
    want = tofloat_ref(x, 0.3)
    launch(aclnn.aclnnInplaceLeakyReluGetWorkspaceSize, aclnn.aclnnInplaceLeakyRelu, aclnn.from_numpy(x), S(0.3))
    assert_same(x, want)
    y = data((6, 6), dtype, seed=5)
    view = y[::2, ::3]  # in place on a non-contiguous view
    want = tofloat_ref(view, 0.3)
    rest = y.copy()
    launch(aclnn.aclnnInplaceLeakyReluGetWorkspaceSize, aclnn.aclnnInplaceLeakyRelu,
           aclnn.from_numpy(view), S(0.3))
    assert_same(np.ascontiguousarray(view), want)
    mask = np.ones((6, 6), bool)
    mask[::2, ::3] = False
    assert_same(y[mask], rest[mask])


@pytest.mark.parametrize("gdt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("xdt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("is_result", [False, True])
def test_leaky_relu_backward_equals_core(gdt, xdt, is_result):
    g = data((3, 1, 5), gdt, seed=6)
    x = data((4, 5), xdt, seed=7)  # broadcasts to (3, 4, 5)
    rd = _core.result_dtype(np.dtype(gdt), np.dtype(xdt))
    out = np.zeros((3, 4, 5), dtype=rd)
    slope = 0.05
    launch(aclnn.aclnnLeakyReluBackwardGetWorkspaceSize, aclnn.aclnnLeakyReluBackward,
           aclnn.from_numpy(g), aclnn.from_numpy(x), S(slope), is_result, aclnn.from_numpy(out))
    want = _core.leaky_relu_backward_impl(g, x, np.float32(slope), is_result, compare=">",
                                          slope_dtype=np.float32)
    assert_same(out, want)


def test_leaky_relu_backward_nan_slope_with_self_is_result():
    """The vendor only refuses ToDouble() < 0; NaN passes and gives g*NaN where self <= 0."""
    g = np.array([1.0, 2.0, 3.0], np.float32)
    x = np.array([1.0, 0.0, -1.0], np.float32)
    out = np.zeros(3, np.float32)
    launch(aclnn.aclnnLeakyReluBackwardGetWorkspaceSize, aclnn.aclnnLeakyReluBackward,
           aclnn.from_numpy(g), aclnn.from_numpy(x), S(np.nan), True, aclnn.from_numpy(out))
    assert out[0] == 1.0 and np.isnan(out[1:]).all()


def test_leaky_relu_backward_at_zero_is_slope():
    g = np.ones(2, np.float32)
    x = np.array([0.0, -0.0], np.float32)
    out = np.zeros(2, np.float32)
    launch(aclnn.aclnnLeakyReluBackwardGetWorkspaceSize, aclnn.aclnnLeakyReluBackward,
           aclnn.from_numpy(g), aclnn.from_numpy(x), S(0.25), False, aclnn.from_numpy(out))
    np.testing.assert_array_equal(out, [0.25, 0.25])


@pytest.mark.parametrize("dtype", PRELU_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,wshape", [((2, 3, 4), (3,)), ((2, 3, 4), (1,)), ((2, 3, 4), (1, 3, 1)),
                                          ((5,), (1,)), ((), ()), ((4, 2), (2,))])
def test_prelu_equals_core(dtype, shape, wshape):
    x = data(shape, dtype, seed=8)
    w = data(wshape, dtype, seed=9)
    out = np.zeros(shape, dtype)
    launch(aclnn.aclnnPreluGetWorkspaceSize, aclnn.aclnnPrelu,
           aclnn.from_numpy(x), aclnn.from_numpy(w), aclnn.from_numpy(out))
    wflat = w.reshape(-1) if w.size != 1 else w.reshape(())
    assert_same(out, leakyops.prelu(x, wflat))


def test_prelu_vendor_example():
    """ops-nn's aclnnPrelu example: weight {3} on {-2, 1, 2, -3, -4.7, 5.3, -6.9, 7}."""
    x = np.array([-2, 1, 2, -3, -4.7, 5.3, -6.9, 7], np.float32).reshape(2, 4)
    out = np.zeros((2, 4), np.float32)
    launch(aclnn.aclnnPreluGetWorkspaceSize, aclnn.aclnnPrelu,
           aclnn.from_numpy(x), aclnn.from_numpy(np.array([3], np.float32)), aclnn.from_numpy(out))
    np.testing.assert_array_equal(out.ravel(), np.float32([-6, 1, 2, -9, np.float32(-4.7) * 3, 5.3,
                                                           np.float32(-6.9) * 3, 7]))


def test_prelu_promotes_self_and_weight():
    """self FLOAT16 and weight FLOAT promote to FLOAT, then cast into an f16 out."""
    x = data((2, 3), np.float16, seed=10)
    w = np.array([0.1, -0.2, 3.0], np.float32)
    out = np.zeros((2, 3), np.float16)
    launch(aclnn.aclnnPreluGetWorkspaceSize, aclnn.aclnnPrelu,
           aclnn.from_numpy(x), aclnn.from_numpy(w), aclnn.from_numpy(out))
    assert_same(out, leakyops.prelu(x.astype(np.float32), w).astype(np.float16))


@pytest.mark.parametrize("dtype", PRELU_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("gshape,shape,wshape", [
    ((2, 3, 4), (2, 3, 4), (3,)), ((2, 3, 4), (2, 3, 4), (1,)), ((1, 3, 1), (2, 3, 4), (3,)),
    ((5,), (5,), (1,)), ((), (), (1, 1)), ((4, 2), (4, 2), (2,)), ((2, 4, 3, 2), (2, 4, 3, 2), (1, 4, 1, 1)),
    ((1, 1), (1, 45), (1, 45)), ((2, 3, 5), (2, 3, 5), (1, 3, 1)),
])
@pytest.mark.parametrize("rule", ["newest", "legacy"])
def test_prelu_backward_equals_core(dtype, gshape, shape, wshape, rule):
    """gradWeight has weight's shape under the newest rule, (C,) under the legacy one (or the
    weight's shape when it has one element); the values are the core's either way."""
    aclnn.set_prelu_backward_rule(rule)
    g = data(gshape, dtype, seed=11)
    x = data(shape, dtype, seed=12)
    w = data(wshape, dtype, seed=13)
    gi = np.zeros(shape, dtype)
    c = int(np.prod(wshape))
    gw = np.zeros(wshape if (c == 1 or rule == "newest") else (c,), dtype)
    launch(aclnn.aclnnPreluBackwardGetWorkspaceSize, aclnn.aclnnPreluBackward,
           aclnn.from_numpy(g), aclnn.from_numpy(x), aclnn.from_numpy(w),
           aclnn.from_numpy(gi), aclnn.from_numpy(gw))
    wflat = w.reshape(-1) if c != 1 else w.reshape(())
    want_gi, want_gw = leakyops.prelu_backward(np.broadcast_to(g, shape), x, wflat)
    assert_same(gi, want_gi)
    assert_same(gw, np.reshape(want_gw, gw.shape))


def test_prelu_backward_non_contiguous(h):
    """ops-nn UT 026: gradOutput and self with view {3,5,6}, strides {30,1,5}."""
    gs, xs = data((3, 6, 5), np.float32, seed=14), data((3, 6, 5), np.float32, seed=15)
    gp, _ = h.device_tensor(gs)
    xp, _ = h.device_tensor(xs)
    g = aclnn.aclCreateTensor([3, 5, 6], aclnn.ACL_FLOAT, [30, 1, 5], 0, aclnn.ACL_FORMAT_ND, [3, 6, 5], gp)
    x = aclnn.aclCreateTensor([3, 5, 6], aclnn.ACL_FLOAT, [30, 1, 5], 0, aclnn.ACL_FORMAT_ND, [3, 6, 5], xp)
    w = np.linspace(-1, 1, 5).astype(np.float32)
    gi, gw = np.zeros((3, 5, 6), np.float32), np.zeros(5, np.float32)
    launch(aclnn.aclnnPreluBackwardGetWorkspaceSize, aclnn.aclnnPreluBackward,
           g, x, aclnn.from_numpy(w), aclnn.from_numpy(gi), aclnn.from_numpy(gw))
    want_gi, want_gw = leakyops.prelu_backward(gs.transpose(0, 2, 1), xs.transpose(0, 2, 1), w)
    assert_same(gi, want_gi)
    assert_same(gw, want_gw)


def test_output_overlapping_input():
    """out partially overlapping self gives the result as if they did not overlap."""
    buf = data((10,), np.float32, seed=16)
    x, out = buf[:8], buf[2:]
    want = tofloat_ref(x.copy(), 0.5)
    launch(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu,
           aclnn.from_numpy(x), S(0.5), aclnn.from_numpy(out))
    assert_same(buf[2:], want)
