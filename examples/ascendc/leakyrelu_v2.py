"""``hicann/ops-nn`` ``experimental/activation/leakyrelu_v2``, ported line by line to Python.

Device side: ``op_kernel/leakyrelu_v2.h`` (class ``LeakyreluV2<T>``: Init, Process, CopyIn,
Compute, CopyOut) and the entry ``op_kernel/leakyrelu_v2.cpp``. Host side: the tiling
function of ``op_host/leakyrelu_v2_tiling.cpp`` (big and small cores, tiles of a third of half
the Unified Buffer, the last tile of a core shorter). Written from the vendor's code, statement
for statement; C++ becomes Python as in ``leaky_relu_kernel.py`` (pointers are NumPy arrays,
``x + offset`` is ``x[offset:]``, templates are arguments).

The Compute is the vendor's, not ``LeakyRelu``::

    Maxs(tmp1, x, 0);  Mins(tmp2, x, 0);  PipeBarrier<PIPE_V>();
    Muls(tmp2, tmp2, T(slope));  Add(y, tmp1, tmp2);          // y = max(x,0) + min(x,0)*s

On finite inputs this gives LeakyRelu's bits, except where LeakyRelu returns -0.0 and the
formula +0.0: ``x = -0.0`` (``max(-0, +0) = +0``, ``min(-0, +0) = -0``, ``+0 + -0*s = +0``),
and a negative ``x`` whose product with the slope underflows to -0.0. At ±inf and NaN the two
agree for a finite slope. ``tests/ascendc/test_ascendc_vendor_kernels.py`` pins all of this.

Two things the vendor's code does that matter on a CPU as on the device:

- Compute runs its four instructions over a whole tile (``tileDataNum``) even for the last,
  shorter tile; the lanes past the data read whatever the Unified Buffer holds and are never
  copied out.
- A core's data is rounded up to whole 32-byte blocks, so the last core reads and writes up to
  31 bytes past the end of x and y. Device memory from ``aclrtMalloc`` is padded; the host side
  here pads the same way and copies back only the real elements.

Run it: ``python examples/ascendc/leakyrelu_v2.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leakyops import ascendc as ac

# --------------------------------------------------------------------------- device side
BUFFER_NUM = 2
inputVal = np.float32(0.0)          # constexpr float inputVal = 0.0;


@dataclass
class LeakyreluV2TilingData:
    smallCoreDataNum: int = 0
    bigCoreDataNum: int = 0
    finalBigTileNum: int = 0
    finalSmallTileNum: int = 0
    tileDataNum: int = 0
    smallTailDataNum: int = 0
    bigTailDataNum: int = 0
    tailBlockNum: int = 0
    negativeSlope: np.float32 = np.float32(0.0)


class LeakyreluV2:
    """``template <typename T> class LeakyreluV2`` (``T`` is half or float)."""

    def __init__(self, T):
        self.T = np.dtype(T)
        self.pipe = ac.TPipe()
        self.inputQueueX = ac.TQue(ac.QuePosition.VECIN, BUFFER_NUM)
        self.outputQueueY = ac.TQue(ac.QuePosition.VECOUT, BUFFER_NUM)
        self.tmpBuffer1 = ac.TBuf(ac.QuePosition.VECCALC)
        self.tmpBuffer2 = ac.TBuf(ac.QuePosition.VECCALC)
        self.inputGMX = ac.GlobalTensor(self.T)
        self.outputGMY = ac.GlobalTensor(self.T)
        self.coreDataNum = self.tileNum = self.tileDataNum = 0
        self.tailDataNum = self.processDataNum = 0
        self.negativeSlope = np.float32(0.0)

    def Init(self, x, y, tilingData: LeakyreluV2TilingData) -> None:
        assert ac.GetBlockNum() != 0, "block dim can not be zero!"
        coreNum = ac.GetBlockIdx()
        globalBufferIndex = tilingData.bigCoreDataNum * ac.GetBlockIdx()
        self.tileDataNum = tilingData.tileDataNum
        self.negativeSlope = tilingData.negativeSlope
        if coreNum < tilingData.tailBlockNum:
            self.coreDataNum = tilingData.bigCoreDataNum
            self.tileNum = tilingData.finalBigTileNum
            self.tailDataNum = tilingData.bigTailDataNum
        else:
            self.coreDataNum = tilingData.smallCoreDataNum
            self.tileNum = tilingData.finalSmallTileNum
            self.tailDataNum = tilingData.smallTailDataNum
            globalBufferIndex -= ((tilingData.bigCoreDataNum - tilingData.smallCoreDataNum)
                                  * (ac.GetBlockIdx() - tilingData.tailBlockNum))
        self.inputGMX.SetGlobalBuffer(x[globalBufferIndex:], self.coreDataNum)
        self.outputGMY.SetGlobalBuffer(y[globalBufferIndex:], self.coreDataNum)
        self.pipe.InitBuffer(self.inputQueueX, BUFFER_NUM, self.tileDataNum * self.T.itemsize)
        self.pipe.InitBuffer(self.outputQueueY, BUFFER_NUM, self.tileDataNum * self.T.itemsize)
        self.pipe.InitBuffer(self.tmpBuffer1, self.tileDataNum * self.T.itemsize)
        self.pipe.InitBuffer(self.tmpBuffer2, self.tileDataNum * self.T.itemsize)

    def CopyIn(self, progress: int) -> None:
        xLocal = self.inputQueueX.AllocTensor(self.T)
        ac.DataCopy(xLocal, self.inputGMX[progress * self.tileDataNum:], self.processDataNum)
        self.inputQueueX.EnQue(xLocal)

    def CopyOut(self, progress: int) -> None:
        yLocal = self.outputQueueY.DeQue(self.T)
        ac.DataCopy(self.outputGMY[progress * self.tileDataNum:], yLocal, self.processDataNum)
        self.outputQueueY.FreeTensor(yLocal)

    def Compute(self, progress: int) -> None:
        T = self.T.type
        xLocal = self.inputQueueX.DeQue(self.T)
        yLocal = self.outputQueueY.AllocTensor(self.T)
        tmpTensor1 = self.tmpBuffer1.Get(self.T)
        tmpTensor2 = self.tmpBuffer2.Get(self.T)
        ac.Maxs(tmpTensor1, xLocal, T(inputVal), self.tileDataNum)
        ac.Mins(tmpTensor2, xLocal, T(inputVal), self.tileDataNum)
        ac.PipeBarrier[ac.PIPE_V]()
        ac.Muls(tmpTensor2, tmpTensor2, T(self.negativeSlope), self.tileDataNum)
        ac.Add(yLocal, tmpTensor1, tmpTensor2, self.tileDataNum)
        self.outputQueueY.EnQue(yLocal)
        self.inputQueueX.FreeTensor(xLocal)

    def Process(self) -> None:
        loopCount = self.tileNum
        self.processDataNum = self.tileDataNum
        for i in range(loopCount):
            if i == self.tileNum - 1:
                self.processDataNum = self.tailDataNum
            self.CopyIn(i)
            self.Compute(i)
            self.CopyOut(i)


def leakyrelu_v2(x, y, workspace, tiling: LeakyreluV2TilingData, DTYPE_X=np.float16) -> None:
    """``template <uint32_t schMode> __global__ __aicore__ void leakyrelu_v2(x, y, workspace,
    tiling)`` (``schMode`` does not change the code)."""
    op = LeakyreluV2(DTYPE_X)
    op.Init(x, y, tiling)
    op.Process()


# ----------------------------------------------------------------------------- host side
BLOCK_SIZE = 32
WS_SYS_SIZE = 512


def LeakyreluV2TilingFunc(totalIdx: int, dtype, negativeSlope: float, coreNum: int,
                          ubSize: int) -> tuple[LeakyreluV2TilingData, int]:
    """``LeakyreluV2TilingFunc`` for an input of ``totalIdx`` elements: returns the tiling and
    the block dim. ``coreNum`` (vector cores) and ``ubSize`` are what the platform reports."""
    if np.dtype(dtype) not in (np.dtype(np.float16), np.dtype(np.float32)):
        raise TypeError("LeakyreluV2: invalid dtype (DT_FLOAT, DT_FLOAT16 are supported)")
    tiling = LeakyreluV2TilingData()
    if totalIdx <= 0:                                  # empty input: zero tiling, one block
        return tiling, 1
    inputBytes = np.dtype(dtype).itemsize
    inputLengthBytes = totalIdx * inputBytes
    ubDataNumber = 5 if inputBytes == 1 else 3
    tmp = ubSize // BLOCK_SIZE // BUFFER_NUM
    tileBlockNum = 1
    if tmp > 0:
        tb = tmp // ubDataNumber
        tileBlockNum = 1 if tb == 0 else tb
    tileDataNum = tileBlockNum * BLOCK_SIZE // inputBytes or 1
    blocksTotal = (inputLengthBytes + BLOCK_SIZE - 1) // BLOCK_SIZE
    coreNum64 = min(coreNum, blocksTotal) or 1
    finalCoreNum = coreNum64
    everyCoreInputBlockNum = blocksTotal // coreNum64
    tailBlockNum = blocksTotal % coreNum64
    smallCoreDataNum = everyCoreInputBlockNum * BLOCK_SIZE // inputBytes
    smallTileNum = everyCoreInputBlockNum // tileBlockNum
    finalSmallTileNum = smallTileNum if everyCoreInputBlockNum % tileBlockNum == 0 \
        else smallTileNum + 1
    smallTail = smallCoreDataNum - tileDataNum * smallTileNum
    smallTailDataNum = tileDataNum if smallTail <= 0 else smallTail
    bigEveryCoreBlockNum = everyCoreInputBlockNum + 1
    bigCoreDataNum = bigEveryCoreBlockNum * BLOCK_SIZE // inputBytes
    bigTileNum = bigEveryCoreBlockNum // tileBlockNum
    finalBigTileNum = bigTileNum if bigEveryCoreBlockNum % tileBlockNum == 0 else bigTileNum + 1
    bigTail = bigCoreDataNum - tileDataNum * bigTileNum
    bigTailDataNum = tileDataNum if bigTail <= 0 else bigTail
    tiling.smallCoreDataNum = smallCoreDataNum
    tiling.bigCoreDataNum = bigCoreDataNum
    tiling.tileDataNum = tileDataNum
    tiling.smallTailDataNum = smallTailDataNum
    tiling.bigTailDataNum = bigTailDataNum
    tiling.finalSmallTileNum = finalSmallTileNum
    tiling.finalBigTileNum = finalBigTileNum
    tiling.tailBlockNum = tailBlockNum
    tiling.negativeSlope = np.float32(negativeSlope)
    return tiling, finalCoreNum


def run(x, negative_slope: float = 0.01, *, core_num: int = 40,
        ub_size: int = ac.DEFAULT_UB_SIZE) -> np.ndarray:
    """Host code: tiling, device buffers (padded to whole 32-byte blocks, as ``aclrtMalloc``
    pads), launch, copy back. ``x``: float16 or float32, any shape."""
    x = np.asarray(x)
    tiling, block_dim = LeakyreluV2TilingFunc(x.size, x.dtype, negative_slope, core_num, ub_size)
    if x.size == 0:
        return np.empty_like(x)
    padded = -(-x.size * x.itemsize // BLOCK_SIZE) * BLOCK_SIZE // x.itemsize
    x_dev = np.zeros(padded, x.dtype)
    x_dev[:x.size] = x.reshape(-1)                          # aclrtMemcpy host -> device
    y_dev = np.zeros(padded, x.dtype)
    workspace = np.zeros(WS_SYS_SIZE, np.uint8)
    ac.launch(leakyrelu_v2, block_dim, x_dev, y_dev, workspace, tiling, DTYPE_X=x.dtype,
              ub_size=ub_size)
    return y_dev[:x.size].reshape(x.shape)                  # aclrtMemcpy device -> host


if __name__ == "__main__":
    from leakyops import _core

    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32):
        x = (rng.standard_normal(100_003) * 100).astype(dtype)
        y = run(x, 0.01, core_num=8)
        ref = _core.leaky_relu_impl(x, 0.01, compare=">=", slope_dtype="storage")
        same = np.array_equal(y.view(np.uint8), ref.view(np.uint8))
        print(f"{np.dtype(dtype).name}: {x.size} elements, bit-exact vs LeakyRelu: {same}")
