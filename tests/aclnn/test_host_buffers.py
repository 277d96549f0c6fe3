"""Host buffers of aclrtMemcpy/aclrtMemcpyAsync: NumPy's array subclasses (issue 26).

A host array is its memory, read through the core's plain view: an ``np.matrix`` or
``np.memmap`` copies its bytes in memory order, whatever ``count``; a masked array is
refused (its mask would be ignored). These calls return statuses and never raise: a matrix
with a count below its size, or a masked array, raised NumPy's ValueError before.
"""

import numpy as np
import pytest

from leakyops import aclnn

H2D, D2H = aclnn.ACL_MEMCPY_HOST_TO_DEVICE, aclnn.ACL_MEMCPY_DEVICE_TO_HOST
RT_INVALID = aclnn.ACL_ERROR_RT_PARAM_INVALID


@pytest.fixture
def dev():
    ptr, ret = aclnn.aclrtMalloc(64)
    assert ret == aclnn.ACL_SUCCESS
    assert aclnn.aclrtMemcpy(ptr, 64, np.zeros(64, np.uint8), 64, H2D) == aclnn.ACL_SUCCESS
    yield ptr
    aclnn.aclrtFree(ptr)


def _device_bytes(ptr) -> np.ndarray:
    out = np.zeros(64, np.uint8)
    assert aclnn.aclrtMemcpy(out, 64, ptr, 64, D2H) == aclnn.ACL_SUCCESS
    return out


def test_a_matrix_copies_its_bytes_for_any_count(dev, stream):
    values = np.arange(6, dtype=np.float32)
    m = values.reshape(2, 3).view(np.matrix)
    assert aclnn.aclrtMemcpy(dev, 64, m, 8, H2D) == aclnn.ACL_SUCCESS   # two of six floats
    assert _device_bytes(dev)[:12].view(np.float32).tolist() == [0.0, 1.0, 0.0]
    assert aclnn.aclrtMemcpyAsync(dev, 64, m, 24, H2D, stream) == aclnn.ACL_SUCCESS
    assert aclnn.aclrtSynchronizeStream(stream) == aclnn.ACL_SUCCESS
    assert _device_bytes(dev)[:24].view(np.float32).tolist() == values.tolist()
    back = np.zeros((2, 3), np.float32).view(np.matrix)
    assert aclnn.aclrtMemcpy(back, 24, dev, 8, D2H) == aclnn.ACL_SUCCESS  # into its first bytes
    assert np.asarray(back).tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    f = np.asfortranarray(np.zeros((2, 3), np.float32)).view(np.matrix)  # memory order: F
    assert aclnn.aclrtMemcpy(f, 24, dev, 24, D2H) == aclnn.ACL_SUCCESS
    assert np.asarray(f).T.reshape(-1).tolist() == values.tolist()


def test_a_masked_array_is_a_status(dev, stream):
    masked = np.ma.masked_array(np.ones(4, np.float32), mask=[0, 1, 0, 1])
    assert aclnn.aclrtMemcpy(dev, 64, masked, 16, H2D) == RT_INVALID
    assert "MaskedArray" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtMemcpyAsync(dev, 64, masked, 16, H2D, stream) == RT_INVALID
    assert aclnn.aclrtSynchronizeStream(stream) == aclnn.ACL_SUCCESS
    assert not _device_bytes(dev).any()
    target = np.ma.masked_array(np.full(4, 7.0, np.float32), mask=[0, 1, 0, 1])
    assert aclnn.aclrtMemcpy(target, 16, dev, 16, D2H) == RT_INVALID
    assert "MaskedArray" in aclnn.aclGetRecentErrMsg()
    assert (target.data == 7.0).all()
