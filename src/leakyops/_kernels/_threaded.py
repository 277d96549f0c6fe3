"""The threaded drivers: ``prange`` over parts, each part one call of a serial loop.

A loop written inside the ``prange`` body itself does not vectorise; calling a serial,
vectorised loop of ``_loops.py`` on each part does. The core sets numba's team to
``nthreads`` threads first (``_threads.parallel_threads``). Where a reduction is split
(``prelu_bwd_c_run_par``, ``prelu_bwd_nd_par``), the parts depend on the shapes only, never
on the thread count, so results are the same bits for any number of threads.
"""

from __future__ import annotations

from numba import njit, prange

from .._config import NJIT_OPTIONS
from ._jit import _jit
from ._loops import (_disjoint_gi, _part, combine_partials, lrelu_bwd_nd, lrelu_bwd_row,
                     lrelu_fwd_nd, lrelu_fwd_nd_inplace, lrelu_fwd_row, lrelu_fwd_row_inplace,
                     finish_lanes, lane_count, prelu_bwd_c, prelu_bwd_c_state, prelu_bwd_lanes,
                     prelu_bwd_nd, prelu_fwd_nd, start_lanes)


# ---------------------------------------------------------------------------------------------
# threaded drivers: ``prange`` over chunks, each chunk one call of a serial (vectorised) loop
# (a loop written inside the ``prange`` body itself does not vectorise). The core sets numba's
# team to ``nthreads`` threads first (``_threads.parallel_threads``); chunk boundaries fall on
# multiples of 32 elements, so that two threads never write into one cache line.

_ALIGN = 32


@njit(inline="always", **NJIT_OPTIONS)
def _chunk(n, nchunks, c):
    """Bounds ``(lo, hi)`` of chunk ``c`` when ``n`` elements are split into ``nchunks``."""
    step = (n + nchunks - 1) // nchunks
    step = (step + _ALIGN - 1) // _ALIGN * _ALIGN
    lo = min(c * step, n)
    return lo, min(lo + step, n)


@_jit(parallel=True)
def lrelu_fwd_row_par(x, out, s, ge, nthreads):
    n = x.shape[0]
    for c in prange(nthreads):
        lo, hi = _chunk(n, nthreads, c)
        lrelu_fwd_row(x[lo:hi], out[lo:hi], s, ge)


@_jit(parallel=True)
def lrelu_fwd_row_inplace_par(x, s, ge, nthreads):
    n = x.shape[0]
    for c in prange(nthreads):
        lo, hi = _chunk(n, nthreads, c)
        lrelu_fwd_row_inplace(x[lo:hi], s, ge)


@_jit(parallel=True)
def lrelu_bwd_row_par(g, t, out, s, ge, nthreads):
    n = t.shape[0]
    for c in prange(nthreads):
        lo, hi = _chunk(n, nthreads, c)
        lrelu_bwd_row(g[lo:hi], t[lo:hi], out[lo:hi], s, ge)


@_jit(parallel=True)
def lrelu_fwd_nd_par(x, out, s, ge, axis, nthreads):
    n = x.shape[axis]
    for c in prange(nthreads):
        lo, hi = _part(n, nthreads, c)
        if axis == 0:
            lrelu_fwd_nd(x[lo:hi], out[lo:hi], s, ge)
        elif axis == 1:
            lrelu_fwd_nd(x[:, lo:hi], out[:, lo:hi], s, ge)
        else:
            lrelu_fwd_nd(x[:, :, lo:hi], out[:, :, lo:hi], s, ge)


@_jit(parallel=True)
def lrelu_fwd_nd_inplace_par(x, s, ge, axis, nthreads):
    n = x.shape[axis]
    for c in prange(nthreads):
        lo, hi = _part(n, nthreads, c)
        if axis == 0:
            lrelu_fwd_nd_inplace(x[lo:hi], s, ge)
        elif axis == 1:
            lrelu_fwd_nd_inplace(x[:, lo:hi], s, ge)
        else:
            lrelu_fwd_nd_inplace(x[:, :, lo:hi], s, ge)


