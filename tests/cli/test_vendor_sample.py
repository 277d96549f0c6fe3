"""``--standard double-thousandth`` gives the verdict of the vendor's sample scripts.

The Ascend C samples in the public ``cannmirror/asc-devkit`` repository check a kernel's output
with ``scripts/verify_result.py`` (e.g. ``examples/00_introduction/01_add`` for float32,
``examples/00_introduction/11_vectoradd`` and ``11_vectoradd/add`` for bfloat16,
``examples/00_introduction/09_unaligned_reducemin`` for float16). Their logic, restated here
from what those scripts do (not copied): read both files flat; for bfloat16, cast both to
float32; mark the elements where ``np.isclose(output, golden, rtol, atol, equal_nan=True)`` is
false; pass when ``float(marked) / golden.size <= error_tol``; float32 uses
``rtol = 1e-4, atol = 1e-5, error_tol = 1e-4``, the half types ``1e-3, 1e-5, 1e-3``.
The float16 sample calls ``np.isclose`` on the float16 arrays directly; the command computes
float16 in float32, like the bfloat16 samples,
so the sample is modelled with the cast here; ``test_float16_sample_without_cast`` shows where
the two can differ.
"""

import zlib

import ml_dtypes
import numpy as np
import pytest

from leakyops import _verify

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
SAMPLE_TOLS = {F32: (1e-4, 1e-5, 1e-4), F16: (1e-3, 1e-5, 1e-3), BF16: (1e-3, 1e-5, 1e-3), F64: (1e-4, 1e-5, 1e-4)}


def sample_verdict(output, golden, rtol, atol, error_tol, cast_halves=True):
    """(passed, number of elements that are not close), the way verify_result.py decides."""
    output = np.asarray(output).reshape(-1)
    golden = np.asarray(golden).reshape(-1)
    if cast_halves and golden.dtype in (BF16, F16):
        output = output.astype(np.float32)
        golden = golden.astype(np.float32)
    close = np.isclose(output, golden, rtol=rtol, atol=atol, equal_nan=True)
    failing = np.where(~close)[0]
    error_ratio = float(failing.size) / golden.size
    return error_ratio <= error_tol, failing.size


def ours(actual, golden, **kw):
    c = _verify.compare(actual, golden, "double-thousandth", **kw)
    return c.passed, c.over


def _doctor(rng, g, dtype, how):
    """An 'actual' output near ``g``: errors around the tolerance, specials, or exact boundaries."""
    with np.errstate(all="ignore"):
        return _doctor_quiet(rng, g, dtype, how)


def _doctor_quiet(rng, g, dtype, how):
    rtol, atol, _ = SAMPLE_TOLS[dtype]
    ct = F64 if dtype == F64 else F32
    gw = g.astype(ct)
    n = g.size
    if how == "noise":  # relative noise of the order of rtol: some elements close, some not
        scale = rng.choice([0.3, 1.0, 3.0]) * rtol
        a = gw * (1 + rng.standard_normal(n) * scale).astype(ct) + (rng.standard_normal(n) * atol).astype(ct)
        return a.astype(dtype)
    if how == "few":  # a handful of elements far off
        a = g.copy()
        k = int(rng.integers(0, 6))
        k = min(k, n)
        where = rng.choice(n, k, replace=False)
        a[where] = (gw[where] * 1.05 + 1).astype(dtype)
        return a
    if how == "boundary":  # |a - g| == atol + rtol*|g| computed in the compute type, and the neighbours
        lim = ct.type(atol) + ct.type(rtol) * np.abs(gw)
        edge = gw + lim
        a = np.where(rng.random(n) < 0.5, edge, np.nextafter(edge, ct.type(np.inf) * rng.choice([-1, 1], n)))
        return a.astype(dtype)
    if how == "special":  # NaN and infinities on either side
        a = g.copy()
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype)
        where = rng.choice(n, min(n, int(rng.integers(0, 9))), replace=False)
        a[where] = specials[rng.integers(0, specials.size, where.size)]
        return a
    raise AssertionError(how)


def _golden(rng, n, dtype, with_specials):
    g = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4)).astype(dtype)
    if with_specials:
        where = rng.choice(n, min(n, 4), replace=False)
        g[where] = np.array([np.nan, np.inf, -np.inf, 0.0], dtype)[: where.size]
    return g


