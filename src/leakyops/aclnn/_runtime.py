"""The emulated Ascend runtime: device memory, copies, streams, SoC profile.

Device memory is a host buffer (a NumPy ``uint8`` array) behind an opaque ``DevicePtr``.
A stream owns one worker thread that runs launched work in launch order; the launching
thread never waits for it until ``aclrtSynchronizeStream``.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeAlias, Union

import numpy as np

from .. import _core
from ._status import (
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_RT_INVALID_DEVICEID,
    ACL_ERROR_RT_MEMORY_ALLOCATION,
    ACL_ERROR_RT_PARAM_INVALID,
    ACL_SUCCESS,
    aclrtMemcpyKind,
    aclrtMemMallocPolicy,
    record_error,
)

#: Host memory for ``aclrtMemcpy``: a contiguous NumPy array or a bytes-like object.
HostBuffer: TypeAlias = Union[np.ndarray[Any, Any], bytes, bytearray, memoryview]

# --- SoC profile ----------------------------------------------------------------------------
# The names are ops-nn's SoC version names (its op_api unit-test platform stub maps
# SocVersion::ASCEND910_93 to "Ascend910_93" and SocVersion::ASCEND950 to "Ascend950").
SOC_VERSIONS = ("Ascend910", "Ascend910B", "Ascend910_93", "Ascend950")
_soc_lock = threading.Lock()
_soc = os.environ.get("LEAKYOPS_ACLNN_SOC", "Ascend910B")
if _soc not in SOC_VERSIONS:  # a bad environment value falls back to the default
    _soc = "Ascend910B"


def set_soc_version(name: str) -> None:
    """Select the emulated SoC: ``"Ascend910"`` (Atlas training: FLOAT, FLOAT16, DOUBLE),
    ``"Ascend910B"`` (Atlas A2, the default; adds BF16), ``"Ascend910_93"`` (Atlas A3) or
    ``"Ascend950"`` (Ascend 950PR/950DT). A3 and 950 take the A2 support lists in every L2
    source this module follows (see ``docs/aclnn.md``). Takes effect for every later
    ``...GetWorkspaceSize`` call in every thread. Raises ``ValueError`` for other names
    (this is configuration of the emulator, not a C API call)."""
    global _soc
    if name not in SOC_VERSIONS:
        raise ValueError(f"set_soc_version: unknown SoC {name!r}; expected one of {SOC_VERSIONS}")
    with _soc_lock:
        _soc = name


def get_soc_version() -> str:
    """The emulated SoC profile (one of :data:`SOC_VERSIONS`)."""
    return _soc


def aclrtGetSocName() -> str:
    """The SoC name, as CANN's ``aclrtGetSocName`` reports it."""
    return _soc


# --- PreluBackward rule revision ----------------------------------------------------------------
# "newest": hicann/ops-nn's newest aclnnPreluBackward unit tests (cases 025, 034-038) and its
#   docs: a multi-dimensional weight is (1, C, 1, ...) with self's rank; gradWeight has
#   weight's shape.
# "legacy": the older rule (aclnn_prelu_backward.cpp at commit 80902332): any weight
#   with C elements; gradWeight is (C,) unless the weight has one element.
PRELU_BACKWARD_RULES = ("newest", "legacy")
_prelu_rule = os.environ.get("LEAKYOPS_ACLNN_PRELU_BACKWARD", "newest")
if _prelu_rule not in PRELU_BACKWARD_RULES:
    _prelu_rule = "newest"


def set_prelu_backward_rule(name: str) -> None:
    """Select which revision of ops-nn's aclnnPreluBackward shape rule to follow:
    ``"newest"`` (the default) or ``"legacy"``; see :data:`PRELU_BACKWARD_RULES` and
    ``docs/aclnn.md``. Also settable with ``$LEAKYOPS_ACLNN_PRELU_BACKWARD``."""
    global _prelu_rule
    if name not in PRELU_BACKWARD_RULES:
        raise ValueError(f"set_prelu_backward_rule: unknown rule {name!r}; expected one of "
                         f"{PRELU_BACKWARD_RULES}")
    with _soc_lock:
        _prelu_rule = name


