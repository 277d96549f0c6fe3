"""DataCopy and DataCopyPad between global memory and the Unified Buffer.

Copies are byte-exact; nothing is computed. Contiguous DataCopy moves ``count * sizeof(T)``
bytes rounded *down* to a multiple of 32, as the device does; DataCopyPad moves any whole
number of elements and pads each Unified Buffer row up to 32 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._aicore import _check_int, _round_up
from ._errors import AscendCTypeError, ConstraintError
from ._tensor import GlobalTensor, LocalTensor
from ._types import ONE_BLK_SIZE, UB_POSITIONS, type_name

__all__ = ["DataCopy", "DataCopyPad", "DataCopyParams", "DataCopyExtParams",
           "DataCopyPadExtParams"]


@dataclass
class DataCopyParams:
    """``DataCopyParams{blockCount, blockLen, srcStride, dstStride}``.

    With DataCopy, ``blockLen`` and the strides count 32-byte blocks; with DataCopyPad,
    ``blockLen`` counts bytes (the strides as in :class:`DataCopyExtParams`).
    """

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0


@dataclass
class DataCopyExtParams:
    """``DataCopyExtParams{blockCount, blockLen, srcStride, dstStride, rsv}`` for DataCopyPad.

    ``blockLen`` in bytes; a global-memory stride in bytes, a Unified Buffer stride in
    32-byte blocks (the gap between the end of one block and the start of the next).
    """

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0
    rsv: int = 0


@dataclass
class DataCopyPadExtParams:
    """``DataCopyPadExtParams<T>{isPad, leftPadding, rightPadding, paddingValue}``."""

    isPad: bool = False
    leftPadding: int = 0
    rightPadding: int = 0
    paddingValue: float = 0


def _local_bytes(t: LocalTensor, what: str) -> np.ndarray:
    if t.position not in UB_POSITIONS:
        raise ConstraintError(f"{what}: LocalTensor position {t.position.name} is not a Unified "
                              f"Buffer position (VECIN, VECOUT, VECCALC)")
    if t.GetPhyAddr() % ONE_BLK_SIZE:
        raise ConstraintError(
            f"{what}: Unified Buffer address {t.GetPhyAddr()} is not 32-byte aligned (general "
            f"address alignment constraint)")
    return t.ub.data[t.GetPhyAddr():t.GetPhyAddr() + t.GetLength()]


def _global_bytes(t: GlobalTensor) -> np.ndarray:
    return t.numpy().view(np.uint8)


def _operands(dst, src, what: str):
    """Byte views of dst and src, the element type and the direction."""
    kinds = (type(dst), type(src))
    if kinds == (LocalTensor, GlobalTensor):
        direction = "GM->UB"
    elif kinds == (GlobalTensor, LocalTensor):
        direction = "UB->GM"
    elif kinds == (LocalTensor, LocalTensor):
        direction = "UB->UB"
    else:
        raise AscendCTypeError(
            f"{what}: copies GlobalTensor<->LocalTensor or LocalTensor->LocalTensor, got "
            f"{kinds[0].__name__} <- {kinds[1].__name__}")
    if dst.dtype != src.dtype:
        raise AscendCTypeError(
            f"{what}: dst is {type_name(dst.dtype)} but src is {type_name(src.dtype)}; the "
            f"types must match")
    dbytes = _local_bytes(dst, what) if isinstance(dst, LocalTensor) else _global_bytes(dst)
    sbytes = _local_bytes(src, what) if isinstance(src, LocalTensor) else _global_bytes(src)
    return dbytes, sbytes, dst.dtype, direction


def _copy_blocks(what, dbytes, sbytes, count, length, src_pitch, dst_pitch):
    """Copy ``count`` blocks of ``length`` bytes at the given pitches, checking bounds first."""
    if count == 0 or length == 0:
        return
    src_end = (count - 1) * src_pitch + length
    dst_end = (count - 1) * dst_pitch + length
    if src_end > sbytes.size:
        raise ConstraintError(f"{what}: reads {src_end} bytes but src holds {sbytes.size}")
    if dst_end > dbytes.size:
        raise ConstraintError(f"{what}: writes {dst_end} bytes but dst holds {dbytes.size}")
    if src_pitch == length and dst_pitch == length:
        dbytes[:count * length] = sbytes[:count * length]
        return
    for b in range(count):
        dbytes[b * dst_pitch:b * dst_pitch + length] = sbytes[b * src_pitch:b * src_pitch + length]


def DataCopy(dst: LocalTensor | GlobalTensor, src: LocalTensor | GlobalTensor,
             count_or_params: int | DataCopyParams) -> None:
    """``DataCopy(dst, src, count)`` or ``DataCopy(dst, src, DataCopyParams)``.

    GlobalTensor -> LocalTensor, LocalTensor -> GlobalTensor or LocalTensor -> LocalTensor.
    With a count, ``count * sizeof(T)`` bytes rounded down to a multiple of 32 are moved (a
    tail that is not a whole 32-byte block is silently left behind, as on the device: use
    DataCopyPad for it). Unified Buffer addresses must be 32-byte aligned.
    """
    dbytes, sbytes, dtype, direction = _operands(dst, src, "DataCopy")
    if isinstance(count_or_params, DataCopyParams):
        p = count_or_params
        what = f"DataCopy({direction}, DataCopyParams)"
        n = _check_int(p.blockCount, f"{what}: blockCount", lo=0, hi=4095)
        blen = _check_int(p.blockLen, f"{what}: blockLen", lo=0, hi=65535) * ONE_BLK_SIZE
        ss = _check_int(p.srcStride, f"{what}: srcStride", lo=0, hi=65535) * ONE_BLK_SIZE
        ds = _check_int(p.dstStride, f"{what}: dstStride", lo=0, hi=65535) * ONE_BLK_SIZE
        _copy_blocks(what, dbytes, sbytes, n, blen, blen + ss, blen + ds)
        return
    what = f"DataCopy({direction})"
    count = _check_int(count_or_params, f"{what}: count", lo=0)
    size_d, size_s = dbytes.size // dtype.itemsize, sbytes.size // dtype.itemsize
    if count > size_d or count > size_s:
        raise ConstraintError(
            f"{what}: count {count} is past the end (dst has {size_d}, src has {size_s} "
            f"elements)")
    nbytes = count * dtype.itemsize // ONE_BLK_SIZE * ONE_BLK_SIZE
    _copy_blocks(what, dbytes, sbytes, 1, nbytes, nbytes, nbytes)


def DataCopyPad(dst: LocalTensor | GlobalTensor, src: LocalTensor | GlobalTensor,
                params: DataCopyExtParams | DataCopyParams,
                padParams: DataCopyPadExtParams | None = None) -> None:
    """Unaligned copies: ``DataCopyPad(local, global, params, padParams)`` (GM -> UB, each row
    padded to 32 bytes) or ``DataCopyPad(global, local, params)`` (UB -> GM, exact bytes).

    ``params`` is a :class:`DataCopyExtParams` (or :class:`DataCopyParams`) with ``blockLen``
    in bytes, a multiple of ``sizeof(T)``. For GM -> UB, padding follows ``padParams``: with
    ``isPad`` the left/right padding and the filler up to 32 bytes take ``paddingValue``;
    without padding the filler repeats the row's first element (the device's dummy data).
    """
    dbytes, sbytes, dtype, direction = _operands(dst, src, "DataCopyPad")
    what = f"DataCopyPad({direction})"
    if direction == "UB->UB":
        raise AscendCTypeError(f"{what}: DataCopyPad copies between GM and UB only")
    if not isinstance(params, (DataCopyExtParams, DataCopyParams)):
        raise AscendCTypeError(f"{what}: params must be DataCopyExtParams, got {params!r}")
    isz = dtype.itemsize
    n = _check_int(params.blockCount, f"{what}: blockCount", lo=0, hi=4095)
    blen = _check_int(params.blockLen, f"{what}: blockLen", lo=0, hi=2097151)
    ss = _check_int(params.srcStride, f"{what}: srcStride", lo=0, hi=2**32 - 1)
    ds = _check_int(params.dstStride, f"{what}: dstStride", lo=0, hi=2**32 - 1)
    if blen % isz:
        raise ConstraintError(f"{what}: blockLen {blen} is not a multiple of "
                              f"sizeof({type_name(dtype)}) = {isz}")
    if n == 0 or blen == 0:
        return  # documented NOP
    if direction == "UB->GM":
        if padParams is not None:
            raise TypeError(f"{what}: padParams apply to GM -> UB copies only")
        row = _round_up(blen)
        _copy_blocks(what, dbytes, sbytes, n, blen, row + ss * ONE_BLK_SIZE, blen + ds)
        return
    pad = padParams if padParams is not None else DataCopyPadExtParams()
    left = _check_int(pad.leftPadding, f"{what}: leftPadding", lo=0)
    right = _check_int(pad.rightPadding, f"{what}: rightPadding", lo=0)
    if left * isz > ONE_BLK_SIZE or right * isz > ONE_BLK_SIZE:
        raise ConstraintError(f"{what}: leftPadding/rightPadding may not exceed 32 bytes each")
    row = _round_up(left * isz + blen + right * isz)
    dst_pitch = row + ds * ONE_BLK_SIZE
    src_pitch = blen + ss
    if (n - 1) * src_pitch + blen > sbytes.size:
        raise ConstraintError(
            f"{what}: reads {(n - 1) * src_pitch + blen} bytes but src holds {sbytes.size}")
    if (n - 1) * dst_pitch + row > dbytes.size:
        raise ConstraintError(
            f"{what}: writes {(n - 1) * dst_pitch + row} bytes but dst holds {dbytes.size}")
    delems = dbytes.view(dtype)
    selems = sbytes[:(n - 1) * src_pitch + blen]
    fill = np.array(pad.paddingValue).astype(dtype) if pad.isPad else None
    for b in range(n):
        d0 = b * dst_pitch // isz
        data = selems[b * src_pitch:b * src_pitch + blen].view(dtype)
        k = blen // isz
        if fill is not None:
            delems[d0:d0 + row // isz] = fill
        elif left == 0 and right == 0:
            delems[d0 + k:d0 + row // isz] = data[0]
        delems[d0 + left:d0 + left + k] = data
