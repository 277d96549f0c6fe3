"""The precision standards of ``leakyops verify`` (leakyops._verify), in process."""

import math

import ml_dtypes
import numpy as np
import pytest

from leakyops import _verify

BF16 = np.dtype(ml_dtypes.bfloat16)


def cmp(actual, golden, standard, **kw):
    return _verify.compare(np.asarray(actual), np.asarray(golden), standard, **kw)


def test_thresholds_per_dtype():
    # the asc-devkit samples: float32 (01_add) and float16/bfloat16 (09_unaligned_reducemin, 11_vectoradd)
    assert _verify.double_thousandth_defaults(np.float16) == (1e-3, 1e-5, 1e-3)
    assert _verify.double_thousandth_defaults(BF16) == (1e-3, 1e-5, 1e-3)
    assert _verify.double_thousandth_defaults(np.float32) == (1e-4, 1e-5, 1e-4)
    assert _verify.double_thousandth_defaults(np.float64) == (1e-4, 1e-5, 1e-4)
    assert _verify.relative_error_threshold(np.float16) == 2.0**-10
    assert _verify.relative_error_threshold(BF16) == 2.0**-7
    assert _verify.relative_error_threshold(np.float32) == 2.0**-13
    assert _verify.relative_error_threshold(np.float64) == 2.0**-13
    assert _verify.RATIO_DEFAULT == (0.01, 0.05)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_identical_arrays_pass_every_standard(dtype):
    g = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 3e-5], dtype=np.float64).astype(dtype)
    for standard in _verify.STANDARDS:
        c = cmp(g.copy(), g, standard)
        assert c.passed, standard
        assert c.over == 0 and c.max_abs == 0.0 and c.worst == []


def test_exact_is_bitwise_nan_equals_nan_but_signed_zero_differs():
    g = np.array([np.nan, 0.0, 1.0], np.float32)
    other_nan = np.array([0x7FC00001], np.uint32).view(np.float32)[0]
    a = np.array([other_nan, 0.0, 1.0], np.float32)
    assert cmp(a, g, "exact").passed  # NaN payloads do not matter
    a = np.array([np.nan, -0.0, 1.0], np.float32)
    c = cmp(a, g, "exact")
    assert not c.passed and c.over == 1
    assert c.worst[0][0] == (1,)
    # the tolerant standards accept -0 for +0
    for standard in ("double-thousandth", "ratio", "relative-error"):
        assert cmp(a, g, standard).passed


def test_exact_fails_on_one_ulp():
    g = np.ones(10, np.float16)
    a = g.copy()
    a[3] = np.nextafter(np.float16(1), np.float16(2))
    c = cmp(a, g, "exact")
    assert not c.passed and c.over == 1 and c.max_abs_index == (3,)


def test_double_thousandth_element_boundary_float32():
    # one element in 10,000 may fail (E = 1e-4); the element test is |a-g| <= atol + rtol*|g|
    g = np.full(10_000, 10.0, np.float32)
    tol = 1e-5 + 1e-4 * 10.0
    a = g.copy()
    a[:2] = np.float32(10.0 + 0.9 * tol)
    c = cmp(a, g, "double-thousandth")
    assert c.passed and c.over == 0
    a[:2] = np.float32(10.0 + 1.2 * tol)
    c = cmp(a, g, "double-thousandth")
    assert not c.passed and c.over == 2 and [w[0] for w in c.worst] == [(0,), (1,)]
    assert c.details["error ratio"] == 2e-4 and c.details["error ratio limit"] == 1e-4


def test_double_thousandth_is_a_share_not_every_element():
    # three float16 elements x1.05 in 4,096 pass (3/4096 <= 1e-3), a fifth fails
    rng = np.random.default_rng(1)
    g = rng.uniform(1, 2, 4096).astype(np.float16)
    a = g.copy()
    a[[5, 50, 500]] = (g[[5, 50, 500]].astype(np.float32) * 1.05).astype(np.float16)
    c = cmp(a, g, "double-thousandth")
    assert c.passed and c.over == 3
    assert "share of elements" in c.criterion and "0.001" in c.criterion
    a[[6, 60]] = (g[[6, 60]].astype(np.float32) * 1.05).astype(np.float16)
    c = cmp(a, g, "double-thousandth")
    assert not c.passed and c.over == 5  # 5/4096 = 0.00122 > 1e-3


def test_double_thousandth_share_exactly_at_the_limit_passes():
    g = np.ones(10_000, np.float32)
    a = g.copy()
    a[:1] = 2.0  # 1/10000 == 1e-4: passes (<=)
    assert cmp(a, g, "double-thousandth").passed
    a[:2] = 2.0
    assert not cmp(a, g, "double-thousandth").passed
    h = np.ones(1000, np.float16)
    b = h.copy()
    b[0] = 3.0  # 1/1000 == 1e-3
    assert cmp(b, h, "double-thousandth").passed
    b[1] = 3.0
    assert not cmp(b, h, "double-thousandth").passed