def get_prelu_backward_rule() -> str:
    """The aclnnPreluBackward shape rule in effect (one of :data:`PRELU_BACKWARD_RULES`)."""
    return _prelu_rule


# --- init / device (no-ops kept so vendor programs port line by line) -------------------------
def aclInit(config_path: str | None = None) -> int:
    return ACL_SUCCESS


def aclFinalize() -> int:
    return ACL_SUCCESS


def aclrtSetDevice(device_id: int) -> int:
    if device_id != 0:
        return record_error(ACL_ERROR_RT_INVALID_DEVICEID,
                            f"aclrtSetDevice: invalid device id {device_id!r}; the emulation has device 0")
    return ACL_SUCCESS


def aclrtResetDevice(device_id: int) -> int:
    return aclrtSetDevice(device_id)


# --- device memory --------------------------------------------------------------------------
_addresses = itertools.count(1)
_ALIGN = 512  # emulated device addresses are 512-byte aligned, like the real allocator's


class _Allocation:
    __slots__ = ("buf", "size", "base", "freed")

    def __init__(self, size: int):
        self.buf = np.zeros(size, dtype=np.uint8)
        self.size = size
        self.base = 0x1_0000_0000 + next(_addresses) * (1 << 32)
        self.freed = False


class DevicePtr:
    """An emulated device address: an allocation plus a byte offset. ``ptr + n`` is a
    pointer ``n`` bytes further; ``int(ptr)`` is a fake, stable address."""

    __slots__ = ("_alloc", "_offset")

    def __init__(self, alloc: _Allocation, offset: int = 0):
        self._alloc = alloc
        self._offset = offset

    def __add__(self, nbytes: int) -> "DevicePtr":
        return DevicePtr(self._alloc, self._offset + int(nbytes))

    def __int__(self) -> int:
        return self._alloc.base + self._offset

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DevicePtr) and int(self) == int(other)

    def __hash__(self) -> int:
        return hash(int(self))

    def __repr__(self) -> str:
        state = ", freed" if self._alloc.freed else ""
        return f"DevicePtr(0x{int(self):x}{state})"

    @property
    def available(self) -> int:
        """Bytes from this address to the end of its allocation (0 once freed, and for an
        address outside it: see :attr:`outside`)."""
        if self._alloc.freed or self.outside:
            return 0
        return self._alloc.size - self._offset

    @property
    def outside(self) -> str | None:
        """Why this address lies outside its allocation (before its start or past its end;
        the end itself is inside, with 0 bytes available), or None."""
        if self._offset < 0:
            return f"{-self._offset} bytes before the start of its allocation"
        if self._offset > self._alloc.size:
            return (f"{self._offset - self._alloc.size} bytes past the end of its allocation "
                    f"of {self._alloc.size} bytes")
        return None

    @property
    def freed(self) -> bool:
        return self._alloc.freed

    def bytes(self, nbytes: int) -> np.ndarray[tuple[int], np.dtype[np.uint8]]:
        """A ``uint8`` view of ``nbytes`` bytes at this address (caller checks bounds:
        ``nbytes <= available``)."""
        if self.outside or nbytes > self.available:  # never a view of other bytes
            raise ValueError(f"{self!r}: {nbytes} bytes do not lie inside its allocation")
        return self._alloc.buf[self._offset:self._offset + nbytes]


