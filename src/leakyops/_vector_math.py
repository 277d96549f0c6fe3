"""The arithmetic of the Ascend vector unit's element-wise instructions, emulated exactly.

``leakyops.ascendc`` works out *which* elements an instruction touches (masks, repeats,
strides); the values it writes come from here, and only from here. Everything is NumPy on
arrays of the operand type (``float16`` for ``half``, ``float32`` for ``float``); nothing
here knows about tensors, masks or the Unified Buffer.

How the emulation matches the device
------------------------------------
The vector unit (Atlas A2/A3, INF_NAN mode) computes every lane as if exactly and rounds once
to the operand type: round to nearest, ties to even; subnormals kept; overflow to ±inf; NaN in
gives NaN out. The emulation gets the same single rounding by computing exactly in a wider
NumPy type and rounding once:

- ``half × half`` — the product of two 11-bit significands has at most 22 bits and its
  exponent lies between 2**-48 and 2**32, so the float32 product is exact; the one rounding is
  the float32 → float16 conversion (NumPy's is correctly rounded).
- ``half ± half`` — both operands are multiples of 2**-24 below 2**16, so the sum needs at most
  41 significant bits and is exact in float64 (not in float32); the one rounding is the
  float64 → float16 conversion (NumPy converts double to half directly, correctly rounded).
- ``float × float``, ``float ± float`` — NumPy's float32 arithmetic is IEEE 754 binary32 with
  one rounding (SSE on x86-64).
- ``bfloat16`` (the register API of Ascend 950 only) — the product of two 8-bit significands is
  exact in float64; a sum is exact in float64 unless the exponents differ by more than 45, and
  then the smaller operand lies far below half an ulp of the larger, so the one rounding of the
  float64 value to bfloat16 (by ``cast``'s exact rounding, not ml_dtypes' double → bfloat16
  conversion, which goes through float32) gives the correctly rounded result either way.
- ``max``/``min`` select an operand and round nothing. Signed zeros follow the vendor's Reg
  pages (``Max``/``Maxs``: max(-0, +0) = +0; ``Min``/``Mins``: min(-0, +0) = -0); a NaN operand
  gives NaN (the vendor documents this for ReduceMax/ReduceMin, the only statement it makes).
- ``compare`` is IEEE 754: a NaN operand makes every mode false except ``ne``; ``-0 == +0``.
- ``cast`` rounds the exact source value (every half, float, bfloat16 and int32 value is exact
  in float64) to the destination with integer arithmetic on a scaled significand, so every
  RoundMode is exact: ``rint`` (ties to even), ``round`` (ties away from zero), ``floor``,
  ``ceil``, ``trunc``, ``odd`` (round to odd: an inexact result gets an odd last significand
  bit — von Neumann rounding), ``none`` (= ``rint`` when the conversion loses precision).

NaN payloads are not modelled: a NaN result is NumPy's NaN for the type.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["ROUND_MODES", "COMPARE_MODES", "add", "sub", "mul", "maximum", "minimum", "compare",
           "cast"]

HALF = np.dtype(np.float16)
FLOAT = np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)

# the type an exact result is computed in before the one rounding to the operand type
_EXACT = {
    ("mul", HALF): np.float32,
    ("add", HALF): np.float64,
    ("mul", FLOAT): np.float32,   # IEEE binary32 arithmetic: already one rounding
    ("add", FLOAT): np.float32,
    ("mul", BF16): np.float64,    # rounded to bfloat16 by _to_float (one exact rounding)
    ("add", BF16): np.float64,
}

ROUND_MODES = ("none", "rint", "floor", "ceil", "round", "trunc", "odd")


def _check(a: np.ndarray, what: str) -> np.dtype:
    dt = np.asarray(a).dtype
    if dt not in (HALF, FLOAT, BF16):
        raise TypeError(f"_vector_math.{what}: operands must be float16 or float32 (bfloat16 for "
                        f"the register API), got {dt}")
    return dt


def _binary(kind: str, a, b, negate_b: bool = False) -> np.ndarray:
    a = np.asarray(a)
    dt = _check(a, kind)
    b = np.asarray(b, dtype=dt)
    wide = _EXACT[(kind, dt)]
    with np.errstate(all="ignore"):
        x, y = a.astype(wide), b.astype(wide)
        if negate_b:
            y = -y
        r = x * y if kind == "mul" else x + y
        if dt == BF16:
            return _to_float(r, BF16, "rint")
        return r.astype(dt)


def add(a, b) -> np.ndarray:
    """``a + b`` with one rounding to the operand type (``b`` may be a scalar: Adds)."""
    return _binary("add", a, b)


def sub(a, b) -> np.ndarray:
    """``a - b`` with one rounding to the operand type."""
    return _binary("add", a, b, negate_b=True)


def mul(a, b) -> np.ndarray:
    """``a * b`` with one rounding to the operand type (``b`` may be a scalar: Muls)."""
    return _binary("mul", a, b)


def _select(a, b, take_max: bool) -> np.ndarray:
    a = np.asarray(a)
    dt = _check(a, "maximum" if take_max else "minimum")
    a, b = np.broadcast_arrays(a, np.asarray(b, dtype=dt))
    if dt == BF16:   # through float32 (exact both ways): no ml_dtypes comparisons with NaN
        r = _select(a.astype(FLOAT), b.astype(FLOAT), take_max)
        return r.astype(BF16)
    with np.errstate(all="ignore"):
        r = np.maximum(a, b) if take_max else np.minimum(a, b)   # NaN propagates
        zeros = (a == 0) & (b == 0)
        if zeros.any():
            neg_a, neg_b = np.signbit(a), np.signbit(b)
            neg = (neg_a & neg_b) if take_max else (neg_a | neg_b)
            r = np.where(zeros, np.where(neg, dt.type(-0.0), dt.type(0.0)), r)
    return np.asarray(r, dtype=dt)


def maximum(a, b) -> np.ndarray:
    """Element-wise max: max(-0, +0) = +0; NaN if either operand is NaN."""
    return _select(a, b, True)


def minimum(a, b) -> np.ndarray:
    """Element-wise min: min(-0, +0) = -0; NaN if either operand is NaN."""
    return _select(a, b, False)


COMPARE_MODES = ("eq", "ne", "gt", "ge", "lt", "le")


def compare(a, b, mode: str) -> np.ndarray:
    """Element-wise IEEE comparison ``a <mode> b`` as a bool array (``b`` may be a scalar of
    a's type): NaN compares false in every mode but ``ne``; ``-0 == +0``. Integers compare
    exactly (through int64, or uint64 for unsigned operands)."""
    if mode not in COMPARE_MODES:
        raise ValueError(f"compare: unknown mode {mode!r}; expected one of {COMPARE_MODES}")
    a = np.asarray(a)
    wide = np.uint64 if a.dtype.kind == "u" else np.int64 if a.dtype.kind in "ib" else np.float64
    x = a.astype(wide)
    y = np.asarray(b).astype(a.dtype).astype(wide)
    with np.errstate(invalid="ignore"):
        return {"eq": np.equal, "ne": np.not_equal, "gt": np.greater, "ge": np.greater_equal,
                "lt": np.less, "le": np.less_equal}[mode](x, y)


# --- Cast -------------------------------------------------------------------------------------
# significand bits (with the implicit one), smallest normal exponent, largest finite value
_FLOAT_FORMATS = {
    HALF: (11, -14, float(np.finfo(np.float16).max)),
    BF16: (8, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
    FLOAT: (24, -126, float(np.finfo(np.float32).max)),
}


def _round_scaled(s: np.ndarray, mode: str) -> np.ndarray:
    """Round the float64 values ``s`` (exact) to integers by ``mode``; ``s`` keeps its sign."""
    if mode in ("none", "rint"):
        return np.rint(s)
    if mode == "floor":
        return np.floor(s)
    if mode == "ceil":
        return np.ceil(s)
    t = np.trunc(s)
    if mode == "trunc":
        return t
    sign = np.copysign(1.0, s)
    if mode == "round":          # ties away from zero
        return t + sign * (np.abs(s - t) >= 0.5)
    if mode == "odd":            # round to odd: an inexact result gets an odd last bit
        return np.where((s != t) & (np.fmod(t, 2.0) == 0.0), t + sign, t)
    raise ValueError(f"cast: unknown round mode {mode!r}; expected one of {ROUND_MODES}")


def _overflow(negative: np.ndarray, mode: str, big: float) -> np.ndarray:
    """The result of a finite value that rounded beyond the largest finite ``big`` (IEEE 754:
    directed modes stop at the largest finite value on the side they round towards zero)."""
    inf = np.where(negative, -np.inf, np.inf)
    fin = np.where(negative, -big, big)
    if mode in ("none", "rint", "round"):
        return inf
    if mode in ("trunc", "odd"):
        return fin
    if mode == "floor":
        return np.where(negative, -np.inf, big)
    return np.where(negative, -big, np.inf)   # ceil


def _to_float(v: np.ndarray, dst: np.dtype, mode: str) -> np.ndarray:
    p, emin, big = _FLOAT_FORMATS[dst]
    out = np.array(v, dtype=np.float64, copy=True)
    finite = np.isfinite(v) & (v != 0)
    if finite.any():
        x = v[finite]
        _, e = np.frexp(x)                       # |x| = m * 2**e, 0.5 <= m < 1
        q = np.maximum(e - 1, emin) - (p - 1)    # exponent of the last significand bit
        r = np.ldexp(_round_scaled(np.ldexp(x, -q), mode), q)
        over = np.abs(r) > big
        if over.any():
            r = np.where(over, _overflow(x < 0, mode, big), r)
        out[finite] = r
    return out.astype(dst)   # exact: every value is representable in dst (or ±inf, ±0, NaN)


def _to_integral_float(v: np.ndarray, mode: str) -> np.ndarray:
    """float -> float with a RoundMode: round to an integral value, keep the type."""
    out = np.array(v, dtype=np.float64, copy=True)
    finite = np.isfinite(v)
    out[finite] = _round_scaled(v[finite], mode)
    return out.astype(FLOAT)


def _to_int(v: np.ndarray, dst: np.dtype, mode: str) -> np.ndarray:
    """Round to an integer by ``mode``, saturate to the type's range; NaN -> 0, ±inf -> max/min
    (the vendor's default saturation mode)."""
    info = np.iinfo(dst)
    r = np.where(np.isnan(v), 0.0, v)
    finite = np.isfinite(r)
    r = np.where(finite, _round_scaled(np.where(finite, r, 0.0), mode), r)
    # the range's edges as exact powers of two (float(int64 max) would round up to 2**63)
    hi_edge = 2.0 ** (8 * dst.itemsize - (1 if info.min < 0 else 0))
    out = np.clip(r, float(info.min), np.nextafter(hi_edge, 0.0)).astype(dst)
    out[r >= hi_edge] = info.max
    return out


def _wrap_int(r: np.ndarray, dst: np.dtype) -> np.ndarray:
    """Integral float64 values (exact) kept to ``dst``'s width: the lowest bits, two's
    complement (e.g. 257 -> uint8 1, 32768 -> int16 -32768)."""
    bits = 8 * dst.itemsize
    m = np.fmod(r, 2.0 ** bits)                       # exact; sign of r
    m = np.where(m < 0, m + 2.0 ** bits, m)          # [0, 2**bits)
    if np.iinfo(dst).min < 0:
        m = np.where(m >= 2.0 ** (bits - 1), m - 2.0 ** bits, m)
    return m.astype(np.int64 if np.iinfo(dst).min < 0 else np.uint64).astype(dst)


def _saturating_float(out: np.ndarray, src: np.ndarray, dst: np.dtype) -> np.ndarray:
    """A float result in saturation mode: NaN -> 0, ±inf (inputs or overflow) -> ±max."""
    big = _FLOAT_FORMATS[dst][2]
    r = np.array(out, dtype=np.float64)
    r = np.where(np.isnan(src), 0.0, r)
    r = np.where(np.isinf(r), np.copysign(big, r), r)
    return r.astype(dst)                              # exact: 0, ±max or the value itself


def cast(values, dst_dtype, mode: str = "none", *, sat: bool | None = None) -> np.ndarray:
    """Convert ``values`` to ``dst_dtype`` with a RoundMode name (see :data:`ROUND_MODES`).

    Float destinations: the exact source value rounded once by ``mode`` (IEEE overflow rules,
    NaN stays NaN, ±0 keep their sign); ``float32 -> float32`` rounds to an integral value.
    Integer destinations: rounded to an integer by ``mode`` and saturated (NaN -> 0).
    Integer -> integer: saturated. Which pairs and modes a product allows is the caller's
    business.

    ``sat`` selects the register API's saturation modes (Ascend 950 Cast page, table 4);
    ``None`` keeps the behaviour above. ``sat=True``: a float result is NaN -> 0 and ±inf or
    overflow -> ±max; integer results saturate as above. ``sat=False``: a float result follows
    IEEE (as above); an integer result keeps the lowest bits of the rounded value (two's
    complement wrap), ±inf -> the type's limits and NaN -> 0.
    """
    if mode not in ROUND_MODES:
        raise ValueError(f"cast: unknown round mode {mode!r}; expected one of {ROUND_MODES}")
    src = np.asarray(values)
    dst = np.dtype(dst_dtype)
    if src.dtype.kind in "iu" and dst.kind in "iu":
        if sat is False:
            return src.astype(dst)               # NumPy's integer casts keep the lowest bits
        info = np.iinfo(dst)
        return np.clip(src.astype(np.int64), info.min, info.max).astype(dst)
    with np.errstate(all="ignore"):
        v = src.astype(np.float64)               # exact for every supported source type
        if dst.kind in "iu":
            if sat is False:
                return _wrap_float_to_int(v, dst, mode)
            return _to_int(v, dst, mode)
        if dst == FLOAT and src.dtype == FLOAT:
            return _to_integral_float(v, mode)
        if dst not in _FLOAT_FORMATS:
            raise TypeError(f"cast: unsupported destination type {dst}")
        out = _to_float(v, dst, mode)
        return _saturating_float(out, v, dst) if sat else out


def _wrap_float_to_int(v: np.ndarray, dst: np.dtype, mode: str) -> np.ndarray:
    """Non-saturating float -> integer: rounded by ``mode``, the lowest bits kept; ±inf -> the
    type's limits, NaN -> 0 (Cast page, table 4)."""
    info = np.iinfo(dst)
    finite = np.isfinite(v)
    r = _round_scaled(np.where(finite, v, 0.0), mode)
    out = _wrap_int(r, dst)
    out[np.isnan(v)] = 0
    out[v == np.inf] = info.max
    out[v == -np.inf] = info.min
    return out