def test_double_thousandth_half_types_use_1e_3_in_float32():
    g = np.full(8, 2.0, np.float16)
    a = g.copy()
    a[2] = np.nextafter(np.float16(2), np.float16(3))  # 1 ulp = 2**-9 at 2 <= 1e-5 + 2e-3: close
    assert cmp(a, g, "double-thousandth").over == 0
    a[2] = np.float16(2 + 2 * 2.0**-9)  # 2 ulps: not close, and 1 of 8 > 1e-3
    c = cmp(a, g, "double-thousandth")
    assert c.over == 1 and not c.passed
    assert "np.isclose in float32" in c.criterion
    gb = np.full(2000, 1.0, BF16)
    ab = gb.copy()
    ab[0] = BF16.type(1.0078125)  # 1 ulp of bfloat16 at 1 = 2**-7 > 1e-3: one element of 2,000
    c = cmp(ab, gb, "double-thousandth")
    assert c.over == 1 and c.passed


def test_double_thousandth_options_override_the_defaults():
    g = np.ones(100, np.float32)
    a = g.copy()
    a[:3] = np.float32(1.002)
    assert not cmp(a, g, "double-thousandth").passed
    c = cmp(a, g, "double-thousandth", rtol=1e-2)
    assert c.passed and c.over == 0 and "(given)" in c.criterion
    c = cmp(a, g, "double-thousandth", error_ratio=0.03)
    assert c.passed and c.over == 3
    assert not cmp(a, g, "double-thousandth", error_ratio=0.02).passed
    assert cmp(a, g, "double-thousandth", atol=0.01).passed
    with pytest.raises(ValueError, match="error ratio must be a finite number >= 0 and at most 1"):
        cmp(a, g, "double-thousandth", error_ratio=2)
    with pytest.raises(ValueError, match="rtol must be a finite number >= 0"):
        cmp(a, g, "double-thousandth", rtol=-1)


def test_double_thousandth_atol_covers_zero_golden():
    g = np.zeros(10_000, np.float32)
    a = g.copy()
    a[1] = 1e-5  # |a-g| <= atol
    a[2] = 2e-5  # over atol: one element in 10,000 is allowed
    c = cmp(a, g, "double-thousandth")
    assert c.over == 1 and c.passed
    a[3] = 2e-5
    assert not cmp(a, g, "double-thousandth").passed


def test_ratio_counts_elements_over_threshold1_against_threshold2():
    g = np.ones(100, np.float32)
    a = g.copy()
    a[:4] = 1.02  # 4% of elements with relative error 2% > 1%
    c = cmp(a, g, "ratio")
    assert c.passed and c.over == 4 and math.isclose(c.details["error ratio"], 0.04)
    a[:5] = 1.02  # 5% is not under 5%
    c = cmp(a, g, "ratio")
    assert not c.passed and c.over == 5
    # elements just under threshold1 are not errors
    a = g.copy()
    a[:50] = np.float32(1.009)
    assert cmp(a, g, "ratio").passed
    # custom thresholds (msOpST -err_thr)
    assert not cmp(a, g, "ratio", ratio_thresholds=(0.001, 0.1)).passed


def test_ratio_zero_golden_uses_absolute_error():
    g = np.zeros(10, np.float32)
    a = g.copy()
    a[0] = 0.5
    c = cmp(a, g, "ratio", ratio_thresholds=(0.01, 0.05))
    assert c.over == 1 and not c.passed  # 10% > 5%
    a[0] = 0.005
    assert cmp(a, g, "ratio").over == 0


def test_relative_error_mere_and_mare():
    t = 2.0**-13
    g = np.ones(1000, np.float32)
    a = g.copy()
    a[0] = np.float32(1 + 5 * t)  # MARE 5t < 10t, MERE tiny
    c = cmp(a, g, "relative-error")
    assert c.passed
    assert math.isclose(c.details["MARE"], float(a[0]) - 1, rel_tol=1e-6)
    a[0] = np.float32(1 + 11 * t)  # MARE over 10t
    assert not cmp(a, g, "relative-error").passed
    a = g.copy()
    a[:] = np.float32(1 + 1.5 * t)  # every element within 10t, but the mean is over t
    c = cmp(a, g, "relative-error")
    assert not c.passed and c.details["MERE"] > t


def test_relative_error_nan_or_inf_mismatch_fails_even_if_rare():
    g = np.ones(1000, np.float32)
    a = g.copy()
    a[7] = np.nan
    c = cmp(a, g, "relative-error")
    assert not c.passed and c.nan_actual_only == 1
    a = g.copy()
    g2 = g.copy()
    g2[3] = np.inf
    a[3] = -np.inf
    c = cmp(a, g2, "relative-error")
    assert not c.passed and c.inf_mismatch == 1
    # the ratio standard counts them as error elements only
    assert cmp(a, g2, "ratio").passed


