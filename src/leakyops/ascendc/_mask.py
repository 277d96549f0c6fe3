"""The vector mask register, UnaryRepeatParams, and the address pattern of a masked call.

A "tensor high-dimension split" call (mask, repeatTime, repeatParams) reads, per repeat,
8 DataBlocks of 32 bytes: lane ``j`` of repeat ``r`` is element

    r * repStride * E  +  (j // E) * blkStride * E  +  j % E        (E = 32 / sizeof(T))

of the operand, and it takes part when bit ``j`` of the 128-bit mask is set (Normal mode),
or, in Counter mode, while fewer than the set number of elements have been processed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._aicore import _check_int, current_core
from ._errors import AscendCTypeError, ConstraintError
from ._types import (DEFAULT_BLK_NUM, FULL_MASK, ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, MaskMode,
                     as_dtype, half)

__all__ = ["UnaryRepeatParams", "SetVectorMask", "SetMaskCount", "SetMaskNorm", "ResetMask",
           "GetMaskMode"]


@dataclass
class UnaryRepeatParams:
    """``UnaryRepeatParams{dstBlkStride, srcBlkStride, dstRepStride, srcRepStride}``.

    Block strides: distance between the DataBlocks of one repeat, in 32-byte blocks
    (uint16, 1 = contiguous). Repeat strides: distance between the same DataBlock of two
    consecutive repeats, in 32-byte blocks (uint8, 8 = contiguous).
    """

    dstBlkStride: int = 1
    srcBlkStride: int = 1
    dstRepStride: int = 8
    srcRepStride: int = 8
    halfBlock: bool = False
    blockNumber: int = DEFAULT_BLK_NUM

    def validated(self, what: str) -> "UnaryRepeatParams":
        for name, hi in (("dstBlkStride", 65535), ("srcBlkStride", 65535),
                         ("dstRepStride", 255), ("srcRepStride", 255)):
            _check_int(getattr(self, name), f"{what}: repeatParams.{name}", lo=0, hi=hi)
        return self


def as_repeat_params(p, what: str) -> UnaryRepeatParams:
    """Accept a UnaryRepeatParams or a 4-sequence ``{1, 1, 8, 8}`` as in C++ brace init."""
    if isinstance(p, UnaryRepeatParams):
        return p.validated(what)
    if isinstance(p, (tuple, list)) and len(p) in (4, 5):
        return UnaryRepeatParams(*p).validated(what)
    raise AscendCTypeError(
        f"{what}: repeatParams must be UnaryRepeatParams or (dstBlkStride, srcBlkStride, "
        f"dstRepStride, srcRepStride), got {p!r}")


def lanes_of(dtype) -> int:
    """Elements per repeat: 128 for 16-bit types, 64 for 32-bit types."""
    return ONE_REPEAT_BYTE_SIZE // np.dtype(dtype).itemsize


def continuous_bits(length: int, lanes: int) -> tuple[int, int]:
    """(high, low) words of a mask selecting the first ``length`` lanes (clamped to lanes)."""
    length = min(length, lanes)
    bits = (1 << length) - 1
    return (bits >> 64) & FULL_MASK, bits & FULL_MASK


def SetMaskCount() -> None:
    """Counter mode: the mask register holds the number of elements to process."""
    current_core().mask_mode = MaskMode.COUNTER


def SetMaskNorm() -> None:
    """Normal mode (the default): the mask register selects lanes within each repeat."""
    current_core().mask_mode = MaskMode.NORMAL


def GetMaskMode() -> MaskMode:
    return current_core().mask_mode


def ResetMask() -> None:
    """Restore the default mask (all lanes) after ``SetVectorMask``."""
    current_core().reset_mask()


def SetVectorMask(*args, dtype=half, mode: MaskMode = MaskMode.NORMAL) -> None:
    """``SetVectorMask<T, mode>(maskHigh, maskLow)`` or ``SetVectorMask<T, mode>(len)``.

    Used by vector calls with ``isSetMask=False``. Normal mode: two 64-bit words (bit j of
    maskLow is lane j, of maskHigh lane 64+j) or a length (the first ``len`` lanes of T).
    Counter mode: ``len`` (or ``maskLow`` with ``maskHigh = 0``) elements in all.
    """
    dt = as_dtype(dtype, "SetVectorMask")
    if not isinstance(mode, MaskMode):
        raise AscendCTypeError(f"SetVectorMask: mode must be a MaskMode, got {mode!r}")
    core = current_core()
    if len(args) == 2:
        high = _check_int(args[0], "SetVectorMask: maskHigh", lo=0, hi=FULL_MASK)
        low = _check_int(args[1], "SetVectorMask: maskLow", lo=0, hi=FULL_MASK)
        if mode is MaskMode.COUNTER and high:
            raise ConstraintError("SetVectorMask: maskHigh must be 0 in Counter mode")
    elif len(args) == 1:
        length = _check_int(args[0], "SetVectorMask: len", lo=0, hi=2**31 - 1)
        if mode is MaskMode.COUNTER:
            high, low = 0, length
        else:
            high, low = continuous_bits(length, lanes_of(dt))
    else:
        raise TypeError("SetVectorMask(maskHigh, maskLow) or SetVectorMask(len)")
    core.mask_high, core.mask_low = high, low


def lane_indices(high: int, low: int, lanes: int) -> np.ndarray:
    """Indices of the set bits among the first ``lanes`` lanes."""
    bits = np.array([low, high], dtype=np.uint64).view(np.uint8)
    return np.flatnonzero(np.unpackbits(bits, bitorder="little")[:lanes])


def element_pattern(base: int, dtype, repeats: int, blk_stride: int, rep_stride: int,
                    lanes_sel: np.ndarray) -> np.ndarray:
    """Element indices (relative to the operand's start) touched by each repeat: (R, |lanes|)."""
    e = ONE_BLK_SIZE // np.dtype(dtype).itemsize
    r = np.arange(repeats, dtype=np.int64)[:, None]
    j = lanes_sel.astype(np.int64)[None, :]
    return base + r * (rep_stride * e) + (j // e) * (blk_stride * e) + j % e
