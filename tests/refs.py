"""Naive, obviously-correct references and comparison helpers shared by the tests
(and two small helpers about the test machine and PyTorch tensors).

The NumPy references compute exactly what SPEC §2 says: half types widened to float32,
the slope rounded to float32 (float64 for float64), one rounding back to the storage type.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
DTYPE_IDS = ["f16", "bf16", "f32", "f64"]


def compute_dtype(dtype):
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


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


def ref_leaky_relu(x, s, ge=False):
    x = np.asarray(x)
    c = compute_dtype(x.dtype)
    xc = x.astype(c)
    keep = xc >= 0 if ge else xc > 0
    with np.errstate(all="ignore"):
        sc = c.type(s)
        return np.where(keep, xc, xc * sc).astype(x.dtype)


def promote(a, b):
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    if np.dtype(np.float64) in (a, b):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def ref_leaky_relu_backward(g, x, s, ge=False):
    g, x = np.asarray(g), np.asarray(x)
    r = promote(g.dtype, x.dtype)
    c = compute_dtype(r)
    gc, xc = g.astype(c), x.astype(c)
    keep = xc >= 0 if ge else xc > 0
    with np.errstate(all="ignore"):
        return np.where(keep, gc, gc * c.type(float(s))).astype(r)


def ref_prelu(x, wb, ge=False):
    """``wb``: the weight already broadcast to x's shape."""
    c = compute_dtype(x.dtype)
    xc, wc = x.astype(c), np.broadcast_to(wb, x.shape).astype(c)
    keep = xc >= 0 if ge else xc > 0
    with np.errstate(all="ignore"):
        return np.where(keep, xc, wc * xc).astype(x.dtype)


def ref_prelu_backward(g, x, wb, reduce_to, ge=False):
    """grad_input bitwise, grad_weight in float64 (math.fsum-accurate is not needed here)."""
    c = compute_dtype(x.dtype)
    g = np.broadcast_to(g, x.shape)
    gc, xc, wc = g.astype(c), x.astype(c), np.broadcast_to(wb, x.shape).astype(c)
    keep = xc >= 0 if ge else xc > 0
    with np.errstate(all="ignore"):
        gi = np.where(keep, gc, wc * gc).astype(x.dtype)
        terms = np.where(keep, 0.0, x.astype(np.float64) * g.astype(np.float64))
    return gi, terms


def bits(a: np.ndarray) -> np.ndarray:
    a = np.array(a, order="C")
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_same(actual, expected):
    """Same dtype, shape and bits; NaN matches any NaN (payloads are not specified)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    an = np.isnan(actual.astype(np.float64))
    en = np.isnan(expected.astype(np.float64))
    assert np.array_equal(an, en), "NaN positions differ"
    same = (bits(actual) == bits(expected)) | an
    if not same.all():
        idx = np.argwhere(~same)[:5]
        detail = [(tuple(i), actual[tuple(i)], expected[tuple(i)]) for i in idx]
        raise AssertionError(f"{(~same).sum()} elements differ, first: {detail}")


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
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return 0.0
