"""Ascend CANN ``aclnn`` LeakyReLU-family operators, emulated on the CPU.

A program written against CANN's aclnn API ports to Python line by line: the C names are
kept; out-parameters come back as a tuple in front of the status, as in Ascend's Python ACL
binding; functions return status codes and never raise for bad arguments
(``aclGetRecentErrMsg()`` tells why a call failed).

>>> import numpy as np
>>> from leakyops import aclnn
>>> x = np.array([-2.0, -0.5, 0.0, 3.0], dtype=np.float32)
>>> y = np.zeros_like(x)
>>> stream, ret = aclnn.aclrtCreateStream()
>>> self, out = aclnn.from_numpy(x), aclnn.from_numpy(y)
>>> slope = aclnn.aclCreateScalar(0.5, aclnn.ACL_FLOAT)
>>> ws_size, executor, ret = aclnn.aclnnLeakyReluGetWorkspaceSize(self, slope, out)
>>> ws, ret = aclnn.aclrtMalloc(ws_size)
>>> aclnn.aclnnLeakyRelu(ws, ws_size, executor, stream)
0
>>> aclnn.aclrtSynchronizeStream(stream)
0
>>> y
array([-1.  , -0.25,  0.  ,  3.  ], dtype=float32)
>>> aclnn.aclnnLeakyReluGetWorkspaceSize(None, slope, out)[2]
161001
>>> print(aclnn.aclGetRecentErrMsg())
[161001] aclnnLeakyReluGetWorkspaceSize: Expected a proper Tensor or Scalar but got null for argument self.
>>> aclnn.aclrtDestroyStream(stream)
0
"""

from ._objects import (
    aclCreateScalar,
    aclCreateTensor,
    aclDestroyScalar,
    aclDestroyTensor,
    aclGetDataType,
    aclGetViewShape,
    aclGetViewStrides,
    aclScalar,
    aclTensor,
    from_numpy,
    to_numpy,
)
from ._ops import (
    aclnnInplaceLeakyRelu,
    aclnnInplaceLeakyReluGetWorkspaceSize,
    aclnnLeakyRelu,
    aclnnLeakyReluBackward,
    aclnnLeakyReluBackwardGetWorkspaceSize,
    aclnnLeakyReluGetWorkspaceSize,
    aclnnPrelu,
    aclnnPreluBackward,
    aclnnPreluBackwardGetWorkspaceSize,
    aclnnPreluGetWorkspaceSize,
    aclOpExecutor,
)
from ._runtime import (
    PRELU_BACKWARD_RULES,
    SOC_VERSIONS,
    DevicePtr,
    aclFinalize,
    aclInit,
    aclrtCreateStream,
    aclrtDestroyStream,
    aclrtFree,
    aclrtGetSocName,
    aclrtMalloc,
    aclrtMemcpy,
    aclrtMemcpyAsync,
    aclrtMemset,
    aclrtResetDevice,
    aclrtSetDevice,
    aclrtStream,
    aclrtSynchronizeStream,
    get_prelu_backward_rule,
    get_soc_version,
    set_prelu_backward_rule,
    set_soc_version,
)
from ._status import (
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_RT_INVALID_DEVICEID,
    ACL_ERROR_RT_MEMORY_ALLOCATION,
    ACL_ERROR_RT_PARAM_INVALID,
    ACL_SUCCESS,
    ACLNN_ERR_INNER,
    ACLNN_ERR_INNER_CREATE_EXECUTOR,
    ACLNN_ERR_INNER_NULLPTR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    ACLNN_SUCCESS,
    aclDataType,
    aclFormat,
    aclGetRecentErrMsg,
    aclrtMemcpyKind,
    aclrtMemMallocPolicy,
)

