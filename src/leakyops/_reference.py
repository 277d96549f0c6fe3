"""Naive NumPy references of the five operators: the checks, not the implementation.

Each function is the contract of ``docs/semantics.md`` written as plainly as NumPy allows, so
that it can be read and believed: half types widened to float32 (float64 stays float64), the
slope converted to that compute type, ``x > 0`` keeps the value, one rounding back to the
storage type; ``grad_weight`` summed in float64 and rounded once. They make temporaries and
several passes; the library's kernels do neither. The tests, ``leakyops demo`` and the
operator table (:mod:`leakyops._operators`) use them; nothing on the library's own path does.

Options of the vendors' semantics are taken as the core takes them: ``compare=">="`` keeps
``x >= 0`` (Ascend C); a slope rounded another way (aclnn's float32, Ascend C's storage type)
is passed already rounded, e.g. ``np.float16(0.1)``, and converts exactly.

>>> import numpy as np
>>> leaky_relu(np.array([-2.0, -0.0, 3.0], np.float16), 0.5)
array([-1., -0.,  3.], dtype=float16)
>>> prelu_backward(np.ones((2, 2), np.float32), np.array([[-1.0, 2.0], [-3.0, -4.0]], np.float32),
...                np.array([0.5, 0.25], np.float32))
(array([[0.5 , 1.  ],
       [0.5 , 0.25]], dtype=float32), array([-4., -4.], dtype=float32))
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from leakyops._core import result_dtype

__all__ = [
    "compute_dtype",
    "place_weight",
    "leaky_relu",
    "leaky_relu_backward",
    "prelu",
    "prelu_backward",
    "grad_weight_terms",
    "exact_sum",
]


def compute_dtype(dtype) -> np.dtype:
    """The type the arithmetic is done in: float64 for float64, float32 for everything else."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def _kept(t: np.ndarray, compare: str) -> np.ndarray:
    """Where the value (or the incoming gradient) passes unchanged: ``t > 0`` or ``t >= 0``."""
    if compare == ">":
        return t > 0
    if compare == ">=":
        return t >= 0
    raise ValueError(f"compare must be '>' or '>=', got {compare!r}")


def place_weight(weight, x_shape: tuple, axis: int = 1) -> np.ndarray:
    """``weight`` reshaped so that it broadcasts against an ``x`` of ``x_shape`` (PReLU's rules).

    One element is shared by every element; a 1-D weight runs along ``axis``; a weight of
    rank >= 2 broadcasts right-aligned and must broadcast to ``x_shape`` itself. Shapes that do
    not fit are a ``ValueError``.
    """
    weight = np.asarray(weight)
    ndim = len(x_shape)
    if weight.size == 1:
        return weight.reshape(())
    if weight.ndim == 1:
        if not -ndim <= axis < ndim or x_shape[axis] != weight.size:
            raise ValueError(f"a weight of {weight.size} elements does not run along axis {axis} "
                             f"of shape {tuple(x_shape)}")
        view = [1] * ndim
        view[axis % ndim] = weight.size
        return weight.reshape(view)
    if weight.ndim > ndim or np.broadcast_shapes(weight.shape, tuple(x_shape)) != tuple(x_shape):
        raise ValueError(f"a weight of shape {weight.shape} does not broadcast to {tuple(x_shape)}")
    return weight.reshape((1,) * (ndim - weight.ndim) + weight.shape)


def leaky_relu(x, negative_slope, *, compare: str = ">") -> np.ndarray:
    """``y = x if x > 0 else x * s``, in the compute type, rounded once to ``x``'s dtype."""
    x = np.asarray(x)
    ct = compute_dtype(x.dtype)
    xc = x.astype(ct)
    with np.errstate(all="ignore"):
        return np.where(_kept(xc, compare), xc, xc * ct.type(negative_slope)).astype(x.dtype)


def leaky_relu_backward(grad_output, x, negative_slope, *, compare: str = ">") -> np.ndarray:
    """``dx = g if x > 0 else g * s`` in the promoted dtype of the two inputs, broadcast.

    ``x`` may be the forward's result (``self_is_result``): for a slope >= 0 the formula is
    the same.
    """
    g, x = np.asarray(grad_output), np.asarray(x)
    rt = result_dtype(g.dtype, x.dtype)
    ct = compute_dtype(rt)
    gc, xc = g.astype(ct), x.astype(ct)
    with np.errstate(all="ignore"):
        return np.where(_kept(xc, compare), gc, gc * ct.type(negative_slope)).astype(rt)


