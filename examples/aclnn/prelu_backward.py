"""Port of ops-nn's aclnnPreluBackward example program
(``activation/p_relu_grad_update/docs/aclnnPreluBackward.md``), step by step.

Run: ``python examples/aclnn/prelu_backward.py`` — self (4, 2) = 0..7, weight {0.5, 0.5},
gradOutput all ones print gradInput {0.5, 1, 1, 1, 1, 1, 1, 1} and gradWeight {0, 0}.
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
    aclCreateTensor,
    aclDestroyTensor,
    aclFinalize,
    aclInit,
    aclnnPreluBackward,
    aclnnPreluBackwardGetWorkspaceSize,
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
    selfShape = [4, 2]
    weightShape = [2]
    gradOutputShape = [4, 2]
    gradInputShape = [4, 2]
    gradWeightShape = [2]
    selfHostData = np.array([0, 1, 2, 3, 4, 5, 6, 7], dtype=np.float32)
    weightHostData = np.array([0.5, 0.5], dtype=np.float32)
    gradOutputHostData = np.array([1, 1, 1, 1, 1, 1, 1, 1], dtype=np.float32)
    gradInputHostData = np.array([0, 0, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    gradWeightHostData = np.array([0, 0], dtype=np.float32)

    weightDeviceAddr, weight, ret = CreateAclTensor(weightHostData, weightShape, ACL_FLOAT)
    if ret != ACL_SUCCESS:
        return ret
    selfDeviceAddr, self, ret = CreateAclTensor(selfHostData, selfShape, ACL_FLOAT)
    if ret != ACL_SUCCESS:
        return ret
    gradOutputDeviceAddr, gradOutput, ret = CreateAclTensor(gradOutputHostData, gradOutputShape, ACL_FLOAT)
    if ret != ACL_SUCCESS:
        return ret
    gradInputDeviceAddr, gradInput, ret = CreateAclTensor(gradInputHostData, gradInputShape, ACL_FLOAT)
    if ret != ACL_SUCCESS:
        return ret
    gradWeightDeviceAddr, gradWeight, ret = CreateAclTensor(gradWeightHostData, gradWeightShape, ACL_FLOAT)
    if ret != ACL_SUCCESS:
        return ret

    # 3. first phase, workspace, second phase
    workspaceSize, executor, ret = aclnnPreluBackwardGetWorkspaceSize(gradOutput, self, weight, gradInput, gradWeight)
    if ret != ACL_SUCCESS:
        print(f"aclnnPreluBackwardGetWorkspaceSize failed. ERROR: {ret}")
        return ret
    workspaceAddr = None
    if workspaceSize > 0:
        workspaceAddr, ret = aclrtMalloc(workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST)
        if ret != ACL_SUCCESS:
            print(f"allocate workspace failed. ERROR: {ret}")
            return ret
    ret = aclnnPreluBackward(workspaceAddr, workspaceSize, executor, stream)
    if ret != ACL_SUCCESS:
        print(f"aclnnPreluBackward failed. ERROR: {ret}")
        return ret

    # 4. wait for the stream
    ret = aclrtSynchronizeStream(stream)
    if ret != ACL_SUCCESS:
        print(f"aclrtSynchronizeStream failed. ERROR: {ret}")
        return ret

    # 5. copy back and print
    gradInputSize = GetShapeSize(gradInputShape)
    gradInputResultData = np.zeros(gradInputSize, dtype=np.float32)
    ret = aclrtMemcpy(gradInputResultData, gradInputResultData.nbytes, gradInputDeviceAddr, gradInputSize * 4,
                      ACL_MEMCPY_DEVICE_TO_HOST)
    if ret != ACL_SUCCESS:
        print(f"copy result from device to host failed. ERROR: {ret}")
        return ret
    for i in range(gradInputSize):
        print(f"gradInput[{i}] is: {gradInputResultData[i]:f}")

    gradWeightSize = GetShapeSize(gradWeightShape)
    gradWeightResultData = np.zeros(gradWeightSize, dtype=np.float32)
    ret = aclrtMemcpy(gradWeightResultData, gradWeightResultData.nbytes, gradWeightDeviceAddr, gradWeightSize * 4,
                      ACL_MEMCPY_DEVICE_TO_HOST)
    if ret != ACL_SUCCESS:
        print(f"copy result from device to host failed. ERROR: {ret}")
        return ret
    for i in range(gradWeightSize):
        print(f"gradWeight[{i}] is: {gradWeightResultData[i]:f}")

    # 6. release tensors
    aclDestroyTensor(gradOutput)
    aclDestroyTensor(self)
    aclDestroyTensor(weight)
    aclDestroyTensor(gradInput)
    aclDestroyTensor(gradWeight)

    # 7. release device resources
    aclrtFree(selfDeviceAddr)
    aclrtFree(gradOutputDeviceAddr)
    aclrtFree(weightDeviceAddr)
    aclrtFree(gradInputDeviceAddr)
    aclrtFree(gradWeightDeviceAddr)
    if workspaceSize > 0:
        aclrtFree(workspaceAddr)
    aclrtDestroyStream(stream)
    aclrtResetDevice(deviceId)
    aclFinalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
