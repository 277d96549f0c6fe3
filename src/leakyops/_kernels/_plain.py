"""The compiled half of a contiguous path's test: ``prelu``'s and ``prelu_backward``'s.

The core's contiguous paths of ``prelu`` and ``prelu_backward`` test in Python only what
numba's unboxing does not read: each array's type, dtype and number of dimensions, and
whether an output is writeable (``_core._prelu_plain``, ``_core._prelu_backward_plain``).
Everything numba does read (shapes, strides, the data's address) is tested here, where a
test costs nanoseconds instead of the 40-90 ns of a Python attribute and comparison; then
the kernel chosen here (serial, or its team driver: the core passes the thread count) runs
without a second entry from Python. Operands that do not qualify return 0 with nothing
written, and the core's general path decides (with its checks and messages), as it does
where a kernel finds its output sharing memory with an input.

Measured (AMD EPYC Zen 5, ``prelu_backward`` with ``out=``, two threads, µs, each version in
its own process, five alternating runs, the best): (4, 64, 391) float32 8.2 -> 7.7,
bfloat16 7.3 -> 6.9; (4, 64, 39) float32 3.7 -> 3.3; (1, 8, 125) float32 2.0 -> 1.6. The
entry's views of the data are ``carray``s, as a part function makes them (no reference
counting): 0.1 µs less than ``reshape`` on a 2,560-element call.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, types
from numba.extending import overload

from .._config import NJIT_OPTIONS
from ._jit import _jit
from ._loops import _overlap, prelu_bwd_c_run, prelu_fwd_c_run
from ._rules import _load
from ._team import (address, lrelu_fwd_row_team, prelu_bwd_c_run_team, prelu_fwd_c_run_team,
                    prelu_fwd_last_run_team, prelu_fwd_short_run_team)

__all__ = ["prelu_bwd_plain", "prelu_fwd_at", "prelu_fwd_plain", "PATTERN_MAX", "MISSING_LAST",
           "MISSING_ONE", "MISSING_ROWS", "NEEDS_THREADS", "NOT_FINITE"]

#: The largest slope pattern (elements) ``prelu_fwd_short_run`` lays out.
PATTERN_MAX = 1 << 16
#: What an entry returns, nothing written, where the part function its operands need has
#: not been made yet (its address 0): the core makes it (``_kernels.part_address``) and calls
#: again. Only a slope per row runs its serial kernel directly; the other layouts (channels
#: last, short rows, one shared slope) run through their team drivers, on this thread where
#: the call is small, so that their loops are compiled only when an operand needs them (a
#: first float32 ``prelu`` call without the disk cache: 8.2 s before the entries, 27.5 with
#: every part and serial kernel in them).
MISSING_LAST, MISSING_ONE, MISSING_ROWS = 2, 3, 4
#: What ``prelu_fwd_plain`` returns, nothing written, where its kernel would run threaded but
#: the core has not asked the team for threads (``threads`` 0): the core asks only where the
#: kernel it runs weighs the bytes enough (``_cpu.thread_thresholds``), then calls again.
NEEDS_THREADS = 5
#: What ``prelu_bwd_plain`` returns where it ran (everything written) on float64 data and a
#: ``grad_weight`` element came out infinite or NaN: float64 terms and their sums can
#: overflow, and the lanes' order then decides between ±inf and NaN (or an infinite result
#: whose exact sum is finite). The core sums those elements again exactly
#: (``_core._exact_grad_weight``). The other kinds' terms and sums cannot overflow float64.
NOT_FINITE = 6


@njit(inline="always", **NJIT_OPTIONS)
def _c_aligned(a) -> bool:
    """Whether ``a``, as numba unboxed it (data, shape, strides, itemsize: whatever its
    compiled type says), is C-contiguous (NumPy's rule: a dimension of length 1 may have any
    stride) with its data aligned to its itemsize (so its strides are too)."""
    step = a.itemsize
    for d in range(a.ndim - 1, -1, -1):
        n = a.shape[d]
        if n != 1 and a.strides[d] != step:
            return False
        step *= n
    return a.ctypes.data % a.itemsize == 0


def _finite64(a) -> bool:
    """Whether every element of the 1-D float64 ``a`` is finite (True for the other kinds'
    views, not tested: their sums are finite wherever their exact sums are)."""


@overload(_finite64, inline="always", jit_options=NJIT_OPTIONS)
def _ol_finite64(a):
    if a.dtype != types.float64:
        return lambda a: True

    def impl(a):
        for v in a:
            if not abs(v) < np.inf:
                return False
        return True
    return impl


@njit(inline="always", **NJIT_OPTIONS)
def _view(a, shape3):
    """C-contiguous ``a`` as an array of ``shape3`` (as many elements) over the same data."""
    return carray(address(a.ctypes.data), shape3, a.dtype)


@njit(inline="always", **NJIT_OPTIONS)
def _threads_for(threads, nbytes, limit):
    """The threads a kernel runs on whose output of ``nbytes`` runs threaded from ``limit``
    bytes: 1 below it, else ``threads`` (0: the core has not asked the team yet)."""
    return threads if nbytes >= limit else 1


@njit(inline="always", **NJIT_OPTIONS)
def prelu_layout(shape, size, c, axis):
    """``(outer, C, inner, last)`` of the contiguous prelu kernels for ``x``'s shape (``size``
    elements) and a 1-D weight of ``c`` elements along ``axis``; ``last`` tells channels last
    (inner 1: (1, outer, C) views, a slope per element of a row). C is 0 where the contiguous
    paths do not take them: no elements, an axis out of range, or a weight that neither
    matches the axis's length nor is one shared slope. One shared slope (``c == 1``,
    PyTorch's ``PReLU()``; any axis the general path accepts) is ``(1, 1, size, False)``."""
    nd = len(shape)
    if size == 0:
        return 0, 0, 0, False
    if c == 1:
        lim = max(nd, 2)
        if -lim <= axis < lim:
            return 1, 1, size, False
        return 0, 0, 0, False
    if c < 2 or not -nd <= axis < nd:
        return 0, 0, 0, False
    a = axis % nd
    if shape[a] != c:
        return 0, 0, 0, False
    outer = 1
    for d in range(a):
        outer *= shape[d]
    inner = size // (outer * c)
    return outer, c, inner, inner == 1


