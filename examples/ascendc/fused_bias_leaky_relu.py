"""``hicann/ops-nn`` ``activation/fused_bias_leaky_relu`` (arch35), ported line by line to Python.

``y = LeakyRelu(x + bias, negative_slope) * scale``. Device side:
``op_kernel/arch35/fused_bias_leaky_relu.h`` (class ``FusedBiasLeakyRelu<T, BUFFER_MODE>``)
and the entry ``op_kernel/fused_bias_leaky_relu.cpp``; host side: the tiling of
``op_host/arch35/fused_bias_leaky_relu_tiling_arch35.cpp`` (block factor aligned to 32 bytes,
double buffering when a block needs two or more UB loops, a ``DataCopyPad`` tail). Written from
the vendor's code, statement for statement.

The half path computes in float: ``Cast(CAST_NONE)`` both inputs to float, ``Add``,
``LeakyRelu`` in float with the float slope, ``Muls`` by the float scale, and
``Cast(CAST_ROUND)`` back to half — round half *away from zero*, not to even. The float path
works in place on the input tiles. So on finite inputs the result is the core's float32
LeakyRelu (``compare=">="``) of ``float32(x) + float32(bias)``, times ``float32(scale)``, and
for half rounded to nearest with ties away. ``-0.0 + 0.0`` is ``+0.0``, so ``x = -0.0`` with
a zero bias comes out ``+0.0`` where LeakyRelu of ``x`` alone keeps ``-0.0``.

The vendor registers this kernel for Ascend 950 (arch35), whose Unified Buffer is larger than
the A2's; ``ub_size`` and ``core_num`` are the platform's numbers the tiling reads.

Run it: ``python examples/ascendc/fused_bias_leaky_relu.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leakyops import ascendc as ac

# --------------------------------------------------------------------------- device side
BUFFER_MODE_SINGLE = 1
BUFFER_MODE_DOUBLE = 2


@dataclass
class FusedBiasLeakyReluTilingData:
    totalNum: int = 0
    blockFactor: int = 0
    ubFactor: int = 0
    negativeSlope: np.float32 = np.float32(0.2)
    scale: np.float32 = np.float32(1.414213562373)


class FusedBiasLeakyRelu:
    """``template <typename T, int BUFFER_MODE> class FusedBiasLeakyRelu``."""

    def __init__(self, T, BUFFER_MODE: int):
        self.T = np.dtype(T)
        self.BUFFER_NUM = BUFFER_MODE_DOUBLE if BUFFER_MODE else BUFFER_MODE_SINGLE
        self.NEED_CAST = self.T != np.dtype(np.float32)
        self.T_COMPUTE = np.dtype(np.float32)
        self.pipe = ac.TPipe()
        self.inputQueueX = ac.TQue(ac.QuePosition.VECIN, self.BUFFER_NUM)
        self.inputQueueBias = ac.TQue(ac.QuePosition.VECIN, self.BUFFER_NUM)
        self.outputQueueY = ac.TQue(ac.QuePosition.VECOUT, self.BUFFER_NUM)
        self.xFp32Buf_ = ac.TBuf(ac.TPosition.VECCALC)
        self.biasFp32Buf_ = ac.TBuf(ac.TPosition.VECCALC)
        self.yFp32Buf_ = ac.TBuf(ac.TPosition.VECCALC)
        self.inputGMX = ac.GlobalTensor(self.T)
        self.inputGMBias = ac.GlobalTensor(self.T)
        self.outputGMY = ac.GlobalTensor(self.T)
        self.blockLength_ = self.ubLength_ = self.loopCount_ = self.tailNum_ = 0
        self.negativeSlope_ = self.scale_ = np.float32(0.0)

    def Init(self, x, bias, y, tilingData: FusedBiasLeakyReluTilingData) -> None:
        blockOffset = ac.GetBlockIdx() * tilingData.blockFactor
        remainderLength = tilingData.totalNum - blockOffset
        self.blockLength_ = (tilingData.blockFactor if remainderLength > tilingData.blockFactor
                             else remainderLength)
        self.ubLength_ = tilingData.ubFactor
        if self.ubLength_ <= 0:
            self.blockLength_ = 0
            self.loopCount_ = 0
            self.tailNum_ = 0
        else:
            self.loopCount_ = self.blockLength_ // self.ubLength_
            self.tailNum_ = self.blockLength_ % self.ubLength_
        self.negativeSlope_ = tilingData.negativeSlope
        self.scale_ = tilingData.scale
        self.inputGMX.SetGlobalBuffer(x[blockOffset:], self.blockLength_)
        self.inputGMBias.SetGlobalBuffer(bias[blockOffset:], self.blockLength_)
        self.outputGMY.SetGlobalBuffer(y[blockOffset:], self.blockLength_)
        allocElems = self.ubLength_
        self.pipe.InitBuffer(self.inputQueueX, self.BUFFER_NUM, allocElems * self.T.itemsize)
        self.pipe.InitBuffer(self.inputQueueBias, self.BUFFER_NUM, allocElems * self.T.itemsize)
        self.pipe.InitBuffer(self.outputQueueY, self.BUFFER_NUM, allocElems * self.T.itemsize)
        if self.NEED_CAST:
            self.pipe.InitBuffer(self.xFp32Buf_, allocElems * self.T_COMPUTE.itemsize)
            self.pipe.InitBuffer(self.biasFp32Buf_, allocElems * self.T_COMPUTE.itemsize)
            self.pipe.InitBuffer(self.yFp32Buf_, allocElems * self.T_COMPUTE.itemsize)

    def Process(self) -> None:
        if self.blockLength_ <= 0:
            return
        for i in range(self.loopCount_):
            self.CopyIn(i, self.ubLength_)
            self.Compute(self.ubLength_)
            self.CopyOut(i, self.ubLength_)
        if self.tailNum_ > 0:
            self.CopyIn(self.loopCount_, self.tailNum_)
            self.Compute(self.tailNum_)
            self.CopyOut(self.loopCount_, self.tailNum_)

    def CopyIn(self, progress: int, currentNum: int) -> None:
        xLocal = self.inputQueueX.AllocTensor(self.T)
        biasLocal = self.inputQueueBias.AllocTensor(self.T)
        copyParams = ac.DataCopyExtParams()
        copyParams.blockCount = 1
        copyParams.blockLen = currentNum * self.T.itemsize
        copyParams.srcStride = 0
        copyParams.dstStride = 0
        padParams = ac.DataCopyPadExtParams(False, 0, 0, 0)
        ac.DataCopyPad(xLocal, self.inputGMX[progress * self.ubLength_:], copyParams, padParams)
        ac.DataCopyPad(biasLocal, self.inputGMBias[progress * self.ubLength_:], copyParams,
                       padParams)
        self.inputQueueX.EnQue(xLocal)
        self.inputQueueBias.EnQue(biasLocal)

    def Compute(self, currentNum: int) -> None:
        xLocal = self.inputQueueX.DeQue(self.T)
        biasLocal = self.inputQueueBias.DeQue(self.T)
        yLocal = self.outputQueueY.AllocTensor(self.T)
        if self.NEED_CAST:
            xFp32 = self.xFp32Buf_.Get(self.T_COMPUTE)
            biasFp32 = self.biasFp32Buf_.Get(self.T_COMPUTE)
            yFp32 = self.yFp32Buf_.Get(self.T_COMPUTE)
            ac.Cast(xFp32, xLocal, ac.RoundMode.CAST_NONE, currentNum)
            ac.Cast(biasFp32, biasLocal, ac.RoundMode.CAST_NONE, currentNum)
            ac.Add(xFp32, xFp32, biasFp32, currentNum)
            ac.LeakyRelu(xFp32, xFp32, self.negativeSlope_, currentNum)
            ac.Muls(yFp32, xFp32, self.scale_, currentNum)
            ac.Cast(yLocal, yFp32, ac.RoundMode.CAST_ROUND, currentNum)
        else:
            ac.Add(xLocal, xLocal, biasLocal, currentNum)
            ac.LeakyRelu(xLocal, xLocal, self.negativeSlope_, currentNum)
            ac.Muls(yLocal, xLocal, self.scale_, currentNum)
        self.outputQueueY.EnQue(yLocal)
        self.inputQueueX.FreeTensor(xLocal)
        self.inputQueueBias.FreeTensor(biasLocal)

    def CopyOut(self, progress: int, currentNum: int) -> None:
        yLocal = self.outputQueueY.DeQue(self.T)
        copyParams = ac.DataCopyExtParams()
        copyParams.blockCount = 1
        copyParams.blockLen = currentNum * self.T.itemsize
        copyParams.srcStride = 0
        copyParams.dstStride = 0
        ac.DataCopyPad(self.outputGMY[progress * self.ubLength_:], yLocal, copyParams)
        self.outputQueueY.FreeTensor(yLocal)


def fused_bias_leaky_relu(x, bias, y, workspace, tiling: FusedBiasLeakyReluTilingData,
                          DTYPE_X=np.float16, BUFFER_MODE: int = 0) -> None:
    """``template <int BUFFER_MODE> __global__ __aicore__ void fused_bias_leaky_relu(...)``."""
    op = FusedBiasLeakyRelu(DTYPE_X, BUFFER_MODE)
    op.Init(x, bias, y, tiling)
    op.Process()


# ----------------------------------------------------------------------------- host side
TENSOR_NUM = 3
FP16_CAST_BUF_NUM = 3
BLOCK_ALIGN_BYTES = 32
DOUBLE_BUFFER_THRESHOLD = 2
DOUBLE_BUFFER_MULTIPLIER = 2


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def FusedBiasLeakyReluTilingFunc(totalNum: int, dtype, negativeSlope: float, scale: float,
                                 coreNum: int, ubSize: int):
    """Returns ``(tiling, block_dim, BUFFER_MODE)`` (the tiling key is the buffer mode)."""
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float16), np.dtype(np.float32)):
        raise TypeError("FusedBiasLeakyRelu: x must be DT_FLOAT16 or DT_FLOAT")
    tiling = FusedBiasLeakyReluTilingData(negativeSlope=np.float32(negativeSlope),
                                          scale=np.float32(scale))
    if totalNum == 0:
        return tiling, 1, 0
    typeSize = dtype.itemsize
    ubBlockSize = BLOCK_ALIGN_BYTES // typeSize
    blockFactor = _ceil_div(_ceil_div(totalNum, coreNum), ubBlockSize) * ubBlockSize
    usedCoreNum = _ceil_div(totalNum, blockFactor)
    isFp16 = dtype == np.dtype(np.float16)
    extraBuf = FP16_CAST_BUF_NUM if isFp16 else 0
    totalBufNum = TENSOR_NUM + extraBuf
    loopCountIfDouble = _ceil_div(blockFactor,
                                  ubSize // typeSize // (totalBufNum * DOUBLE_BUFFER_MULTIPLIER))
    useDoubleBuffer = 1 if loopCountIfDouble >= DOUBLE_BUFFER_THRESHOLD else 0
    queueBufNum = TENSOR_NUM * (DOUBLE_BUFFER_MULTIPLIER if useDoubleBuffer else 1)
    if isFp16:
        bytesPerElem = queueBufNum * 2 + FP16_CAST_BUF_NUM * 4
        ubFactor = ubSize // bytesPerElem // ubBlockSize * ubBlockSize
    else:
        ubFactor = ubSize // typeSize // queueBufNum // ubBlockSize * ubBlockSize
    tiling.totalNum = totalNum
    tiling.blockFactor = blockFactor
    tiling.ubFactor = ubFactor
    return tiling, usedCoreNum, useDoubleBuffer


def run(x, bias, negative_slope: float = 0.2, scale: float = 1.414213562373, *,
        core_num: int = 32, ub_size: int = ac.DEFAULT_UB_SIZE) -> np.ndarray:
    """Host code: tiling, device buffers, launch (the tiling key picks BUFFER_MODE), copy back.
    ``x`` and ``bias``: float16 or float32 arrays with the same number of elements."""
    x, bias = np.asarray(x), np.asarray(bias)
    if bias.dtype != x.dtype or bias.size != x.size:
        raise ValueError("FusedBiasLeakyRelu: bias must have x's dtype and element count")
    tiling, block_dim, buffer_mode = FusedBiasLeakyReluTilingFunc(
        x.size, x.dtype, negative_slope, scale, core_num, ub_size)
    x_dev = np.ascontiguousarray(x).reshape(-1).copy()
    b_dev = np.ascontiguousarray(bias).reshape(-1).copy()
    y_dev = np.zeros_like(x_dev)
    ac.launch(fused_bias_leaky_relu, block_dim, x_dev, b_dev, y_dev, None, tiling,
              DTYPE_X=x.dtype, BUFFER_MODE=buffer_mode, ub_size=ub_size)
    return y_dev.reshape(x.shape)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32):
        x = (rng.standard_normal(50_001) * 10).astype(dtype)
        b = (rng.standard_normal(50_001)).astype(dtype)
        y = run(x, b, core_num=8)
        print(f"{np.dtype(dtype).name}: {x.size} elements, first values {y[:4].tolist()}")
