"""``aclTensor`` and ``aclScalar``: descriptors over emulated device memory."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from .. import _core
from ._runtime import DevicePtr, _Allocation
from ._status import (
    ACL_ERROR_RT_PARAM_INVALID,
    ACL_SUCCESS,
    ACL_DTYPES,
    NP_DTYPES,
    aclDataType,
    aclFormat,
    dtype_name,
    record_error,
)

if TYPE_CHECKING:
    from .._typing import SlopeLike


def _int_tuple(values: Sequence[SupportsIndex] | None, label: str) -> tuple[int, ...] | None:
    if values is None:
        return None
    try:
        out = tuple(int(v) for v in values)
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be a sequence of integers, got {values!r}") from None
    for orig in values:
        if isinstance(orig, (float, bool)) or (isinstance(orig, np.generic) and not isinstance(orig, np.integer)):
            raise ValueError(f"{label} must be a sequence of integers, got {values!r}")
    return out


class aclTensor:
    """A tensor descriptor: view shape, element strides and offset over a storage block.

    Made by ``aclCreateTensor`` (over ``aclrtMalloc`` memory) or ``from_numpy`` (zero-copy
    over a NumPy array). Elements are read and written in place at execution time.
    """

    __slots__ = ("view_dims", "data_type", "strides", "offset", "format", "storage_dims",
                 "data", "destroyed", "_readonly", "__weakref__")

    def __init__(self, view_dims: tuple[int, ...], data_type: aclDataType, strides: tuple[int, ...],
                 offset: int, fmt: aclFormat, storage_dims: tuple[int, ...], data: DevicePtr | None,
                 readonly: bool = False):
        self.view_dims = view_dims
        self.data_type = data_type
        self.strides = strides
        self.offset = offset
        self.format = fmt
        self.storage_dims = storage_dims
        self.data = data
        self.destroyed = False
        self._readonly = readonly

    # -- queries used by the operators --
    @property
    def np_dtype(self) -> np.dtype[Any]:
        return NP_DTYPES[self.data_type]

    @property
    def ndim(self) -> int:
        return len(self.view_dims)

    def numel(self) -> int:
        return math.prod(self.view_dims)

    def is_empty(self) -> bool:
        return self.numel() == 0

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def memory_freed(self) -> bool:
        return self.data is not None and self.data.freed

    def view(self) -> np.ndarray[tuple[int, ...], np.dtype[Any]]:
        """A NumPy view of the tensor's elements (writes go to device memory)."""
        dt = self.np_dtype
        if self.is_empty():
            return np.empty(self.view_dims, dtype=dt)
        alloc: _Allocation = self.data._alloc
        arr = np.ndarray(self.view_dims, dtype=dt, buffer=alloc.buf,
                         offset=self.data._offset + self.offset * dt.itemsize,
                         strides=tuple(s * dt.itemsize for s in self.strides))
        if self._readonly:
            arr.flags.writeable = False
        return arr

    def __repr__(self) -> str:
        state = " destroyed" if self.destroyed else ""
        return (f"<aclTensor {dtype_name(self.data_type)} view={list(self.view_dims)} "
                f"strides={list(self.strides)} offset={self.offset}{state}>")


def aclCreateTensor(view_dims: Sequence[SupportsIndex], data_type: aclDataType | int,  # noqa: A002
                    strides: Sequence[SupportsIndex] | None, offset: int, format: aclFormat | int,
                    storage_dims: Sequence[SupportsIndex] | None,
                    data: DevicePtr | None) -> aclTensor | None:
    """Create a tensor over device memory, like CANN's ``aclCreateTensor`` without the
    ``...Num`` counts (Python sequences carry their length).

    ``strides`` and ``offset`` count elements. ``strides=None`` means contiguous over
    ``view_dims``; ``storage_dims=None`` means ``view_dims``. ``data`` is a ``DevicePtr`` (or
    ``None`` for a tensor with no elements). Returns the ``aclTensor``, or ``None`` when the
    description is inconsistent (reason in ``aclGetRecentErrMsg()``), as the C API returns
    ``nullptr``.
    """
    fname = "aclCreateTensor"
    try:
        dims = _int_tuple(view_dims, "viewDims")
        if dims is None:
            raise ValueError("viewDims must not be null")
        sdims = _int_tuple(storage_dims, "storageDims")
        sdims = dims if sdims is None else sdims
        strd = _int_tuple(strides, "strides")
        if strd is None:
            strd, acc = [], 1
            for d in reversed(dims):
                strd.append(acc)
                acc *= max(d, 1)
            strd = tuple(reversed(strd))
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
        offset = int(offset)
        if len(strd) != len(dims):
            raise ValueError(f"strides {list(strd)} and viewDims {list(dims)} differ in length")
        if any(d < 0 for d in dims) or any(d < 0 for d in sdims):
            raise ValueError(f"negative dimension in viewDims {list(dims)} / storageDims {list(sdims)}")
        try:
            dt = aclDataType(int(data_type))
        except (ValueError, TypeError):
            raise ValueError(f"unknown aclDataType {data_type!r}") from None
        if dt not in NP_DTYPES:
            raise ValueError(f"data type {dtype_name(dt)} cannot be held by this emulation")
        try:
            fmt = aclFormat(int(format))
        except (ValueError, TypeError):
            raise ValueError(f"unknown aclFormat {format!r}") from None
        itemsize = NP_DTYPES[dt].itemsize
        n_view = math.prod(dims)
        n_storage = math.prod(sdims)
        if n_view:
            lo = offset + sum((d - 1) * s for d, s in zip(dims, strd) if s < 0)
            hi = offset + sum((d - 1) * s for d, s in zip(dims, strd) if s > 0)
            if lo < 0 or hi >= n_storage:
                raise ValueError(f"the view (dims {list(dims)}, strides {list(strd)}, offset {offset}) "
                                 f"reaches elements [{lo}, {hi}] outside storage of {n_storage} elements")
        if data is None:
            if n_view:
                raise ValueError("tensorData is null but the view has elements")
        elif not isinstance(data, DevicePtr):
            raise ValueError(f"tensorData must be a device pointer from aclrtMalloc, got {type(data).__name__}")
        elif data.freed:
            raise ValueError(f"tensorData {data!r} was freed")
        elif data.outside:
            raise ValueError(f"tensorData {data!r} lies {data.outside}")
        elif n_storage * itemsize > data.available:
            raise ValueError(f"storage of {n_storage} x {itemsize} bytes does not fit in the "
                             f"{data.available} bytes at {data!r}")
    except ValueError as exc:
        record_error(ACL_ERROR_RT_PARAM_INVALID, f"{fname}: {exc}")
        return None
    return aclTensor(dims, dt, strd, offset, fmt, sdims, data)


