"""Reference helpers for the Ascend C front-end tests (imported by the test modules)."""

from __future__ import annotations

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