@_jit(parallel=True)
def lrelu_bwd_nd_par(g, t, out, s, ge, axis, nthreads):
    n = t.shape[axis]
    for c in prange(nthreads):
        lo, hi = _part(n, nthreads, c)
        if axis == 0:
            lrelu_bwd_nd(g[lo:hi], t[lo:hi], out[lo:hi], s, ge)
        elif axis == 1:
            lrelu_bwd_nd(g[:, lo:hi], t[:, lo:hi], out[:, lo:hi], s, ge)
        else:
            lrelu_bwd_nd(g[:, :, lo:hi], t[:, :, lo:hi], out[:, :, lo:hi], s, ge)


@_jit(parallel=True)
def prelu_fwd_nd_par(x, out, w, woff, ws0, ws1, ws2, ge, axis, nthreads):
    n = x.shape[axis]
    step = ws0 if axis == 0 else (ws1 if axis == 1 else ws2)
    for c in prange(nthreads):
        lo, hi = _part(n, nthreads, c)
        off = woff + lo * step
        if axis == 0:
            prelu_fwd_nd(x[lo:hi], out[lo:hi], w, off, ws0, ws1, ws2, ge)
        elif axis == 1:
            prelu_fwd_nd(x[:, lo:hi], out[:, lo:hi], w, off, ws0, ws1, ws2, ge)
        else:
            prelu_fwd_nd(x[:, :, lo:hi], out[:, :, lo:hi], w, off, ws0, ws1, ws2, ge)


@_jit(parallel=True)
def prelu_bwd_nd_par(g, x, gi, w, partials, woff, ws0, ws1, ws2, ge, axis, bounds):
    """``prelu_bwd_nd`` over the parts ``bounds[u]:bounds[u+1]`` of ``axis``, in parallel.

    Part u adds its weight gradient into ``partials[u]`` (an (acc, comp) pair), or, where
    ``partials`` has one row, all parts add into it (parts that touch disjoint weight
    elements: a split along an axis the weight is not broadcast over).
    """
    step = ws0 if axis == 0 else (ws1 if axis == 1 else ws2)
    shared = partials.shape[0] == 1
    for u in prange(bounds.shape[0] - 1):
        lo, hi = bounds[u], bounds[u + 1]
        p = partials[0] if shared else partials[u]
        off = woff + lo * step
        if axis == 0:
            prelu_bwd_nd(g[lo:hi], x[lo:hi], gi[lo:hi], w, p[0], p[1], off, ws0, ws1, ws2, ge)
        elif axis == 1:
            prelu_bwd_nd(g[:, lo:hi], x[:, lo:hi], gi[:, lo:hi], w, p[0], p[1], off, ws0, ws1,
                         ws2, ge)
        else:
            prelu_bwd_nd(g[:, :, lo:hi], x[:, :, lo:hi], gi[:, :, lo:hi], w, p[0], p[1], off,
                         ws0, ws1, ws2, ge)


@_jit(parallel=True)
def prelu_bwd_c_run_par(g, x, gi, w, acc, per_k, ge, nthreads):
    """``prelu_bwd_c_run`` in parallel: slope per row, the channels in as many parts as
    threads (each channel in one part: the same bits); channels last, its units of rows.
    False, nothing written, where ``gi`` shares memory with another array, as there."""
    if not _disjoint_gi(g, x, gi, w, acc):
        return False
    if not per_k:
        c = lane_count(x, w)
        lanes = start_lanes(c, ge)  # (parts own disjoint channels or units)
        parts = max(1, min(nthreads, c))
        for u in prange(parts):
            lo, hi = _part(c, parts, u)
            prelu_bwd_lanes(g, x, gi, w, lanes, ge, lo, hi)
        finish_lanes(lanes, acc, x, w, ge)  # (after every part has read its data)
    else:
        parts, partials = prelu_bwd_c_state(x.shape, w.shape[0], ge)
        for u in prange(parts):
            lo, hi = _part(x.shape[1], parts, u)
            prelu_bwd_c(g, x, gi, w, partials[u, 0], partials[u, 1], lo, hi, ge)
        combine_partials(partials, acc, ge)
    return True
