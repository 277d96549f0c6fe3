"""The emulated runtime: memory, copies, streams (asynchronous, in order, off the caller's
thread), error log; tensors and scalars; concurrency with one stream per thread."""

import threading

import ml_dtypes
import numpy as np
import pytest

import leakyops
from leakyops import _core, aclnn

H2D, D2H, D2D, H2H = (aclnn.ACL_MEMCPY_HOST_TO_DEVICE, aclnn.ACL_MEMCPY_DEVICE_TO_HOST,
                      aclnn.ACL_MEMCPY_DEVICE_TO_DEVICE, aclnn.ACL_MEMCPY_HOST_TO_HOST)
RT_INVALID = aclnn.ACL_ERROR_RT_PARAM_INVALID


def test_enum_values_are_cann_s():
    assert (aclnn.ACL_FLOAT, aclnn.ACL_FLOAT16, aclnn.ACL_INT8, aclnn.ACL_INT32, aclnn.ACL_UINT8,
            aclnn.ACL_INT16, aclnn.ACL_INT64, aclnn.ACL_DOUBLE, aclnn.ACL_BOOL, aclnn.ACL_BF16) == \
        (0, 1, 2, 3, 4, 6, 9, 11, 12, 27)
    assert (aclnn.ACL_FORMAT_NCHW, aclnn.ACL_FORMAT_NHWC, aclnn.ACL_FORMAT_ND, aclnn.ACL_FORMAT_NC1HWC0,
            aclnn.ACL_FORMAT_HWCN, aclnn.ACL_FORMAT_NDHWC, aclnn.ACL_FORMAT_NCDHW) == (0, 1, 2, 3, 16, 27, 30)
    assert (aclnn.ACLNN_SUCCESS, aclnn.ACLNN_ERR_PARAM_NULLPTR, aclnn.ACLNN_ERR_PARAM_INVALID,
            aclnn.ACLNN_ERR_RUNTIME_ERROR, aclnn.ACLNN_ERR_INNER, aclnn.ACLNN_ERR_INNER_CREATE_EXECUTOR,
            aclnn.ACLNN_ERR_INNER_NULLPTR) == (0, 161001, 161002, 361001, 561000, 561101, 561103)
    assert (H2H, H2D, D2H, D2D) == (0, 1, 2, 3)


