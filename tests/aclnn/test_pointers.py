"""Device pointers outside their allocation, and scalars rounded once (docs/aclnn.md).

``dev + n`` is C pointer arithmetic: any pointer may be formed, but one before its
allocation's start or past its end is refused by every call that would touch memory through
it, with a status (these calls never raise), and no byte of any allocation changes. The end
itself is a valid pointer to zero bytes.
"""

import numpy as np
import pytest

from leakyops import aclnn

H2D, D2H, D2D = (aclnn.ACL_MEMCPY_HOST_TO_DEVICE, aclnn.ACL_MEMCPY_DEVICE_TO_HOST,
                 aclnn.ACL_MEMCPY_DEVICE_TO_DEVICE)
RT_INVALID = aclnn.ACL_ERROR_RT_PARAM_INVALID


@pytest.fixture
def block():
    """A 64-byte allocation filled with 1..64, and a copy of its bytes to compare with."""
    ptr, ret = aclnn.aclrtMalloc(64)
    assert ret == aclnn.ACL_SUCCESS
    host = np.arange(1, 65, dtype=np.uint8)
    assert aclnn.aclrtMemcpy(ptr, 64, host, 64, H2D) == aclnn.ACL_SUCCESS
    yield ptr, host
    aclnn.aclrtFree(ptr)


def _bytes(ptr):
    out = np.zeros(64, np.uint8)
    assert aclnn.aclrtMemcpy(out, 64, ptr, 64, D2H) == aclnn.ACL_SUCCESS
    return out


@pytest.mark.parametrize("shift, where", [(-16, "16 bytes before the start"),
                                          (-1, "1 bytes before the start"),
                                          (65, "1 bytes past the end"),
                                          (2**70, "past the end")])
def test_pointers_outside_the_allocation_are_statuses(block, shift, where):
    ptr, host = block
    bad = ptr + shift
    src = np.full(64, 0xEE, np.uint8)
    for count in (0, 16, 64):
        assert aclnn.aclrtMemcpy(bad, count, src, count, H2D) == RT_INVALID
        assert where in aclnn.aclGetRecentErrMsg()
        assert aclnn.aclrtMemcpy(src, count, bad, count, D2H) == RT_INVALID
        assert aclnn.aclrtMemcpy(bad, count, ptr, count, D2D) == RT_INVALID
        assert aclnn.aclrtMemcpy(ptr, count, bad, count, D2D) == RT_INVALID
        assert aclnn.aclrtMemset(bad, count, 0xEE, count) == RT_INVALID
        assert where in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclCreateTensor([4], aclnn.ACL_FLOAT, None, 0, aclnn.ACL_FORMAT_ND, [4], bad) is None
    assert where in aclnn.aclGetRecentErrMsg()
    assert bad.available == 0
    assert np.array_equal(_bytes(ptr), host)
    assert (src == 0xEE).all()


def test_copies_outside_the_allocation_never_raise(block, stream):
    """A larger count used to raise NumPy's ValueError (a view shorter than the source)."""
    ptr, host = block
    bad = ptr + (-16)
    big = np.zeros(4096, np.uint8)
    assert aclnn.aclrtMemcpy(bad, 4096, big, 4096, H2D) == RT_INVALID
    assert aclnn.aclrtMemcpyAsync(bad, 64, big, 64, H2D, stream) == RT_INVALID
    assert aclnn.aclrtSynchronizeStream(stream) == aclnn.ACL_SUCCESS
    assert np.array_equal(_bytes(ptr), host)


def test_the_end_of_an_allocation_is_a_pointer_to_zero_bytes(block):
    ptr, host = block
    end = ptr + 64
    assert end.available == 0 and end.outside is None
    assert aclnn.aclrtMemcpy(end, 0, host, 0, H2D) == aclnn.ACL_SUCCESS
    assert aclnn.aclrtMemset(end, 0, 0, 0) == aclnn.ACL_SUCCESS
    assert aclnn.aclrtMemcpy(end, 1, host, 1, H2D) == RT_INVALID
    assert aclnn.aclrtMemset(ptr + 60, 4, 0, 4) == aclnn.ACL_SUCCESS   # inside: still works
    assert _bytes(ptr)[60:].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("count", [-1, 2.5, "8", True, None])
def test_memset_counts_that_are_not_sizes_are_statuses(block, count):
    ptr, host = block
    assert aclnn.aclrtMemset(ptr, 64, 0, count) == RT_INVALID
    assert aclnn.aclrtMemset(ptr, count, 0, 8) == RT_INVALID
    assert aclnn.aclrtMemset(ptr, 64, count, 8) == RT_INVALID
    assert np.array_equal(_bytes(ptr), host)


def test_an_operator_over_a_tensor_before_its_allocation_never_runs(block, h):
    """aclCreateTensor refused the pointer, so the operator cannot be prepared (it failed
    only at aclrtSynchronizeStream with 507015 before)."""
    ptr, host = block
    assert aclnn.aclCreateTensor([4], aclnn.ACL_FLOAT, None, 0, aclnn.ACL_FORMAT_ND, [4],
                                 ptr + (-16)) is None
    _, x = h.device_tensor(np.array([-1.0, 2.0], np.float32))
    _, out = h.device_tensor(np.zeros(2, np.float32))
    slope = aclnn.aclCreateScalar(0.5, aclnn.ACL_FLOAT)
    assert h.run(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu, x, slope, out) == (0, 0, 0)
    assert aclnn.to_numpy(out).tolist() == [-0.5, 2.0]
    assert np.array_equal(_bytes(ptr), host)


BIG = 2**60 + 2**36 + 1


@pytest.mark.parametrize("acl_dtype", [aclnn.ACL_INT64, aclnn.ACL_UINT64])
def test_to_float_rounds_an_integer_scalar_once(acl_dtype):
    s = aclnn.aclCreateScalar(BIG, acl_dtype)
    assert float(s.to_float()) == 2.0**60 + 2.0**37    # not 2**60: float64 first would tie
    assert s.to_double() == float(BIG)


def test_float_scalars_are_stored_with_one_rounding():
    v = 1.0 + 2.0**-8 + 2.0**-30        # through float32: the bfloat16 tie 1 + 2**-8, then 1
    assert float(aclnn.aclCreateScalar(v, aclnn.ACL_BF16).value) == 1.0 + 2.0**-7
    assert float(aclnn.aclCreateScalar(v, aclnn.ACL_FLOAT16).value) == float(np.float16(v))
    assert float(aclnn.aclCreateScalar(1e300, aclnn.ACL_FLOAT).value) == float("inf")
    assert np.isnan(float(aclnn.aclCreateScalar(np.nan, aclnn.ACL_BF16).value))
    assert int(aclnn.aclCreateScalar(2**64 - 1, aclnn.ACL_UINT64).value) == 2**64 - 1
    assert int(aclnn.aclCreateScalar(-1, aclnn.ACL_UINT8).value) == 255    # integers still wrap


def test_leaky_relu_with_an_int64_slope_matches_pytorch(h):
    torch = pytest.importorskip("torch")
    x_host = np.array([-1.0, 2.0], np.float32)
    _, x = h.device_tensor(x_host)
    _, out = h.device_tensor(np.zeros(2, np.float32))
    slope = aclnn.aclCreateScalar(BIG, aclnn.ACL_INT64)
    assert h.run(aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu, x, slope, out) == (0, 0, 0)
    expected = torch.nn.functional.leaky_relu(torch.from_numpy(x_host), BIG).numpy()
    assert aclnn.to_numpy(out).tolist() == expected.tolist()