# C-style enum constants at module level (``aclnn.ACL_FLOAT``, ``aclnn.ACL_FORMAT_ND``, ...),
# one line each so that type checkers see them (every member of the four enums)
ACL_DT_UNDEFINED = aclDataType.ACL_DT_UNDEFINED
ACL_FLOAT = aclDataType.ACL_FLOAT
ACL_FLOAT16 = aclDataType.ACL_FLOAT16
ACL_INT8 = aclDataType.ACL_INT8
ACL_INT32 = aclDataType.ACL_INT32
ACL_UINT8 = aclDataType.ACL_UINT8
ACL_INT16 = aclDataType.ACL_INT16
ACL_UINT16 = aclDataType.ACL_UINT16
ACL_UINT32 = aclDataType.ACL_UINT32
ACL_INT64 = aclDataType.ACL_INT64
ACL_UINT64 = aclDataType.ACL_UINT64
ACL_DOUBLE = aclDataType.ACL_DOUBLE
ACL_BOOL = aclDataType.ACL_BOOL
ACL_STRING = aclDataType.ACL_STRING
ACL_COMPLEX64 = aclDataType.ACL_COMPLEX64
ACL_COMPLEX128 = aclDataType.ACL_COMPLEX128
ACL_BF16 = aclDataType.ACL_BF16
ACL_INT4 = aclDataType.ACL_INT4
ACL_UINT1 = aclDataType.ACL_UINT1
ACL_COMPLEX32 = aclDataType.ACL_COMPLEX32
ACL_FORMAT_UNDEFINED = aclFormat.ACL_FORMAT_UNDEFINED
ACL_FORMAT_NCHW = aclFormat.ACL_FORMAT_NCHW
ACL_FORMAT_NHWC = aclFormat.ACL_FORMAT_NHWC
ACL_FORMAT_ND = aclFormat.ACL_FORMAT_ND
ACL_FORMAT_NC1HWC0 = aclFormat.ACL_FORMAT_NC1HWC0
ACL_FORMAT_FRACTAL_Z = aclFormat.ACL_FORMAT_FRACTAL_Z
ACL_FORMAT_NC1HWC0_C04 = aclFormat.ACL_FORMAT_NC1HWC0_C04
ACL_FORMAT_HWCN = aclFormat.ACL_FORMAT_HWCN
ACL_FORMAT_NDHWC = aclFormat.ACL_FORMAT_NDHWC
ACL_FORMAT_FRACTAL_NZ = aclFormat.ACL_FORMAT_FRACTAL_NZ
ACL_FORMAT_NCDHW = aclFormat.ACL_FORMAT_NCDHW
ACL_FORMAT_NDC1HWC0 = aclFormat.ACL_FORMAT_NDC1HWC0
ACL_FRACTAL_Z_3D = aclFormat.ACL_FRACTAL_Z_3D
ACL_FORMAT_NC = aclFormat.ACL_FORMAT_NC
ACL_FORMAT_NCL = aclFormat.ACL_FORMAT_NCL
ACL_MEMCPY_HOST_TO_HOST = aclrtMemcpyKind.ACL_MEMCPY_HOST_TO_HOST
ACL_MEMCPY_HOST_TO_DEVICE = aclrtMemcpyKind.ACL_MEMCPY_HOST_TO_DEVICE
ACL_MEMCPY_DEVICE_TO_HOST = aclrtMemcpyKind.ACL_MEMCPY_DEVICE_TO_HOST
ACL_MEMCPY_DEVICE_TO_DEVICE = aclrtMemcpyKind.ACL_MEMCPY_DEVICE_TO_DEVICE
ACL_MEM_MALLOC_HUGE_FIRST = aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_FIRST
ACL_MEM_MALLOC_HUGE_ONLY = aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_ONLY
ACL_MEM_MALLOC_NORMAL_ONLY = aclrtMemMallocPolicy.ACL_MEM_MALLOC_NORMAL_ONLY
ACL_MEM_MALLOC_HUGE_FIRST_P2P = aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_FIRST_P2P
ACL_MEM_MALLOC_HUGE_ONLY_P2P = aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_ONLY_P2P
ACL_MEM_MALLOC_NORMAL_ONLY_P2P = aclrtMemMallocPolicy.ACL_MEM_MALLOC_NORMAL_ONLY_P2P

