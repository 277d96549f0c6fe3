"""LocalTensor (Unified Buffer) and GlobalTensor (global memory, i.e. NumPy arrays)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from .. import _core
from ._aicore import UnifiedBuffer, _check_int, current_core
from ._errors import AscendCTypeError, ConstraintError
from ._types import ONE_BLK_SIZE, UB_POSITIONS, TPosition, as_dtype, type_name

__all__ = ["LocalTensor", "GlobalTensor"]


def _slice_bounds(key: object, size: int, what: str) -> tuple[int, int]:
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        raise TypeError(
            f"{what}[{key}]: use {what}[{key}:] for Ascend C's operator[] (a tensor starting at "
            f"element {key}) or GetValue({key}) for the element")
    if not isinstance(key, slice) or key.step not in (None, 1):
        raise TypeError(f"{what}: index with [offset:] or [offset:stop], got {key!r}")
    start = 0 if key.start is None else _check_int(key.start, f"{what}: offset", lo=0)
    stop = size if key.stop is None else _check_int(key.stop, f"{what}: stop", lo=0)
    if start > size or stop > size or stop < start:
        raise ConstraintError(
            f"{what}[{start}:{stop}]: out of range for a tensor of {size} elements")
    return start, stop


if TYPE_CHECKING:
    class _LocalTensorType(type):
        """What type checkers see of ``LocalTensor[T]`` (at run time it is ``__class_getitem__``)."""

        def __getitem__(cls, dtype: DTypeLike) -> Callable[[TPosition, int, int], LocalTensor]: ...
else:
    _LocalTensorType = type


class LocalTensor(metaclass=_LocalTensorType):
    """A typed window on the Unified Buffer of one core.

    Made by ``TQue.AllocTensor``, ``TBuf.Get`` or ``LocalMemAllocator.Alloc``, or — static
    tensor programming — by ``LocalTensor[T](pos, addr, tileSize)`` (C++ ``LocalTensor<T>(pos,
    addr, tileSize)``): ``tileSize`` elements of ``T`` at byte ``addr`` of the current core's
    Unified Buffer. Never owns memory. ``t[i:]`` is Ascend C's ``t[i]`` (the tensor starting
    ``i`` elements further on, whose start address may then be unaligned); :meth:`numpy` is a
    writable NumPy view.

    >>> from leakyops.ascendc import AICore, LocalTensor, TPosition, float32
    >>> with AICore():
    ...     t = LocalTensor[float32](TPosition.VECIN, 128, 32)
    ...     (t.GetPhyAddr(), t.GetSize(), t.GetLength(), t.GetPosition().name)
    (128, 32, 128, 'VECIN')
    """

    __slots__ = ("_ub", "_addr", "_dtype", "_size", "_position", "_owner")

    def __class_getitem__(cls, dtype: DTypeLike) -> Callable[[TPosition, int, int], LocalTensor]:
        """``LocalTensor[T]``: the static-tensor constructor ``(pos, addr, tileSize)``."""
        dt = as_dtype(dtype, "LocalTensor<T>")

        def construct(pos: TPosition, addr: int, tileSize: int) -> LocalTensor:
            return cls._static(dt, pos, addr, tileSize)

        construct.__name__ = f"LocalTensor<{type_name(dt)}>"
        construct.__doc__ = cls._static.__doc__
        return construct

    @classmethod
    def _static(cls, dtype: np.dtype[Any], pos: TPosition, addr: int, tileSize: int) -> LocalTensor:
        """``LocalTensor<T>(TPosition pos, uint32_t addr, uint32_t tileSize)``: the address must
        be 32-byte aligned and ``addr + tileSize * sizeof(T)`` inside the physical memory."""
        what = f"LocalTensor<{type_name(dtype)}>(pos, addr, tileSize)"
        if not isinstance(pos, TPosition):
            raise AscendCTypeError(f"{what}: pos must be a TPosition, got {pos!r}")
        if pos not in UB_POSITIONS:
            raise ConstraintError(
                f"{what}: position {pos.name} is not emulated; only the Unified Buffer positions "
                f"VECIN, VECOUT and VECCALC are")
        addr = _check_int(addr, f"{what}: addr", lo=0, hi=2**32 - 1)
        size = _check_int(tileSize, f"{what}: tileSize", lo=0, hi=2**32 - 1)
        if addr % ONE_BLK_SIZE:
            raise ConstraintError(f"{what}: addr {addr} is not 32-byte aligned (the start address "
                                  f"of a LocalTensor must be)")
        ub = current_core().ub
        if addr + size * dtype.itemsize > ub.capacity:
            raise ConstraintError(
                f"{what}: [{addr}, {addr + size * dtype.itemsize}) is outside the "
                f"{ub.capacity}-byte Unified Buffer (addr + tileSize * sizeof(T) must stay "
                f"inside the physical memory)")
        return cls(ub, addr, dtype, size, pos)

    def __init__(self, ub: UnifiedBuffer, addr: int, dtype: DTypeLike, size: int | None = None,
                 position: TPosition = TPosition.VECCALC, owner: object = None):
        if isinstance(ub, TPosition):
            raise TypeError("LocalTensor(pos, addr, tileSize): give the element type as in C++ "
                            "LocalTensor<T>(pos, addr, tileSize): write LocalTensor[T](pos, addr, "
                            "tileSize)")
        if size is None:
            raise TypeError("LocalTensor(ub, addr, dtype, size): the size is missing")
        dtype = as_dtype(dtype, "LocalTensor")
        if not isinstance(position, TPosition):
            raise AscendCTypeError(f"LocalTensor: position must be a TPosition, got {position!r}")
        if addr % dtype.itemsize:
            raise ConstraintError(
                f"LocalTensor: address {addr} is not a multiple of sizeof({type_name(dtype)})")
        if addr < 0 or size < 0 or addr + size * dtype.itemsize > ub.capacity:
            raise ConstraintError(
                f"LocalTensor: [{addr}, {addr + size * dtype.itemsize}) is outside the "
                f"{ub.capacity}-byte Unified Buffer")
        self._ub = ub
        self._addr = addr
        self._dtype = dtype
        self._size = size
        self._position = position
        self._owner = owner

    # --- Ascend C methods ---------------------------------------------------------------
    def GetSize(self) -> int:
        """Number of elements."""
        return self._size

    def GetLength(self) -> int:
        """Length in bytes."""
        return self._size * self._dtype.itemsize

    def GetPhyAddr(self) -> int:
        """Start address: a byte offset into the Unified Buffer."""
        return self._addr

    def GetPosition(self) -> TPosition:
        return self._position

    def GetValue(self, index: int) -> np.generic[float]:
        index = _check_int(index, "LocalTensor.GetValue: index", lo=0, hi=self._size - 1)
        return self.numpy()[index]

    def SetValue(self, index: int, value: float | np.generic[float]) -> None:
        index = _check_int(index, "LocalTensor.SetValue: index", lo=0, hi=self._size - 1)
        self.numpy()[index] = value

    def ReinterpretCast(self, dtype: DTypeLike) -> LocalTensor:
        """The same bytes seen as another element type."""
        dtype = as_dtype(dtype, "LocalTensor.ReinterpretCast")
        return LocalTensor(self._ub, self._addr, dtype, self.GetLength() // dtype.itemsize,
                           self._position, self._owner)

    def __getitem__(self, key: slice) -> LocalTensor:
        start, stop = _slice_bounds(key, self._size, "LocalTensor")
        return LocalTensor(self._ub, self._addr + start * self._dtype.itemsize, self._dtype,
                           stop - start, self._position, self._owner)

    # --- Python conveniences ------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype[np.generic[float]]:
        return self._dtype

    @property
    def position(self) -> TPosition:
        return self._position

    @property
    def ub(self) -> UnifiedBuffer:
        return self._ub

    def numpy(self) -> np.ndarray[tuple[int], np.dtype[np.generic[float]]]:
        """A writable view of the elements (no copy)."""
        start = self._addr // self._dtype.itemsize
        return self._ub.view(self._dtype)[start:start + self._size]

    def __repr__(self) -> str:
        return (f"LocalTensor<{type_name(self._dtype)}>({self._position.name}, "
                f"addr={self._addr}, size={self._size})")


class GlobalTensor:
    """A typed window on global memory: a 1-D C-contiguous NumPy array.

    ``SetGlobalBuffer(array)`` plays ``SetGlobalBuffer((__gm__ T*)ptr, size)``; pointer
    arithmetic is slicing the array first (``x[offset:]``) or ``gm[offset:]``. A ``uint8``
    array is raw memory and is reinterpreted as ``T``.
    """

    __slots__ = ("_dtype", "_array")

    def __init__(self, dtype: DTypeLike = None):
        self._dtype = None if dtype is None else as_dtype(dtype, "GlobalTensor")
        self._array = None

    def SetGlobalBuffer(self, buffer: np.ndarray[Any, Any], bufferSize: int | None = None) -> None:
        if not isinstance(buffer, np.ndarray):
            raise AscendCTypeError(
                f"GlobalTensor.SetGlobalBuffer: expected a NumPy array (global memory), got "
                f"{type(buffer).__name__}")
        try:  # the memory as a plain ndarray (an np.matrix stays 2-D when reshaped)
            buffer = _core.plain_view(buffer, "GlobalTensor.SetGlobalBuffer", "buffer",
                                      writable=False, any_dtype=True)
        except TypeError as exc:  # a masked array: its mask would be ignored
            raise AscendCTypeError(str(exc)) from None
        if not buffer.flags.c_contiguous:
            raise ConstraintError(
                "GlobalTensor.SetGlobalBuffer: the array must be C-contiguous (global memory is "
                "addressed linearly)")
        flat = buffer.reshape(-1)
        dtype = self._dtype
        if dtype is None:
            dtype = self._dtype = as_dtype(flat.dtype, "GlobalTensor.SetGlobalBuffer")
        if flat.dtype != dtype:
            if flat.dtype != np.uint8:
                raise AscendCTypeError(
                    f"GlobalTensor<{type_name(dtype)}>.SetGlobalBuffer: array has dtype "
                    f"{flat.dtype}; pass a {dtype} array or raw uint8 bytes")
            usable = flat.size - flat.size % dtype.itemsize
            flat = flat[:usable].view(dtype)
        if bufferSize is not None:
            bufferSize = _check_int(bufferSize, "GlobalTensor.SetGlobalBuffer: bufferSize",
                                    lo=0, hi=flat.size)
            flat = flat[:bufferSize]
        self._array = flat

    def _require(self) -> np.ndarray[tuple[int], np.dtype[np.generic[float]]]:
        if self._array is None:
            raise ConstraintError("GlobalTensor: SetGlobalBuffer has not been called")
        return self._array

    def GetSize(self) -> int:
        return self._require().size

    def GetValue(self, index: int) -> np.generic[float]:
        arr = self._require()
        index = _check_int(index, "GlobalTensor.GetValue: index", lo=0, hi=arr.size - 1)
        return arr[index]

    def SetValue(self, index: int, value: float | np.generic[float]) -> None:
        arr = self._require()
        index = _check_int(index, "GlobalTensor.SetValue: index", lo=0, hi=arr.size - 1)
        arr[index] = value

    def __getitem__(self, key: slice) -> GlobalTensor:
        arr = self._require()
        start, stop = _slice_bounds(key, arr.size, "GlobalTensor")
        out = GlobalTensor(self._dtype)
        out._array = arr[start:stop]
        return out

    @property
    def dtype(self) -> np.dtype[np.generic[float]] | None:
        return self._dtype

    def numpy(self) -> np.ndarray[tuple[int], np.dtype[np.generic[float]]]:
        """The elements as a NumPy view (no copy)."""
        return self._require()

    def __repr__(self) -> str:
        size = "unset" if self._array is None else f"size={self._array.size}"
        name = "?" if self._dtype is None else type_name(self._dtype)
        return f"GlobalTensor<{name}>({size})"