@pytest.mark.parametrize("dtype", [F16, BF16, F32, F64], ids=lambda d: _verify.dtype_name(d))
@pytest.mark.parametrize("how", ["noise", "few", "boundary", "special"])
def test_verdict_equals_the_sample_on_random_inputs(dtype, how):
    rng = np.random.default_rng(zlib.crc32(f"{_verify.dtype_name(dtype)} {how}".encode()))
    decided = set()
    for trial in range(40):
        n = int(rng.choice([1, 3, 100, 1000, 4096, 10_000]))
        g = _golden(rng, n, dtype, with_specials=trial % 3 == 0)
        a = _doctor(rng, g, dtype, how)
        want = sample_verdict(a, g, *SAMPLE_TOLS[dtype])
        assert ours(a, g) == want, (trial, n)
        decided.add(want[0])
    if how in ("noise", "special"):
        assert decided == {True, False}  # both verdicts occur: the comparison is not vacuous


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=lambda d: _verify.dtype_name(d))
def test_verdict_equals_the_sample_at_exactly_the_error_ratio(dtype):
    rtol, atol, error_tol = SAMPLE_TOLS[dtype]
    for n in (1000, 10_000, 20_000, 4096):
        allowed = int(error_tol * n)  # the share allowed / n is exactly error_tol for these n (4096: below)
        for k in (allowed - 1, allowed, allowed + 1):
            if k < 0:
                continue
            g = np.ones(n, dtype)
            a = g.copy()
            a[:k] = 2
            want = sample_verdict(a, g, rtol, atol, error_tol)
            assert ours(a, g) == want, (n, k)
            assert want[1] == k
        if n != 4096:
            a = np.ones(n, dtype)
            a[:allowed] = 2
            assert ours(a, np.ones(n, dtype))[0]  # exactly at the limit passes (<=)


def test_verdict_equals_the_sample_with_given_tolerances():
    rng = np.random.default_rng(3)
    for _ in range(60):
        dtype = [F16, BF16, F32][int(rng.integers(0, 3))]
        rtol = float(10.0 ** rng.uniform(-5, -1))
        atol = float(rng.choice([0.0, 1e-6, 1e-3]))
        error_tol = float(rng.choice([0.0, 1e-3, 0.01, 0.1]))
        g = _golden(rng, 1000, dtype, with_specials=bool(rng.integers(0, 2)))
        a = (g.astype(np.float64) * (1 + rng.standard_normal(1000) * rtol)).astype(dtype)
        want = sample_verdict(a, g, rtol, atol, error_tol)
        assert ours(a, g, rtol=rtol, atol=atol, error_ratio=error_tol) == want


def test_the_issue_example_three_elements_in_4096():
    rng = np.random.default_rng(0)
    g = rng.standard_normal(4096).astype(np.float16)
    a = g.copy()
    a[[1, 2, 3]] = (g[[1, 2, 3]].astype(np.float32) * 1.05).astype(np.float16)
    assert sample_verdict(a, g, *SAMPLE_TOLS[F16]) == (True, 3)
    assert ours(a, g) == (True, 3)


def test_float16_sample_without_cast():
    """The float16 sample's np.isclose runs in float16 (NumPy 2 keeps the array's type); it agrees
    with the float32 computation except for elements right at the tolerance."""
    rng = np.random.default_rng(5)
    agree = 0
    for _ in range(30):
        g = _golden(rng, 1000, F16, with_specials=True)
        a = _doctor(rng, g, F16, "noise")
        agree += sample_verdict(a, g, *SAMPLE_TOLS[F16], cast_halves=False)[0] == ours(a, g)[0]
    assert agree >= 27
    # where they part: |a - g| just over the float32 tolerance, under it once rounded to float16
    g = np.ones(1, np.float16)
    a = np.array([1 + 2.0**-10], np.float16)  # |a-g| = 9.77e-4 <= 1e-5 + 1e-3 in either type: close
    assert sample_verdict(a, g, *SAMPLE_TOLS[F16], cast_halves=False)[1] == ours(a, g)[1] == 0