def test_nan_mismatch_counts_both_directions():
    g = np.array([np.nan, 1.0, 2.0, np.nan], np.float64)
    a = np.array([1.0, np.nan, 2.0, np.nan], np.float64)
    c = cmp(a, g, "exact")
    assert (c.nan_golden_only, c.nan_actual_only, c.over) == (1, 1, 2)
    assert {w[0] for w in c.worst} == {(0,), (1,)}


def test_worst_list_is_sorted_and_capped():
    g = np.ones((4, 5), np.float32)
    a = g + np.arange(20, dtype=np.float32).reshape(4, 5) * 0.01
    c = cmp(a, g, "exact")
    assert c.over == 19
    assert len(c.worst) == 10
    assert c.worst[0][0] == (3, 4)  # the largest error first, as a multi-index
    errs = [w[3] for w in c.worst]
    assert errs == sorted(errs, reverse=True)
    assert c.max_abs_index == (3, 4)


def test_empty_arrays_pass():
    g = np.zeros((0, 3), np.float32)
    for standard in _verify.STANDARDS:
        c = cmp(g.copy(), g, standard)
        assert c.passed and c.elements == 0


def test_report_lines_and_json():
    g = np.array([1.0, 2.0, np.nan], np.float16)
    a = np.array([1.0, 2.5, 1.0], np.float16)
    c = cmp(a, g, "double-thousandth")
    text = "\n".join(c.report_lines())
    assert "elements compared    3" in text
    assert "over tolerance       2" in text
    assert "golden NaN, actual not: 1" in text
    assert "result               FAIL" in text
    d = c.to_dict()
    assert d["passed"] is False and d["shape"] == [3] and d["worst"][0]["index"] in ([1], [2])
    import json

    json.dumps(d)  # serialisable, NaN/inf written as strings


def test_compare_rejects_bad_standard_and_size_mismatch():
    with pytest.raises(ValueError, match="unknown standard"):
        cmp(np.ones(2), np.ones(2), "bogus")
    with pytest.raises(ValueError, match="size mismatch"):
        cmp(np.ones(3, np.float32), np.ones(2, np.float32), "exact")


def test_other_actual_dtype_is_compared_as_numbers():
    # a bfloat16 output dumped as float32 (torch_npu, msprobe): the same numbers
    g = np.array([1.5, -0.0, np.nan, np.inf, 3.140625, 2.0**-133], BF16)
    a = g.astype(np.float32)
    for standard in _verify.STANDARDS:
        c = cmp(a, g, standard)
        assert c.passed and c.over == 0, standard
        assert c.dtype == "bfloat16" and c.actual_dtype == "float32"
    assert "compared as float32 numbers" in cmp(a, g, "exact").criterion
    # a float32 value that is not a bfloat16 fails exact; the thresholds are bfloat16's
    a[0] = np.float32(1.5) + np.float32(2.0**-20)
    c = cmp(a, g, "exact")
    assert not c.passed and c.worst[0][0] == (0,)
    assert cmp(a, g, "relative-error").details["MERE limit"] == 2.0**-7
    # signed zero still counts in exact, as in the same-dtype case
    a = g.astype(np.float32)
    a[1] = 0.0
    assert not cmp(a, g, "exact").passed
    # float64 actual against float32 golden: the element test runs in float64
    g32 = np.full(10, 1.0, np.float32)
    a64 = np.full(10, 1.0 + 1e-12, np.float64)
    assert not cmp(a64, g32, "exact").passed
    assert cmp(a64, g32, "double-thousandth").passed


@pytest.mark.parametrize("standard", _verify.STANDARDS)
def test_chunked_comparison_equals_one_pass(standard):
    """The streaming comparer gives the same Comparison whatever the chunk size."""
    rng = np.random.default_rng(7)
    g = rng.standard_normal((37, 29)).astype(np.float32)
    a = g.copy()
    flat = a.reshape(-1)
    flat[rng.choice(flat.size, 60, replace=False)] *= np.float32(1.01)
    flat[[3, 500, 900]] = [np.nan, np.inf, -np.inf]
    g.reshape(-1)[[700, 701]] = np.nan
    flat[700] = np.nan
    flat[11] = flat[12] = np.float32(5.0)  # ties in the worst list resolve to the smaller index
    whole = cmp(a, g, standard, chunk=a.size)
    for chunk in (1, 7, 64, 1000):
        part = cmp(a, g, standard, chunk=chunk)
        assert part.to_dict() == whole.to_dict(), chunk
    assert len(whole.worst) == 10


def test_comparer_needs_every_element_and_matching_chunks():
    c = _verify.Comparer("exact", np.float32, (4,))
    c.update(np.zeros(2, np.float32), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="2 of 4 elements"):
        c.result()
    with pytest.raises(ValueError, match="chunk sizes differ"):
        c.update(np.zeros(1, np.float32), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="dtype mismatch"):
        c.update(np.zeros(2, np.float64), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="more than 4 elements"):
        c.update(np.zeros(3, np.float32), np.zeros(3, np.float32))
