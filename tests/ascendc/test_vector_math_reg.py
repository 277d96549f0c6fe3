"""``leakyops._vector_math``'s additions for the Ascend 950 register API: bfloat16 arithmetic
with one rounding (against the exact oracle of ``_ascendc_testutil``), the IEEE comparison, and
Cast's saturation modes (the Reg Cast page's table 4)."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from _ascendc_testutil import exact_round, same_bits

from leakyops import _vector_math as vm

BF16 = np.dtype(ml_dtypes.bfloat16)


def _random_bf16(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2**16, n, dtype=np.uint64).astype(np.uint16).view(BF16)
    return x[np.isfinite(x.astype(np.float32))]


def _bf16(v):
    return np.array([v], np.float32).astype(BF16)[0] if not isinstance(v, Fraction) else v


def _check(got, exact, signs):
    for g, ex, neg in zip(got, exact, signs):
        want = exact_round(ex, "bfloat16", "rint")
        if want == 0:
            assert float(g) == 0 and bool(np.signbit(g)) == neg
        elif isinstance(want, float):
            assert float(g) == want
        else:
            assert Fraction(float(g)) == want, (g, ex, want)


@pytest.mark.parametrize("op", ["mul", "add", "sub"])
def test_bf16_rounds_once(op):
    a = _random_bf16(2000, 1)
    b = _random_bf16(2000, 2)
    n = min(a.size, b.size)
    a, b = a[:n], b[:n]
    b[::3] = (a[::3].astype(np.float32) * np.float32(2**-9)).astype(BF16)  # near-ties for add
    got = getattr(vm, op)(a, b)
    fa = [Fraction(float(v)) for v in a]
    fb = [Fraction(float(v)) for v in b]
    if op == "mul":
        exact = [x * y for x, y in zip(fa, fb)]
        signs = [bool(np.signbit(x)) != bool(np.signbit(y)) for x, y in zip(a, b)]
    else:
        s = 1 if op == "add" else -1
        exact = [x + s * y for x, y in zip(fa, fb)]
        signs = [bool(np.signbit(x)) and (bool(np.signbit(y)) == (s == 1)) for x, y in zip(a, b)]
    _check(got, exact, signs)


def test_bf16_sum_is_not_double_rounded():
    # 1 + 2**-8 + 2**-15 lies just above the tie between 1 and 1 + 2**-7; a float32 intermediate
    # would land on the tie and round to 1 (ml_dtypes' double -> bfloat16 does that)
    a, b = np.array([1.0], BF16), np.array([2**-8 + 2**-15], np.float32).astype(BF16)
    assert float(b[0]) == 2**-8 + 2**-15
    assert float(vm.add(a, b)[0]) == 1 + 2**-7


def test_bf16_max_min_signed_zeros_and_nan():
    a = np.array([-0.0, 0.0, np.nan, 1.0], BF16)
    b = np.array([0.0, -0.0, 1.0, np.nan], BF16)
    mx, mn = vm.maximum(a, b), vm.minimum(a, b)
    assert mx.dtype == BF16 and not np.signbit(mx[0]) and not np.signbit(mx[1])
    assert np.signbit(mn[0]) and np.signbit(mn[1])
    assert np.isnan(mx[2:]).all() and np.isnan(mn[2:]).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, BF16])
def test_compare_is_ieee(dtype):
    vals = np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan], np.float32).astype(dtype)
    a, b = np.repeat(vals, vals.size), np.tile(vals, vals.size)
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = {"eq": fa == fb, "ne": fa != fb, "gt": fa > fb, "ge": fa >= fb, "lt": fa < fb,
                "le": fa <= fb}
    for mode, w in want.items():
        assert np.array_equal(vm.compare(a, b, mode), w), mode
    assert vm.compare(a, b, "eq")[2 * vals.size + 3]          # -0 == +0
    assert not vm.compare(np.array([np.nan], dtype), 0, "ge")[0]
    assert vm.compare(np.array([np.nan], dtype), 0, "ne")[0]


def test_compare_integers_exactly():
    a = np.array([2**62 + 1, -5, 7], np.int64)
    assert vm.compare(a, np.array([2**62, -5, 8], np.int64), "gt").tolist() == [True, False, False]
    u = np.array([2**64 - 1, 0], np.uint64)
    assert vm.compare(u, np.array([2**64 - 2, 0], np.uint64), "gt").tolist() == [True, False]
    with pytest.raises(ValueError, match="unknown mode"):
        vm.compare(a, a, "lg")


def test_cast_saturation_modes_table4():
    # float -> integer: NO_SAT keeps the lowest bits (half 257 -> uint8 1), ±inf -> limits,
    # NaN -> 0; SAT clamps (257 -> 255, -inf -> 0)
    h = np.array([257, -1, np.inf, -np.inf, np.nan, 300.7], np.float16)
    assert vm.cast(h, np.uint8, "trunc", sat=False).tolist() == [1, 255, 255, 0, 0, 44]
    assert vm.cast(h, np.uint8, "trunc", sat=True).tolist() == [255, 0, 255, 0, 0, 255]
    f = np.array([40000.7, -40000.2, 2.0**40 + 3], np.float32)
    assert vm.cast(f, np.int16, "rint", sat=False).tolist() == [-25535, 25536, 0]
    assert vm.cast(f, np.int16, "rint", sat=True).tolist() == [32767, -32768, 32767]
    # float -> float: SAT turns NaN into 0 and ±inf/overflow into ±max; NO_SAT is IEEE
    g = np.array([np.nan, np.inf, -np.inf, 1e6, -1e6, 1.5], np.float32)
    assert vm.cast(g, np.float16, "rint", sat=True).tolist() == [0, 65504, -65504, 65504, -65504, 1.5]
    nosat = vm.cast(g, np.float16, "rint", sat=False)
    assert np.isnan(nosat[0]) and nosat[1:5].tolist() == [np.inf, -np.inf, np.inf, -np.inf]
    # integer -> integer: NO_SAT wraps (int32 256 -> uint8 0), SAT clamps
    i = np.array([256, -1, 70000], np.int32)
    assert vm.cast(i, np.uint8, sat=False).tolist() == [0, 255, 112]
    assert vm.cast(i, np.uint8, sat=True).tolist() == [255, 0, 255]
    # the default (sat=None) is unchanged: saturating integers, IEEE floats
    assert same_bits(vm.cast(h, np.uint8, "trunc"), vm.cast(h, np.uint8, "trunc", sat=True))
    assert same_bits(vm.cast(g[1:], np.float16, "rint"), nosat[1:])
