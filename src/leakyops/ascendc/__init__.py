"""The Ascend C vector API and kernel programming model, emulated on the CPU.

Enough of Ascend C to write, run and test a LeakyRelu kernel the Ascend C way without an
NPU: tensors in an emulated Unified Buffer (:class:`LocalTensor`), global memory as NumPy
arrays (:class:`GlobalTensor`), :class:`TPipe` / :class:`TQue` / :class:`TBuf`,
:func:`DataCopy` / :func:`DataCopyPad`, the vector mask (:func:`SetVectorMask`, …),
:func:`LeakyRelu` in its three forms, and :func:`launch`, which runs a kernel function once
per block. Names follow Ascend C. The arithmetic is done by ``leakyops``' own kernels
(``src >= 0 -> src``, scalar in the tensor's type); see ``docs/ascendc.md`` for what is
emulated and what is left out.

>>> import numpy as np
>>> from leakyops import ascendc as ac
>>> x = np.array([-287, 246, -438, 177, 596, -950, -293, 322] * 64, dtype=np.float16)
>>> y = np.empty_like(x)
>>> def kernel(x_gm, y_gm):
...     xg, yg = ac.GlobalTensor(ac.half), ac.GlobalTensor(ac.half)
...     xg.SetGlobalBuffer(x_gm)
...     yg.SetGlobalBuffer(y_gm)
...     alloc = ac.LocalMemAllocator()
...     src, dst = alloc.Alloc(ac.half, 512), alloc.Alloc(ac.half, 512)
...     ac.DataCopy(src, xg, 512)
...     ac.LeakyRelu(dst, src, 0.001, 128, 4, (1, 1, 8, 8))
...     ac.DataCopy(yg, dst, 512)
>>> ac.launch(kernel, 1, x, y)
>>> y[:8].tolist()
[-0.287109375, 246.0, -0.438232421875, 177.0, 596.0, -0.9501953125, -0.293212890625, 322.0]
"""

from ._aicore import (DEFAULT_UB_SIZE, AICore, GetBlockIdx, GetBlockNum, UnifiedBuffer,
                      current_core, launch)
from ._datacopy import (DataCopy, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,
                        DataCopyParams)
from ._errors import (AscendCError, AscendCTypeError, ConstraintError, QueueError,
                      UnifiedBufferOverflowError)
from ._mask import (GetMaskMode, ResetMask, SetMaskCount, SetMaskNorm, SetVectorMask,
                    UnaryRepeatParams)
from ._pipe import LocalMemAllocator, TBuf, TPipe, TQue
from ._sync import HardEvent, PipeBarrier, SetFlag, WaitFlag
from ._tensor import GlobalTensor, LocalTensor
from ._types import (DEFAULT_BLK_NUM, FULL_MASK, MASK_PLACEHOLDER, MAX_REPEAT_TIMES,
                     ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, MaskMode, QuePosition, TPosition,
                     bfloat16_t, float32, half, int8_t, int16_t, int32_t, int64_t, uint8_t,
                     uint16_t, uint32_t, uint64_t)
from ._vector import LeakyRelu

__all__ = [
    # memory and tensors
    "AICore", "UnifiedBuffer", "DEFAULT_UB_SIZE", "current_core", "LocalTensor", "GlobalTensor",
    "TPosition", "QuePosition",
    # pipe and queues
    "TPipe", "TQue", "TBuf", "LocalMemAllocator",
    # data movement and synchronisation
    "DataCopy", "DataCopyPad", "DataCopyParams", "DataCopyExtParams", "DataCopyPadExtParams",
    "PipeBarrier", "SetFlag", "WaitFlag", "HardEvent",
    # vector compute and masks
    "LeakyRelu", "UnaryRepeatParams", "SetVectorMask", "SetMaskCount", "SetMaskNorm",
    "ResetMask", "GetMaskMode", "MaskMode", "MASK_PLACEHOLDER", "FULL_MASK",
    # launching
    "launch", "GetBlockIdx", "GetBlockNum",
    # types and constants
    "half", "float32", "bfloat16_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t",
    "uint32_t", "int64_t", "uint64_t", "ONE_BLK_SIZE", "ONE_REPEAT_BYTE_SIZE", "DEFAULT_BLK_NUM",
    "MAX_REPEAT_TIMES",
    # errors
    "AscendCError", "AscendCTypeError", "ConstraintError", "UnifiedBufferOverflowError",
    "QueueError",
]
