"""Data types, logical positions and constants of the Ascend C model."""

from __future__ import annotations

import enum
from typing import Any

import ml_dtypes
import numpy as np
from numpy.typing import DTypeLike

from ._errors import AscendCTypeError

__all__ = [
    "half", "float32", "bfloat16_t", "int8_t", "uint8_t", "int16_t", "uint16_t",
    "int32_t", "uint32_t", "int64_t", "uint64_t",
    "TPosition", "QuePosition", "MaskMode", "RoundMode",
    "ONE_BLK_SIZE", "ONE_REPEAT_BYTE_SIZE", "DEFAULT_BLK_NUM", "MAX_REPEAT_TIMES",
    "MASK_PLACEHOLDER", "FULL_MASK",
]

# Element types, spelled as in Ascend C (``float`` is ``float32`` here: ``float`` is Python's).
half = np.dtype(np.float16)
float32 = np.dtype(np.float32)
bfloat16_t = np.dtype(ml_dtypes.bfloat16)
int8_t = np.dtype(np.int8)
uint8_t = np.dtype(np.uint8)
int16_t = np.dtype(np.int16)
uint16_t = np.dtype(np.uint16)
int32_t = np.dtype(np.int32)
uint32_t = np.dtype(np.uint32)
int64_t = np.dtype(np.int64)
uint64_t = np.dtype(np.uint64)

_ELEMENT_TYPES = (half, float32, bfloat16_t, int8_t, uint8_t, int16_t, uint16_t,
                  int32_t, uint32_t, int64_t, uint64_t, np.dtype(np.float64))
_NAMES = {half: "half", float32: "float", bfloat16_t: "bfloat16_t", int8_t: "int8_t",
          uint8_t: "uint8_t", int16_t: "int16_t", uint16_t: "uint16_t", int32_t: "int32_t",
          uint32_t: "uint32_t", int64_t: "int64_t", uint64_t: "uint64_t",
          np.dtype(np.float64): "double"}

ONE_BLK_SIZE = 32            # bytes in a DataBlock
ONE_REPEAT_BYTE_SIZE = 256   # bytes one vector repeat reads: 8 DataBlocks
DEFAULT_BLK_NUM = 8
MAX_REPEAT_TIMES = 255       # repeatTime is a uint8_t
MASK_PLACEHOLDER = 0         # the mask argument when isSetMask is false
FULL_MASK = (1 << 64) - 1


class TPosition(enum.Enum):
    """Logical positions (where a tensor lives); GM and the Unified Buffer ones are emulated."""

    GM = "GM"
    VECIN = "VECIN"
    VECOUT = "VECOUT"
    VECCALC = "VECCALC"
    A1 = "A1"
    A2 = "A2"
    B1 = "B1"
    B2 = "B2"
    C1 = "C1"
    C2 = "C2"
    CO1 = "CO1"
    CO2 = "CO2"
    TSCM = "TSCM"
    SPM = "SPM"


QuePosition = TPosition
UB_POSITIONS = frozenset({TPosition.VECIN, TPosition.VECOUT, TPosition.VECCALC})


class MaskMode(enum.Enum):
    NORMAL = 0
    COUNTER = 1


class RoundMode(enum.IntEnum):
    """``AscendC::RoundMode`` (the values of the vendor's enum). ``CAST_HYBRID`` exists only
    for hifloat8_t results, which are not emulated."""

    CAST_NONE = 0    # CAST_RINT when the conversion loses precision, exact otherwise
    CAST_RINT = 1    # to nearest, ties to even
    CAST_FLOOR = 2   # towards -inf
    CAST_CEIL = 3    # towards +inf
    CAST_ROUND = 4   # to nearest, ties away from zero
    CAST_TRUNC = 5   # towards zero
    CAST_ODD = 6     # round to odd (von Neumann)
    CAST_HYBRID = 7  # stochastic, hifloat8_t only


def as_dtype(t: DTypeLike, what: str) -> np.dtype[Any]:
    """Normalise an element type given as a NumPy dtype, a scalar type or a name."""
    try:
        dt = np.dtype(t)
    except TypeError:
        raise AscendCTypeError(f"{what}: {t!r} is not an element type") from None
    if dt not in _ELEMENT_TYPES:
        raise AscendCTypeError(
            f"{what}: element type {dt} is not one of the emulated types "
            f"({', '.join(_NAMES[d] for d in _ELEMENT_TYPES)})")
    return dt


def type_name(dt: np.dtype) -> str:
    """The Ascend C spelling of a dtype (``half``, ``float``, …)."""
    return _NAMES.get(np.dtype(dt), str(dt))