def aclrtMalloc(size: int, policy: aclrtMemMallocPolicy | int = aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_FIRST
                ) -> tuple[DevicePtr | None, int]:
    """Allocate ``size`` bytes of (emulated) device memory, zero-filled.

    Returns ``(dev_ptr, status)``: ``dev_ptr`` is ``None`` when status is not 0.
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size <= 0:
        return None, record_error(ACL_ERROR_INVALID_PARAM,
                                  f"aclrtMalloc: size must be a positive integer, got {size!r}")
    try:
        aclrtMemMallocPolicy(int(policy))
    except (ValueError, TypeError):
        return None, record_error(ACL_ERROR_INVALID_PARAM,
                                  f"aclrtMalloc: unknown aclrtMemMallocPolicy {policy!r}")
    try:
        alloc = _Allocation(int(size))
    except (MemoryError, ValueError) as exc:
        return None, record_error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                                  f"aclrtMalloc: cannot allocate {size} bytes: {exc}")
    return DevicePtr(alloc), ACL_SUCCESS


def aclrtFree(dev_ptr: DevicePtr | None) -> int:
    """Free memory from ``aclrtMalloc``. Freeing twice, or an interior pointer, is an error."""
    if not isinstance(dev_ptr, DevicePtr):
        return record_error(ACL_ERROR_RT_PARAM_INVALID,
                            f"aclrtFree: expected a device pointer from aclrtMalloc, got {type(dev_ptr).__name__}")
    if dev_ptr._offset != 0:
        return record_error(ACL_ERROR_RT_PARAM_INVALID,
                            f"aclrtFree: {dev_ptr!r} is not the start of an allocation")
    if dev_ptr._alloc.freed:
        return record_error(ACL_ERROR_RT_PARAM_INVALID, f"aclrtFree: {dev_ptr!r} was already freed")
    dev_ptr._alloc.freed = True
    return ACL_SUCCESS


def _host_bytes(obj, name: str, writable: bool, where: str):
    """A flat ``uint8`` view of a host object (NumPy array, bytes, bytearray, memoryview), or
    the message (beginning with ``where``) of why it is none. An array goes through the core's
    plain view: a subclass (``np.matrix``, ``np.memmap``) is its memory, flat in memory order
    whatever its ``reshape`` does; a masked array is refused (its mask would be ignored)."""
    if isinstance(obj, DevicePtr) or obj is None:
        return None, (f"{where}: {name} must be host memory (a NumPy array or bytes-like), "
                      f"got {obj!r}")
    if isinstance(obj, np.ndarray):
        try:
            obj = _core.plain_view(obj, where, name, writable=False, any_dtype=True)
        except (TypeError, ValueError) as exc:
            return None, str(exc)
        if obj.dtype.hasobject:  # references, not memory
            return None, f"{where}: {name} must be host memory, got an array of Python objects"
        if not (obj.flags.c_contiguous or obj.flags.f_contiguous):
            return None, f"{where}: {name} must be a contiguous NumPy array"
        # a contiguous array reshapes to 1-D in memory order without copying
        arr = obj.reshape(-1, order="A").view(np.uint8) if obj.size else np.zeros(0, np.uint8)
    else:
        try:
            arr = np.frombuffer(obj, dtype=np.uint8)
        except (TypeError, ValueError):
            return None, (f"{where}: {name} must be host memory (a NumPy array or bytes-like), "
                          f"got {type(obj).__name__}")
    if writable and not arr.flags.writeable:
        return None, f"{where}: {name} is read-only host memory"
    return arr, None


def _is_count(value: object) -> bool:
    """Whether ``value`` is a non-negative integer (a ``size_t``; bools are not counts)."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= 0