def prelu(x, weight, axis: int = 1, *, compare: str = ">") -> np.ndarray:
    """``y = x if x > 0 else w[c] * x``, with ``weight`` placed by :func:`place_weight`."""
    x = np.asarray(x)
    ct = compute_dtype(x.dtype)
    xc, wc = x.astype(ct), place_weight(weight, x.shape, axis).astype(ct)
    with np.errstate(all="ignore"):
        return np.where(_kept(xc, compare), xc, wc * xc).astype(x.dtype)


def grad_weight_terms(grad_output, x, *, compare: str = ">") -> np.ndarray:
    """Each element's addend to ``grad_weight``, in float64: ``0`` where kept, else ``x * g``.

    ``grad_output`` broadcasts to ``x``'s shape. The products of half and float32 values are
    exact in float64; only their sum rounds.
    """
    x = np.asarray(x)
    g = np.broadcast_to(np.asarray(grad_output), x.shape)
    kept = _kept(x.astype(compute_dtype(x.dtype)), compare)
    with np.errstate(all="ignore"):
        return np.where(kept, 0.0, x.astype(np.float64) * g.astype(np.float64))


def prelu_backward(grad_output, x, weight, axis: int = 1, *,
                   compare: str = ">") -> tuple[np.ndarray, np.ndarray]:
    """``(grad_input, grad_weight)``: ``dx = g if x > 0 else w[c] * g``; ``dw[c]`` the float64
    sum of :func:`grad_weight_terms` over the elements of channel ``c``, rounded once to the
    weight's dtype and shaped like it (float64 data whose sum is not finite: summed again
    exactly, as the library does)."""
    x, weight = np.asarray(x), np.asarray(weight)
    g = np.broadcast_to(np.asarray(grad_output), x.shape)
    ct = compute_dtype(x.dtype)
    placed = place_weight(weight, x.shape, axis)
    gc, xc, wc = g.astype(ct), x.astype(ct), placed.astype(ct)
    with np.errstate(all="ignore"):
        grad_input = np.where(_kept(xc, compare), gc, wc * gc).astype(x.dtype)
        terms = grad_weight_terms(g, x, compare=compare)
        if placed.ndim == 0:
            total = terms.sum()
        else:
            total = terms.sum(axis=tuple(i for i in range(x.ndim) if placed.shape[i] == 1), keepdims=True)
        total = np.array(total, np.float64)
        if x.dtype == np.float64 and not np.isfinite(total).all():
            _exact_where_not_finite(terms, total, placed.shape)
        grad_weight = total.astype(weight.dtype).reshape(weight.shape)
    return grad_input, grad_weight


def exact_sum(terms) -> float:
    """The exact sum of float64 ``terms`` rounded once to float64, with the rules of IEEE
    addition for the non-finite ones: NaN for a NaN or infinities of both signs, else the
    infinity of the one sign present; ±inf where the exact sum is beyond float64's range. A
    Fraction sum (the small integers among the terms, whose float64 sum is exact, added as
    one integer first)."""
    t = np.asarray(terms, np.float64).reshape(-1)
    pos, neg = bool((t == np.inf).any()), bool((t == -np.inf).any())
    if np.isnan(t).any() or (pos and neg):
        return np.nan
    if pos or neg:
        return np.inf if pos else -np.inf
    ints = (np.abs(t) <= 2.0 ** 20) & (t == np.trunc(t))
    total = Fraction(int(t[ints].sum())) + sum(map(Fraction, t[~ints].tolist()), Fraction(0))
    try:
        return float(total)
    except OverflowError:
        return np.inf if total > 0 else -np.inf


def _exact_where_not_finite(terms: np.ndarray, total: np.ndarray, placed_shape: tuple) -> None:
    """float64 data's sums that came out infinite or NaN, summed again exactly
    (:func:`exact_sum`): float64 terms and their partial sums can overflow, and NumPy's order
    then decides between ±inf and NaN."""
    for idx in np.argwhere(~np.isfinite(total)):
        at = tuple(int(i) if n > 1 else slice(None) for i, n in zip(idx, placed_shape))
        total[tuple(idx)] = exact_sum(terms[at])
