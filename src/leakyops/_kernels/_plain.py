"""The compiled half of a contiguous path's test: ``prelu_backward``'s.

The core's contiguous path of ``prelu_backward`` tests in Python only what numba's unboxing
does not read: each array's type, dtype and number of dimensions, and whether an output is
writeable (:func:`leakyops._core._prelu_backward_plain`). Everything numba does read (shapes,
strides, the data's address) is tested here, where a test costs nanoseconds instead of the
40-90 ns of a Python attribute and comparison; then the serial kernel or its team driver runs,
without a second entry from Python. A call whose arrays do not qualify returns 0 with nothing
written, and the core's general path decides (with its checks and messages), as it does where
the kernel finds ``grad_input`` sharing memory with another array.

Measured (AMD EPYC Zen 5, (4, 64, 391) with ``out=``, two threads, µs, one process): float32
8.2-8.6 -> 7.3-7.4, bfloat16 7.3-7.4 -> 6.5-6.6; (4, 64, 10) float32 3.0 -> 2.5, bfloat16
3.3 -> 2.5 (a script with these tests written out, against the path tested in Python).
"""

from __future__ import annotations

from numba import carray, njit

from .._config import NJIT_OPTIONS
from ._jit import _jit
from ._loops import prelu_bwd_c_run
from ._team import address, prelu_bwd_c_run_team

__all__ = ["prelu_bwd_plain"]


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


@njit(inline="always", **NJIT_OPTIONS)
def _view(a, shape3):
    """C-contiguous ``a`` as an array of ``shape3`` (as many elements) over the same data."""
    return carray(address(a.ctypes.data), shape3, a.dtype)


@njit(inline="always", **NJIT_OPTIONS)
def _prelu_bwd_layout(shape, size, c, axis):
    """``(outer, C, inner, last)`` of prelu_backward's contiguous kernels for ``x``'s shape
    and a 1-D weight of ``c`` elements along ``axis``, ``last`` telling channels last (inner
    1: (1, outer, C) views, a slope per element of a row); C is 0 where the contiguous path
    does not take them (as ``_core._prelu_layout_of``): no elements, an axis out of range, or
    a weight that neither matches the axis's length nor is one shared slope. One shared slope
    (``c == 1``, PyTorch's ``PReLU()``) is ``(1, 1, size, False)``, the kernels' one-slope
    units."""
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
    (a slope per element of a row); ``wait``: wake a sleeping worker and wait for it."""
    if g.shape != x.shape or gi.shape != x.shape or gw.shape[0] != w.shape[0]:
        return 0
    outer, c, inner, last = _prelu_bwd_layout(x.shape, x.size, w.shape[0], axis)
    if c == 0:
        return 0
    if not (_c_aligned(x) and _c_aligned(g) and _c_aligned(gi) and _c_aligned(w)
            and _c_aligned(gw)):
        return 0
    # (views without numba's reference counting, ``carray``s of the data, as a part function
    # makes them: 0.1 µs less than ``reshape``, measured on a 2,560-element call)
    wv = carray(address(w.ctypes.data), (w.shape[0],), w.dtype)
    gwv = carray(address(gw.ctypes.data), (gw.shape[0],), gw.dtype)
    if last:  # (channels last: (1, outer, C) views, a slope per element of a row)
        shape3 = (1, outer, c)
        gv, xv, giv = _view(g, shape3), _view(x, shape3), _view(gi, shape3)
        if threads > 1:
            return prelu_bwd_c_run_team(gv, xv, giv, wv, gwv, True, ge, team, part_last, wait,
                                        threads)
        return int(prelu_bwd_c_run(gv, xv, giv, wv, gwv, True, ge))
    shape3 = (outer, c, inner)
    gv, xv, giv = _view(g, shape3), _view(x, shape3), _view(gi, shape3)
    if threads > 1:
        return prelu_bwd_c_run_team(gv, xv, giv, wv, gwv, False, ge, team, part_rows, wait,
                                    threads)
    return int(prelu_bwd_c_run(gv, xv, giv, wv, gwv, False, ge))
