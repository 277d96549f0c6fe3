"""``leakyops._vector_math``: the arithmetic of each vector instruction against an exact oracle
(Fractions and integers, ``_ascendc_testutil.exact_round``), the vendor's documented rounding
examples, and the rules at ±0, ±inf and NaN."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from _ascendc_testutil import exact_round, same_bits

from leakyops import _vector_math as vm

BF16 = np.dtype(ml_dtypes.bfloat16)
FMT = {np.dtype(np.float16): "half", np.dtype(np.float32): "float", BF16: "bfloat16"}
DTYPES = [pytest.param(np.dtype(np.float16), id="half"),
          pytest.param(np.dtype(np.float32), id="float")]


def _random(dtype, n, seed):
    """Random bit patterns (every exponent, subnormals included), finite only."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** (8 * dtype.itemsize), n, dtype=np.uint64)
    x = bits.astype(f"u{dtype.itemsize}").view(dtype)
    return x[np.isfinite(x)]


def _as_float(want, dtype):
    if isinstance(want, float):          # ±inf
        return dtype.type(want)
    return dtype.type(float(want)) if dtype != BF16 else np.array(float(want)).astype(BF16)[()]


def _check_rounding(got, exact_values, dtype, mode, zero_signs):
    for g, ex, zneg in zip(got, exact_values, zero_signs):
        want = exact_round(ex, FMT[dtype], mode)
        if want == 0:
            assert float(g) == 0 and bool(np.signbit(g)) == zneg, (g, ex, mode)
        else:
            assert same_bits(np.asarray(g), np.asarray(_as_float(want, dtype))), (g, ex, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mul_rounds_once(dtype):
    a = _random(dtype, 3000, 1)
    b = _random(dtype, a.size, 2)[: a.size]
    a = a[: b.size]
    got = vm.mul(a, b)
    exact = [Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)]
    signs = [bool(np.signbit(x)) != bool(np.signbit(y)) for x, y in zip(a, b)]
    _check_rounding(got, exact, dtype, "rint", signs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_sub_round_once(dtype, op):
    a = _random(dtype, 3000, 3)
    # operands of nearby and of very different magnitudes
    b = np.concatenate([_random(dtype, 1500, 4), (a[:1500] * dtype.type(0.75)).astype(dtype)])
    n = min(a.size, b.size)
    a, b = a[:n], b[:n]
    got = vm.add(a, b) if op == "add" else vm.sub(a, b)
    sign = 1 if op == "add" else -1
    exact = [Fraction(float(x)) + sign * Fraction(float(y)) for x, y in zip(a, b)]
    # an exact zero sum is +0 under round-to-nearest unless both addends are -0
    yneg = [bool(np.signbit(y)) == (op == "add") for y in b]
    signs = [e < 0 if e != 0 else (bool(np.signbit(x)) and yn) for e, x, yn in zip(exact, a, yneg)]
    _check_rounding(got, exact, dtype, "rint", signs)


def test_half_sum_is_computed_beyond_float32():
    # 2**15 + 2**-24 is not exact in float32; the result still rounds once, to 2**15
    a, b = np.float16(2**15), np.float16(2**-24)
    assert np.float32(a) + np.float32(b) == np.float32(a)
    assert vm.add(np.array([a]), b)[0] == a
    # overflow goes to inf, as the device's INF_NAN mode does
    assert vm.add(np.array([np.float16(65504)]), np.float16(32))[0] == np.inf
    assert vm.mul(np.array([np.float16(300)]), np.float16(300))[0] == np.inf


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_min_signed_zeros_and_nan(dtype):
    t = dtype.type
    x = np.array([-0.0, 0.0, -0.0, np.nan, -np.inf, np.inf, -1, 1], dtype=dtype)
    mx, mn = vm.maximum(x, t(0.0)), vm.minimum(x, t(0.0))
    # Reg Maxs/Mins pages: max(-0, +0) = +0, min(-0, +0) = -0
    assert not np.signbit(mx[0]) and np.signbit(mn[0])
    assert not np.signbit(mx[1]) and not np.signbit(mn[1])
    assert np.isnan(mx[3]) and np.isnan(mn[3])                  # NaN propagates
    assert mx[4] == 0 and mn[4] == -np.inf and mx[5] == np.inf and mn[5] == 0
    assert mx.tolist()[6:] == [0, 1] and mn.tolist()[6:] == [-1, 0]
    # both operands -0 keep -0 for max as well
    assert np.signbit(vm.maximum(np.array([t(-0.0)]), t(-0.0))[0])
    assert not np.signbit(vm.minimum(np.array([t(0.0)]), t(0.0))[0])


def test_operand_types():
    with pytest.raises(TypeError, match="float16 or float32"):
        vm.add(np.arange(3), 1)
    with pytest.raises(ValueError, match="unknown round mode"):
        vm.cast(np.ones(2, np.float32), np.float16, "nearest")


# ------------------------------------------------------------------------------ Cast

def test_doc_example_float_to_half_every_mode():
    # precision_conversion.md: 0.5 + 2**-12 -> half
    x = np.array([0.5 + 2**-12], dtype=np.float32)
    expect = {"rint": 0.5, "floor": 0.5, "ceil": 0.5 + 2**-11, "round": 0.5 + 2**-11,
              "trunc": 0.5, "odd": 0.5 + 2**-11, "none": 0.5}
    for mode, want in expect.items():
        assert float(vm.cast(x, np.float16, mode)[0]) == want, mode


def test_doc_example_half_to_int32():
    # Cast.md: [1.4, 1.5, 1.6, 2.4, 2.5, 2.6] under each RoundMode
    x = np.array([1.4, 1.5, 1.6, 2.4, 2.5, 2.6], dtype=np.float16)
    expect = {"ceil": [2, 2, 2, 3, 3, 3], "none": [1, 2, 2, 2, 2, 3], "rint": [1, 2, 2, 2, 2, 3],
              "floor": [1, 1, 1, 2, 2, 2], "round": [1, 2, 2, 2, 3, 3],
              "trunc": [1, 1, 1, 2, 2, 2]}
    for mode, want in expect.items():
        assert vm.cast(x, np.int32, mode).tolist() == want, mode
    # precision_conversion.md: -1.5 -> int32
    got = {m: int(vm.cast(np.array([-1.5], np.float16), np.int32, m)[0])
           for m in ("rint", "floor", "ceil", "round", "trunc")}
    assert got == {"rint": -2, "floor": -2, "ceil": -1, "round": -2, "trunc": -1}


def test_doc_examples_other_conversions():
    # precision_conversion.md: int32 2**25 + 3 -> float; float 0.5 + 2**-9 + 2**-11 -> bf16;
    # float 2**22 + 0.5 -> int32; float 0.5 -> float (integral); int16 2**12 + 2 -> half
    i = np.array([2**25 + 3], np.int32)
    assert {m: float(vm.cast(i, np.float32, m)[0]) for m in ("rint", "floor", "ceil", "round",
                                                             "trunc")} == \
        {"rint": 2**25 + 4, "floor": 2**25, "ceil": 2**25 + 4, "round": 2**25 + 4,
         "trunc": 2**25}
    f = np.array([0.5 + 2**-9 + 2**-11], np.float32)
    assert {m: float(vm.cast(f, BF16, m)[0]) for m in ("rint", "floor", "ceil", "trunc")} == \
        {"rint": 0.5 + 2**-8, "floor": 0.5, "ceil": 0.5 + 2**-8, "trunc": 0.5}
    g = np.array([2**22 + 0.5], np.float32)
    assert [int(vm.cast(g, np.int32, m)[0]) for m in ("rint", "floor", "ceil", "round",
                                                      "trunc")] == \
        [2**22, 2**22, 2**22 + 1, 2**22 + 1, 2**22]
    h = np.array([0.5], np.float32)
    assert [float(vm.cast(h, np.float32, m)[0]) for m in ("rint", "floor", "ceil", "round",
                                                          "trunc")] == [0, 0, 1, 1, 0]
    k = np.array([2**12 + 2], np.int16)
    assert [float(vm.cast(k, np.float16, m)[0]) for m in ("rint", "floor", "ceil", "round",
                                                          "trunc")] == \
        [2**12, 2**12, 2**12 + 4, 2**12 + 4, 2**12]
    # saturation: half 2**7 - 0.5 -> int8, float 2**22 + 0.5 -> int16, int32 max -> int16
    assert vm.cast(np.array([127.5], np.float16), np.int8, "ceil")[0] == 127
    assert vm.cast(g, np.int16, "rint")[0] == 2**15 - 1
    assert vm.cast(np.array([2**31 - 1], np.int32), np.int16)[0] == 2**15 - 1


@pytest.mark.parametrize("mode", vm.ROUND_MODES)
@pytest.mark.parametrize("pair", [("float32", "float16"), ("float32", "bfloat16"),
                                  ("int32", "float32"), ("int16", "float16")])
def test_cast_to_float_against_the_oracle(pair, mode):
    src = np.dtype(pair[0]) if pair[0] != "bfloat16" else BF16
    dst = np.dtype(pair[1]) if pair[1] != "bfloat16" else BF16
    if src.kind == "f":
        x = _random(src, 4000, 7)
        # values at and next to the destination's rounding boundaries, ties included
        grid = _random(np.dtype(np.float16), 500, 8).astype(np.float32)
        ulp = np.spacing(grid.astype(np.float16)).astype(np.float32)
        x = np.concatenate([x, grid + ulp / 2, grid - ulp / 2, grid + ulp / 4]).astype(src)
        x = x[np.isfinite(x)]
    else:
        info = np.iinfo(src)
        x = np.random.default_rng(9).integers(info.min, info.max, 4000, endpoint=True).astype(src)
    got = vm.cast(x, dst, mode)
    for g, v in zip(got, x):
        want = exact_round(Fraction(int(v)) if src.kind in "iu" else Fraction(float(v)),
                           FMT[dst], mode)
        if want == 0:
            assert float(g) == 0 and bool(np.signbit(g)) == bool(np.signbit(v)), (v, g)
        else:
            assert same_bits(np.asarray(g), np.asarray(_as_float(want, dst))), (v, g, want)


@pytest.mark.parametrize("mode", ["rint", "floor", "ceil", "round", "trunc", "none"])
@pytest.mark.parametrize("pair", [("float16", "int32"), ("float32", "int32"),
                                  ("float16", "int8"), ("float16", "uint8"),
                                  ("float32", "int16"), ("float32", "int64")])
def test_cast_to_integer_against_the_oracle(pair, mode):
    src, dst = np.dtype(pair[0]), np.dtype(pair[1])
    x = _random(src, 3000, 11)
    x = np.concatenate([x, np.arange(-300, 300, 0.25).astype(src)])
    got = vm.cast(x, dst, mode)
    info = np.iinfo(dst)
    for g, v in zip(got, x):
        want = int(exact_round(Fraction(float(v)), None, mode))
        assert int(g) == min(max(want, info.min), info.max), (v, g, want)


def test_cast_special_values():
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e30], np.float32)
    h = vm.cast(x, np.float16, "rint")
    assert np.isnan(h[0]) and h[1] == np.inf and h[2] == -np.inf
    assert np.signbit(h[3]) and not np.signbit(h[4])
    assert h[5] == np.inf and h[6] == -np.inf
    # directed modes stop at the largest finite value on their side (IEEE 754)
    assert vm.cast(x[5:], np.float16, "trunc").tolist() == [65504, -65504]
    assert vm.cast(x[5:], np.float16, "floor").tolist() == [65504, -np.inf]
    assert vm.cast(x[5:], np.float16, "ceil").tolist() == [np.inf, -65504]
    assert vm.cast(x[5:], np.float16, "odd").tolist() == [65504, -65504]
    # integers: NaN -> 0, ±inf -> the type's limits (saturation, the vendor's default)
    assert vm.cast(x[:3], np.int32, "rint").tolist() == [0, 2**31 - 1, -2**31]
    # round to odd: an inexact result gets an odd last bit; exact results are untouched
    odd = vm.cast(np.array([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-10], np.float32), np.float16,
                  "odd")
    assert odd.tolist() == [1 + 2**-10, 1 + 2**-10, 1 + 2**-10]
    assert float(vm.cast(np.array([2**-30], np.float32), np.float16, "odd")[0]) == 2**-24