# ------------------------------------------------------------------ memory
def test_malloc_memcpy_round_trip():
    host = np.arange(10, dtype=np.float32)
    a, ret = aclnn.aclrtMalloc(host.nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    b, ret2 = aclnn.aclrtMalloc(host.nbytes)
    assert ret == ret2 == 0 and int(a) % 512 == 0 and int(a) != int(b)
    assert aclnn.aclrtMemcpy(a, host.nbytes, host, host.nbytes, H2D) == 0
    assert aclnn.aclrtMemcpy(b + 8, host.nbytes - 8, a, 16, D2D) == 0  # pointer arithmetic
    back = np.zeros(10, np.float32)
    assert aclnn.aclrtMemcpy(back, back.nbytes, b, back.nbytes, D2H) == 0
    np.testing.assert_array_equal(back[2:6], host[:4])
    assert (back[:2] == 0).all() and (back[6:] == 0).all()
    hh = bytearray(8)
    assert aclnn.aclrtMemcpy(hh, 8, host, 8, H2H) == 0
    assert bytes(hh) == host[:2].tobytes()
    assert aclnn.aclrtFree(a) == 0 and aclnn.aclrtFree(b) == 0


@pytest.mark.parametrize("size,policy,code", [(0, 0, aclnn.ACL_ERROR_INVALID_PARAM),
                                              (-3, 0, aclnn.ACL_ERROR_INVALID_PARAM),
                                              (2.5, 0, aclnn.ACL_ERROR_INVALID_PARAM),
                                              (16, 99, aclnn.ACL_ERROR_INVALID_PARAM)])
def test_malloc_errors(size, policy, code):
    ptr, ret = aclnn.aclrtMalloc(size, policy)
    assert ptr is None and ret == code
    assert "aclrtMalloc" in aclnn.aclGetRecentErrMsg()


def test_free_errors():
    p, _ = aclnn.aclrtMalloc(8)
    assert aclnn.aclrtFree(p + 4) == RT_INVALID        # interior pointer
    assert aclnn.aclrtFree(p) == 0
    assert aclnn.aclrtFree(p) == RT_INVALID            # double free
    assert aclnn.aclrtFree(np.zeros(2)) == RT_INVALID  # not device memory
    assert "already freed" in aclnn.aclGetRecentErrMsg()


def test_memcpy_errors():
    dev, _ = aclnn.aclrtMalloc(16)
    host = np.zeros(4, np.float32)
    assert aclnn.aclrtMemcpy(dev, 16, host, 16, D2H) == RT_INVALID       # kind mismatch
    assert aclnn.aclrtMemcpy(host, 16, dev, 16, H2D) == RT_INVALID
    assert aclnn.aclrtMemcpy(dev, 8, host, 16, H2D) == RT_INVALID        # count > destMax
    assert aclnn.aclrtMemcpy(dev, 32, host, 16, H2D) == RT_INVALID       # destMax beyond the buffer
    assert aclnn.aclrtMemcpy(dev, 16, np.zeros(2, np.float32), 16, H2D) == RT_INVALID  # src too small
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    assert aclnn.aclrtMemcpy(ro, 16, dev, 16, D2H) == RT_INVALID          # read-only host dst
    assert aclnn.aclrtMemcpy(host[::2], 8, dev, 8, D2H) == RT_INVALID     # non-contiguous host
    assert aclnn.aclrtMemcpy(dev, 16, host, 16, 7) == RT_INVALID          # unknown kind
    aclnn.aclrtFree(dev)
    assert aclnn.aclrtMemcpy(dev, 16, host, 16, H2D) == RT_INVALID       # freed
    msg = aclnn.aclGetRecentErrMsg()
    assert msg.splitlines()[0].endswith("was freed") and len(msg.splitlines()) == 9


def test_memset_and_memcpy_async(stream):
    dev, _ = aclnn.aclrtMalloc(8)
    assert aclnn.aclrtMemset(dev, 8, 0xAB, 8) == 0
    out = np.zeros(8, np.uint8)
    assert aclnn.aclrtMemcpyAsync(out, 8, dev, 8, D2H, stream) == 0
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    assert (out == 0xAB).all()
    assert aclnn.aclrtMemset(dev, 8, 1, 9) == RT_INVALID


def test_device_and_init_calls():
    assert aclnn.aclInit(None) == 0 and aclnn.aclrtSetDevice(0) == 0
    assert aclnn.aclrtSetDevice(1) == aclnn.ACL_ERROR_RT_INVALID_DEVICEID
    assert aclnn.aclrtResetDevice(0) == 0 and aclnn.aclFinalize() == 0


# ------------------------------------------------------------------ error log
def test_recent_err_msg_get_and_clear_newest_first():
    assert aclnn.aclGetRecentErrMsg() is None
    aclnn.aclnnLeakyReluGetWorkspaceSize(None, None, None)
    aclnn.aclrtFree(None)
    msg = aclnn.aclGetRecentErrMsg()
    lines = msg.splitlines()
    assert lines[0].startswith("[107000] aclrtFree") and lines[1].startswith("[161001] aclnnLeakyRelu")
    assert aclnn.aclGetRecentErrMsg() is None


def test_recent_err_msg_is_per_thread():
    aclnn.aclnnPreluGetWorkspaceSize(None, None, None)
    seen = []
    t = threading.Thread(target=lambda: seen.append(aclnn.aclGetRecentErrMsg()))
    t.start()
    t.join()
    assert seen == [None]
    assert "aclnnPreluGetWorkspaceSize" in aclnn.aclGetRecentErrMsg()


# ------------------------------------------------------------------ tensors and scalars
@pytest.mark.parametrize("args,fragment", [
    (([2, 3], aclnn.ACL_FLOAT, [3, 1], 0, aclnn.ACL_FORMAT_ND, [5], "PTR"), "outside storage"),
    (([2, 3], aclnn.ACL_FLOAT, [3, 1], 0, aclnn.ACL_FORMAT_ND, [100], "PTR"), "does not fit"),
    (([2, 3], aclnn.ACL_FLOAT, [3], 0, aclnn.ACL_FORMAT_ND, [6], "PTR"), "differ in length"),
    (([2, 3], 99, None, 0, aclnn.ACL_FORMAT_ND, None, "PTR"), "unknown aclDataType"),
    (([2, 3], aclnn.ACL_STRING, None, 0, aclnn.ACL_FORMAT_ND, None, "PTR"), "DT_STRING"),
    (([2, 3], aclnn.ACL_FLOAT, None, 0, 1234, None, "PTR"), "unknown aclFormat"),
    (([2, 3], aclnn.ACL_FLOAT, None, -1, aclnn.ACL_FORMAT_ND, None, "PTR"), "offset"),
    (([2, 3], aclnn.ACL_FLOAT, None, 0, aclnn.ACL_FORMAT_ND, None, None), "null"),
    (([2, 3], aclnn.ACL_FLOAT, None, 0, aclnn.ACL_FORMAT_ND, None, np.zeros(6, np.float32)), "device pointer"),
    (([2, 3.5], aclnn.ACL_FLOAT, None, 0, aclnn.ACL_FORMAT_ND, None, "PTR"), "integers"),
    ((None, aclnn.ACL_FLOAT, None, 0, aclnn.ACL_FORMAT_ND, None, "PTR"), "viewDims"),
    (([2, -3], aclnn.ACL_FLOAT, None, 0, aclnn.ACL_FORMAT_ND, None, "PTR"), "negative"),
])
def test_create_tensor_rejects_inconsistent_descriptions(args, fragment):
    ptr, _ = aclnn.aclrtMalloc(24)
    args = tuple(ptr if a == "PTR" else a for a in args[:-1]) + (ptr if isinstance(args[-1], str) else args[-1],)
    assert aclnn.aclCreateTensor(*args) is None
    assert fragment in aclnn.aclGetRecentErrMsg()


def test_create_tensor_queries_and_destroy():
    ptr, _ = aclnn.aclrtMalloc(64)
    t = aclnn.aclCreateTensor([3, 5, 6][:2], aclnn.ACL_FLOAT16, [1, 3], 1, aclnn.ACL_FORMAT_NCHW, [16], ptr)
    assert t is not None
    assert aclnn.aclGetViewShape(t) == ([3, 5], 0)
    assert aclnn.aclGetViewStrides(t) == ([1, 3], 0)
    assert aclnn.aclGetDataType(t) == (aclnn.ACL_FLOAT16, 0)
    assert aclnn.to_numpy(t).shape == (3, 5)
    assert aclnn.aclDestroyTensor(t) == 0
    assert aclnn.aclDestroyTensor(t) == RT_INVALID
    assert aclnn.aclGetViewShape(t) == (None, RT_INVALID)
    assert aclnn.aclDestroyTensor(None) == 0
    with pytest.raises(ValueError):
        aclnn.to_numpy(t)


@pytest.mark.parametrize("arr", [
    np.arange(12.0).reshape(3, 4)[::-1, ::2], np.zeros((0, 3), np.float16), np.full((), 3.0, np.float32),
    np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3)), np.asfortranarray(np.ones((2, 3), ml_dtypes.bfloat16)),
])
def test_from_numpy_is_zero_copy(arr):
    t = aclnn.from_numpy(arr)
    assert t is not None and tuple(t.view_dims) == arr.shape
    v = aclnn.to_numpy(t)
    np.testing.assert_array_equal(v, arr)
    if arr.size and arr.flags.writeable:
        assert np.shares_memory(v, arr)


