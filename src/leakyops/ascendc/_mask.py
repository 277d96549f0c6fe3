"""The vector mask register, UnaryRepeatParams/BinaryRepeatParams, and the address pattern.

A "tensor high-dimension split" call (mask, repeatTime, repeatParams) reads, per repeat,
8 DataBlocks of 32 bytes of its widest operand: lane ``j`` of repeat ``r`` is element

    r * repStride * E  +  (j // E) * blkStride * E  +  j % E        (E = 32 / sizeof(T))

of each operand (with that operand's own ``E`` and strides). In Normal mode lane ``j`` takes
part when bit ``j`` of the 128-bit register is set; in Counter mode the register's low word
is an element count, processed repeat after repeat with every lane on (``repeatTime`` is not
used).

The register itself follows the vendor's implementation (``AscendCUtils::SetMask``,
``kernel_utils_base.h``): a continuous mask ``len`` is stored as a bit pattern, a bitwise mask
``[mask0, mask1]`` as ``(maskHigh=mask1, maskLow=mask0)``, and it stays in the register after
the call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import DTypeLike

from ._aicore import _check_int, current_core
from ._errors import AscendCTypeError, ConstraintError
from ._types import (DEFAULT_BLK_NUM, FULL_MASK, ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, MaskMode,
                     as_dtype, half)

__all__ = ["UnaryRepeatParams", "BinaryRepeatParams", "SetVectorMask", "SetMaskCount",
           "SetMaskNorm", "ResetMask", "GetMaskMode"]

UINT32_MAX = (1 << 32) - 1


@dataclass
class UnaryRepeatParams:
    """``UnaryRepeatParams{dstBlkStride, srcBlkStride, dstRepStride, srcRepStride}``.

    Block strides: distance between the DataBlocks of one repeat, in 32-byte blocks
    (uint16, 1 = contiguous; ``dstBlkStride = 0`` is documented as unsupported). Repeat
    strides: distance between the same DataBlock of two consecutive repeats, in 32-byte blocks
    (uint8, 8 = contiguous). ``halfBlock`` and ``blockNumber`` are kept but unused (reserved,
    or CastDequant only).
    """

    dstBlkStride: int = 1
    srcBlkStride: int = 1
    dstRepStride: int = 8
    srcRepStride: int = 8
    halfBlock: bool = False
    blockNumber: int = DEFAULT_BLK_NUM

    _FIELDS = (("dstBlkStride", 65535), ("srcBlkStride", 65535), ("dstRepStride", 255),
               ("srcRepStride", 255))

    def validated(self, what: str) -> "UnaryRepeatParams":
        _validate(self, self._FIELDS, what)
        return self

    def strides(self) -> dict:
        return {"dst": (self.dstBlkStride, self.dstRepStride),
                "src": (self.srcBlkStride, self.srcRepStride)}


@dataclass
class BinaryRepeatParams:
    """``BinaryRepeatParams{dstBlkStride, src0BlkStride, src1BlkStride, dstRepStride,
    src0RepStride, src1RepStride}`` (all uint8; default ``{1, 1, 1, 8, 8, 8}``)."""

    dstBlkStride: int = 1
    src0BlkStride: int = 1
    src1BlkStride: int = 1
    dstRepStride: int = 8
    src0RepStride: int = 8
    src1RepStride: int = 8
    blockNumber: int = DEFAULT_BLK_NUM

    _FIELDS = (("dstBlkStride", 255), ("src0BlkStride", 255), ("src1BlkStride", 255),
               ("dstRepStride", 255), ("src0RepStride", 255), ("src1RepStride", 255))

    def validated(self, what: str) -> "BinaryRepeatParams":
        _validate(self, self._FIELDS, what)
        return self

    def strides(self) -> dict:
        return {"dst": (self.dstBlkStride, self.dstRepStride),
                "src0": (self.src0BlkStride, self.src0RepStride),
                "src1": (self.src1BlkStride, self.src1RepStride)}


def _validate(params, fields, what: str) -> None:
    for name, hi in fields:
        _check_int(getattr(params, name), f"{what}: repeatParams.{name}", lo=0, hi=hi)
    if params.dstBlkStride == 0:
        raise ConstraintError(
            f"{what}: repeatParams.dstBlkStride = 0 is not supported (the vendor documents it as "
            f"undefined behaviour: 'dstBlkStride不支持设置为0'); a source block stride of 0 is "
            f"allowed and re-reads the first DataBlock")


def as_repeat_params(p, what: str, binary: bool = False):
    """A RepeatParams struct, or the tuple of C++ brace initialisation: ``{1, 1, 8, 8}`` for
    unary instructions, ``{1, 1, 1, 8, 8, 8}`` for binary ones."""
    cls = BinaryRepeatParams if binary else UnaryRepeatParams
    other = UnaryRepeatParams if binary else BinaryRepeatParams
    if isinstance(p, cls):
        return p.validated(what)
    if isinstance(p, other):
        raise AscendCTypeError(
            f"{what}: repeatParams must be {cls.__name__}, got a {other.__name__}")
    sizes = (6,) if binary else (4, 5)
    if isinstance(p, (tuple, list)) and len(p) in sizes:
        return cls(*p).validated(what)
    form = ("(dstBlkStride, src0BlkStride, src1BlkStride, dstRepStride, src0RepStride, "
            "src1RepStride)") if binary else "(dstBlkStride, srcBlkStride, dstRepStride, srcRepStride)"
    raise AscendCTypeError(f"{what}: repeatParams must be {cls.__name__} or {form}, got {p!r}")


def lanes_of(dtype) -> int:
    """Elements per repeat: 128 for 16-bit types, 64 for 32-bit types."""
    return ONE_REPEAT_BYTE_SIZE // np.dtype(dtype).itemsize


def continuous_bits(length: int, lanes: int) -> tuple[int, int]:
    """(high, low) words of a mask selecting the first ``length`` lanes (clamped to lanes)."""
    length = min(length, lanes)
    bits = (1 << length) - 1
    return (bits >> 64) & FULL_MASK, bits & FULL_MASK


def device_len_bits(length: int, type_lanes: int) -> tuple[int, int]:
    """(high, low) the device writes for a continuous mask ``len`` (``AscendCUtils::SetMask<T>
    (int32_t len)``): 64 -> (0, FULL); the type's lane count or >= 128 -> (FULL, FULL);
    otherwise the first ``len`` bits. The pattern is the same whatever the mode, so in Counter
    mode a continuous mask is read back as the *number* ``2**len - 1``."""
    if length == 64:
        return 0, FULL_MASK
    if length == type_lanes or length >= 128:
        return FULL_MASK, FULL_MASK
    if length > 64:
        return (1 << (length - 64)) - 1, FULL_MASK
    return 0, (1 << length) - 1


def SetMaskCount() -> None:
    """Counter mode: the mask register holds the number of elements to process."""
    current_core().mask_mode = MaskMode.COUNTER


def SetMaskNorm() -> None:
    """Normal mode (the default): the mask register selects lanes within each repeat."""
    current_core().mask_mode = MaskMode.NORMAL


def GetMaskMode() -> MaskMode:
    return current_core().mask_mode


def ResetMask() -> None:
    """Restore the default mask (all bits set) after ``SetVectorMask``; the mode is unchanged."""
    current_core().reset_mask()


def SetVectorMask(*args: int, dtype: DTypeLike = half, mode: MaskMode = MaskMode.NORMAL) -> None:
    """``SetVectorMask<T, mode>(maskHigh, maskLow)`` or ``SetVectorMask<T, mode>(len)``.

    Used by vector calls with ``isSetMask=False``. ``mode`` is the template argument: it picks
    the encoding, not the register's mode (``SetMaskCount``/``SetMaskNorm`` do that).
    ``mode=NORMAL``: two 64-bit words (bit j of maskLow is lane j, of maskHigh lane 64+j), or a
    length stored as the device stores it (see :func:`device_len_bits`). ``mode=COUNTER``:
    ``len`` (or ``maskLow`` with ``maskHigh = 0``) elements in all.
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
            high, low = device_len_bits(length, lanes_of(dt))
    else:
        raise TypeError("SetVectorMask(maskHigh, maskLow) or SetVectorMask(len)")
    core.mask_high, core.mask_low = high, low


def lane_indices(high: int, low: int, lanes: int) -> np.ndarray:
    """Indices of the set bits among the first ``lanes`` lanes."""
    bits = np.array([low, high], dtype=np.uint64).view(np.uint8)
    return np.flatnonzero(np.unpackbits(bits, bitorder="little")[:lanes])


def lane_offsets(itemsize: int, blk_stride: int, lanes: int) -> np.ndarray:
    """Offset (in elements) of each lane inside one repeat, for an operand of ``itemsize``."""
    e = ONE_BLK_SIZE // itemsize
    j = np.arange(lanes, dtype=np.int64)
    return (j // e) * (blk_stride * e) + j % e