@_jit
def prelu_bwd_plain(g, x, w, gi, gw, axis, ge, threads, team, part_rows, part_last, wait):
    """``prelu_backward`` with the arrays as the core passed them (their types, dtypes, ndims
    and the outputs' writeability tested there): 1 where it ran (``gi`` and ``gw`` written),
    0 with nothing written where they do not qualify: shapes that differ (``g``, ``gi`` from
    ``x``; ``gw`` from ``w``), a layout the contiguous kernels do not take, an array that is
    not C-contiguous or not aligned, or ``gi`` sharing memory with another array. On
    ``threads`` > 1 the team driver runs it, posting its parts to the words at ``team``:
    ``part_rows`` is the part function of a slope per row, ``part_last`` of channels last
    (a slope per element of a row); ``wait``: wake a sleeping worker and wait for it.
    ``NOT_FINITE`` where it ran on float64 data and a ``grad_weight`` element is not finite."""
    if g.shape != x.shape or gi.shape != x.shape or gw.shape[0] != w.shape[0]:
        return 0
    outer, c, inner, last = prelu_layout(x.shape, x.size, w.shape[0], axis)
    if c == 0:
        return 0
    if not (_c_aligned(x) and _c_aligned(g) and _c_aligned(gi) and _c_aligned(w)
            and _c_aligned(gw)):
        return 0
    # (views without numba's reference counting, ``carray``s of the data, as a part function
    # makes them: 0.1 µs less than ``reshape``, measured on a 2,560-element call)
    wv, gwv = _view(w, (w.shape[0],)), _view(gw, (gw.shape[0],))
    if last:  # (channels last: (1, outer, C) views, a slope per element of a row)
        if part_last == 0:
            return MISSING_LAST
        shape3 = (1, outer, c)
        ran = prelu_bwd_c_run_team(_view(g, shape3), _view(x, shape3), _view(gi, shape3), wv,
                                   gwv, True, ge, team, part_last, wait, threads)
    else:
        shape3 = (outer, c, inner)
        gv, xv, giv = _view(g, shape3), _view(x, shape3), _view(gi, shape3)
        if threads > 1:
            if part_rows == 0:
                return MISSING_ROWS
            ran = prelu_bwd_c_run_team(gv, xv, giv, wv, gwv, False, ge, team, part_rows, wait,
                                       threads)
        else:
            ran = int(prelu_bwd_c_run(gv, xv, giv, wv, gwv, False, ge))
    if ran == 1 and not _finite64(gwv):
        return NOT_FINITE
    return ran


@njit(inline="always", **NJIT_OPTIONS)
def _prelu_fwd_rows(x, out, wv, outer, c, inner, last, ge, threads, team, short_row, lim_rows,
                    lim_last, lim_short, part_rows, part_last, wait, nbytes):
    """``prelu_fwd_plain``'s kernels for a slope per channel (``c`` > 1), ``x`` and ``out``
    C-contiguous (any shape of ``outer * c * inner`` elements), ``wv`` the 1-D slopes: channels
    last (``last``), short rows or rows, as described there (and ``prelu_fwd_at``'s)."""
    if last:
        if part_last == 0:
            return MISSING_LAST
        t = _threads_for(threads, nbytes, lim_last)
        if t == 0:
            return NEEDS_THREADS
        shape3 = (1, outer, c)
        return prelu_fwd_last_run_team(_view(x, shape3), _view(out, shape3), wv, ge, team,
                                       part_last, wait, t)
    shape3 = (outer, c, inner)
    xv, ov = _view(x, shape3), _view(out, shape3)
    if inner < short_row and c * inner <= PATTERN_MAX:
        if part_last == 0:
            return MISSING_LAST
        t = _threads_for(threads, nbytes, lim_short)
        if t == 0:
            return NEEDS_THREADS
        return prelu_fwd_short_run_team(xv, ov, wv, ge, team, part_last, wait, t)
    split = 0 if outer >= c else 1
    t = _threads_for(threads, nbytes, lim_rows)
    if t == 0:
        return NEEDS_THREADS
    if t > 1:
        if part_rows == 0:
            return MISSING_ROWS
        return prelu_fwd_c_run_team(xv, ov, wv, False, ge, split, team, part_rows, wait, t)
    return int(prelu_fwd_c_run(xv, ov, wv, False, ge, split))