def test_from_numpy_rejects():
    assert aclnn.from_numpy([1.0, 2.0]) is None
    assert aclnn.from_numpy(np.array(["a"])) is None
    assert aclnn.from_numpy(np.zeros(3, np.float32).view(np.uint8)[1:9].view(np.float32)[:1]) is not None
    assert "dtype <U1" in aclnn.aclGetRecentErrMsg()


@pytest.mark.parametrize("value", ["0.1", 1 + 2j, np.zeros(2), None, object()])
def test_create_scalar_rejects(value):
    assert aclnn.aclCreateScalar(value, aclnn.ACL_FLOAT) is None
    assert "aclCreateScalar" in aclnn.aclGetRecentErrMsg()


def test_create_scalar_rejects_types_without_scalar_form():
    assert aclnn.aclCreateScalar(1.0, aclnn.ACL_COMPLEX64) is None
    assert aclnn.aclCreateScalar(1.0, 1000) is None
    s = aclnn.aclCreateScalar(np.array([0.5]), aclnn.ACL_DOUBLE)  # a one-element buffer, like &value
    assert s is not None and s.to_double() == 0.5
    assert aclnn.aclDestroyScalar(s) == 0 and aclnn.aclDestroyScalar(s) == RT_INVALID


# ------------------------------------------------------------------ streams
def _gate(monkeypatch):
    """Make the core's leaky_relu wait for an event; record the thread it ran on."""
    gate, ran_on = threading.Event(), []
    real = _core.leaky_relu_impl

    def gated(*args, **kwargs):
        ran_on.append(threading.get_ident())
        assert gate.wait(10)
        return real(*args, **kwargs)
    monkeypatch.setattr(_core, "leaky_relu_impl", gated)
    return gate, ran_on


