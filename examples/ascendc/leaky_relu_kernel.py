"""A LeakyRelu custom operator written the Ascend C way, run on the CPU with leakyops.ascendc.

The device side is the canonical vector-operator structure of Ascend C samples: a kernel
class whose ``Init`` binds this block's slice of global memory and sets up double-buffered
queues, and whose ``Process`` loops over tiles with CopyIn -> Compute -> CopyOut, the last
tile being a shorter tail. The host side computes the tiling (elements per block, elements
per tile) and launches the kernel over ``block_dim`` blocks.

Compared with the C++ it would be ported from::

    __global__ __aicore__ void leaky_relu_custom(GM_ADDR x, GM_ADDR y, GM_ADDR tiling)
    {
        KernelLeakyRelu<half> op;
        op.Init(x, y, tiling);
        op.Process();
    }
    leaky_relu_custom<<<blockDim, nullptr, stream>>>(x, y, tiling);

the Python keeps the names and the structure; pointers become NumPy arrays, ``x + offset``
becomes ``x[offset:]``, template arguments become dtype arguments.

Run it: ``python examples/ascendc/leaky_relu_kernel.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leakyops import ascendc as ac

BUFFER_NUM = 2  # two buffers per queue: double buffering


@dataclass(frozen=True)
class LeakyReluTilingData:
    """What the host computes and the kernel reads (the ``TilingData`` struct)."""

    totalLength: int      # elements in x
    blockFactor: int      # elements per block (a multiple of 32 bytes)
    ubFactor: int         # elements per tile (a multiple of 32 bytes)
    negativeSlope: float


class KernelLeakyRelu:
    """Device code: one instance per block (AI Core)."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.pipe = ac.TPipe()
        self.inQueueX = ac.TQue(ac.TPosition.VECIN, BUFFER_NUM)
        self.outQueueY = ac.TQue(ac.TPosition.VECOUT, BUFFER_NUM)
        self.xGm = ac.GlobalTensor(self.dtype)
        self.yGm = ac.GlobalTensor(self.dtype)

    def Init(self, x, y, tiling: LeakyReluTilingData) -> None:
        offset = tiling.blockFactor * ac.GetBlockIdx()
        remainder = tiling.totalLength - offset
        self.blockLength = min(tiling.blockFactor, remainder)   # <= 0 for idle blocks
        self.ubFactor = tiling.ubFactor
        self.scalar = tiling.negativeSlope                      # T(scalar): LeakyRelu rounds it
        self.xGm.SetGlobalBuffer(x[offset:], max(self.blockLength, 0))
        self.yGm.SetGlobalBuffer(y[offset:], max(self.blockLength, 0))
        nbytes = self.ubFactor * self.dtype.itemsize
        self.pipe.InitBuffer(self.inQueueX, BUFFER_NUM, nbytes)
        self.pipe.InitBuffer(self.outQueueY, BUFFER_NUM, nbytes)

    def Process(self) -> None:
        if self.blockLength <= 0:
            return
        loopCount = -(-self.blockLength // self.ubFactor)
        for i in range(loopCount):
            n = self.ubFactor if i < loopCount - 1 else self.blockLength - self.ubFactor * i
            self.CopyIn(i, n)
            self.Compute(n)
            self.CopyOut(i, n)

    def _aligned(self, n: int) -> bool:
        return n * self.dtype.itemsize % ac.ONE_BLK_SIZE == 0

    def CopyIn(self, progress: int, n: int) -> None:
        xLocal = self.inQueueX.AllocTensor(self.dtype)
        src = self.xGm[progress * self.ubFactor:]
        if self._aligned(n):
            ac.DataCopy(xLocal, src, n)
        else:  # the tail: DataCopy would round down to 32 bytes, so pad instead
            params = ac.DataCopyExtParams(1, n * self.dtype.itemsize, 0, 0, 0)
            ac.DataCopyPad(xLocal, src, params, ac.DataCopyPadExtParams(False, 0, 0, 0))
        self.inQueueX.EnQue(xLocal)

    def Compute(self, n: int) -> None:
        xLocal = self.inQueueX.DeQue(self.dtype)
        yLocal = self.outQueueY.AllocTensor(self.dtype)
        ac.LeakyRelu(yLocal, xLocal, self.scalar, n)
        self.outQueueY.EnQue(yLocal)
        self.inQueueX.FreeTensor(xLocal)

    def CopyOut(self, progress: int, n: int) -> None:
        yLocal = self.outQueueY.DeQue(self.dtype)
        dst = self.yGm[progress * self.ubFactor:]
        if self._aligned(n):
            ac.DataCopy(dst, yLocal, n)
        else:
            ac.DataCopyPad(dst, yLocal, ac.DataCopyExtParams(1, n * self.dtype.itemsize, 0, 0, 0))
        self.outQueueY.FreeTensor(yLocal)


def leaky_relu_custom(x: np.ndarray, y: np.ndarray, tiling: LeakyReluTilingData) -> None:
    """The ``__global__ __aicore__`` entry point."""
    op = KernelLeakyRelu(x.dtype)
    op.Init(x, y, tiling)
    op.Process()


# ---------------------------------------------------------------------------- host side

def compute_tiling(total: int, dtype, negative_slope: float, block_dim: int,
                   ub_size: int = ac.DEFAULT_UB_SIZE, tile_length: int | None = None
                   ) -> LeakyReluTilingData:
    """Split ``total`` elements over ``block_dim`` blocks and each block into UB-sized tiles.

    Both factors are multiples of 32 bytes, so every block starts 32-byte aligned in global
    memory and only the very last tile of the last busy block is unaligned. Four tile
    buffers (two queues x double buffering) must fit in the Unified Buffer.
    """
    itemsize = np.dtype(dtype).itemsize
    align = ac.ONE_BLK_SIZE // itemsize
    ub_factor = ub_size // (2 * BUFFER_NUM * itemsize) // align * align
    if tile_length is not None:
        ub_factor = min(ub_factor, max(align, tile_length // align * align))
    blocks_of_align = -(-total // align)
    block_factor = -(-blocks_of_align // block_dim) * align
    return LeakyReluTilingData(total, block_factor, ub_factor, float(negative_slope))


def leaky_relu(x, negative_slope: float = 0.01, *, block_dim: int = 8,
               tile_length: int | None = None, ub_size: int = ac.DEFAULT_UB_SIZE) -> np.ndarray:
    """Host code: copy ``x`` to "device" memory, launch the kernel, return ``y``.

    ``x`` is a half (float16) or float (float32) array of any shape.
    """
    x = np.asarray(x)
    if x.dtype not in (ac.half, ac.float32):
        raise TypeError(f"leaky_relu kernel: x must be float16 or float32, got {x.dtype}")
    x_dev = np.ascontiguousarray(x).reshape(-1).copy()      # aclrtMemcpy host -> device
    y_dev = np.empty_like(x_dev)
    if x_dev.size:
        tiling = compute_tiling(x_dev.size, x_dev.dtype, negative_slope, block_dim, ub_size,
                                tile_length)
        ac.launch(leaky_relu_custom, block_dim, x_dev, y_dev, tiling, ub_size=ub_size)
    return y_dev.reshape(x.shape)                             # aclrtMemcpy device -> host


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32):
        x = (rng.standard_normal(100_003) * 100).astype(dtype)
        y = leaky_relu(x, 0.001, block_dim=8)
        ref = np.where(x >= 0, x,
                       (x.astype(np.float32) * np.float32(dtype(0.001))).astype(dtype))
        print(f"{np.dtype(dtype).name}: {x.size} elements on 8 blocks, "
              f"bit-exact vs reference: {np.array_equal(y.view(np.uint8), ref.view(np.uint8))}")
