"""``cannmirror/asc-devkit``'s custom-op sample ``leaky_relu_custom``, ported line by line.

Source: ``examples/01_simd_cpp_api/02_features/99_acl_based/00_acl_compilation/custom_op/``
``op_kernel/leaky_relu_custom/leaky_relu_custom_kernel.cpp`` (with its ``_tiling.h``) and
``op_host/leaky_relu_custom/leaky_relu_custom_host.cpp``. It is the static-tensor style: no
TPipe; ``InitSocState()`` first, four tensors from a ``LocalMemAllocator``, and hand-written
``SetFlag``/``WaitFlag`` pairs between copy-in (MTE2), compute (V) and copy-out (MTE3), ending
with ``PipeBarrier<PIPE_ALL>()``. Written from the vendor's code, statement for statement.

The sample as the vendor wrote it:

- works on ``float`` only (``GlobalTensor<float>``; the op registers ``DT_FLOAT`` only) — the
  host side here refuses other dtypes as the op definition would;
- computes ``y = max(x, 0) + min(x, 0) * slope`` with ``Maxs``/``Mins``/``Muls``/``Add``, which
  differs from LeakyRelu only where LeakyRelu gives -0.0 (``x = -0.0``, or a negative ``x``
  whose product underflows): the formula gives +0.0;
- has a fixed tile of ``STATIC_TILE_LENGTH = 64`` elements (a template argument) and asserts
  that ``totalLength / blockNum / tileNum / 2`` equals it, so only lengths of
  ``blockNum * tileNum * 128`` work. ``totalLength / GetBlockNum()`` rounds down: up to
  ``blockNum - 1`` trailing elements pass the assert and are never computed (y keeps what
  device memory held); other lengths trip the assert.

Run it: ``python examples/ascendc/leaky_relu_custom.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leakyops import ascendc as ac

# --------------------------------------------------------------------------- device side
BUFFER_NUM = 2
STATIC_TILE_LENGTH = 64


@dataclass
class LeakyReluCustomTilingData:
    totalLength: int
    tileNum: int
    negativeSlope: np.float32


def ascendc_assert(condition: bool, message: str) -> None:
    """``ascendc_assert``: a failed assertion stops the kernel."""
    if not condition:
        raise AssertionError(f"ascendc_assert: {message.strip()}")


class KernelLeakyRelu:
    """``template <uint32_t tileLength> class KernelLeakyRelu``."""

    def __init__(self, tileLength: int):
        self.tileLength = tileLength
        self.xGm = ac.GlobalTensor(ac.float32)
        self.yGm = ac.GlobalTensor(ac.float32)
        self.blockLength = self.tileNum = 0
        self.negativeSlope = np.float32(0.0)

    def Init(self, x, y, totalLength: int, tileNum: int, negativeSlope) -> None:
        ascendc_assert(tileNum != 0, "tileNum can not be zero.\n")
        self.blockLength = totalLength // ac.GetBlockNum()
        self.tileNum = tileNum
        self.negativeSlope = np.float32(negativeSlope)
        runtimeTileLength = self.blockLength // tileNum // BUFFER_NUM
        ascendc_assert(runtimeTileLength == self.tileLength,
                       "runtime tileLength must match template tileLength.\n")
        self.xGm.SetGlobalBuffer(x[self.blockLength * ac.GetBlockIdx():], self.blockLength)
        self.yGm.SetGlobalBuffer(y[self.blockLength * ac.GetBlockIdx():], self.blockLength)

    def Process(self) -> None:
        tileLength = self.tileLength
        loopCount = self.tileNum * BUFFER_NUM

        ubAllocator = ac.LocalMemAllocator()
        xLocal = ubAllocator.Alloc(ac.float32, tileLength)
        yLocal = ubAllocator.Alloc(ac.float32, tileLength)
        tmpTensor1 = ubAllocator.Alloc(ac.float32, tileLength)
        tmpTensor2 = ubAllocator.Alloc(ac.float32, tileLength)

        inputVal = np.float32(0.0)

        ac.SetFlag[ac.HardEvent.V_MTE2](ac.EVENT_ID0)
        ac.SetFlag[ac.HardEvent.MTE3_V](ac.EVENT_ID0)

        for i in range(loopCount):
            ac.WaitFlag[ac.HardEvent.V_MTE2](ac.EVENT_ID0)

            ac.DataCopy(xLocal, self.xGm[i * tileLength:], tileLength)

            ac.SetFlag[ac.HardEvent.MTE2_V](ac.EVENT_ID0)
            ac.WaitFlag[ac.HardEvent.MTE2_V](ac.EVENT_ID0)

            ac.WaitFlag[ac.HardEvent.MTE3_V](ac.EVENT_ID0)

            ac.Maxs(tmpTensor1, xLocal, inputVal, tileLength)
            ac.Mins(tmpTensor2, xLocal, inputVal, tileLength)
            ac.Muls(tmpTensor2, tmpTensor2, self.negativeSlope, tileLength)
            ac.Add(yLocal, tmpTensor1, tmpTensor2, tileLength)

            ac.SetFlag[ac.HardEvent.V_MTE2](ac.EVENT_ID0)
            ac.SetFlag[ac.HardEvent.V_MTE3](ac.EVENT_ID0)
            ac.WaitFlag[ac.HardEvent.V_MTE3](ac.EVENT_ID0)

            ac.DataCopy(self.yGm[i * tileLength:], yLocal, tileLength)

            ac.SetFlag[ac.HardEvent.MTE3_V](ac.EVENT_ID0)

        ac.WaitFlag[ac.HardEvent.V_MTE2](ac.EVENT_ID0)
        ac.WaitFlag[ac.HardEvent.MTE3_V](ac.EVENT_ID0)


def leaky_relu_custom(x, y, workspace, tiling: LeakyReluCustomTilingData) -> None:
    """``extern "C" __global__ __aicore__ void leaky_relu_custom(x, y, workspace, tiling)``."""
    ac.InitSocState()

    tiling_data = tiling              # REGISTER_TILING_DEFAULT / GET_TILING_DATA

    op = KernelLeakyRelu(STATIC_TILE_LENGTH)
    op.Init(x, y, tiling_data.totalLength, tiling_data.tileNum, tiling_data.negativeSlope)
    op.Process()

    ac.PipeBarrier[ac.PIPE_ALL]()


# ----------------------------------------------------------------------------- host side
NUM_BLOCKS = 8
TILE_NUM = 16


def TilingFunc(totalLength: int, negative_slope: float, num_blocks: int = NUM_BLOCKS,
               tile_num: int = TILE_NUM) -> tuple[LeakyReluCustomTilingData, int]:
    """``optiling::TilingFunc``: block dim ``NUM_BLOCKS``, ``TILE_NUM`` tiles per block (the
    vendor's constants are the defaults)."""
    return LeakyReluCustomTilingData(totalLength, tile_num, np.float32(negative_slope)), num_blocks


def run(x, negative_slope: float = 0.0, *, num_blocks: int = NUM_BLOCKS,
        tile_num: int = TILE_NUM, y_device=None) -> np.ndarray:
    """Host code. ``x`` must be float32 (the op's only registered type). ``y_device`` is the
    output's device memory before the launch (default zeros): elements the kernel does not
    compute keep it."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise TypeError(f"LeakyReluCustom: x is {x.dtype}; the op registers DT_FLOAT only")
    tiling, block_dim = TilingFunc(x.size, negative_slope, num_blocks, tile_num)
    x_dev = np.ascontiguousarray(x).reshape(-1).copy()
    y_dev = np.zeros_like(x_dev) if y_device is None else np.array(y_device, np.float32)
    ac.launch(leaky_relu_custom, block_dim, x_dev, y_dev, None, tiling)
    return y_dev.reshape(x.shape)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    n = NUM_BLOCKS * TILE_NUM * BUFFER_NUM * STATIC_TILE_LENGTH
    x = (rng.standard_normal(n) * 10).astype(np.float32)
    y = run(x, 0.01)
    ref = np.where(x >= 0, x, x * np.float32(0.01))
    print(f"float: {n} elements on {NUM_BLOCKS} blocks, equal to LeakyRelu: "
          f"{np.array_equal(y, ref)}")
