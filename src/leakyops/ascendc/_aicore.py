"""The emulated AI Core: its Unified Buffer, its mask register and its block index.

Each block of a launch runs on a fresh :class:`AICore` (its own Unified Buffer, mask reset),
made current for the calling thread while the kernel function runs. Outside a launch a
default core (block 0 of 1, 192 KiB) is created lazily per thread, so the vector API can be
tried interactively; ``with AICore(...)`` gives a clean one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, SupportsInt

import numpy as np
from numpy.typing import DTypeLike

from ._errors import ConstraintError, UnifiedBufferOverflowError
from ._types import FULL_MASK, ONE_BLK_SIZE, MaskMode

__all__ = [
    "DEFAULT_UB_SIZE", "MAX_UB_SIZE", "UnifiedBuffer", "AICore", "current_core", "launch",
    "GetBlockIdx", "GetBlockNum",
]

DEFAULT_UB_SIZE = 192 * 1024  # Atlas A2/A3 AI Core Unified Buffer
#: The largest Unified Buffer a core may be given: four times the largest one modelled (Ascend
#: 950's 248 KiB; A2/A3 have 192 KiB), rounded up to a power of two. Each block of a launch
#: allocates its own, so a size is refused above this rather than tried.
MAX_UB_SIZE = 1 << 20
_POISON = 0xFF                # fresh UB bytes: NaN for half/float, so a read-before-write shows


def _round_up(n: int, unit: int = ONE_BLK_SIZE) -> int:
    return -(-n // unit) * unit


def _check_int(value: object, what: str, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ConstraintError(f"{what} must be an integer, got {value!r}")
    value = int(value)
    if lo is not None and value < lo:
        raise ConstraintError(f"{what} must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise ConstraintError(f"{what} must be <= {hi}, got {value}")
    return value


class UnifiedBuffer:
    """A fixed-capacity byte array with a stack (bump) allocator.

    Addresses are byte offsets from the start of the buffer; every allocation starts on a
    32-byte boundary and is rounded up to whole 32-byte blocks.
    """

    def __init__(self, capacity: int = DEFAULT_UB_SIZE):
        capacity = _check_int(capacity, "Unified Buffer capacity", lo=ONE_BLK_SIZE)
        if capacity > MAX_UB_SIZE:
            raise ConstraintError(
                f"Unified Buffer capacity must be at most MAX_UB_SIZE = {MAX_UB_SIZE} bytes (1 MiB: "
                f"Ascend 950's 248 KiB four times over, rounded up), got {capacity}")
        if capacity % ONE_BLK_SIZE:
            raise ConstraintError(
                f"Unified Buffer capacity must be a multiple of {ONE_BLK_SIZE} bytes, "
                f"got {capacity}")
        self.capacity = capacity
        self.data = np.full(capacity, _POISON, dtype=np.uint8)
        self._top = 0

    @property
    def used(self) -> int:
        return self._top

    @property
    def free(self) -> int:
        return self.capacity - self._top

    def allocate(self, nbytes: int, what: str) -> int:
        """Reserve ``nbytes`` (rounded up to 32) and return the start address."""
        nbytes = _check_int(nbytes, f"{what}: buffer length", lo=0)
        size = _round_up(nbytes)
        if size > self.free:
            raise UnifiedBufferOverflowError(
                f"{what}: out of Unified Buffer: asked for {nbytes} bytes ({size} in 32-byte "
                f"blocks) but only {self.free} of {self.capacity} bytes are left "
                f"({self._top} in use)")
        addr = self._top
        self._top += size
        return addr

    def release_to(self, mark: int) -> None:
        if mark < self._top:
            self._top = mark

    def view(self, dtype: DTypeLike) -> np.ndarray[tuple[int], np.dtype[np.generic[float]]]:
        """The whole buffer as elements of ``dtype`` (element i is at byte i*itemsize)."""
        return self.data.view(dtype)

    def __repr__(self) -> str:
        return f"UnifiedBuffer(capacity={self.capacity}, used={self.used})"


class AICore:
    """One emulated AI Core. Use as a context manager to make it the current core.

    >>> with AICore(ub_size=1024, block_idx=2, block_num=4) as core:
    ...     (GetBlockIdx(), GetBlockNum(), core.ub.capacity)
    (2, 4, 1024)
    """

    def __init__(self, ub_size: int = DEFAULT_UB_SIZE, block_idx: int = 0, block_num: int = 1):
        self.block_num = _check_int(block_num, "block_num", lo=1)
        self.block_idx = _check_int(block_idx, "block_idx", lo=0, hi=self.block_num - 1)
        self.ub = UnifiedBuffer(ub_size)
        self.mask_mode = MaskMode.NORMAL
        self.mask_high = FULL_MASK
        self.mask_low = FULL_MASK
        self.flags: set[tuple[Any, int]] = set()  # (HardEvent, eventID) raised by SetFlag, not yet waited for

    def reset_mask(self) -> None:
        self.mask_high = FULL_MASK
        self.mask_low = FULL_MASK

    def __enter__(self) -> "AICore":
        _stack().append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        stack = _stack()
        if stack and stack[-1] is self:
            stack.pop()

    def __repr__(self) -> str:
        return (f"AICore(block {self.block_idx} of {self.block_num}, {self.ub!r}, "
                f"mask mode {self.mask_mode.name})")


_local = threading.local()


def _stack() -> list[AICore]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_core() -> AICore:
    """The core the calling thread runs on (a default one outside any launch)."""
    stack = _stack()
    if stack:
        return stack[-1]
    default = getattr(_local, "default", None)
    if default is None:
        default = _local.default = AICore()
    return default


def GetBlockIdx() -> int:
    """Index of the block (AI Core) running the kernel, in ``[0, GetBlockNum())``."""
    return current_core().block_idx


def GetBlockNum() -> int:
    """Number of blocks the kernel was launched with (``block_dim``)."""
    return current_core().block_num


MAX_BLOCK_DIM = 65535


def launch(kernel: Callable[..., object], block_dim: int, *args: Any, ub_size: int = DEFAULT_UB_SIZE,
           block_order: Iterable[SupportsInt] | None = None, **kwargs: Any) -> None:
    """Run ``kernel(*args, **kwargs)`` once per block, like ``kernel<<<block_dim, …>>>(args)``.

    Blocks run one after another on the calling thread, each on a fresh :class:`AICore`
    (own Unified Buffer of ``ub_size`` bytes, mask reset). ``block_order`` (a permutation of
    ``range(block_dim)``) changes the order, to check that blocks do not depend on it.
    Global memory (the NumPy arrays passed as arguments) is shared by all blocks. A block that
    returns with a ``SetFlag`` never matched by a ``WaitFlag`` is an error (the vendor requires
    them in pairs).
    """
    block_dim = _check_int(block_dim, "launch: block_dim", lo=1, hi=MAX_BLOCK_DIM)
    if not callable(kernel):
        raise TypeError(f"launch: kernel must be callable, got {kernel!r}")
    order = list(range(block_dim)) if block_order is None else [int(i) for i in block_order]
    if sorted(order) != list(range(block_dim)):
        raise ConstraintError(
            f"launch: block_order must be a permutation of range({block_dim}), got {order}")
    for idx in order:
        with AICore(ub_size=ub_size, block_idx=idx, block_num=block_dim) as core:
            kernel(*args, **kwargs)
            if core.flags:
                left = ", ".join(f"SetFlag<HardEvent::{getattr(e, 'name', e)}>({i})"
                                 for e, i in sorted(core.flags))
                raise ConstraintError(
                    f"launch: block {idx} returned with {left} never matched by a WaitFlag; "
                    f"SetFlag and WaitFlag must be used in pairs")
