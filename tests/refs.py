"""Helpers shared by the tests: random values with the special ones mixed in, bitwise
comparison, conversions to and from PyTorch tensors, the test machine's free memory.

The naive NumPy references are the package's (:mod:`leakyops._reference`, which the demo
and the operator table use too); ``ref_*`` below call them with the signatures the tests
were written with (a ``ge`` flag, a weight already shaped to broadcast against ``x``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from leakyops import _memory
from leakyops import _reference as reference

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
DTYPE_IDS = ["f16", "bf16", "f32", "f64"]


def special_values(dtype) -> np.ndarray:
    """±0, the smallest subnormal, the largest finite value, ±inf, NaN and ordinary values."""
    dtype = np.dtype(dtype)
    info = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)
    tiny_sub = info.smallest_subnormal
    vals = [0.0, -0.0, float(tiny_sub), -float(tiny_sub), float(info.max), -float(info.max),
            float(info.tiny), -float(info.tiny), np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -3.25]
    return np.array(vals, dtype=np.float64).astype(dtype)


def random_values(rng, shape, dtype, special_share=0.1) -> np.ndarray:
    """Normal values with special values mixed in."""
    a = np.asarray(rng.standard_normal(shape) * 4).astype(dtype)
    flat = a.reshape(-1)
    if flat.size:
        sp = special_values(dtype)
        k = max(1, int(flat.size * special_share))
        idx = rng.integers(0, flat.size, k)
        flat[idx] = sp[rng.integers(0, sp.size, k)]
    return a


# ---- the references: leakyops._reference, in the signatures the tests were written with ----


def _compare(ge: bool) -> str:
    return ">=" if ge else ">"


def ref_leaky_relu(x, s, ge=False):
    """``ge``: keep ``x >= 0`` (Ascend C) instead of ``x > 0``."""
    return reference.leaky_relu(x, s, compare=_compare(ge))


def ref_leaky_relu_backward(g, x, s, ge=False):
    return reference.leaky_relu_backward(g, x, s, compare=_compare(ge))


def ref_prelu(x, wb, ge=False):
    """``wb``: the weight in a shape that broadcasts to x's by NumPy's rule (e.g. ``w.reshape(1, C, 1)``)."""
    x = np.asarray(x)
    return reference.prelu(x, np.broadcast_to(wb, x.shape), axis=-1, compare=_compare(ge))


def ref_prelu_backward(g, x, wb, reduce_to=None, ge=False):
    """``(grad_input, terms)``: ``grad_input`` bitwise, and each element's float64 term of
    ``grad_weight`` (the test sums them over the axes it needs). ``reduce_to`` is not used."""
    x = np.asarray(x)
    grad_input, _ = reference.prelu_backward(g, x, np.broadcast_to(wb, x.shape), axis=-1, compare=_compare(ge))
    return grad_input, reference.grad_weight_terms(g, x, compare=_compare(ge))


def bits(a: np.ndarray) -> np.ndarray:
    a = np.array(a, order="C")
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_same(actual, expected):
    """Same dtype, shape and bits; NaN matches any NaN (payloads are not specified)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    with np.errstate(invalid="ignore"):  # (a signaling NaN, passed through, warns when cast)
        an = np.isnan(actual.astype(np.float64))
        en = np.isnan(expected.astype(np.float64))
    assert np.array_equal(an, en), "NaN positions differ"
    same = (bits(actual) == bits(expected)) | an
    if not same.all():
        idx = np.argwhere(~same)[:5]
        detail = [(tuple(i), actual[tuple(i)], expected[tuple(i)]) for i in idx]
        raise AssertionError(f"{(~same).sum()} elements differ, first: {detail}")


def assert_same_sum(actual, expected, abs_terms):
    """``grad_weight`` summed in another order (another memory layout of the same values):
    NaN where NaN, equal infinities, and finite values within twice the error bound of the
    core's sums (docs/semantics.md: 16 float64 ulps of the sum of the terms' magnitudes,
    ``abs_terms``, per channel; the half types' contiguous path, float32 blocks of 8 terms a
    lane: 2**-21 of it) plus one rounding to the result's dtype."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    assert np.array_equal(np.isnan(a), np.isnan(e)), "NaN positions differ"
    finite = np.isfinite(a) & np.isfinite(e)
    others = ~finite & ~np.isnan(a)
    assert np.array_equal(a[others], e[others]), "infinities differ"
    with np.errstate(over="ignore", invalid="ignore"):  # (only finite values are compared)
        ulp = np.spacing(np.maximum(np.abs(actual), np.abs(expected))).astype(np.float64)
        bound = 2.0 ** -21 if actual.dtype in (np.float16, BF16) else 8 * np.finfo(np.float64).eps
        tol = 2 * bound * np.broadcast_to(abs_terms, a.shape) + ulp
        bad = finite & ~(np.abs(a - e) <= tol)
    assert not bad.any(), f"{bad.sum()} sums differ beyond the bound: {a[bad][:3]} {e[bad][:3]}"


#: The exact sum of float64 terms, rounded once (the package's reference, as ``ref_*``).
exact_sum = reference.exact_sum


# ---- PyTorch (test dependency only) -------------------------------------------------------


def to_torch(a):
    import torch

    a = np.array(a, order="C")  # ascontiguousarray would make a 0-d array 1-d
    if a.dtype == BF16:
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(a.copy())


def numpy_of(t):
    """A tensor's values as a NumPy array of the same bits (bfloat16 as ml_dtypes'), a copy."""
    import torch

    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(BF16).copy()
    return t.numpy().copy()


def from_torch(t, dtype):
    import torch

    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(BF16)
    return t.numpy().astype(dtype)


# ---- the test machine ---------------------------------------------------------------------


def free_memory_gib() -> float:
    """MemAvailable from /proc/meminfo in GiB (0 where it cannot be read)."""
    return (_memory.proc_field("/proc/meminfo", "MemAvailable") or 0) / 2 ** 30