__all__ = [
    "ACLNN_ERR_INNER", "ACLNN_ERR_INNER_CREATE_EXECUTOR", "ACLNN_ERR_INNER_NULLPTR",
    "ACLNN_ERR_PARAM_INVALID", "ACLNN_ERR_PARAM_NULLPTR", "ACLNN_ERR_RUNTIME_ERROR",
    "ACLNN_SUCCESS", "ACL_BF16", "ACL_BOOL", "ACL_COMPLEX128", "ACL_COMPLEX32", "ACL_COMPLEX64",
    "ACL_DOUBLE", "ACL_DT_UNDEFINED", "ACL_ERROR_INVALID_PARAM", "ACL_ERROR_RT_AICORE_EXCEPTION",
    "ACL_ERROR_RT_INVALID_DEVICEID", "ACL_ERROR_RT_MEMORY_ALLOCATION", "ACL_ERROR_RT_PARAM_INVALID",
    "ACL_FLOAT", "ACL_FLOAT16", "ACL_FORMAT_FRACTAL_NZ", "ACL_FORMAT_FRACTAL_Z", "ACL_FORMAT_HWCN",
    "ACL_FORMAT_NC", "ACL_FORMAT_NC1HWC0", "ACL_FORMAT_NC1HWC0_C04", "ACL_FORMAT_NCDHW",
    "ACL_FORMAT_NCHW", "ACL_FORMAT_NCL", "ACL_FORMAT_ND", "ACL_FORMAT_NDC1HWC0", "ACL_FORMAT_NDHWC",
    "ACL_FORMAT_NHWC", "ACL_FORMAT_UNDEFINED", "ACL_FRACTAL_Z_3D", "ACL_INT16", "ACL_INT32",
    "ACL_INT4", "ACL_INT64", "ACL_INT8", "ACL_MEMCPY_DEVICE_TO_DEVICE", "ACL_MEMCPY_DEVICE_TO_HOST",
    "ACL_MEMCPY_HOST_TO_DEVICE", "ACL_MEMCPY_HOST_TO_HOST", "ACL_MEM_MALLOC_HUGE_FIRST",
    "ACL_MEM_MALLOC_HUGE_FIRST_P2P", "ACL_MEM_MALLOC_HUGE_ONLY", "ACL_MEM_MALLOC_HUGE_ONLY_P2P",
    "ACL_MEM_MALLOC_NORMAL_ONLY", "ACL_MEM_MALLOC_NORMAL_ONLY_P2P", "ACL_STRING", "ACL_SUCCESS",
    "ACL_UINT1", "ACL_UINT16", "ACL_UINT32", "ACL_UINT64", "ACL_UINT8", "DevicePtr",
    "PRELU_BACKWARD_RULES", "SOC_VERSIONS",
    "aclCreateScalar", "aclCreateTensor", "aclDataType", "aclDestroyScalar", "aclDestroyTensor",
    "aclFinalize", "aclFormat", "aclGetDataType", "aclGetRecentErrMsg", "aclGetViewShape",
    "aclGetViewStrides", "aclInit", "aclOpExecutor", "aclScalar", "aclTensor",
    "aclnnInplaceLeakyRelu", "aclnnInplaceLeakyReluGetWorkspaceSize", "aclnnLeakyRelu",
    "aclnnLeakyReluBackward", "aclnnLeakyReluBackwardGetWorkspaceSize",
    "aclnnLeakyReluGetWorkspaceSize", "aclnnPrelu", "aclnnPreluBackward",
    "aclnnPreluBackwardGetWorkspaceSize", "aclnnPreluGetWorkspaceSize", "aclrtCreateStream",
    "aclrtDestroyStream", "aclrtFree", "aclrtGetSocName", "aclrtMalloc", "aclrtMemMallocPolicy",
    "aclrtMemcpy", "aclrtMemcpyAsync", "aclrtMemcpyKind", "aclrtMemset", "aclrtResetDevice",
    "aclrtSetDevice", "aclrtStream", "aclrtSynchronizeStream", "from_numpy",
    "get_prelu_backward_rule", "get_soc_version", "set_prelu_backward_rule", "set_soc_version",
    "to_numpy",
]
