"""TPipe, TQue, TBuf and LocalMemAllocator: Unified Buffer management.

The emulation executes a kernel's stages (CopyIn, Compute, CopyOut) in program order, so the
queues do not synchronise anything; they check that each buffer goes through its life cycle
(AllocTensor -> EnQue -> DeQue -> FreeTensor) as the device requires, and report misuse that
would hang or race on the device.
"""

from __future__ import annotations

import collections

from numpy.typing import DTypeLike

from ._aicore import AICore, _check_int, current_core
from ._errors import AscendCTypeError, ConstraintError, QueueError
from ._tensor import LocalTensor
from ._types import UB_POSITIONS, TPosition, as_dtype, type_name

__all__ = ["TPipe", "TQue", "TBuf", "LocalMemAllocator"]

_FREE, _ALLOCATED, _QUEUED, _DEQUEUED = "free", "allocated", "enqueued", "dequeued"


def _ub_position(position, what: str) -> TPosition:
    if not isinstance(position, TPosition):
        raise AscendCTypeError(f"{what}: position must be a TPosition, got {position!r}")
    if position not in UB_POSITIONS:
        raise ConstraintError(
            f"{what}: position {position.name} is not emulated; only the Unified Buffer "
            f"positions VECIN, VECOUT and VECCALC are")
    return position


