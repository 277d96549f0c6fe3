"""Status codes, enums and the thread-local error log of the aclnn emulation.

Numeric values are CANN's: ``aclnnStatus`` codes from ops-nn
``docs/zh/context/aclnn_return_code.md``, ``aclDataType``/``aclFormat`` from ``acl_base.h``,
runtime ``aclError`` codes from ``acl_rt.h``.
"""

from __future__ import annotations

import enum
import threading

import ml_dtypes
import numpy as np

# --- aclnnStatus (operator API) -------------------------------------------------------------
ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_RUNTIME_ERROR = 361001
ACLNN_ERR_INNER = 561000
ACLNN_ERR_INNER_CREATE_EXECUTOR = 561101
ACLNN_ERR_INNER_NULLPTR = 561103

# --- aclError (runtime API) -----------------------------------------------------------------
ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_INVALID_DEVICEID = 107001
ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
ACL_ERROR_RT_AICORE_EXCEPTION = 507015


class aclDataType(enum.IntEnum):
    """CANN ``aclDataType`` with its numeric values."""

    ACL_DT_UNDEFINED = -1
    ACL_FLOAT = 0
    ACL_FLOAT16 = 1
    ACL_INT8 = 2
    ACL_INT32 = 3
    ACL_UINT8 = 4
    ACL_INT16 = 6
    ACL_UINT16 = 7
    ACL_UINT32 = 8
    ACL_INT64 = 9
    ACL_UINT64 = 10
    ACL_DOUBLE = 11
    ACL_BOOL = 12
    ACL_STRING = 13
    ACL_COMPLEX64 = 16
    ACL_COMPLEX128 = 17
    ACL_BF16 = 27
    ACL_INT4 = 29
    ACL_UINT1 = 30
    ACL_COMPLEX32 = 33


class aclFormat(enum.IntEnum):
    """CANN ``aclFormat`` with its numeric values (the layout tag; data stays ND here)."""

    ACL_FORMAT_UNDEFINED = -1
    ACL_FORMAT_NCHW = 0
    ACL_FORMAT_NHWC = 1
    ACL_FORMAT_ND = 2
    ACL_FORMAT_NC1HWC0 = 3
    ACL_FORMAT_FRACTAL_Z = 4
    ACL_FORMAT_NC1HWC0_C04 = 12
    ACL_FORMAT_HWCN = 16
    ACL_FORMAT_NDHWC = 27
    ACL_FORMAT_FRACTAL_NZ = 29
    ACL_FORMAT_NCDHW = 30
    ACL_FORMAT_NDC1HWC0 = 32
    ACL_FRACTAL_Z_3D = 33
    ACL_FORMAT_NC = 35
    ACL_FORMAT_NCL = 47


class aclrtMemcpyKind(enum.IntEnum):
    ACL_MEMCPY_HOST_TO_HOST = 0
    ACL_MEMCPY_HOST_TO_DEVICE = 1
    ACL_MEMCPY_DEVICE_TO_HOST = 2
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3


class aclrtMemMallocPolicy(enum.IntEnum):
    ACL_MEM_MALLOC_HUGE_FIRST = 0
    ACL_MEM_MALLOC_HUGE_ONLY = 1
    ACL_MEM_MALLOC_NORMAL_ONLY = 2
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5


# aclDataType -> NumPy dtype, for the types this emulation can hold in memory.
NP_DTYPES: dict[int, np.dtype] = {
    aclDataType.ACL_FLOAT: np.dtype(np.float32),
    aclDataType.ACL_FLOAT16: np.dtype(np.float16),
    aclDataType.ACL_BF16: np.dtype(ml_dtypes.bfloat16),
    aclDataType.ACL_DOUBLE: np.dtype(np.float64),
    aclDataType.ACL_INT8: np.dtype(np.int8),
    aclDataType.ACL_INT16: np.dtype(np.int16),
    aclDataType.ACL_INT32: np.dtype(np.int32),
    aclDataType.ACL_INT64: np.dtype(np.int64),
    aclDataType.ACL_UINT8: np.dtype(np.uint8),
    aclDataType.ACL_UINT16: np.dtype(np.uint16),
    aclDataType.ACL_UINT32: np.dtype(np.uint32),
    aclDataType.ACL_UINT64: np.dtype(np.uint64),
    aclDataType.ACL_BOOL: np.dtype(np.bool_),
    aclDataType.ACL_COMPLEX64: np.dtype(np.complex64),
    aclDataType.ACL_COMPLEX128: np.dtype(np.complex128),
}
ACL_DTYPES: dict[np.dtype, aclDataType] = {v: aclDataType(k) for k, v in NP_DTYPES.items()}

FLOAT_TYPES = frozenset({aclDataType.ACL_FLOAT, aclDataType.ACL_FLOAT16, aclDataType.ACL_BF16,
                         aclDataType.ACL_DOUBLE})
COMPLEX_TYPES = frozenset({aclDataType.ACL_COMPLEX64, aclDataType.ACL_COMPLEX128,
                           aclDataType.ACL_COMPLEX32})


def dtype_name(dt) -> str:
    """``DT_FLOAT``-style name, as CANN's messages print data types."""
    try:
        name = aclDataType(int(dt)).name
    except (ValueError, TypeError):
        return f"<unknown dtype {dt!r}>"
    return "DT_" + name[4:] if name != "ACL_DT_UNDEFINED" else "DT_UNDEFINED"


def can_cast(src: aclDataType, dst: aclDataType) -> bool:
    """CANN's ``CanCast`` (PyTorch's ``canCast``): no float→integer, no complex→real,
    nothing but bool→bool."""
    src_complex, dst_complex = src in COMPLEX_TYPES, dst in COMPLEX_TYPES
    if src_complex and not dst_complex:
        return False
    if src in FLOAT_TYPES and not (dst in FLOAT_TYPES or dst_complex):
        return False
    if dst == aclDataType.ACL_BOOL and src != aclDataType.ACL_BOOL:
        return False
    return True


def promote_type(a: aclDataType, b: aclDataType) -> aclDataType:
    """``PromoteType`` for the float types the operators accept (f16+bf16 → f32)."""
    if a == b:
        return a
    order = {aclDataType.ACL_FLOAT16: 1, aclDataType.ACL_BF16: 1, aclDataType.ACL_FLOAT: 2,
             aclDataType.ACL_DOUBLE: 3}
    if a not in order or b not in order:
        return aclDataType.ACL_DT_UNDEFINED
    rank = max(order[a], order[b])
    return aclDataType.ACL_DOUBLE if rank == 3 else aclDataType.ACL_FLOAT


# --- aclGetRecentErrMsg ---------------------------------------------------------------------
_tls = threading.local()


def record_error(code: int, message: str) -> int:
    """Append ``message`` to this thread's error log and return ``code``."""
    log = getattr(_tls, "log", None)
    if log is None:
        log = _tls.log = []
    log.append(f"[{code}] {message}")
    return code


def aclGetRecentErrMsg() -> str | None:
    """Return and clear the error messages of failed calls made by this thread.

    The newest message comes first, one per line; ``None`` when there is none (CANN:
    "获取并清空" — get and clear, thread level by default).
    """
    log = getattr(_tls, "log", None)
    if not log:
        return None
    _tls.log = []
    return "\n".join(reversed(log))
