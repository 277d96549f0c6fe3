"""grad_weight's float64 sums rounded once to the storage type (``_kernels.round_sums``).

A float64 value rounded to float32 first and to a half type next can round twice (a value just
above a half type's halfway point lands on it in float32, then ties to even downwards). The
kernels round to odd in float32 first, which makes the second rounding exact; these tests hold
them to a rounding computed exactly with fractions, on values at and around every boundary.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from leakyops import _kernels

BF16 = np.dtype(ml_dtypes.bfloat16)
KINDS = {np.dtype(np.float16): (np.uint16, 11, -14, 15), BF16: (np.int16, 8, -126, 127),
         np.dtype(np.float32): (np.float32, 24, -126, 127)}


def exact_round(v: float, dtype: np.dtype) -> float:
    """``v`` rounded once to ``dtype`` (to nearest, ties to even), from its exact value."""
    if math.isnan(v) or math.isinf(v) or v == 0:
        return v
    _, p, emin, emax = KINDS[dtype]
    q = Fraction(v)
    e = max(math.floor(math.log2(abs(q))), emin)
    if abs(q) < Fraction(2) ** e:  # (log2 rounding at exact powers)
        e -= 1
    if abs(q) >= Fraction(2) ** (e + 1):
        e += 1
    e = max(e, emin)
    ulp = Fraction(2) ** (e - p + 1)
    n, rem = divmod(q, ulp)
    if rem > ulp / 2 or (rem == ulp / 2 and n % 2 == 1):
        n += 1
    r = n * ulp
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if abs(r) > largest:
        return math.copysign(math.inf, v)
    return math.copysign(float(r), v) if r == 0 else float(r)


def boundary_values(dtype: np.dtype, rng) -> np.ndarray:
    """Values of ``dtype``, the midpoints between neighbours, and both just off them (by a
    few float64 ulps, far below float32's), subnormals, the largest values and overflow."""
    view, p, emin, emax = KINDS[dtype]
    if dtype.itemsize == 2:
        bits = np.arange(0, 1 << 16, 53, dtype=np.uint32).astype(np.uint16)
    else:
        bits = rng.integers(0, 1 << 32, 1500, dtype=np.uint64).astype(np.uint32)
    vals = bits.view(view).view(dtype).astype(np.float64)
    vals = vals[np.isfinite(vals)]
    nxt = np.nextafter(vals.astype(dtype), np.array(np.inf, dtype)).astype(np.float64)
    mids = (vals + nxt) / 2
    mids = mids[np.isfinite(mids)]
    out = [vals, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
           mids * (1 + 2.0 ** -40), mids * (1 - 2.0 ** -40)]
    largest = float(np.finfo(dtype).max) if dtype != BF16 else float(ml_dtypes.finfo(BF16).max)
    out.append(np.array([largest, largest * (1 + 2.0 ** (-p - 1)), largest * (1 + 2.0 ** -p),
                         largest * 2, 2.0 ** (emin - p), 2.0 ** (emin - p - 1),
                         2.0 ** (emin - p - 1) * (1 + 2.0 ** -30), 1e300, 5e-324, 0.0, -0.0]))
    both = np.concatenate(out)
    return np.concatenate([both, -both])


@pytest.mark.parametrize("dtype", list(KINDS), ids=lambda d: d.name)
def test_sums_are_rounded_once(dtype):
    rng = np.random.default_rng(0)
    with np.errstate(invalid="ignore", over="ignore"):  # (NaN bit patterns, overflow: the data)
        v = boundary_values(dtype, rng)
        want = np.array([exact_round(float(a), dtype) for a in v]).astype(dtype)
    view = KINDS[dtype][0]
    out = np.empty(v.size, dtype)
    _kernels.round_sums(v, out.view(view) if dtype.itemsize == 2 else out)
    got_bits = out.view(f"u{dtype.itemsize}")
    want_bits = want.view(f"u{dtype.itemsize}")
    bad = np.flatnonzero(got_bits != want_bits)
    assert bad.size == 0, [(float(v[i]), float(out[i]), float(want[i])) for i in bad[:5]]


def test_a_double_rounding_case():
    """1 + 2**-8 + 2**-30 lies just above bfloat16's halfway point between 1 and 1 + 2**-7:
    once rounded, 1.0078125; rounded through float32 first (which drops the 2**-30), 1.0."""
    v = np.array([1 + 2.0 ** -8 + 2.0 ** -30, -(1 + 2.0 ** -8 + 2.0 ** -30)])
    out = np.empty(2, BF16)
    _kernels.round_sums(v, out.view(np.int16))
    assert out.astype(np.float64).tolist() == [1.0078125, -1.0078125]
    assert np.float32(v[0]).astype(BF16) == 1.0  # the double rounding it avoids


def test_nan_and_infinities():
    v = np.array([np.nan, -np.nan, np.inf, -np.inf])
    for dtype, view in ((np.dtype(np.float16), np.uint16), (BF16, np.int16)):
        out = np.empty(4, dtype)
        _kernels.round_sums(v, out.view(view))
        f = out.astype(np.float64)
        assert np.isnan(f[:2]).all() and f[2] == np.inf and f[3] == -np.inf