def _memcpy_views(dst, dest_max, src, count, kind, fname):
    """Check a copy request; return (dst_view, src_view, None) or (None, None, status)."""
    try:
        kind = aclrtMemcpyKind(int(kind))
    except (ValueError, TypeError):
        return None, None, record_error(ACL_ERROR_RT_PARAM_INVALID, f"{fname}: unknown aclrtMemcpyKind {kind!r}")
    for value, label in ((dest_max, "destMax"), (count, "count")):
        if not _is_count(value):
            return None, None, record_error(ACL_ERROR_RT_PARAM_INVALID,
                                            f"{fname}: {label} must be a non-negative integer, got {value!r}")
    if count > dest_max:
        return None, None, record_error(ACL_ERROR_RT_PARAM_INVALID,
                                        f"{fname}: count {count} is larger than destMax {dest_max}")
    dst_dev = kind in (aclrtMemcpyKind.ACL_MEMCPY_HOST_TO_DEVICE, aclrtMemcpyKind.ACL_MEMCPY_DEVICE_TO_DEVICE)
    src_dev = kind in (aclrtMemcpyKind.ACL_MEMCPY_DEVICE_TO_HOST, aclrtMemcpyKind.ACL_MEMCPY_DEVICE_TO_DEVICE)
    views = []
    for obj, is_dev, label, writable in ((dst, dst_dev, "dst", True), (src, src_dev, "src", False)):
        if is_dev:
            if not isinstance(obj, DevicePtr):
                return None, None, record_error(
                    ACL_ERROR_RT_PARAM_INVALID,
                    f"{fname}: {kind.name} needs a device pointer for {label}, got {type(obj).__name__}")
            if obj.freed:
                return None, None, record_error(ACL_ERROR_RT_PARAM_INVALID,
                                                f"{fname}: {label} {obj!r} was freed")
            if obj.outside:
                return None, None, record_error(ACL_ERROR_RT_PARAM_INVALID,
                                                f"{fname}: {label} {obj!r} lies {obj.outside}")
            limit = obj.available
            view = obj.bytes(limit)
        else:
            view, err = _host_bytes(obj, label, writable, f"{fname}: {kind.name}")
            if err:
                return None, None, record_error(ACL_ERROR_RT_PARAM_INVALID, err)
            limit = view.size
        need = dest_max if label == "dst" else count
        if need > limit:
            return None, None, record_error(
                ACL_ERROR_RT_PARAM_INVALID,
                f"{fname}: {label} holds {limit} bytes, fewer than the {need} requested")
        views.append(view)
    return views[0][:count], views[1][:count], None


def aclrtMemcpy(dst: DevicePtr | HostBuffer | None, dest_max: int, src: DevicePtr | HostBuffer | None,
                count: int, kind: aclrtMemcpyKind | int) -> int:
    """Synchronous copy of ``count`` bytes (``count <= dest_max``). Host memory is a NumPy
    array or bytes-like object; device memory is a ``DevicePtr``. The kind must match."""
    d, s, err = _memcpy_views(dst, dest_max, src, count, kind, "aclrtMemcpy")
    if err is not None:
        return err
    d[...] = s
    return ACL_SUCCESS


def aclrtMemcpyAsync(dst: DevicePtr | HostBuffer | None, dest_max: int,
                     src: DevicePtr | HostBuffer | None, count: int, kind: aclrtMemcpyKind | int,
                     stream: aclrtStream | None) -> int:
    """Like ``aclrtMemcpy`` but ordered on ``stream`` (runs on the stream's worker)."""
    d, s, err = _memcpy_views(dst, dest_max, src, count, kind, "aclrtMemcpyAsync")
    if err is not None:
        return err
    st, err = resolve_stream(stream, "aclrtMemcpyAsync", ACL_ERROR_RT_PARAM_INVALID)
    if err is not None:
        return err

    def copy() -> None:
        d[...] = s
    st.submit(copy, "aclrtMemcpyAsync")
    return ACL_SUCCESS


def aclrtMemset(dev_ptr: DevicePtr | None, max_count: int, value: int, count: int) -> int:
    """Set ``count`` bytes at ``dev_ptr`` to ``value`` (``count <= max_count``)."""
    if not isinstance(dev_ptr, DevicePtr) or dev_ptr.freed:
        return record_error(ACL_ERROR_RT_PARAM_INVALID, f"aclrtMemset: not a live device pointer: {dev_ptr!r}")
    if dev_ptr.outside:
        return record_error(ACL_ERROR_RT_PARAM_INVALID,
                            f"aclrtMemset: devPtr {dev_ptr!r} lies {dev_ptr.outside}")
    if not all(_is_count(v) for v in (max_count, value, count)) \
            or not (count <= max_count <= dev_ptr.available) or not value <= 255:
        return record_error(ACL_ERROR_RT_PARAM_INVALID,
                            f"aclrtMemset: bad sizes/value (count={count}, maxCount={max_count}, "
                            f"value={value}, available={dev_ptr.available})")
    dev_ptr.bytes(count)[...] = value
    return ACL_SUCCESS


