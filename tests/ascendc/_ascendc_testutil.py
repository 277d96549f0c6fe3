"""Reference helpers for the Ascend C front-end tests (imported by the test modules)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

SENTINEL = {np.dtype(np.float16): np.float16(12345.0), np.dtype(np.float32): np.float32(-7.75e6)}


def naive_leaky_relu(x: np.ndarray, scalar) -> np.ndarray:
    """Obviously-correct reference of Ascend C's LeakyRelu: scalar rounded to T, ``>=``,
    the product in float32 and rounded once to T."""
    t = x.dtype
    with np.errstate(invalid="ignore", over="ignore"):
        s = np.array(scalar, dtype=np.float64).astype(t).astype(np.float32)
        w = x.astype(np.float32)
        return np.where(w >= 0, w, w * s).astype(t)


def naive_masked(dst: np.ndarray, src: np.ndarray, scalar, lanes_selected, repeats, dst_blk,
                 src_blk, dst_rep, src_rep) -> np.ndarray:
    """Loop-by-loop reference of the mask forms on NumPy copies; returns the new dst."""
    out = dst.copy()
    e = 32 // src.dtype.itemsize
    for r in range(repeats):
        for j in lanes_selected:
            b, lane = divmod(j, e)
            si = r * src_rep * e + b * src_blk * e + lane
            di = r * dst_rep * e + b * dst_blk * e + lane
            out[di] = naive_leaky_relu(src[si:si + 1], scalar)[0]
    return out


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}"))


# --- an exact oracle for one rounding: Fractions and integers only ------------------------------
# (significand bits with the implicit one, smallest normal exponent, largest finite value)
FORMATS = {"half": (11, -14, 65504), "bfloat16": (8, -126, (2 - 2**-7) * 2**127),
           "float": (24, -126, (2 - 2**-23) * 2**127)}


def _floor_log2(a: Fraction) -> int:
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def exact_round(v: Fraction, fmt: str | None, mode: str) -> Fraction | float:
    """Round the exact value ``v`` by ``mode`` to the float format ``fmt`` (or to an integer when
    ``fmt`` is None). Returns a Fraction, or ±inf as a float. The sign of a zero result is the
    sign of ``v`` (callers compare zeros separately)."""
    neg = v < 0
    a = -v if neg else v
    if a == 0:
        return Fraction(0)
    if fmt is None:
        q = 0
    else:
        p, emin, _ = FORMATS[fmt]
        q = max(_floor_log2(a), emin) - (p - 1)
    s = a / Fraction(2) ** q
    t = s.numerator // s.denominator
    rem = s - t
    half = Fraction(1, 2)
    if mode in ("none", "rint"):
        up = rem > half or (rem == half and t % 2 == 1)
    elif mode == "round":
        up = rem >= half
    elif mode == "trunc":
        up = False
    elif mode == "floor":
        up = neg and rem > 0
    elif mode == "ceil":
        up = (not neg) and rem > 0
    elif mode == "odd":
        up = rem > 0 and t % 2 == 0
    else:
        raise ValueError(mode)
    r = (t + up) * Fraction(2) ** q
    if fmt is not None:
        big = Fraction(FORMATS[fmt][2])
        if r > big:
            toward_inf = {"none": True, "rint": True, "round": True, "trunc": False, "odd": False,
                          "floor": neg, "ceil": not neg}[mode]
            if toward_inf:
                return -math.inf if neg else math.inf
            r = big
    return -r if neg else r


def lane_walk(lanes: int, itemsize: int, blk: int, rep: int, repeats: int = 1,
              selected=None, counter: int | None = None) -> list:
    """Element indices an operand's lanes visit, in order, written out loop by loop: Normal
    mode visits ``selected`` lanes of each of ``repeats`` repeats; Counter mode visits
    ``counter`` elements, every lane of each repeat in turn."""
    e = 32 // itemsize
    out = []
    if counter is not None:
        r = 0
        while len(out) < counter:
            for j in range(lanes):
                if len(out) == counter:
                    break
                out.append(r * rep * e + (j // e) * blk * e + j % e)
            r += 1
        return out
    for r in range(repeats):
        for j in (range(lanes) if selected is None else selected):
            out.append(r * rep * e + (j // e) * blk * e + j % e)
    return out
