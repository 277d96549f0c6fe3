import numpy as np
import pytest

from leakyops import aclnn


@pytest.fixture(autouse=True)
def _clean_state():
    """Every test starts on the default SoC and PreluBackward rule with an empty error log,
    and restores all three."""
    aclnn.set_soc_version("Ascend910B")
    aclnn.set_prelu_backward_rule("newest")
    aclnn.aclGetRecentErrMsg()
    yield
    aclnn.set_soc_version("Ascend910B")
    aclnn.set_prelu_backward_rule("newest")
    aclnn.aclGetRecentErrMsg()


@pytest.fixture
def stream():
    st, ret = aclnn.aclrtCreateStream()
    assert ret == aclnn.ACL_SUCCESS
    yield st
    if not st.destroyed:
        aclnn.aclrtDestroyStream(st)


def device_tensor(host: np.ndarray, acl_dtype=None):
    """The vendor examples' CreateAclTensor: malloc, H2D copy, contiguous aclCreateTensor.
    Returns (dev_ptr, tensor)."""
    host = np.ascontiguousarray(host)
    if acl_dtype is None:
        acl_dtype = aclnn._status.ACL_DTYPES[host.dtype]
    nbytes = max(host.nbytes, 1)
    ptr, ret = aclnn.aclrtMalloc(nbytes)
    assert ret == 0
    if host.nbytes:
        assert aclnn.aclrtMemcpy(ptr, host.nbytes, host, host.nbytes, aclnn.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    shape = list(host.shape)
    t = aclnn.aclCreateTensor(shape, acl_dtype, None, 0, aclnn.ACL_FORMAT_ND, shape, ptr)
    assert t is not None, aclnn.aclGetRecentErrMsg()
    return ptr, t


def run(first_phase, launch, *args, stream=None):
    """Both phases plus synchronisation; returns (status1, status2, status_sync)."""
    ws_size, executor, st1 = first_phase(*args)
    if st1 != 0:
        assert executor is None and ws_size == 0
        return st1, None, None
    ws = None
    if ws_size > 0:
        ws, ret = aclnn.aclrtMalloc(ws_size)
        assert ret == 0
    st2 = launch(ws, ws_size, executor, stream)
    st3 = aclnn.aclrtSynchronizeStream(stream)
    return st1, st2, st3


OPS = {
    "LeakyRelu": (aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu),
    "InplaceLeakyRelu": (aclnn.aclnnInplaceLeakyReluGetWorkspaceSize, aclnn.aclnnInplaceLeakyRelu),
    "LeakyReluBackward": (aclnn.aclnnLeakyReluBackwardGetWorkspaceSize, aclnn.aclnnLeakyReluBackward),
    "Prelu": (aclnn.aclnnPreluGetWorkspaceSize, aclnn.aclnnPrelu),
    "PreluBackward": (aclnn.aclnnPreluBackwardGetWorkspaceSize, aclnn.aclnnPreluBackward),
}


@pytest.fixture
def h():
    """Helpers for the tests (test modules cannot import each other under importlib mode)."""
    import types
    return types.SimpleNamespace(device_tensor=device_tensor, run=run, OPS=OPS)