def from_numpy(array: np.ndarray[Any, Any],  # noqa: A002
               format: aclFormat | int = aclFormat.ACL_FORMAT_ND) -> aclTensor | None:
    """Wrap a NumPy array as an ``aclTensor`` without copying (any strides, including
    negative and zero). Results written to the tensor appear in ``array``. A read-only array
    gives a tensor that operators refuse as an output. Returns ``None`` (reason in
    ``aclGetRecentErrMsg()``) for dtypes without an ``aclDataType`` or misaligned strides.
    """
    fname = "from_numpy"
    if not isinstance(array, np.ndarray):
        record_error(ACL_ERROR_RT_PARAM_INVALID, f"{fname}: expected a NumPy array, got {type(array).__name__}")
        return None
    dt = ACL_DTYPES.get(array.dtype)
    if dt is None:
        record_error(ACL_ERROR_RT_PARAM_INVALID, f"{fname}: dtype {array.dtype} has no aclDataType")
        return None
    itemsize = array.dtype.itemsize
    if any(s % itemsize for s in array.strides):
        record_error(ACL_ERROR_RT_PARAM_INVALID,
                     f"{fname}: strides {array.strides} are not multiples of the item size {itemsize}")
        return None
    dims = tuple(array.shape)
    strides = tuple(s // itemsize for s in array.strides)
    readonly = not array.flags.writeable
    if array.size == 0:
        return aclTensor(dims, dt, strides, 0, aclFormat(int(format)), dims, None, readonly)
    # flip negative-stride axes: the flipped view starts at the lowest address
    flip = tuple(slice(None, None, -1) if s < 0 else slice(None) for s in array.strides)
    low = array[flip] if flip else array[...]  # array[()] of a 0-d array would be a copy
    offset = sum((d - 1) * -s for d, s in zip(dims, strides) if s < 0)
    span = 1 + sum((d - 1) * abs(s) for d, s in zip(dims, strides))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flat = np.lib.stride_tricks.as_strided(low, shape=(span,), strides=(itemsize,),
                                               writeable=not readonly)
    alloc = _Allocation.__new__(_Allocation)
    alloc.buf = flat.view(np.uint8)
    alloc.size = span * itemsize
    alloc.base = array.__array_interface__["data"][0] - offset * itemsize
    alloc.freed = False
    return aclTensor(dims, dt, strides, offset, aclFormat(int(format)), (span,), DevicePtr(alloc), readonly)


def to_numpy(tensor: aclTensor) -> np.ndarray[tuple[int, ...], np.dtype[np.generic[complex]]]:
    """A NumPy view of a tensor's elements (for inspection; synchronise the stream first)."""
    if not isinstance(tensor, aclTensor) or tensor.destroyed or tensor.memory_freed:
        raise ValueError(f"to_numpy: expected a live aclTensor, got {tensor!r}")
    return tensor.view()


def aclDestroyTensor(tensor: aclTensor | None) -> int:
    """Destroy a tensor descriptor (its memory is not freed). Later use is an error status."""
    if tensor is None:
        return ACL_SUCCESS  # like the C API, destroying nullptr is a no-op
    if not isinstance(tensor, aclTensor) or tensor.destroyed:
        return record_error(ACL_ERROR_RT_PARAM_INVALID,
                            f"aclDestroyTensor: not a live aclTensor: {tensor!r}")
    tensor.destroyed = True
    return ACL_SUCCESS


def aclGetViewShape(tensor: aclTensor | None) -> tuple[list[int] | None, int]:
    """``(view_dims, status)``."""
    if not isinstance(tensor, aclTensor) or tensor.destroyed:
        return None, record_error(ACL_ERROR_RT_PARAM_INVALID, f"aclGetViewShape: not a live aclTensor: {tensor!r}")
    return list(tensor.view_dims), ACL_SUCCESS


def aclGetViewStrides(tensor: aclTensor | None) -> tuple[list[int] | None, int]:
    """``(strides, status)``."""
    if not isinstance(tensor, aclTensor) or tensor.destroyed:
        return None, record_error(ACL_ERROR_RT_PARAM_INVALID, f"aclGetViewStrides: not a live aclTensor: {tensor!r}")
    return list(tensor.strides), ACL_SUCCESS


def aclGetDataType(tensor: aclTensor | None) -> tuple[aclDataType | None, int]:
    """``(data_type, status)``."""
    if not isinstance(tensor, aclTensor) or tensor.destroyed:
        return None, record_error(ACL_ERROR_RT_PARAM_INVALID, f"aclGetDataType: not a live aclTensor: {tensor!r}")
    return tensor.data_type, ACL_SUCCESS


# --- scalars --------------------------------------------------------------------------------
SCALAR_TYPES = frozenset({
    aclDataType.ACL_FLOAT, aclDataType.ACL_FLOAT16, aclDataType.ACL_BF16, aclDataType.ACL_DOUBLE,
    aclDataType.ACL_INT8, aclDataType.ACL_INT16, aclDataType.ACL_INT32, aclDataType.ACL_INT64,
    aclDataType.ACL_UINT8, aclDataType.ACL_UINT16, aclDataType.ACL_UINT32, aclDataType.ACL_UINT64,
    aclDataType.ACL_BOOL,
})


class aclScalar:
    """A host scalar of a given ``aclDataType``; ``to_float``/``to_double`` are CANN's
    ``ToFloat()``/``ToDouble()``."""

    __slots__ = ("value", "data_type", "destroyed")

    def __init__(self, value: np.generic, data_type: aclDataType):
        self.value = value
        self.data_type = data_type
        self.destroyed = False

    def to_float(self) -> np.float32:
        # the stored value rounded once to float32 (an int64 beyond 2**53 too), by the core's
        # one slope conversion
        return np.float32(_core.slope_value(self.value, "ToFloat", "scalar", np.float32))

    def to_double(self) -> float:
        return _core.slope_value(self.value, "ToDouble", "scalar", np.float64)

    def __repr__(self) -> str:
        return f"<aclScalar {dtype_name(self.data_type)} {self.value!r}>"


def aclCreateScalar(value: SlopeLike, data_type: aclDataType | int) -> aclScalar | None:
    """Create a scalar holding ``value`` stored as ``data_type`` (converted the way a C
    store of that type would: floats round, integers wrap). Returns ``None`` for a value that
    is not a real number or a data type without a scalar form (reason in
    ``aclGetRecentErrMsg()``)."""
    fname = "aclCreateScalar"
    try:
        dt = aclDataType(int(data_type))
    except (ValueError, TypeError):
        record_error(ACL_ERROR_RT_PARAM_INVALID, f"{fname}: unknown aclDataType {data_type!r}")
        return None
    if dt not in SCALAR_TYPES:
        record_error(ACL_ERROR_RT_PARAM_INVALID, f"{fname}: data type {dtype_name(dt)} has no scalar form here")
        return None
    try:
        arr = np.asarray(value) if not isinstance(value, np.ndarray) else value
    except (ValueError, TypeError, OverflowError):  # ragged lists and other non-arrays
        arr = np.empty(0)
    if arr.size != 1 or arr.dtype.kind not in "biuf" and arr.dtype != NP_DTYPES[aclDataType.ACL_BF16]:
        record_error(ACL_ERROR_RT_PARAM_INVALID,
                     f"{fname}: value must be one real number, got {value!r}")
        return None
    target = NP_DTYPES[dt]
    if target in _core.SUPPORTED_DTYPES:  # a float type: one rounding (ml_dtypes' bfloat16
        # cast of a float64 would round twice, through float32)
        return aclScalar(target.type(_core.slope_value(arr, fname, "value", target)), dt)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stored = arr.reshape(()).astype(target)[()]  # integers and bool: a C store's wrap
    return aclScalar(stored, dt)


def aclDestroyScalar(scalar: aclScalar | None) -> int:
    if scalar is None:
        return ACL_SUCCESS
    if not isinstance(scalar, aclScalar) or scalar.destroyed:
        return record_error(ACL_ERROR_RT_PARAM_INVALID, f"aclDestroyScalar: not a live aclScalar: {scalar!r}")
    scalar.destroyed = True
    return ACL_SUCCESS