class TQue:
    """A queue of ``num`` equal buffers (``InitBuffer(que, num, len)``) at one position.

    ``depth`` is the template argument of ``TQue<pos, depth>``; two buffers give double
    buffering (CopyIn of tile i+1 can proceed while tile i is computed).
    """

    def __init__(self, position: TPosition, depth: int = 1):
        self.position = _ub_position(position, "TQue")
        self.depth = _check_int(depth, "TQue: depth", lo=1)
        self._core: AICore | None = None
        self._addrs: list[int] = []
        self._len = 0
        self._state: list[str] = []
        self._queue: collections.deque[LocalTensor] = collections.deque()

    def _init(self, core: AICore, addrs: list[int], length: int) -> None:
        if self._addrs:
            raise ConstraintError("TPipe.InitBuffer: this TQue already has its buffers")
        self._core, self._addrs, self._len = core, addrs, length
        self._state = [_FREE] * len(addrs)

    def _index(self, tensor, what: str) -> int:
        if not isinstance(tensor, LocalTensor):
            raise AscendCTypeError(f"TQue.{what}: expected a LocalTensor, got {tensor!r}")
        if tensor._owner is not self or tensor.GetPhyAddr() not in self._addrs:
            raise QueueError(
                f"TQue.{what}: {tensor!r} was not allocated from this queue (pass the tensor "
                f"AllocTensor/DeQue returned, not an offset view)")
        return self._addrs.index(tensor.GetPhyAddr())

    def AllocTensor(self, dtype: DTypeLike) -> LocalTensor:
        dtype = as_dtype(dtype, "TQue.AllocTensor")
        if not self._addrs:
            raise QueueError("TQue.AllocTensor: call TPipe.InitBuffer on this queue first")
        for i, state in enumerate(self._state):
            if state == _FREE:
                self._state[i] = _ALLOCATED
                return LocalTensor(self._core.ub, self._addrs[i], dtype,
                                   self._len // dtype.itemsize, self.position, owner=self)
        raise QueueError(
            f"TQue.AllocTensor: all {len(self._addrs)} buffers of this {self.position.name} "
            f"queue are in use (states: {', '.join(self._state)}); FreeTensor one first — on "
            f"the device this call would wait forever")

    def EnQue(self, tensor: LocalTensor) -> bool:
        i = self._index(tensor, "EnQue")
        if self._state[i] != _ALLOCATED:
            raise QueueError(
                f"TQue.EnQue: the buffer is {self._state[i]}; only a tensor from AllocTensor "
                f"can be enqueued")
        self._state[i] = _QUEUED
        self._queue.append(tensor)
        return True

    def DeQue(self, dtype: DTypeLike = None) -> LocalTensor:
        if not self._queue:
            raise QueueError(
                f"TQue.DeQue: the {self.position.name} queue is empty (nothing was EnQue'd); "
                f"on the device this call would wait forever")
        tensor = self._queue.popleft()
        self._state[self._addrs.index(tensor.GetPhyAddr())] = _DEQUEUED
        if dtype is not None and as_dtype(dtype, "TQue.DeQue") != tensor.dtype:
            tensor = tensor.ReinterpretCast(dtype)
        return tensor

    def FreeTensor(self, tensor: LocalTensor) -> None:
        i = self._index(tensor, "FreeTensor")
        if self._state[i] not in (_ALLOCATED, _DEQUEUED):
            raise QueueError(
                f"TQue.FreeTensor: the buffer is {self._state[i]}; free a tensor after DeQue "
                f"(or an allocated one never enqueued), once")
        self._state[i] = _FREE

    def GetTensorCountInQue(self) -> int:
        return len(self._queue)

    def HasTensorInQue(self) -> bool:
        return bool(self._queue)

    def VacantInQue(self) -> bool:
        return _FREE in self._state

    def __repr__(self) -> str:
        return (f"TQue({self.position.name}, depth={self.depth}, buffers={len(self._addrs)}"
                f"x{self._len}B)")


class TBuf:
    """A single scratch buffer (usually VECCALC), taken whole with :meth:`Get`."""

    def __init__(self, position: TPosition = TPosition.VECCALC):
        self.position = _ub_position(position, "TBuf")
        self._core: AICore | None = None
        self._addr = -1
        self._len = 0

    def _init(self, core: AICore, addr: int, length: int) -> None:
        if self._addr >= 0:
            raise ConstraintError("TPipe.InitBuffer: this TBuf already has its buffer")
        self._core, self._addr, self._len = core, addr, length

    def Get(self, dtype: DTypeLike, len: int | None = None) -> LocalTensor:  # noqa: A002 (Ascend C name)
        dtype = as_dtype(dtype, "TBuf.Get")
        if self._addr < 0:
            raise ConstraintError("TBuf.Get: call TPipe.InitBuffer on this TBuf first")
        n = self._len // dtype.itemsize
        if len is not None:
            len = _check_int(len, "TBuf.Get: len", lo=0, hi=n)
            n = len
        return LocalTensor(self._core.ub, self._addr, dtype, n, self.position, owner=self)

    def GetWithOffset(self, dtype: DTypeLike, size: int, bufOffset: int) -> LocalTensor:
        dtype = as_dtype(dtype, "TBuf.GetWithOffset")
        if self._addr < 0:
            raise ConstraintError("TBuf.GetWithOffset: call TPipe.InitBuffer on this TBuf first")
        bufOffset = _check_int(bufOffset, "TBuf.GetWithOffset: bufOffset", lo=0)
        size = _check_int(size, "TBuf.GetWithOffset: size", lo=0)
        if bufOffset % 32:
            raise ConstraintError(
                f"TBuf.GetWithOffset: bufOffset {bufOffset} is not 32-byte aligned")
        if bufOffset + size * dtype.itemsize > self._len:
            raise ConstraintError(
                f"TBuf.GetWithOffset: {size} x {type_name(dtype)} at offset {bufOffset} does "
                f"not fit in the {self._len}-byte buffer")
        return LocalTensor(self._core.ub, self._addr + bufOffset, dtype, size, self.position,
                           owner=self)

    def __repr__(self) -> str:
        return f"TBuf({self.position.name}, {self._len}B)"


class TPipe:
    """Hands out the Unified Buffer of the current core to queues and scratch buffers.

    >>> from leakyops.ascendc import AICore, TPipe, TQue, TPosition, half
    >>> with AICore(ub_size=4096):
    ...     pipe = TPipe()
    ...     q = TQue(TPosition.VECIN, 2)
    ...     _ = pipe.InitBuffer(q, 2, 1000)   # two 1000-byte buffers, rounded up to 1024 each
    ...     t = q.AllocTensor(half)
    ...     (t.GetSize(), t.GetPhyAddr(), pipe.core.ub.free)
    (500, 0, 2048)
    """

    MAX_BUFFERS = 64   # QBUF_MAX_LEN: all buffers InitBuffer hands out, queues and TBufs

    def __init__(self) -> None:
        self.core = current_core()
        self._mark = self.core.ub.used
        self._buffers = 0

    def _reserve(self, count: int, what: str) -> None:
        if self._buffers + count > self.MAX_BUFFERS:
            raise ConstraintError(
                f"{what}: this TPipe would manage {self._buffers + count} buffers; at most "
                f"{self.MAX_BUFFERS} are allowed in one kernel (the vendor's CPU-debug build "
                f"asserts 'Total buffer num managed by TPipe ... should be in range (0, 64]')")

    def InitBuffer(self, que_or_buf: TQue | TBuf, *args: int) -> bool:
        ub = self.core.ub
        if isinstance(que_or_buf, TQue):
            if len(args) != 2:
                raise TypeError("TPipe.InitBuffer(que, num, len): give the buffer count and length")
            num = _check_int(args[0], "TPipe.InitBuffer: num", lo=1, hi=255)
            length = _check_int(args[1], "TPipe.InitBuffer: len", lo=1)
            what = f"TPipe.InitBuffer({que_or_buf.position.name} queue, {num}, {length})"
            self._reserve(num, what)
            if que_or_buf._addrs:
                raise ConstraintError("TPipe.InitBuffer: this TQue already has its buffers")
            addrs = [ub.allocate(length, what) for _ in range(num)]
            que_or_buf._init(self.core, addrs, length)
            self._buffers += num
            return True
        if isinstance(que_or_buf, TBuf):
            if len(args) != 1:
                raise TypeError("TPipe.InitBuffer(buf, len): give the buffer length")
            length = _check_int(args[0], "TPipe.InitBuffer: len", lo=1)
            what = f"TPipe.InitBuffer({que_or_buf.position.name} TBuf, {length})"
            self._reserve(1, what)
            if que_or_buf._addr >= 0:
                raise ConstraintError("TPipe.InitBuffer: this TBuf already has its buffer")
            que_or_buf._init(self.core, ub.allocate(length, what), length)
            self._buffers += 1
            return True
        raise AscendCTypeError(f"TPipe.InitBuffer: expected a TQue or TBuf, got {que_or_buf!r}")

    def Destroy(self) -> None:
        """Give this pipe's Unified Buffer back (allocations made after it go too), and its
        buffer count."""
        self.core.ub.release_to(self._mark)
        self._buffers = 0

    Reset = Destroy


class LocalMemAllocator:
    """Linear allocation of LocalTensors without a pipe (``LocalMemAllocator<Hardware::UB>``)."""

    def __init__(self) -> None:
        self.core = current_core()

    def Alloc(self, dtype: DTypeLike, count: int, position: TPosition = TPosition.VECCALC) -> LocalTensor:
        dtype = as_dtype(dtype, "LocalMemAllocator.Alloc")
        count = _check_int(count, "LocalMemAllocator.Alloc: count", lo=0)
        position = _ub_position(position, "LocalMemAllocator.Alloc")
        addr = self.core.ub.allocate(count * dtype.itemsize,
                                     f"LocalMemAllocator.Alloc<{type_name(dtype)}, {count}>")
        return LocalTensor(self.core.ub, addr, dtype, count, position, owner=self)
