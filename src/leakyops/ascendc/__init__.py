"""The Ascend C vector API and kernel programming model, emulated on the CPU.

Enough of Ascend C to write, run and test the vendor's LeakyRelu kernels the Ascend C way
without an NPU: tensors in an emulated Unified Buffer (:class:`LocalTensor`), global memory as
NumPy arrays (:class:`GlobalTensor`), :class:`TPipe` / :class:`TQue` / :class:`TBuf`,
:func:`DataCopy` / :func:`DataCopyPad`, the vector mask register (:func:`SetVectorMask`, …),
the vector instructions :func:`LeakyRelu`, :func:`Adds`, :func:`Muls`, :func:`Maxs`,
:func:`Mins`, :func:`Add`, :func:`Sub`, :func:`Mul`, :func:`Duplicate` and :func:`Cast` in all
their forms, pipe synchronisation (:data:`SetFlag`, :data:`WaitFlag`, :data:`PipeBarrier`)
and :func:`launch`, which runs a kernel function once per block. Names follow Ascend C.
The arithmetic is not done here: LeakyRelu is ``leakyops``' core (``src >= 0 -> src``,
scalar in the tensor's type), the other instructions are ``leakyops._vector_math``; see
``docs/ascendc.md`` for what is emulated and what is left out.

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

from ._aicore import (DEFAULT_UB_SIZE, MAX_UB_SIZE, AICore, GetBlockIdx, GetBlockNum,
                      UnifiedBuffer, current_core, launch)
from ._dag import Bind, DAGSch, Elems, MemLevel, MemOptCfg, Placeholder, Vec
from ._datacopy import (DataCopy, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,
                        DataCopyParams)
from ._elewise import (ASCEND950_CORE_NUM, ASCEND950_UB_SIZE, GET_TPL_TILING_KEY, GRAPH_FAILED,
                       GRAPH_SUCCESS, BroadcastBaseTiling, BroadcastBaseTilingData,
                       BroadcastOneDimTilingData, BroadcastOneDimTilingDataAdvance, BroadcastSch,
                       CoreMemType, EleBaseTilingData24B, EleBaseTilingData32B,
                       ElementwiseSchWithScalar, ElewiseBaseTiling, EnsureNotScalar,
                       PlatformAscendC, TilingContext)
from ._errors import (AscendCError, AscendCTypeError, ConstraintError, QueueError,
                      UnifiedBufferOverflowError)
from ._mask import (BinaryRepeatParams, GetMaskMode, ResetMask, SetMaskCount, SetMaskNorm,
                    SetVectorMask, UnaryRepeatParams)
from ._pipe import LocalMemAllocator, TBuf, TPipe, TQue
from ._reg import (CMPMODE, VECTOR_REG_WIDTH, VL, CeilDivision, GetVecLen, Ref, Reg, UbufPtr,
                   __VEC_SCOPE__, asc_vf_call)
from ._sync import (EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6,
                    EVENT_ID7, PIPE_ALL, PIPE_FIX, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3,
                    PIPE_S, PIPE_V, HardEvent, InitSocState, PipeBarrier, SetFlag, WaitFlag,
                    event_t, pipe_t)
from ._tensor import GlobalTensor, LocalTensor
from ._types import (DEFAULT_BLK_NUM, FULL_MASK, MASK_PLACEHOLDER, MAX_REPEAT_TIMES,
                     ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, MaskMode, QuePosition, RoundMode,
                     TPosition, bfloat16_t, float32, half, int8_t, int16_t, int32_t, int64_t,
                     uint8_t, uint16_t, uint32_t, uint64_t)
from ._vector import (CAST_TABLE, Add, Adds, Cast, Duplicate, LeakyRelu, Maxs, Mins, Mul, Muls,
                      Sub)

__all__ = [
    # memory and tensors
    "AICore", "UnifiedBuffer", "DEFAULT_UB_SIZE", "MAX_UB_SIZE", "current_core", "LocalTensor", "GlobalTensor",
    "TPosition", "QuePosition",
    # pipe and queues
    "TPipe", "TQue", "TBuf", "LocalMemAllocator",
    # data movement and synchronisation
    "DataCopy", "DataCopyPad", "DataCopyParams", "DataCopyExtParams", "DataCopyPadExtParams",
    "PipeBarrier", "SetFlag", "WaitFlag", "HardEvent", "pipe_t", "event_t", "PIPE_S", "PIPE_V",
    "PIPE_M", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3", "PIPE_ALL", "PIPE_FIX", "EVENT_ID0",
    "EVENT_ID1", "EVENT_ID2", "EVENT_ID3", "EVENT_ID4", "EVENT_ID5", "EVENT_ID6", "EVENT_ID7",
    # vector compute and masks
    "LeakyRelu", "Adds", "Muls", "Maxs", "Mins", "Add", "Sub", "Mul", "Duplicate", "Cast",
    "RoundMode", "CAST_TABLE", "UnaryRepeatParams", "BinaryRepeatParams", "SetVectorMask",
    "SetMaskCount", "SetMaskNorm", "ResetMask", "GetMaskMode", "MaskMode", "MASK_PLACEHOLDER",
    "FULL_MASK",
    # launching
    "launch", "GetBlockIdx", "GetBlockNum", "InitSocState",
    # Ascend 950: the register-based vector API (AscendC::Reg)
    "Reg", "__VEC_SCOPE__", "asc_vf_call", "UbufPtr", "Ref", "CMPMODE", "VL", "VECTOR_REG_WIDTH",
    "GetVecLen", "CeilDivision",
    # ATVOSS: the elementwise DAG, its schedulers and host tilings
    "Bind", "Elems", "DAGSch", "MemOptCfg", "MemLevel", "Placeholder", "Vec",
    "ElementwiseSchWithScalar", "BroadcastSch", "ElewiseBaseTiling", "BroadcastBaseTiling",
    "EleBaseTilingData24B", "EleBaseTilingData32B", "BroadcastBaseTilingData",
    "BroadcastOneDimTilingData", "BroadcastOneDimTilingDataAdvance", "TilingContext", "PlatformAscendC",
    "CoreMemType", "EnsureNotScalar", "GET_TPL_TILING_KEY", "GRAPH_SUCCESS", "GRAPH_FAILED",
    "ASCEND950_CORE_NUM", "ASCEND950_UB_SIZE",
    # types and constants
    "half", "float32", "bfloat16_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t",
    "uint32_t", "int64_t", "uint64_t", "ONE_BLK_SIZE", "ONE_REPEAT_BYTE_SIZE", "DEFAULT_BLK_NUM",
    "MAX_REPEAT_TIMES",
    # errors
    "AscendCError", "AscendCTypeError", "ConstraintError", "UnifiedBufferOverflowError",
    "QueueError",
]