def _leaky(x, out, slope, stream):
    ws_size, ex, st = aclnn.aclnnLeakyReluGetWorkspaceSize(aclnn.from_numpy(x), aclnn.aclCreateScalar(slope, 0),
                                                           aclnn.from_numpy(out))
    assert st == 0
    ws = aclnn.aclrtMalloc(ws_size)[0] if ws_size else None
    return aclnn.aclnnLeakyRelu(ws, ws_size, ex, stream)


def test_launch_is_asynchronous_and_off_thread(monkeypatch, stream):
    gate, ran_on = _gate(monkeypatch)
    x = np.array([-4.0, 2.0], np.float32)
    out = np.zeros(2, np.float32)
    assert _leaky(x, out, 0.5, stream) == 0       # returns while the kernel is blocked
    assert (out == 0).all()
    gate.set()
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    np.testing.assert_array_equal(out, [-2.0, 2.0])
    assert ran_on and ran_on[0] != threading.get_ident()


def test_stream_runs_in_launch_order(stream):
    """Each launch reads the previous one's output: the chain only works in order."""
    a = np.array([-64.0, 8.0, -1.0], np.float32)
    bufs = [a] + [np.zeros(3, np.float32) for _ in range(6)]
    for i in range(6):
        assert _leaky(bufs[i], bufs[i + 1], 0.5, stream) == 0
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    np.testing.assert_array_equal(bufs[-1], a * np.where(a > 0, 1, 0.5 ** 6).astype(np.float32))


def test_destroy_stream_finishes_pending_work(monkeypatch):
    st, _ = aclnn.aclrtCreateStream()
    gate, _ = _gate(monkeypatch)
    out = np.zeros(2, np.float32)
    assert _leaky(np.array([-2.0, 1.0], np.float32), out, 0.25, st) == 0
    threading.Timer(0.05, gate.set).start()
    assert aclnn.aclrtDestroyStream(st) == 0
    np.testing.assert_array_equal(out, [-0.5, 1.0])
    assert aclnn.aclrtDestroyStream(st) == RT_INVALID
    assert aclnn.aclrtSynchronizeStream(st) == RT_INVALID
    assert aclnn.aclrtDestroyStream(None) == RT_INVALID
    assert aclnn.aclrtSynchronizeStream(object()) == RT_INVALID