# --- streams --------------------------------------------------------------------------------
class aclrtStream:
    """An emulated stream: a FIFO of work run by one worker thread, in launch order."""

    def __init__(self, name: str = "stream"):
        self._queue: queue.Queue[tuple[Callable[[], object], str] | None] = queue.Queue()
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self.destroyed = False
        self._thread = threading.Thread(target=self._work, name=f"leakyops-aclnn-{name}", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                fn, label = item
                try:
                    fn()
                except _TaskFailed as exc:
                    with self._lock:
                        self._errors.append(f"{label}: {exc}")
                except BaseException as exc:  # noqa: BLE001 -- a task must never kill the worker
                    with self._lock:
                        self._errors.append(f"{label}: internal error {type(exc).__name__}: {exc}")
            finally:
                self._queue.task_done()

    def submit(self, fn: Callable[[], object], label: str) -> None:
        self._queue.put((fn, label))

    def synchronize(self) -> list[str]:
        self._queue.join()
        with self._lock:
            errors, self._errors = self._errors, []
        return errors

    def shutdown(self) -> list[str]:
        errors = self.synchronize()
        self.destroyed = True
        self._queue.put(None)
        self._thread.join()
        return errors

    def __repr__(self) -> str:
        return f"<aclrtStream {self._thread.name}{' destroyed' if self.destroyed else ''}>"


class _TaskFailed(Exception):
    """Raised inside a task with an already-mapped message."""


_default_stream: aclrtStream | None = None
_default_lock = threading.Lock()


def _get_default_stream() -> aclrtStream:
    global _default_stream
    with _default_lock:
        if _default_stream is None:
            _default_stream = aclrtStream("default")
        return _default_stream


def resolve_stream(stream: object, fname: str, code: int) -> tuple[aclrtStream | None, int | None]:
    """``(stream, None)`` for a live stream (``None`` = the default stream), else ``(None, code)``."""
    if stream is None:
        return _get_default_stream(), None
    if not isinstance(stream, aclrtStream):
        return None, record_error(code, f"{fname}: expected an aclrtStream from aclrtCreateStream, "
                                        f"got {type(stream).__name__}")
    if stream.destroyed:
        return None, record_error(code, f"{fname}: the stream was destroyed")
    return stream, None


def aclrtCreateStream() -> tuple[aclrtStream, int]:
    """Create a stream. Returns ``(stream, status)``."""
    return aclrtStream(), ACL_SUCCESS


def _report(errors: list[str], fname: str) -> int:
    if not errors:
        return ACL_SUCCESS
    for msg in errors:
        record_error(ACL_ERROR_RT_AICORE_EXCEPTION, f"{fname}: task failed: {msg}")
    return ACL_ERROR_RT_AICORE_EXCEPTION


def aclrtSynchronizeStream(stream: aclrtStream | None) -> int:
    """Wait until all work launched on ``stream`` has run (``None``: the default stream).

    Returns ``ACL_ERROR_RT_AICORE_EXCEPTION`` (507015) if a task failed since the last
    synchronisation; ``aclGetRecentErrMsg()`` then names the task and the reason.
    """
    st, err = resolve_stream(stream, "aclrtSynchronizeStream", ACL_ERROR_RT_PARAM_INVALID)
    if err is not None:
        return err
    return _report(st.synchronize(), "aclrtSynchronizeStream")


def aclrtDestroyStream(stream: aclrtStream | None) -> int:
    """Finish the stream's pending work, stop its worker and destroy it."""
    if stream is None:
        return record_error(ACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyStream: stream is null")
    st, err = resolve_stream(stream, "aclrtDestroyStream", ACL_ERROR_RT_PARAM_INVALID)
    if err is not None:
        return err
    return _report(st.shutdown(), "aclrtDestroyStream")
