"""Port of ops-nn's aclnnLeakyReluBackward example program
(``activation/leaky_relu_grad/docs/aclnnLeakyReluBackward.md``), step by step.

Run: ``python examples/aclnn/leaky_relu_backward.py`` — grad {2, 3, 4, 5}, self {1, 2, 3, 4},
slope 0.01, selfIsResult=true print ``result[i] is: ...`` = {2, 3, 4, 5}.
"""

import sys

import numpy as np

from leakyops.aclnn import (
    ACL_FLOAT,
    ACL_FORMAT_ND,
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_SUCCESS,
    aclCreateScalar,
    aclCreateTensor,
    aclDestroyScalar,
    aclDestroyTensor,
    aclFinalize,
    aclInit,
    aclnnLeakyReluBackward,
    aclnnLeakyReluBackwardGetWorkspaceSize,
    aclrtCreateStream,
    aclrtDestroyStream,
    aclrtFree,
    aclrtMalloc,
    aclrtMemcpy,
    aclrtResetDevice,
    aclrtSetDevice,
    aclrtSynchronizeStream,
)


def GetShapeSize(shape):
    size = 1
    for i in shape:
        size *= i
    return size


def Init(deviceId):
    # (fixed) resource initialisation
    ret = aclInit(None)
    if ret != ACL_SUCCESS:
        print(f"aclInit failed. ERROR: {ret}")
        return None, ret
    ret = aclrtSetDevice(deviceId)
    if ret != ACL_SUCCESS:
        print(f"aclrtSetDevice failed. ERROR: {ret}")
        return None, ret
    stream, ret = aclrtCreateStream()
    if ret != ACL_SUCCESS:
        print(f"aclrtCreateStream failed. ERROR: {ret}")
    return stream, ret


def CreateAclTensor(hostData, shape, dataType):
    """Returns (deviceAddr, tensor, ret)."""
    size = GetShapeSize(shape) * hostData.itemsize
    # aclrtMalloc: device memory
    deviceAddr, ret = aclrtMalloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
    if ret != ACL_SUCCESS:
        print(f"aclrtMalloc failed. ERROR: {ret}")
        return None, None, ret
    # aclrtMemcpy: host data to device
    ret = aclrtMemcpy(deviceAddr, size, hostData, size, ACL_MEMCPY_HOST_TO_DEVICE)
    if ret != ACL_SUCCESS:
        print(f"aclrtMemcpy failed. ERROR: {ret}")
        return None, None, ret
    # strides of a contiguous tensor
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = shape[i + 1] * strides[i + 1]
    tensor = aclCreateTensor(shape, dataType, strides, 0, ACL_FORMAT_ND, shape, deviceAddr)
    return deviceAddr, tensor, 0


def main():
    # 1. device/stream initialisation
    deviceId = 0
    stream, ret = Init(deviceId)
    if ret != ACL_SUCCESS:
        print(f"Init acl failed. ERROR: {ret}")
        return ret

    # 2. inputs and outputs
    gradShape = [4]
    selfShape = [4]
    outShape = [4]
    gradHostData = np.array([2, 3, 4, 5], dtype=np.float32)
    selfHostData = np.array([1, 2, 3, 4], dtype=np.float32)
    outHostData = np.array([0, 0, 0, 0], dtype=np.float32)
    negativeSlopeValue = np.float32(0.01)
    selfIsResultValue = True
    gradDeviceAddr, grad, ret = CreateAclTensor(gradHostData, gradShape, ACL_FLOAT)
    if ret != ACL_SUCCESS:
        return ret
    selfDeviceAddr, self, ret = CreateAclTensor(selfHostData, selfShape, ACL_FLOAT)
    if ret != ACL_SUCCESS:
        return ret
    negativeSlope = aclCreateScalar(negativeSlopeValue, ACL_FLOAT)
    if negativeSlope is None:
        return 1
    outDeviceAddr, out, ret = CreateAclTensor(outHostData, outShape, ACL_FLOAT)
    if ret != ACL_SUCCESS:
        return ret

    # 3. first phase, workspace, second phase
    workspaceSize, executor, ret = aclnnLeakyReluBackwardGetWorkspaceSize(
        grad, self, negativeSlope, selfIsResultValue, out)
    if ret != ACL_SUCCESS:
        print(f"aclnnLeakyReluBackwardGetWorkspaceSize failed. ERROR: {ret}")
        return ret
    workspaceAddr = None
    if workspaceSize > 0:
        workspaceAddr, ret = aclrtMalloc(workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST)
        if ret != ACL_SUCCESS:
            print(f"allocate workspace failed. ERROR: {ret}")
            return ret
    ret = aclnnLeakyReluBackward(workspaceAddr, workspaceSize, executor, stream)
    if ret != ACL_SUCCESS:
        print(f"aclnnLeakyReluBackward failed. ERROR: {ret}")
        return ret

    # 4. wait for the stream
    ret = aclrtSynchronizeStream(stream)
    if ret != ACL_SUCCESS:
        print(f"aclrtSynchronizeStream failed. ERROR: {ret}")
        return ret

    # 5. copy back and print
    size = GetShapeSize(outShape)
    resultData = np.zeros(size, dtype=np.float32)
    ret = aclrtMemcpy(resultData, resultData.nbytes, outDeviceAddr, size * resultData.itemsize,
                      ACL_MEMCPY_DEVICE_TO_HOST)
    if ret != ACL_SUCCESS:
        print(f"copy result from device to host failed. ERROR: {ret}")
        return ret
    for i in range(size):
        print(f"result[{i}] is: {resultData[i]:f}")

    # 6. release tensors and scalars
    aclDestroyTensor(grad)
    aclDestroyTensor(self)
    aclDestroyScalar(negativeSlope)
    aclDestroyTensor(out)

    # 7. release device resources
    aclrtFree(gradDeviceAddr)
    aclrtFree(selfDeviceAddr)
    aclrtFree(outDeviceAddr)
    if workspaceSize > 0:
        aclrtFree(workspaceAddr)
    aclrtDestroyStream(stream)
    aclrtResetDevice(deviceId)
    aclFinalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