def test_default_stream(monkeypatch):
    out = np.zeros(1, np.float32)
    assert _leaky(np.array([-1.0], np.float32), out, 0.5, None) == 0
    assert aclnn.aclrtSynchronizeStream(None) == 0
    assert out[0] == -0.5


# ------------------------------------------------------------------ concurrency
N_THREADS, N_OPS = 4, 250


def _worker(seed, errors, counts):
    try:
        rng = np.random.default_rng(seed)
        st, ret = aclnn.aclrtCreateStream()
        assert ret == 0
        pending = []
        for i in range(N_OPS):
            kind = i % 3
            n = int(rng.integers(1, 40))
            x = rng.standard_normal(n).astype(np.float32)
            slope = float(rng.uniform(-1, 1))
            if kind == 0:
                out = np.zeros(n, np.float32)
                assert _leaky(x, out, slope, st) == 0
                want = leakyops.leaky_relu(x, np.float32(slope))
            elif kind == 1:
                g = rng.standard_normal(n).astype(np.float32)
                out = np.zeros(n, np.float32)
                ws_size, ex, s1 = aclnn.aclnnLeakyReluBackwardGetWorkspaceSize(
                    aclnn.from_numpy(g), aclnn.from_numpy(x), aclnn.aclCreateScalar(slope, 0), False,
                    aclnn.from_numpy(out))
                assert s1 == 0
                assert aclnn.aclnnLeakyReluBackward(aclnn.aclrtMalloc(ws_size)[0], ws_size, ex, st) == 0
                want = leakyops.leaky_relu_backward(g, x, np.float32(slope))
            else:
                x2 = x.reshape(1, n)
                w = np.array([slope], np.float32)
                out = np.zeros((1, n), np.float32)
                ws_size, ex, s1 = aclnn.aclnnPreluGetWorkspaceSize(aclnn.from_numpy(x2), aclnn.from_numpy(w),
                                                                    aclnn.from_numpy(out))
                assert s1 == 0
                assert aclnn.aclnnPrelu(aclnn.aclrtMalloc(ws_size)[0], ws_size, ex, st) == 0
                want = leakyops.prelu(x2, w.reshape(()))
            pending.append((out, want))
            if len(pending) == 50:  # synchronise now and then, check, keep launching
                assert aclnn.aclrtSynchronizeStream(st) == 0
                for got, exp in pending:
                    np.testing.assert_array_equal(got, exp)
                counts[seed] = counts.get(seed, 0) + len(pending)
                pending.clear()
        assert aclnn.aclrtDestroyStream(st) == 0
        for got, exp in pending:
            np.testing.assert_array_equal(got, exp)
        counts[seed] = counts.get(seed, 0) + len(pending)
    except BaseException as exc:  # noqa: BLE001 -- reported by the main thread
        errors.append(exc)


def test_threads_each_with_a_stream():
    # warm the kernels once so the threads measure the front-end, not compilation
    _worker(99, [], {})
    errors, counts = [], {}
    threads = [threading.Thread(target=_worker, args=(s, errors, counts)) for s in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]
    assert counts == {s: N_OPS for s in range(N_THREADS)}


def test_threads_switching_soc_do_not_crash():
    """The profile is read at GetWorkspaceSize time; switching it under load is safe."""
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            aclnn.set_soc_version("Ascend910")
            aclnn.set_soc_version("Ascend910B")
    t = threading.Thread(target=flip)
    t.start()
    try:
        x = np.ones(4, ml_dtypes.bfloat16)
        results = {aclnn.aclnnLeakyReluGetWorkspaceSize(aclnn.from_numpy(x), aclnn.aclCreateScalar(0.1, 0),
                                                        aclnn.from_numpy(x.copy()))[2] for _ in range(300)}
    finally:
        stop.set()
        t.join()
    assert results <= {0, aclnn.ACLNN_ERR_PARAM_INVALID}