@_jit
def prelu_fwd_plain(x, w, out, axis, ge, threads, team, short_row, lim_rows, lim_last,
                    lim_short, lim_one, part_rows, part_last, part_one, wait):
    """``prelu`` with the arrays as the core passed them (``x``, ``w``, ``out``: their types,
    dtypes, ndims and out's writeability tested there), as ``prelu_bwd_plain``: 1 where it
    ran, 0 with nothing written where they do not qualify (different shapes, a layout the
    contiguous kernels do not take, an array not C-contiguous or not aligned, ``out`` sharing
    memory with ``x`` or ``w``). The kernel, as the core's contiguous path chose it: one
    shared slope runs leaky_relu's rows with its value (``part_one``); rows shorter than
    ``short_row`` elements (a whole pattern of at most ``PATTERN_MAX`` slopes) run over the
    slopes laid out per element (``part_last``, the channels-last part); other rows
    ``prelu_fwd_c_run`` (``part_rows``; channels last ``part_last``). Each runs on
    ``threads`` threads (the team's words at ``team``) where ``out``'s bytes reach its
    ``lim_*`` (``PARALLEL_MIN_BYTES`` over its thread weight), else on this thread;
    ``threads`` 0 (the core has not asked for them: the bytes reach some kernels' limits, not
    all) returns ``NEEDS_THREADS``, nothing written, where the chosen kernel's is reached."""
    if out.shape != x.shape:
        return 0
    outer, c, inner, last = prelu_layout(x.shape, x.size, w.shape[0], axis)
    if c == 0:
        return 0
    if not (_c_aligned(x) and _c_aligned(w) and _c_aligned(out)):
        return 0
    nbytes = out.size * out.itemsize
    wv = _view(w, (w.shape[0],))
    if c == 1:  # (one shared slope: leaky_relu's rows, the weight's value the slope)
        if _overlap(out, x) or _overlap(out, w):
            return 0
        if part_one == 0:
            return MISSING_ONE
        t = _threads_for(threads, nbytes, lim_one)
        if t == 0:
            return NEEDS_THREADS
        n = x.size
        ov = _view(out, (n,))
        return lrelu_fwd_row_team(_view(x, (n,)), ov, np.float64(_load(wv[0], ov)), ge, team,
                                  part_one, wait, t)
    return _prelu_fwd_rows(x, out, wv, outer, c, inner, last, ge, threads, team, short_row,
                           lim_rows, lim_last, lim_short, part_rows, part_last, wait, nbytes)


_AT: dict = {}


def _prelu_at(dtype, ge):
    """``prelu`` with a slope per channel on raw memory: ``(outer, c, inner, x, w, out,
    threads, team, short_row, lim_rows, lim_last, lim_short, part_rows, part_last, wait)``,
    ``x`` and ``out`` the addresses of ``outer * c * inner`` C-contiguous elements, ``w`` of
    ``c`` slopes (``c`` > 1), the rest and the result as ``prelu_fwd_plain``'s. (A closure of
    constants, as ``_team._rows_at``'s.)"""
    size = np.dtype(dtype).itemsize

    def at(outer, c, inner, x, w, out, threads, team, short_row, lim_rows, lim_last, lim_short,
           part_rows, part_last, wait):
        n = outer * c * inner
        return _prelu_fwd_rows(carray(address(x), n, dtype), carray(address(out), n, dtype),
                               carray(address(w), c, dtype), outer, c, inner, inner == 1, ge,
                               threads, team, short_row, lim_rows, lim_last, lim_short,
                               part_rows, part_last, wait, n * size)
    return at


def prelu_fwd_at(dtype, ge):
    """The entry point (called without numba's type dispatch) of ``prelu``'s kernels for a
    slope per channel on raw memory (``_prelu_at``) for the storage view ``dtype`` and the flag
    ``ge``, compiled on first use (or found in numba's disk cache)."""
    key = (np.dtype(dtype), ge)
    ep = _AT.get(key)
    if ep is None:
        disp = _jit(_prelu_at(np.dtype(dtype).type, ge))
        i64 = types.int64
        ep = _AT[key] = disp.compile((i64,) * 15)
        _AT[key, "keep"] = disp
    return ep
