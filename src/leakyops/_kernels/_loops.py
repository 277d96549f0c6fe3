"""The portable loops: plain serial loops over views, one pass over memory, vectorised by LLVM.

Two shapes: a ``*_row`` over 1-D views (contiguous or strided) and a driver ``*_nd`` over
3-D views (the core coalesces any shape and strides into three axes); and the ``*_c`` forms
of prelu over C-contiguous ``(outer, C, inner)`` views with a 1-D weight. Rows of a
non-contiguous 3-D view are typed 'A' by numba and would not vectorise; the drivers check
their stride and re-type them as contiguous (``_as_c``). Loops never validate and never
allocate Python objects; they release the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload

from .._config import NJIT_OPTIONS
from ._jit import AVX_BLEND as _AVX_BLEND
from ._jit import BF16_CVT as _BF16_CVT
from ._jit import BF16_PAIRS as _BF16_PAIRS
from ._jit import MASKED_VECTORS as _MASKED_VECTORS
from ._jit import SOFT_HALF as _SOFT_HALF
from ._jit import STREAM_MIN_BYTES as _STREAM_MIN_BYTES
from ._jit import _jit
from ._rules import (_bf16_pairs, _bf16_unpair, _cleared, _kahan_add, _keep, _load, _load64,
                     _lrelu, _lrelu_grad, _narrow, _prelu_term, _round_pair, _round_sum,
                     _rule_of, _scalar, _select, _start_partials, _sum_start, _term_of, _to64)
from ._vector import (LANES, STREAM_ALIGN, Vec, store_fence, vadd_lane, vhalf, viota, vlane,
                      vload, vload_first, vmuladd, vselect, vset_lane, vsplat, vstore,
                      vstore_first, vstore_stream, vstore_whole)


@intrinsic
def _as_c(typingctx, arr):
    """The same 1-D array typed as C-contiguous (the caller checked its stride)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None
    ret = arr.copy(layout="C")

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return ret(arr), codegen


@njit(inline="always", **NJIT_OPTIONS)
def _unit_stride(a):
    """Whether a 1-D view's elements are adjacent (its loop then runs on a contiguous view)."""
    return a.strides[0] == a.itemsize


@njit(inline="always", **NJIT_OPTIONS)
def _head(out):
    """Elements of a 1-D row before ``out``'s first 64-byte boundary (0 where its address is
    not a multiple of its item size, or for a strided row): the portable loops run them first,
    so that the vectors LLVM makes of the rest do not straddle two cache lines. NumPy's arrays
    start at any multiple of 16 bytes; float32 ``leaky_relu_backward`` of 1e5 elements on one
    thread, every operand 16 bytes past a boundary, took 18.8 µs before and 16.4 with the
    head (medians; docs/benchmarks.md, stop 49). (The boundary is ``STREAM_ALIGN``'s, which
    ``_stream_span`` counts from too.)"""
    size = out.itemsize
    addr = out.ctypes.data
    if addr % size != 0 or out.strides[0] != size:
        return 0
    return min(out.shape[0], ((-addr) % STREAM_ALIGN) // size)


# ---------------------------------------------------------------------------------------------
# streaming stores: a long contiguous row's results written past the caches


def _streams(ge, out, *inputs) -> bool:
    """Whether a row loop has a streaming form for these types (numba's): a C-contiguous
    ``out`` of a storage kind (float16 where the target has F16C), inputs C-contiguous and of
    its kind, and the comparison flag (a oneDNN rule keeps its own loop). Whether a call takes it is the row's length
    (``_STREAM_MIN_BYTES`` of output, from the last-level cache's size: ``_cpu.stream_min_bytes``)."""
    return (out.layout == "C" and out.dtype in (types.float32, types.float64, types.int16,
                                                  types.uint16)
            and not (out.dtype == types.uint16 and _SOFT_HALF)  # (float16 vectors need F16C)
            and all(a.layout == "C" and a.dtype == out.dtype for a in inputs)
            and _rule_of(ge) is None)


@njit(inline="always", **NJIT_OPTIONS)
def _stream_span(out, w):
    """``(a, b)``: elements ``a:b`` of the C-contiguous 1-D ``out`` fill whole, aligned
    ``STREAM_ALIGN``-byte blocks of ``w`` elements (``a`` the first element of one); an
    address that is not a multiple of the element size gives ``(n, n)``."""
    n = out.shape[0]
    if out.ctypes.data % out.itemsize:
        return n, n
    a = _head(out)
    return a, a + (n - a) // w * w


def _stream_lanes(out) -> int:
    """Elements of ``out``'s kind (numba's) in one streaming store (``STREAM_ALIGN`` bytes)."""
    return STREAM_ALIGN // (out.dtype.bitwidth // 8)


def _fwd_streamer(w):
    """The forward on 1-D C-contiguous views with streaming stores of ``w`` elements (the
    first and last elements outside whole aligned blocks by the portable loop); the caller
    fences."""
    @njit(inline="always", **NJIT_OPTIONS)
    def streamed(x, out, sc, ge):
        a, b = _stream_span(out, w)
        _fwd_loop(x[:a], out[:a], sc, ge)
        for k in range(a, b, w):
            vstore_stream(out, (k,), _ew_narrow(_lrelu(_ew_load(vload(x, (k,), w), out), sc, ge),
                                                out))
        _fwd_loop(x[b:], out[b:], sc, ge)
    return streamed


# ---------------------------------------------------------------------------------------------
# leaky_relu forward: y = x if keep(x) else x * s


def _bf16_vectors(ge, out, *arrays) -> bool:
    """Whether a loop takes the explicit bfloat16 vectors (AVX512-BF16's rounding, see
    ``_vector.round_bf16_hw``): the target has the instruction, every array is bfloat16 and
    contiguous along its last axis, and the rule is the comparison flag (a oneDNN rule keeps
    the portable loop)."""
    return (_BF16_CVT and isinstance(ge, types.Boolean)
            and all(a.dtype == types.int16 and a.layout == "C" for a in (out, *arrays)))


def _pairs(ge, out, *arrays) -> bool:
    """Whether an element-wise row loop (leaky_relu, in place, backward) takes bfloat16 vectors
    in pair order (``_rules._bf16_pairs``, ``_cpu.bf16_pairs``: AVX2 with the integer
    rounding): every array bfloat16 and C-contiguous, and the comparison flag (a oneDNN rule
    keeps the portable loop; a run-time flag runs the loop in two copies,
    ``_fwd_row_pairs_switched``). On an AMD EPYC (Zen 2, AVX2), one thread, bfloat16
    ``leaky_relu`` of 65,536 elements 28.4 -> 23.6 µs and of 1e6 433 -> 356 against the
    portable loop: 26 vector instructions per 16 elements instead of 28, no ``vpmovzxwd`` and
    no ``vpermq`` (docs/benchmarks.md, stop 54). prelu's rows keep the portable loop: with
    this path beside it in the same kernel, rows of 39 and 100 elements ran 15-20 % slower
    even where they did not take it (rows of 391 14 % faster); the streamed rows past the
    caches take it (``_FWD_STREAMED``)."""
    return (_BF16_PAIRS and isinstance(ge, types.Boolean)
            and all(a.dtype == types.int16 and a.layout == "C" for a in (out, *arrays)))


def _ew_load(v, like):
    """``_load`` for element-wise loops: bfloat16 vectors in pair order where the target takes
    them (``_BF16_PAIRS``), whose results ``_ew_narrow`` puts back in element order."""


# The element-wise operators' overloads (``_ew_load`` ... ``_bwd_loop``, ``_copy``) are functions
# of their own, typed with literal flags first, as ``_rules``' conversions are ("Compiled as
# functions of their own" there): each compiles once per signature, and LLVM inlines them.
# prelu's row helpers below stay ``inline="always"``: compiled on their own, prelu's calls of
# 1,000 elements were 5-7 % slower and prelu_backward's 15-18 %.
@overload(_ew_load, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_ew_load(v, like):
    if _BF16_PAIRS and isinstance(v, Vec) and v.dtype == types.int16:
        return lambda v, like: _bf16_pairs(v)
    return lambda v, like: _load(v, like)


def _ew_narrow(value, like):
    """``_narrow`` of ``_ew_load``'s lanes."""


@overload(_ew_narrow, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_ew_narrow(value, like):
    if _BF16_PAIRS and isinstance(value, Vec) and like.dtype == types.int16:
        return lambda value, like: _bf16_unpair(value)
    return lambda value, like: _narrow(value, like)


def _runtime_flag(ge) -> bool:
    """Whether ``ge`` is the comparison flag as a run-time value (not a constant, not a
    ``Rule``). A portable loop then runs in two copies, one per value, each with the flag a
    constant: LLVM vectorises ``(v > 0) | (ge & (v == 0))`` with a run-time ``ge`` by packing
    the two compares' masks to bytes and back (17 of a float16 or bfloat16 loop's 47
    instructions per 16 elements under AVX2; 1.7-2.4 times the unswitched loop's time)."""
    return isinstance(ge, types.Boolean) and not isinstance(ge, types.BooleanLiteral)


#: Lanes of the explicit bfloat16 loops: a 512-bit vector of bfloat16, two of float32 (one
#: ``vcvtne2ps2bf16`` rounds both, one store writes them).
BF_LANES = 2 * LANES


@_jit(_nrt=False)
def lrelu_fwd_row(x, out, s, ge):
    _fwd_row(x, out, _scalar(s, out), ge)


def _fwd_row(x, out, sc, ge):
    """The forward loop for one row: explicit bfloat16 vectors, or the portable loop."""


@overload(_fwd_row, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_fwd_row(x, out, sc, ge):
    if _bf16_vectors(ge, out, x):
        def cached(x, out, sc, ge):
            _fwd_row3(x.reshape((1, 1, x.shape[0])), out.reshape((1, 1, out.shape[0])), 0, 0,
                      sc, ge)
    elif _pairs(ge, out, x):
        cached = _fwd_row_pairs_switched if _runtime_flag(ge) else _fwd_row_pairs
    else:
        cached = _fwd_row_portable
    if not _streams(ge, out, x):
        return cached
    streamed = _FWD_STREAMED[_stream_lanes(out)]
    cached = njit(inline="always", **NJIT_OPTIONS)(cached)

    def impl(x, out, sc, ge):
        if out.shape[0] * out.itemsize < _STREAM_MIN_BYTES:
            cached(x, out, sc, ge)
            return
        streamed(x, out, sc, ge)
        store_fence()
    return impl


def _fwd_row_portable(x, out, sc, ge):
    h = _head(out)
    _fwd_loop(x[:h], out[:h], sc, ge)
    _fwd_loop(x[h:], out[h:], sc, ge)


def _fwd_row_pairs(x, out, sc, ge):
    """The forward in bfloat16 vectors of ``BF_LANES`` in pair order (``_pairs``), the elements
    before the 64-byte head and after the last whole vector by the portable loop."""
    h = _head(out)
    _fwd_loop(x[:h], out[:h], sc, ge)
    n = x.shape[0]
    k = h
    while k + BF_LANES <= n:
        vstore(out, (k,), _bf16_unpair(_lrelu(_bf16_pairs(vload(x, (k,), BF_LANES)), sc, ge)))
        k += BF_LANES
    _fwd_loop(x[k:], out[k:], sc, ge)


_fwd_row_pairs_c = njit(inline="always", **NJIT_OPTIONS)(_fwd_row_pairs)


def _fwd_row_pairs_switched(x, out, sc, ge):
    """``_fwd_row_pairs`` with a run-time flag: one copy per value, each with the flag a
    constant (as ``_fwd_loop``)."""
    if ge:
        _fwd_row_pairs_c(x, out, sc, True)
    else:
        _fwd_row_pairs_c(x, out, sc, False)


_fwd_row_pairs_switched_c = njit(inline="always", **NJIT_OPTIONS)(_fwd_row_pairs_switched)


def _fwd_loop(x, out, sc, ge):
    """The portable forward loop (``_fwd_loop_body``), unswitched on a run-time flag."""


@overload(_fwd_loop, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_fwd_loop(x, out, sc, ge):
    if not _runtime_flag(ge):
        return lambda x, out, sc, ge: _fwd_loop_body(x, out, sc, ge)

    def impl(x, out, sc, ge):
        if ge:
            _fwd_loop_body(x, out, sc, True)
        else:
            _fwd_loop_body(x, out, sc, False)
    return impl


@njit(inline="always", **NJIT_OPTIONS)
def _fwd_loop_body(x, out, sc, ge):
    for k in range(x.shape[0]):
        v = _load(x[k], out)
        r = _lrelu(v, sc, ge)
        out[k] = _narrow(r, out)


#: The streamed forward rows by the elements of one streaming store.
_FWD_STREAMED = {w: _fwd_streamer(w) for w in (8, 16, 32)}


def _bwd_streamer(w):
    """The backward on 1-D C-contiguous views with streaming stores of ``w`` elements, as
    ``_fwd_streamer``; the caller fences."""
    @njit(inline="always", **NJIT_OPTIONS)
    def streamed(g, t, out, sc, ge):
        a, b = _stream_span(out, w)
        _bwd_loop(g[:a], t[:a], out[:a], sc, ge)
        for k in range(a, b, w):
            v = _lrelu_grad(_ew_load(vload(g, (k,), w), out), _ew_load(vload(t, (k,), w), out),
                            sc, ge)
            vstore_stream(out, (k,), _ew_narrow(v, out))
        _bwd_loop(g[b:], t[b:], out[b:], sc, ge)
    return streamed


@njit(inline="always", **NJIT_OPTIONS)
def _fwd_row3(x, out, i, j, sc, ge):
    """Row (i, j) of C-contiguous 3-D views, forward with the slope ``sc``, in explicit
    vectors of ``BF_LANES``, the last elements in one masked vector."""
    n = x.shape[2]
    _fwd_tail3(x, out, i, j, _fwd_span3(x, out, i, j, 0, n, sc, ge), n, sc, ge)


@njit(inline="always", **NJIT_OPTIONS)
def _fwd_span3(x, out, i, j, k, end, sc, ge):
    """The whole vectors of ``BF_LANES`` of elements k:end from (i, j, k) on (which may run
    past the row's end: the views are C-contiguous), forward with the slope ``sc``; returns
    where they stop."""
    while k + 2 * BF_LANES <= end:  # (two a step: the loop's own instructions count here)
        a = _lrelu(_load(vload(x, (i, j, k), BF_LANES), out), sc, ge)
        b = _lrelu(_load(vload(x, (i, j, k + BF_LANES), BF_LANES), out), sc, ge)
        vstore(out, (i, j, k), _narrow(a, out))
        vstore(out, (i, j, k + BF_LANES), _narrow(b, out))
        k += 2 * BF_LANES
    if k + BF_LANES <= end:
        a = _lrelu(_load(vload(x, (i, j, k), BF_LANES), out), sc, ge)
        vstore(out, (i, j, k), _narrow(a, out))
        k += BF_LANES
    return k


@njit(inline="always", **NJIT_OPTIONS)
def _fwd_tail3(x, out, i, j, k, n, sc, ge):
    """Elements k:n (fewer than ``BF_LANES``) of row (i, j), forward with the slope ``sc``: one
    masked vector, or element by element."""
    if k < n:
        if _AVX_BLEND:  # (AVX2 has no masked 16-bit loads: LLVM would emulate them lane by lane)
            for kk in range(k, n):
                out[i, j, kk] = _narrow(_lrelu(_load(x[i, j, kk], out), sc, ge), out)
        else:
            m = n - k
            v = _lrelu(_load(vload_first(x, (i, j, k), BF_LANES, m), out), sc, ge)
            vstore_first(out, (i, j, k), _narrow(v, out), m)


@_jit(_nrt=False)
def lrelu_fwd_nd(x, out, s, ge):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            xr, outr = x[i, j], out[i, j]
            if _unit_stride(xr) and _unit_stride(outr):
                lrelu_fwd_row(_as_c(xr), _as_c(outr), s, ge)
            else:
                lrelu_fwd_row(xr, outr, s, ge)


@_jit(_nrt=False)
def lrelu_fwd_row_inplace(x, s, ge):
    """The forward written into ``x``: one array, so LLVM needs no overlap check.

    (With ``out`` the same memory as ``x``, the vectoriser's run-time overlap check fails
    and the scalar loop runs: in place was 4x slower than out-of-place.) float32 and float64
    on a C-contiguous row take explicit vectors where the target has AVX (``_inplace_rows``).
    """
    _inplace_row(x, _scalar(s, x), ge)


def _inplace_row(x, sc, ge):
    """The in-place loop for one row: explicit vectors, or the portable loop."""


@overload(_inplace_row, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_inplace_row(x, sc, ge):
    if _bf16_vectors(ge, x):
        return lambda x, sc, ge: _fwd_row3(x.reshape((1, 1, x.shape[0])),
                                           x.reshape((1, 1, x.shape[0])), 0, 0, sc, ge)
    if _pairs(ge, x):
        row = _fwd_row_pairs_switched_c if _runtime_flag(ge) else _fwd_row_pairs_c
        return lambda x, sc, ge: row(x, x, sc, ge)
    if _AVX_BLEND and x.layout == "C" and x.dtype in (types.float32, types.float64):
        # A kept element stores back what was loaded, so LLVM stores only the others, with
        # masked stores (vmaskmovps), several times slower than plain ones on AMD's Zen; full
        # vectors blended with AVX's opaque blend (``_vector.blend_avx``) keep plain stores.
        return _inplace_row_vectors
    if x.layout == "C" and x.dtype in (types.float32, types.float64) and _rule_of(ge) is None:
        # LLVM's loop stores the changed elements only, with AVX-512's masked stores: fast in
        # the caches; past them ((64e6,) float32 on two threads) 8,705 µs against 7,280 with
        # whole vectors, so a row of at least _STREAM_MIN_BYTES stores whole vectors
        def impl(x, sc, ge):
            if x.shape[0] * x.itemsize < _STREAM_MIN_BYTES:
                _inplace_row_scalar(x, sc, ge)
                return
            n = x.shape[0]
            k = 0
            while k + LANES <= n:
                vstore_whole(x, (k,), _lrelu(vload(x, (k,), LANES), sc, ge))
                k += LANES
            _inplace_loop(x[k:], sc, ge)
        return impl
    return _inplace_row_portable


def _inplace_row_portable(x, sc, ge):
    h = _head(x)
    _inplace_loop(x[:h], sc, ge)
    _inplace_loop(x[h:], sc, ge)


def _inplace_loop(x, sc, ge):
    """The portable in-place loop (``_inplace_loop_body``), unswitched on a run-time flag."""


@overload(_inplace_loop, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_inplace_loop(x, sc, ge):
    if not _runtime_flag(ge):
        return lambda x, sc, ge: _inplace_loop_body(x, sc, ge)

    def impl(x, sc, ge):
        if ge:
            _inplace_loop_body(x, sc, True)
        else:
            _inplace_loop_body(x, sc, False)
    return impl


@njit(inline="always", **NJIT_OPTIONS)
def _inplace_loop_body(x, sc, ge):
    for k in range(x.shape[0]):
        v = _load(x[k], x)
        r = _lrelu(v, sc, ge)
        x[k] = _narrow(r, x)


_inplace_row_scalar = njit(inline="always", **NJIT_OPTIONS)(_inplace_row_portable)


def _inplace_row_vectors(x, sc, ge):
    h = _head(x)
    _inplace_loop(x[:h], sc, ge)
    _inplace_row_aligned(x[h:], sc, ge)


@njit(inline="always", **NJIT_OPTIONS)
def _inplace_row_aligned(x, sc, ge):
    n = x.shape[0]
    k = 0
    while k + 2 * LANES <= n:  # two vectors a step
        a = vload(x, (k,), LANES)
        b = vload(x, (k + LANES,), LANES)
        vstore(x, (k,), _narrow(_lrelu(_load(a, x), sc, ge), x))
        vstore(x, (k + LANES,), _narrow(_lrelu(_load(b, x), sc, ge), x))
        k += 2 * LANES
    while k < n:
        m = min(n - k, LANES)
        v = vload_first(x, (k,), LANES, m)
        vstore_first(x, (k,), _narrow(_lrelu(_load(v, x), sc, ge), x), m)
        k += m


@_jit(_nrt=False)
def lrelu_fwd_nd_inplace(x, s, ge):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            xr = x[i, j]
            if _unit_stride(xr):
                lrelu_fwd_row_inplace(_as_c(xr), s, ge)
            else:
                lrelu_fwd_row_inplace(xr, s, ge)


# ---------------------------------------------------------------------------------------------
# leaky_relu backward: dx = g if keep(t) else g * s   (t: input, or result when self_is_result)


@_jit(_nrt=False)
def lrelu_bwd_row(g, t, out, s, ge):
    _bwd_row(g, t, out, _scalar(s, out), ge)


def _bwd_row(g, t, out, sc, ge):
    """The backward loop for one row: explicit bfloat16 vectors, or the portable loop."""


@overload(_bwd_row, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_bwd_row(g, t, out, sc, ge):
    if _bf16_vectors(ge, out, g, t):
        cached = _bwd_row_vectors
    elif _pairs(ge, out, g, t):
        cached = _bwd_row_pairs_switched if _runtime_flag(ge) else _bwd_row_pairs
    else:
        cached = _bwd_row_portable
    if not _streams(ge, out, g, t):
        return cached
    streamed = _BWD_STREAMED[_stream_lanes(out)]
    cached = njit(inline="always", **NJIT_OPTIONS)(cached)

    def impl(g, t, out, sc, ge):
        if out.shape[0] * out.itemsize < _STREAM_MIN_BYTES:
            cached(g, t, out, sc, ge)
            return
        streamed(g, t, out, sc, ge)
        store_fence()
    return impl


def _bwd_row_portable(g, t, out, sc, ge):
    h = _head(out)
    _bwd_loop(g[:h], t[:h], out[:h], sc, ge)
    _bwd_loop(g[h:], t[h:], out[h:], sc, ge)


def _bwd_row_pairs(g, t, out, sc, ge):
    """The backward in bfloat16 vectors of ``BF_LANES`` in pair order, as ``_fwd_row_pairs``."""
    h = _head(out)
    _bwd_loop(g[:h], t[:h], out[:h], sc, ge)
    n = t.shape[0]
    k = h
    while k + BF_LANES <= n:
        v = _lrelu_grad(_bf16_pairs(vload(g, (k,), BF_LANES)),
                        _bf16_pairs(vload(t, (k,), BF_LANES)), sc, ge)
        vstore(out, (k,), _bf16_unpair(v))
        k += BF_LANES
    _bwd_loop(g[k:], t[k:], out[k:], sc, ge)


_bwd_row_pairs_c = njit(inline="always", **NJIT_OPTIONS)(_bwd_row_pairs)


def _bwd_row_pairs_switched(g, t, out, sc, ge):
    """``_bwd_row_pairs`` with a run-time flag, as ``_fwd_row_pairs_switched``."""
    if ge:
        _bwd_row_pairs_c(g, t, out, sc, True)
    else:
        _bwd_row_pairs_c(g, t, out, sc, False)


def _bwd_loop(g, t, out, sc, ge):
    """The portable backward loop (``_bwd_loop_body``), unswitched on a run-time flag."""


@overload(_bwd_loop, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_bwd_loop(g, t, out, sc, ge):
    if not _runtime_flag(ge):
        return lambda g, t, out, sc, ge: _bwd_loop_body(g, t, out, sc, ge)

    def impl(g, t, out, sc, ge):
        if ge:
            _bwd_loop_body(g, t, out, sc, True)
        else:
            _bwd_loop_body(g, t, out, sc, False)
    return impl


@njit(inline="always", **NJIT_OPTIONS)
def _bwd_loop_body(g, t, out, sc, ge):
    for k in range(t.shape[0]):
        gv = _load(g[k], out)
        tv = _load(t[k], out)
        r = _lrelu_grad(gv, tv, sc, ge)
        out[k] = _narrow(r, out)


#: The streamed backward rows by the elements of one streaming store.
_BWD_STREAMED = {w: _bwd_streamer(w) for w in (8, 16, 32)}


def _bwd_row_vectors(g, t, out, sc, ge):
    n = t.shape[0]
    k = 0
    while k + BF_LANES <= n:
        v = _lrelu_grad(_load(vload(g, (k,), BF_LANES), out),
                        _load(vload(t, (k,), BF_LANES), out), sc, ge)
        vstore(out, (k,), _narrow(v, out))
        k += BF_LANES
    if k < n:
        m = n - k
        v = _lrelu_grad(_load(vload_first(g, (k,), BF_LANES, m), out),
                        _load(vload_first(t, (k,), BF_LANES, m), out), sc, ge)
        vstore_first(out, (k,), _narrow(v, out), m)


@_jit(_nrt=False)
def lrelu_bwd_nd(g, t, out, s, ge):
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            gr, tr, outr = g[i, j], t[i, j], out[i, j]
            if _unit_stride(gr) and _unit_stride(tr) and _unit_stride(outr):
                lrelu_bwd_row(_as_c(gr), _as_c(tr), _as_c(outr), s, ge)
            else:
                lrelu_bwd_row(gr, tr, outr, s, ge)


# ---------------------------------------------------------------------------------------------
# prelu forward: y = x if keep(x) else w * x
# The weight stays compact: ``w`` is its flat array and element (i, j, k) of the 3-D
# iteration uses w[woff + i*ws0 + j*ws1 + k*ws2] (strides in elements, zero where the weight
# is broadcast), so no broadcast view has to be built per call.


@_jit(_nrt=False)
def prelu_fwd_row(x, w, base, ws, out, ge):
    for k in range(x.shape[0]):
        v = _load(x[k], out)
        wv = _load(w[base + k * ws], out)
        r = _lrelu(v, wv, ge)
        out[k] = _narrow(r, out)


@_jit(_nrt=False)
def prelu_fwd_nd(x, out, w, woff, ws0, ws1, ws2, ge):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            xr, outr = x[i, j], out[i, j]
            base = woff + i * ws0 + j * ws1
            if ws2 == 0:  # one slope for the whole row: the leaky_relu loop
                s = _load(w[base], out)
                if _unit_stride(xr) and _unit_stride(outr):
                    lrelu_fwd_row(_as_c(xr), _as_c(outr), s, ge)
                else:
                    lrelu_fwd_row(xr, outr, s, ge)
            elif _unit_stride(xr) and _unit_stride(outr):
                prelu_fwd_row(_as_c(xr), w, base, ws2, _as_c(outr), ge)
            else:
                prelu_fwd_row(xr, w, base, ws2, outr, ge)


# ---------------------------------------------------------------------------------------------
# prelu backward, one pass: gi = g if keep(x) else w * g ;  dw[w] += (0 if keep(x) else x * g)
#
# The weight-gradient terms are formed in float64 (``_term_of``: exact for the float32 and half
# kinds, the rounded product for float64 data) and summed in an order written out here, never
# left to the vectoriser, so that the bits depend on the shapes only, not on the CPU's vector
# width nor the thread count. Along a row with one slope, element k goes to lane k % LANES of
# a float64 ``Vec`` (vector loads and adds; a strided row adds each term into its lane the
# same way, ``_row_sum_strided``). Lanes sum plainly (float64 data: compensated, as its terms
# are rounded) for at most 256 exact terms each, whose error is below 2**-45 of the terms'
# absolute sum, then are added compensated into a (sums, comps) pair of lanes. On C-contiguous
# views (``prelu_bwd_c``) a channel's lanes run across its rows, in blocks of about
# ``_BLOCK`` elements (``_rows_per_block``), and are added at the end as a tree
# (``_channel_total``); on other views (``prelu_bwd_nd``) each row's stretches of ``_BLOCK``
# elements are added in lane order into the row's (total, comp). Either way the totals go
# into ``acc``/``comp``, float64 views broadcast like ``w`` whose sum is ``acc - comp``.

_BLOCK = 2048  # elements of a stretch (a multiple of LANES)


@njit(inline="always", **NJIT_OPTIONS)
def _prelu_bwd_term(g, x, k, ge):
    """The weight-gradient term of element k of 1-D views."""
    x64 = _load64(x[k])
    g64 = _load64(g[k])
    return _prelu_term(x64, g64, ge)


@njit(inline="always", **NJIT_OPTIONS)
def _prelu_bwd_step(g, x, gi, s, k, ge):
    """Write gi[k] and return the weight-gradient term of element k (float64)."""
    xv = _load(x[k], gi)
    gv = _load(g[k], gi)
    r = _lrelu_grad(gv, xv, s, ge)
    gi[k] = _narrow(r, gi)
    term = _prelu_bwd_term(g, x, k, ge)
    return term


def _lanes_add(sums, comps, t, x):
    """Add the ``Vec`` of terms ``t`` lane by lane: plainly for exact terms, compensated for
    float64 data (``x``: the data's array, whose dtype tells)."""


@overload(_lanes_add, inline="always", jit_options=NJIT_OPTIONS)
def _ol_lanes_add(sums, comps, t, x):
    if x.dtype == types.float64:
        return lambda sums, comps, t, x: _kahan_add(sums, comps, t)
    return lambda sums, comps, t, x: (sums + t, comps)


def _lane_add(sums, comps, m, t, x):
    """Add one term into lane ``m`` (the same operations a vector add makes in that lane)."""


@overload(_lane_add, inline="always", jit_options=NJIT_OPTIONS)
def _ol_lane_add(sums, comps, m, t, x):
    if x.dtype == types.float64:
        def add(sums, comps, m, t, x):
            a, c = _kahan_add(vlane(sums, m), vlane(comps, m), t)
            return vset_lane(sums, m, a), vset_lane(comps, m, c)
        return add
    return lambda sums, comps, m, t, x: (vadd_lane(sums, m, t), comps)


def _lanes_into(total, tcomp, sums, comps, x):
    """Add the lanes, in lane order, into the compensated (total, tcomp)."""


@overload(_lanes_into, inline="always", jit_options=NJIT_OPTIONS)
def _ol_lanes_into(total, tcomp, sums, comps, x):
    kahan = x.dtype == types.float64

    def into(total, tcomp, sums, comps, x):
        for m in range(LANES):
            total, tcomp = _kahan_add(total, tcomp, vlane(sums, m))
            if kahan:
                total, tcomp = _kahan_add(total, tcomp, -vlane(comps, m))
        return total, tcomp
    return into


#: Rows of at most this many elements add into the first lanes only, in vectors this wide.
_SHORT_LANES = 8


def _grad_input_step(n):
    """A function writing ``gi``'s ``n`` elements of row (i, j) from k on, returning the
    loaded vectors (storage and widened: ``xs, gs, xv, gv``) for the terms."""
    @njit(inline="always", **NJIT_OPTIONS)
    def step(g, x, gi, i, j, k, s, ge):
        xs = vload(x, (i, j, k), n)
        gs = vload(g, (i, j, k), n)
        xv = _load(xs, gi)
        gv = _load(gs, gi)
        vstore(gi, (i, j, k), _narrow(_lrelu_grad(gv, xv, s, ge), gi))
        return xs, gs, xv, gv
    return step


def _grad_input_first(n):
    """``_grad_input_step(n)`` for only the first ``r`` (<= n) of the n elements: no memory
    past them touched, the other lanes loaded as zero (+0 for every kind)."""
    @njit(inline="always", **NJIT_OPTIONS)
    def first(g, x, gi, i, j, k, r, s, ge):
        xs = vload_first(x, (i, j, k), n, r)
        gs = vload_first(g, (i, j, k), n, r)
        xv = _load(xs, gi)
        gv = _load(gs, gi)
        vstore_first(gi, (i, j, k), _narrow(_lrelu_grad(gv, xv, s, ge), gi), r)
        return xs, gs, xv, gv
    return first


_grad_input_vector = _grad_input_step(LANES)
_grad_input_pair = _grad_input_step(BF_LANES)
_grad_input_tail = _grad_input_first(LANES)
_grad_input_short = _grad_input_first(_SHORT_LANES)


@njit(inline="always", **NJIT_OPTIONS)
def _row_sum_c(g, x, gi, i, j, k0, k1, s, ge):
    """Write ``gi`` over row (i, j) of C-contiguous 3-D views, elements k0:k1 (k0 a multiple
    of LANES), and return the row's terms summed in lanes, ``(sums, comps)``."""
    sums = vsplat(_sum_start(ge), LANES)
    comps = vsplat(0.0, LANES)
    k = k0
    while k + LANES <= k1:
        xs, gs, xv, gv = _grad_input_vector(g, x, gi, i, j, k, s, ge)
        sums, comps = _lanes_add(sums, comps, _term_of(xs, gs, xv, gv, ge), x)
        k += LANES
    for kk in range(k, k1):  # the tail: each term into its lane
        xs1 = x[i, j, kk]
        gs1 = g[i, j, kk]
        xv1 = _load(xs1, gi)
        gv1 = _load(gs1, gi)
        gi[i, j, kk] = _narrow(_lrelu_grad(gv1, xv1, s, ge), gi)
        sums, comps = _lane_add(sums, comps, kk % LANES, _term_of(xs1, gs1, xv1, gv1, ge), x)
    return sums, comps


@njit(inline="always", **NJIT_OPTIONS)
def _gather(a, k):
    """Elements k to k + LANES of the 1-D view ``a`` (any stride), a ``Vec``."""
    v = vsplat(a[k], LANES)
    for m in range(1, LANES):
        v = vset_lane(v, m, a[k + m])
    return v


@_jit(_nrt=False)
def _row_sum_strided(g, x, gi, k0, k1, s, ge):
    """``_row_sum_c`` for 1-D views of any strides: each LANES elements gathered into a
    vector and summed as ``_row_sum_c`` sums its vectors, the tail one element at a time into
    its lane: the same lanes, the same bits (10,240 float64 elements in rows of 40 through
    ``prelu_bwd_nd`` on one thread: 138 µs with every element added into its lane alone)."""
    sums = vsplat(_sum_start(ge), LANES)
    comps = vsplat(0.0, LANES)
    k = k0
    while k + LANES <= k1:
        xs = _gather(x, k)
        gs = _gather(g, k)
        xv = _load(xs, gi)
        gv = _load(gs, gi)
        r = _narrow(_lrelu_grad(gv, xv, s, ge), gi)
        for m in range(LANES):
            gi[k + m] = vlane(r, m)
        sums, comps = _lanes_add(sums, comps, _term_of(xs, gs, xv, gv, ge), x)
        k += LANES
    for k in range(k, k1):
        xs = x[k]
        gs = g[k]
        xv = _load(xs, gi)
        gv = _load(gs, gi)
        gi[k] = _narrow(_lrelu_grad(gv, xv, s, ge), gi)
        sums, comps = _lane_add(sums, comps, k % LANES, _term_of(xs, gs, xv, gv, ge), x)
    return sums, comps


@_jit(_nrt=False)
def _row_total(g, x, gi, s, ge):
    """Write ``gi`` over 1-D views and return the compensated (total, comp) of their terms."""
    n = x.shape[0]
    total, tcomp = _sum_start(ge), 0.0
    contiguous = _unit_stride(g) and _unit_stride(x) and _unit_stride(gi)
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        if contiguous:
            gc, xc, gic = _as_c(g), _as_c(x), _as_c(gi)
            sums, comps = _row_sum_c(gc.reshape((1, 1, n)), xc.reshape((1, 1, n)),
                                     gic.reshape((1, 1, n)), 0, 0, start, stop, s, ge)
        else:
            sums, comps = _row_sum_strided(g, x, gi, start, stop, s, ge)
        total, tcomp = _lanes_into(total, tcomp, sums, comps, x)
    return total, tcomp


@_jit(_nrt=False)
def _prelu_bwd_row(g, x, gi, w, acc, comp, base, ws, ge):
    for k in range(x.shape[0]):
        m = base + k * ws
        wv = _load(w[m], gi)
        term = _prelu_bwd_step(g, x, gi, wv, k, ge)
        a, c = acc[m], comp[m]
        acc[m], comp[m] = _kahan_add(a, c, term)


@_jit(_nrt=False)
def prelu_bwd_nd(g, x, gi, w, acc, comp, woff, ws0, ws1, ws2, ge):
    """Write ``gi`` and add the weight gradient into the pair (``acc``, ``comp``).

    ``w``, ``acc`` and ``comp`` are flat arrays of the weight's size, indexed alike.
    """
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            gr, xr, gir = g[i, j], x[i, j], gi[i, j]
            base = woff + i * ws0 + j * ws1
            if ws2 == 0:
                s = _load(w[base], gir)
                total, c = _row_total(gr, xr, gir, s, ge)
                a0, c0 = acc[base], comp[base]
                a, b = _kahan_add(a0, c0, total)
                acc[base] = a
                comp[base] = b + c
            else:
                _prelu_bwd_row(gr, xr, gir, w, acc, comp, base, ws2, ge)


@njit(inline="always", **NJIT_OPTIONS)
def _combined(partials, j, ge):
    """``sum_i (partials[i, 0, j] - partials[i, 1, j])`` as one compensated pair, i = 0, 1, …
    (from ``_sum_start(ge)``)."""
    total, comp = _sum_start(ge), 0.0
    for i in range(partials.shape[0]):
        hi, lo = partials[i, 0, j], -partials[i, 1, j]
        total, comp = _kahan_add(total, comp, hi)
        total, comp = _kahan_add(total, comp, lo)
    return total, comp


@_jit(_nrt=False)
def combine_partials(partials, out, ge):
    """``out[j]``: the sum of the partial (acc, comp) pairs of weight element j, rounded once
    from the pair to ``out``'s storage kind (float64: the sum, rounded once)."""
    for j in range(out.shape[0]):
        total, comp = _combined(partials, j, ge)
        out[j] = _round_pair(total, comp, out)


@_jit(_nrt=False)
def round_sums(sums, out):
    """``out[j]``: the float64 sum ``sums[j]`` rounded once to ``out``'s storage kind (to
    nearest, ties to even; ±inf on overflow; NaN stays NaN)."""
    for j in range(out.shape[0]):
        out[j] = _round_sum(sums[j], out)


@_jit(_nrt=False)
def copy_row(src, dst):
    _copy(src, dst)


def _copy(src, dst):
    """``dst[:] = src``: a loop, or streaming stores for a long contiguous row."""


@njit(inline="always", **NJIT_OPTIONS)
def _copy_portable(src, dst):
    for k in range(src.shape[0]):
        dst[k] = src[k]


@overload(_copy, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_copy(src, dst):
    if not (dst.layout == "C" and src.layout == "C" and src.dtype == dst.dtype
            and dst.dtype.bitwidth in (16, 32, 64)):
        return lambda src, dst: _copy_portable(src, dst)
    w = _stream_lanes(dst)

    def impl(src, dst):
        if dst.shape[0] * dst.itemsize < _STREAM_MIN_BYTES:
            _copy_portable(src, dst)
            return
        a, b = _stream_span(dst, w)
        _copy_portable(src[:a], dst[:a])
        for k in range(a, b, w):
            vstore_stream(dst, (k,), vload(src, (k,), w))
        _copy_portable(src[b:], dst[b:])
        store_fence()
    return impl


@njit(inline="always", **NJIT_OPTIONS)
def _part(n, parts, c):
    """Bounds ``(lo, hi)`` of part ``c`` when ``n`` rows are split into ``parts``."""
    step = (n + parts - 1) // parts
    lo = min(c * step, n)
    return lo, min(lo + step, n)


# ---------------------------------------------------------------------------------------------
# prelu on C-contiguous 3-D views with a 1-D weight: (outer, C, inner) with the slope per row
# (``per_k`` False), or channels last, (1, outer, C) with the slope per element (``per_k``
# True). The loops index the whole arrays over the range ``lo:hi`` of ``axis`` (0 or 1: the
# threaded drivers' parts), without slicing: a slice per row costs reference counting and a
# call, which was most of the time for rows of a few dozen elements. Inner loops run over
# unsigned indices (or from 0): with a signed index of unknown sign numba adds negative-index
# wraparound, and LLVM then vectorises the loop with gathers and scatters.


@njit(inline="always", **NJIT_OPTIONS)
def _ranges(shape, axis, lo, hi):
    """Loop bounds (i0, i1, j0, j1) of the two outer axes with ``axis`` (0 or 1) = lo:hi."""
    if axis == 0:
        return lo, hi, 0, shape[1]
    return 0, shape[0], lo, hi


@_jit(_nrt=False)
def prelu_fwd_c(x, out, w, per_k, ge, axis, lo, hi):
    i0, i1, j0, j1 = _ranges(x.shape, axis, lo, hi)
    if not per_k and (i1 - i0) * (j1 - j0) * x.shape[2] * out.itemsize >= _STREAM_MIN_BYTES:
        if _slope_rows_streamed(x, out, w, i0, i1, j0, j1, ge):  # (a part past the caches)
            return
    if per_k:
        for i in range(i0, i1):
            for j in range(j0, j1):
                _prelu_row3(x, out, w, i, j, ge)
    else:
        _slope_rows3(x, out, w, i0, i1, j0, j1, ge)


def _slope_rows_streamed(x, out, w, i0, i1, j0, j1, ge):
    """Rows i0:i1 x j0:j1 of prelu with a slope per row, written with streaming stores, and
    True; False, nothing written, where the types have no streaming form (``_streams``)."""


@overload(_slope_rows_streamed, inline="always", jit_options=NJIT_OPTIONS)
def _ol_slope_rows_streamed(x, out, w, i0, i1, j0, j1, ge):
    if not _streams(ge, out, x):
        return lambda x, out, w, i0, i1, j0, j1, ge: False
    streamed = _FWD_STREAMED[_stream_lanes(out)]

    def impl(x, out, w, i0, i1, j0, j1, ge):
        for i in range(i0, i1):
            for j in range(j0, j1):
                streamed(x[i, j], out[i, j], _load(w[j], out), ge)
        store_fence()
        return True
    return impl


def _slope_rows3(x, out, w, i0, i1, j0, j1, ge):
    """Rows i0:i1 x j0:j1 of C-contiguous 3-D views, row (i, j)'s slope ``w[j]``: a half type
    with explicit vectors (``_half_vectors``) in rows of at least ``BF_LANES`` in runs of
    vectors across the rows (``_slope_run``; one run where j0:j1 is every row of an i), a
    half type's shorter rows by the portable loop (a masked vector cost more on AVX2), the
    other types row by row (``_slope_row3``). (float32 in runs was slower than its rows on long rows
    with AVX-512 and faster at some lengths, slower at others, under the AVX2 caps.)"""


@overload(_slope_rows3, inline="always", jit_options=NJIT_OPTIONS)
def _ol_slope_rows3(x, out, w, i0, i1, j0, j1, ge):
    if not _half_vectors(ge, out, x):
        return lambda x, out, w, i0, i1, j0, j1, ge: _slope_by_row(x, out, w, i0, i1, j0, j1, ge)

    def runs(x, out, w, i0, i1, j0, j1, ge):
        if x.shape[2] < BF_LANES:  # (the portable loop: its vectors not compiled)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    _slope_row3_portable(x, out, i, j, _load(w[j], out), ge)
            return
        whole = j0 == 0 and j1 == x.shape[1]  # (rows i0:i1 one stretch of memory: one run)
        for i in range(i0, i0 + 1 if whole else i1):
            _slope_run(x, out, w, i, (i1 - i0) * j1 if whole else j1 - j0, ge, j0)
    return runs


@njit(inline="always", **NJIT_OPTIONS)
def _slope_by_row(x, out, w, i0, i1, j0, j1, ge):
    """``_slope_rows3`` row by row."""
    for i in range(i0, i1):
        for j in range(j0, j1):
            _slope_row3(x, out, i, j, _load(w[j], out), ge)


@njit(inline="always", **NJIT_OPTIONS)
def _slope_run(x, out, w, i, rows, ge, j0):
    """prelu with a slope per row over ``rows`` rows of C-contiguous 3-D views from (i, j0)
    on, as one stretch of memory in vectors of ``BF_LANES`` elements (rows at least that long):
    a row's last elements and the next row's first share a vector, whose lanes take their
    row's slope (a select of the two), so no row ends in a masked or element-by-element tail;
    only the run's last elements do. Each element's result is the one ``_slope_row3`` gives.
    (Vectors address the run from (i, j0, 0) on, past the row's end: the views are
    C-contiguous, and ``vload``/``vstore`` compute the address without a bounds check.)"""
    if rows <= 0:
        return
    n, c = x.shape[2], x.shape[1]
    end = rows * n
    j = j0
    s = _load(w[j], out)
    row_end = n
    p = 0
    while True:
        p = _fwd_span3(x, out, i, j0, p, row_end, s, ge)
        if row_end == end:
            break
        j = j + 1 if j + 1 < c else 0
        s2 = _load(w[j], out)
        if p < row_end:  # (a vector across the boundary: its first lanes the row before's)
            sv = vselect(viota(BF_LANES) < row_end - p, vsplat(s, BF_LANES), vsplat(s2, BF_LANES))
            a = _lrelu(_load(vload(x, (i, j0, p), BF_LANES), out), sv, ge)
            vstore(out, (i, j0, p), _narrow(a, out))
            p += BF_LANES
        s = s2
        row_end += n
    # (the last row's last elements: row (i + (j0 + rows - 1) // c, j))
    _fwd_tail3(x, out, i + (j0 + rows - 1) // c, j, p - (end - n), n, s, ge)


def _slope_row3(x, out, i, j, s, ge):
    """Row (i, j) of C-contiguous 3-D views with one slope, for the types without prelu's
    runs (``_slope_rows3``): float32's masked vectors (``_f32_vectors``), or the portable
    loop."""


def _half_vectors(ge, out, *arrays) -> bool:
    """Whether a prelu row takes explicit vectors of a half type: bfloat16 as
    ``_bf16_vectors``, or float16 with F16C (LLVM leaves the 3-D row loop of float16 scalar
    when it compiles for AVX2: (4, 64, 39) took 7.2 µs against 2.3 for AVX-512)."""
    if _bf16_vectors(ge, out, *arrays):
        return True
    return (not _SOFT_HALF and isinstance(ge, types.Boolean)
            and all(a.dtype == types.uint16 and a.layout == "C" for a in (out, *arrays)))


#: Rows of at least this many float32 elements take LLVM's loop even with masked vectors (its
#: unrolled loop is the faster one there, and its remainder counts for little).
_LONG_ROW = 512


def _f32_vectors(ge, out, *arrays) -> bool:
    """Whether a prelu row of float32 shorter than ``_LONG_ROW`` takes explicit vectors of
    ``LANES`` with a masked last one (AVX-512F), rather than LLVM's loop, whose remainder runs
    element by element (kernel, one thread: (4, 64, 4) 0.62-0.68 -> 0.29-0.36 µs, (4, 64, 39)
    1.09-1.17 -> 0.61-0.81 µs, (4, 64, 65) 0.97-1.04 -> 0.90-1.12 µs, (4, 64, 391) the same;
    rows of 1,000 and 3,906 a few per cent slower, hence ``_LONG_ROW``; unrolled by two, the
    short rows lost most of the gain. float64 measured no faster: 39 elements 1.09-1.15
    against 1.18-1.78 µs)."""
    return (_MASKED_VECTORS and isinstance(ge, types.Boolean)
            and all(a.dtype == types.float32 and a.layout == "C" for a in (out, *arrays)))


def _slope_row3_portable(x, out, i, j, s, ge):
    """The portable loop of ``_slope_row3`` (``_slope_row3_body``), unswitched on a run-time
    flag (``_runtime_flag``)."""


@overload(_slope_row3_portable, inline="always", jit_options=NJIT_OPTIONS)
def _ol_slope_row3_portable(x, out, i, j, s, ge):
    if not _runtime_flag(ge):
        return lambda x, out, i, j, s, ge: _slope_row3_body(x, out, i, j, s, ge)

    def impl(x, out, i, j, s, ge):
        if ge:
            _slope_row3_body(x, out, i, j, s, True)
        else:
            _slope_row3_body(x, out, i, j, s, False)
    return impl


@njit(inline="always", **NJIT_OPTIONS)
def _slope_row3_body(x, out, i, j, s, ge):
    for k in range(x.shape[2]):
        v = _load(x[i, j, k], out)
        r = _lrelu(v, s, ge)
        out[i, j, k] = _narrow(r, out)


@njit(inline="always", **NJIT_OPTIONS)
def _slope_row3_masked(x, out, i, j, s, ge):
    """Row (i, j) of C-contiguous 3-D float32 views in vectors of ``LANES``, the last one
    masked."""
    n = x.shape[2]
    k = 0
    while k + LANES <= n:
        vstore(out, (i, j, k), _lrelu(vload(x, (i, j, k), LANES), s, ge))
        k += LANES
    if k < n:
        m = n - k
        vstore_first(out, (i, j, k), _lrelu(vload_first(x, (i, j, k), LANES, m), s, ge), m)


@overload(_slope_row3, inline="always", jit_options=NJIT_OPTIONS)
def _ol_slope_row3(x, out, i, j, s, ge):
    if _f32_vectors(ge, out, x):
        def masked(x, out, i, j, s, ge):
            if x.shape[2] >= _LONG_ROW:
                _slope_row3_portable(x, out, i, j, s, ge)
            else:
                _slope_row3_masked(x, out, i, j, s, ge)
        return masked
    return lambda x, out, i, j, s, ge: _slope_row3_portable(x, out, i, j, s, ge)


def _prelu_row3(x, out, w, i, j, ge):
    """Row (i, j) of C-contiguous 3-D views, channels last (element k's slope ``w[k]``):
    explicit bfloat16 vectors, or the portable loop."""


@njit(inline="always", **NJIT_OPTIONS)
def _prelu_row3_portable(x, out, w, i, j, ge):
    for k in range(x.shape[2]):
        v = _load(x[i, j, k], out)
        wv = _load(w[k], out)
        r = _lrelu(v, wv, ge)
        out[i, j, k] = _narrow(r, out)


@njit(inline="always", **NJIT_OPTIONS)
def _prelu_row3_masked(x, out, w, i, j, ge):
    """``_prelu_row3`` of float32 in vectors of ``LANES``, the last one masked."""
    n = x.shape[2]
    k = 0
    while k + LANES <= n:
        vstore(out, (i, j, k), _lrelu(vload(x, (i, j, k), LANES), vload(w, (k,), LANES), ge))
        k += LANES
    if k < n:
        m = n - k
        vstore_first(out, (i, j, k), _lrelu(vload_first(x, (i, j, k), LANES, m),
                                            vload_first(w, (k,), LANES, m), ge), m)


@overload(_prelu_row3, inline="always", jit_options=NJIT_OPTIONS)
def _ol_prelu_row3(x, out, w, i, j, ge):
    if _f32_vectors(ge, out, x, w):
        def masked(x, out, w, i, j, ge):
            if x.shape[2] >= _LONG_ROW:
                _prelu_row3_portable(x, out, w, i, j, ge)
            else:
                _prelu_row3_masked(x, out, w, i, j, ge)
        return masked
    if _half_vectors(ge, out, x, w):
        def vectors(x, out, w, i, j, ge):
            n = x.shape[2]
            if n < BF_LANES:  # (a short row: one masked vector cost more on AVX2)
                _prelu_row3_portable(x, out, w, i, j, ge)
                return
            k = 0
            while k + BF_LANES <= n:
                v = _lrelu(_load(vload(x, (i, j, k), BF_LANES), out),
                           _load(vload(w, (k,), BF_LANES), out), ge)
                vstore(out, (i, j, k), _narrow(v, out))
                k += BF_LANES
            if k < n:
                if _AVX_BLEND:  # (as in _fwd_row3)
                    for kk in range(k, n):
                        out[i, j, kk] = _narrow(_lrelu(_load(x[i, j, kk], out),
                                                       _load(w[kk], out), ge), out)
                else:
                    m = n - k
                    v = _lrelu(_load(vload_first(x, (i, j, k), BF_LANES, m), out),
                               _load(vload_first(w, (k,), BF_LANES, m), out), ge)
                    vstore_first(out, (i, j, k), _narrow(v, out), m)
        return vectors
    return lambda x, out, w, i, j, ge: _prelu_row3_portable(x, out, w, i, j, ge)


@njit(inline="always", **NJIT_OPTIONS)
def _overlap(a, b):
    """Whether the bytes of two C-contiguous arrays overlap (``np.may_share_memory``'s bounds
    test, which is exact for them)."""
    if a.size == 0 or b.size == 0:
        return False
    pa, pb = a.ctypes.data, b.ctypes.data
    return pa < pb + b.size * b.itemsize and pb < pa + a.size * a.itemsize


@njit(inline="always", **NJIT_OPTIONS)
def _disjoint_gi(g, x, gi, w, acc):
    """Whether prelu_backward's ``gi`` shares no memory with the other arrays."""
    return not (_overlap(gi, g) or _overlap(gi, x) or _overlap(gi, w) or _overlap(gi, acc))


@njit(inline="always", **NJIT_OPTIONS)
def _disjoint_out(x, out, w):
    """Whether prelu's ``out`` shares no memory with ``x`` nor the weight."""
    return not (_overlap(out, x) or _overlap(out, w))


@njit(inline="always", **NJIT_OPTIONS)
def _as_int64(v):
    """``v`` typed int64, not numba's ``Literal[int](v)``: a jitted function called with a
    constant compiles a version of its own for that value, so a serial driver that passes a
    literal bound where the team's parts pass computed ones compiles the same loop twice
    (measured for float32 on a cold cache: ``prelu_bwd_rows`` 7.5 s more, ``prelu_fwd_c``
    9-15 s). The drivers here pass their constant bounds and axes so."""
    return np.int64(v)


@_jit(_nrt=False)
def prelu_fwd_c_run(x, out, w, per_k, ge, axis):
    """prelu on C-contiguous 3-D views (``prelu_fwd_c``): False, nothing written, where
    ``out`` shares memory with ``x`` or ``w`` (the caller then goes the general way; two
    bounds tests cost nanoseconds here, 85 ns each in Python), else True."""
    if not _disjoint_out(x, out, w):
        return False
    prelu_fwd_c(x, out, w, per_k, ge, axis, _as_int64(0), x.shape[axis])
    return True


@_jit
def slope_pattern(w, inner):
    """Each slope of ``w`` ``inner`` times in a row: the slopes of one (C, inner) block of a
    C-contiguous (outer, C, inner) array, element by element."""
    pattern = np.empty(w.shape[0] * inner, w.dtype)
    for j in range(w.shape[0]):
        for k in range(inner):
            pattern[j * inner + k] = w[j]
    return pattern


@_jit
def prelu_fwd_short_run(x, out, w, ge):
    """prelu on C-contiguous (outer, C, inner) views with a slope per row, rows short: the
    slopes laid out per element (``slope_pattern``) and the (1, outer, C * inner) views run as
    channels last, in rows of C * inner elements instead of outer * C rows of ``inner`` (each
    row of a half type costs a vector with a masked tail; the core decides when). False,
    nothing written, where ``out`` shares memory with ``x`` or ``w``, as ``prelu_fwd_c_run``."""
    if not _disjoint_out(x, out, w):
        return False
    n0, c, inner = x.shape
    prelu_fwd_c(x.reshape((1, n0, c * inner)), out.reshape((1, n0, c * inner)),
                slope_pattern(w, inner), True, ge, _as_int64(1), _as_int64(0), n0)
    return True


def _rows_into_lanes(g, x, gi, i0, i1, j, s, ge, sums, comps):
    """Write ``gi`` over rows i0:i1 of channel j of C-contiguous 3-D views, add their terms
    into channel j's compensated lanes (``sums``, ``comps``) and return them, element k of each
    row into lane k % LANES (a row's last elements fill a part of one vector; the other lanes
    are left as they were). float32 data's terms, exact in float64, add plainly (one fused
    multiply-add a vector, ``_rows_lanes`` with ``fused``) into an accumulator in registers,
    added compensated into the lanes at the end and every
    ``_BLOCK`` elements of a long row; the half kinds' terms, exact in float32 (inside its
    normal range), add plainly in float32 lanes for ``_F32_DEPTH`` vectors at a time, each
    such block then added into that float64 accumulator (``_rows_lanes`` with ``blocks32``);
    float64 data,
    whose terms are rounded, adds each vector of terms compensated. The caller's blocks of
    rows keep a lane's plain float64 sum to at most 256 terms (``_rows_per_block``)."""


@overload(_rows_into_lanes, inline="always", jit_options=NJIT_OPTIONS)
def _ol_rows_into_lanes(g, x, gi, i0, i1, j, s, ge, sums, comps):
    if x.dtype == types.float64:
        return _rows_into_lanes_compensated
    if _blocks32_kind(x, ge):
        if _bf16_vectors(ge, gi, x, g):  # (AVX512-BF16: two vectors a step, see _rows_lanes)
            return lambda g, x, gi, i0, i1, j, s, ge, sums, comps: _rows_lanes(
                g, x, gi, i0, i1, j, s, ge, sums, comps, True, False, True)
        return lambda g, x, gi, i0, i1, j, s, ge, sums, comps: _rows_lanes(
            g, x, gi, i0, i1, j, s, ge, sums, comps, True, False)
    if _resummed_kind(x, ge):  # (float32 data: the fused terms)
        return lambda g, x, gi, i0, i1, j, s, ge, sums, comps: _rows_lanes(
            g, x, gi, i0, i1, j, s, ge, sums, comps, False, True)
    return lambda g, x, gi, i0, i1, j, s, ge, sums, comps: _rows_lanes(
        g, x, gi, i0, i1, j, s, ge, sums, comps, False, False)


def _blocks32_kind(x, ge) -> bool:
    """Whether ``_rows_into_lanes`` sums ``x``'s kind (numba types) in float32 blocks: the
    half kinds (float16, bfloat16; their int16/uint16 views) without a oneDNN rule."""
    return x.dtype in (types.int16, types.uint16) and _rule_of(ge) is None


def _resummed_kind(x, ge) -> bool:
    """Whether ``prelu_bwd_rows`` sums a channel of ``x``'s kind again from float64 terms where
    its first sum is not finite (``_exact_if_not_finite``): the half kinds' float32 blocks and
    float32 data's fused terms (``_rows_lanes``), without a oneDNN rule."""
    return (_blocks32_kind(x, ge) or x.dtype == types.float32) and _rule_of(ge) is None


@njit(inline="always", **NJIT_OPTIONS)
def _rows_per_block(n2):
    """Rows of one channel a block takes: about ``_BLOCK`` elements, at least one row, so
    that a lane gets at most 256 terms between two compensated additions (a row of n2 < LANES
    elements gives one term to each of its lanes)."""
    return 1 if n2 >= 256 else max(1, _BLOCK // max(n2, LANES))


#: Vectors of float32 terms a float32 lane sums (``_rows_lanes``) before the block joins
#: the float64 accumulator: at most 7 roundings of float32 per lane and block, an error below
#: 2**-21 of the block's absolute sum.
_F32_DEPTH = 8


@njit(inline="always", **NJIT_OPTIONS)
def _rows_short(g, x, gi, i0, i1, j, s, ge, sums, comps):
    """``_rows_into_lanes`` of rows of at most ``_SHORT_LANES`` elements: the exact float64
    terms in vectors of ``_SHORT_LANES`` (the other lanes stay -0), set into the first lanes
    of an accumulator added compensated into the lanes."""
    n2 = x.shape[2]
    short = vsplat(-0.0, _SHORT_LANES)  # (the identity: a sum of -0 terms stays -0)
    for i in range(i0, i1):
        xt, gt, xtv, gtv = _grad_input_short(g, x, gi, i, j, 0, n2, s, ge)
        short = vselect(viota(_SHORT_LANES) < n2, short + _term_of(xt, gt, xtv, gtv, ge), short)
    acc = vsplat(-0.0, LANES)
    for m in range(_SHORT_LANES):
        acc = vset_lane(acc, m, vlane(short, m))
    return _kahan_add(sums, comps, acc)


@njit(inline="always", **NJIT_OPTIONS)
def _terms32_step(g, x, gi, i, j, k, s, ge, s32, pairs):
    """One step of the half kinds' float32 blocks (``_rows_lanes`` with ``blocks32``): row
    i's grad_input written from element k, and the terms added into the float32 lanes
    ``s32``: two vectors with ``pairs`` (their terms first half, then second half), else
    one. Returns (s32, the next k)."""
    if pairs:  # (two vectors: the additions in the same order)
        xs, gs, xv, gv = _grad_input_pair(g, x, gi, i, j, k, s, ge)
        t = _cleared(_keep(xv, ge), xv * gv)
        return s32 + vhalf(t, False) + vhalf(t, True), k + BF_LANES
    xs, gs, xv, gv = _grad_input_vector(g, x, gi, i, j, k, s, ge)
    return s32 + _cleared(_keep(xv, ge), xv * gv), k + LANES


@njit(inline="always", **NJIT_OPTIONS)
def _rows_lanes(g, x, gi, i0, i1, j, s, ge, sums, comps, blocks32, fused, pairs=False):
    """The loop of ``_rows_into_lanes`` for exact terms. ``blocks32`` False: each vector's
    float64 terms (``_term_of``) add into a float64 accumulator; with ``fused`` (float32
    data) each as ``vmuladd(x', g, acc)``, x' being x widened with +0 where x is kept (an FMA
    on AVX2 and AVX-512: the product of two float32 values is exact in float64, so fused or
    not it rounds once, as the add of ``_term_of``'s term does; a kept lane adds +-0 where
    that adds +0, which changes no sum's value; (4, 64, 391) on one thread: 19.4 -> 17.4 µs
    under the AVX2 caps, 13.7-14.0 -> 13.2-13.4 on AVX-512). x' is ``_cleared`` (on AVX2 an
    and-not, not a blend), and a row's last partial vector adds the terms of all its lanes:
    the lanes past the row's end load as +0 and add +0 (the sums start at +0, so no bit
    changes; the kernel under the AVX2 caps, (4, 64, 39) 3.34-3.40 -> 3.14-3.21 µs). A kept
    lane whose g is inf or NaN makes that term NaN (0 * inf) where ``_term_of``'s is 0: the
    channel's total is then not finite, and ``_exact_if_not_finite`` sums it again with
    ``_term_of``'s terms.
    ``blocks32`` True (a constant of the caller's, as ``fused`` is, so the other branches
    compile away): the half kinds' terms formed in float32
    (``x * g``: exact inside float32's normal range; below it rounded to float32's
    subnormals, an error under 2**-150) and summed in float32 lanes, ``_F32_DEPTH`` vectors
    and a row's end at most, each block then widened into the float64 accumulator (4
    conversions per 128 elements instead of 4 per 16); a product or block sum beyond
    float32's range leaves its channel non-finite, and ``_exact_if_not_finite`` then sums
    that channel again with ``blocks32`` False. The kept lanes' terms are ``_cleared`` here
    too, and a row's last vector adds all its lanes, as the fused loop does (the same bits;
    under the AVX2 caps 6 blends fewer, 4 and-nots more, and the kernel's time the same
    within 2 %). Either way the accumulator is added
    compensated into the lanes every ``_BLOCK`` elements and at the end. ``pairs`` (bfloat16
    with AVX512-BF16, ``_bf16_vectors``): the full vectors two at a time, their grad_input
    rounded by one ``vcvtne2ps2bf16`` and written by one 512-bit store, their terms added
    into the float32 lanes first half, then second half: the same additions in the same order,
    so the same bits ((4, 64, 391) on one thread 11.5-11.9 -> 10.7-10.9 µs, (4, 64, 3906)
    83-84 -> 75-76). With ``blocks32`` a row's whole blocks of ``_F32_DEPTH`` vectors run
    first in a loop of their own (``_terms32_step`` unrolled, no test of k between the
    vectors), then its last vectors and its tail as before: the same additions in the same
    order (float16 and bfloat16, (4, 64, 391) and (4, 64, 1564), old and new in one process:
    0.91-1.01 of the time, most runs below 1)."""
    n2 = x.shape[2]
    if n2 <= _SHORT_LANES:
        return _rows_short(g, x, gi, i0, i1, j, s, ge, sums, comps)
    acc = vsplat(-0.0, LANES)
    zero = vsplat(np.float32(-0.0), LANES)
    for i in range(i0, i1):
        k = 0
        s32 = zero
        if blocks32:  # (the row's whole blocks: no test of k between their vectors)
            while k + _F32_DEPTH * LANES <= n2:
                for _ in range(_F32_DEPTH * LANES // BF_LANES if pairs else _F32_DEPTH):
                    s32, k = _terms32_step(g, x, gi, i, j, k, s, ge, s32, pairs)
                acc = acc + _to64(s32)
                s32 = zero
                if k % _BLOCK == 0:
                    sums, comps = _kahan_add(sums, comps, acc)
                    acc = vsplat(-0.0, LANES)
        while k + LANES <= n2:
            if blocks32:
                s32, k = _terms32_step(g, x, gi, i, j, k, s, ge, s32,
                                       pairs and k + BF_LANES <= n2)
            else:
                xs, gs, xv, gv = _grad_input_vector(g, x, gi, i, j, k, s, ge)
                if fused:
                    acc = vmuladd(_to64(_cleared(_keep(xv, ge), xv)), _to64(gv), acc)
                else:
                    acc = acc + _term_of(xs, gs, xv, gv, ge)
                k += LANES
            if k % _BLOCK == 0:  # (never after blocks32's whole blocks)
                sums, comps = _kahan_add(sums, comps, acc)
                acc = vsplat(-0.0, LANES)
        r = n2 - k
        if r > 0:
            xt, gt, xtv, gtv = _grad_input_tail(g, x, gi, i, j, k, r, s, ge)
            if blocks32:
                s32 = s32 + _cleared(_keep(xtv, ge), xtv * gtv)  # (lanes past r: +0, as fused)
            elif fused:  # (the lanes past r loaded as +0: their terms add +0)
                xk = _to64(_cleared(_keep(xtv, ge), xtv))
                acc = vmuladd(xk, _to64(gtv), acc)
            else:
                acc = vselect(viota(LANES) < r, acc + _term_of(xt, gt, xtv, gtv, ge), acc)
        if blocks32:
            acc = acc + _to64(s32)
    return _kahan_add(sums, comps, acc)


def _exact_if_not_finite(g, x, gi, j, s, ge, total, tcomp):
    """A channel's (total, comp) from float32 blocks or fused terms (``_rows_lanes``), or, where
    the total is not finite (a float32 term or block sum overflowed, a kept element's g is
    inf or NaN under the fused terms, or the data hold inf or NaN), the
    channel summed again over all its rows from float64 terms (``resum_exact``; ``gi`` written
    again with the same values), finite wherever their sum is. Other kinds: (total, tcomp) as
    they are (and ``resum_exact`` is not compiled for them)."""


@overload(_exact_if_not_finite, inline="always", jit_options=NJIT_OPTIONS)
def _ol_exact_if_not_finite(g, x, gi, j, s, ge, total, tcomp):
    if not _resummed_kind(x, ge):
        return lambda g, x, gi, j, s, ge, total, tcomp: (total, tcomp)

    def impl(g, x, gi, j, s, ge, total, tcomp):
        if abs(total) < np.inf:
            return total, tcomp
        return resum_exact(g, x, gi, j, s, ge)
    return impl


@_jit(_nrt=False)
def resum_exact(g, x, gi, j, s, ge):
    """Channel j of ``prelu_bwd_rows``' views summed again from float64 terms, as a (total,
    comp) pair: the additions ``_rows_lanes`` makes without ``blocks32`` nor ``fused``, in the
    same order (element k of a row into lane k % LANES, plainly, from -0; the lanes added
    compensated every ``_BLOCK`` elements of a row and after each block of rows), so the same
    bits, made one element at a time (``vadd_lane``, the one addition a vector add makes in
    that lane). ``gi`` is left as the first pass wrote it. A function of its own, not
    inlined: it runs only where a float32 block overflowed, and one compiled copy serves every
    caller; element by element, it compiles in a fraction of the time that loop took (float32
    on a cold cache: 5.5 -> 1.1-1.6 s)."""
    n0, n2 = x.shape[0], x.shape[2]
    rows = _rows_per_block(n2)
    sums, comps = vsplat(_sum_start(ge), LANES), vsplat(0.0, LANES)
    for b0 in range(0, n0, rows):
        acc = vsplat(-0.0, LANES)
        for i in range(b0, min(b0 + rows, n0)):
            gr, xr = g[i, j], x[i, j]
            for k in range(n2):
                acc = vadd_lane(acc, k % LANES, _prelu_bwd_term(gr, xr, k, ge))
                if (k + 1) % _BLOCK == 0:  # (a whole vector's end, as _rows_lanes tests k)
                    sums, comps = _kahan_add(sums, comps, acc)
                    acc = vsplat(-0.0, LANES)
        sums, comps = _kahan_add(sums, comps, acc)
    return _channel_total(sums, comps)


def _rows_into_lanes_compensated(g, x, gi, i0, i1, j, s, ge, sums, comps):
    n2 = x.shape[2]
    for i in range(i0, i1):
        k = 0
        while k + LANES <= n2:
            xs, gs, xv, gv = _grad_input_vector(g, x, gi, i, j, k, s, ge)
            sums, comps = _kahan_add(sums, comps, _term_of(xs, gs, xv, gv, ge))
            k += LANES
        r = n2 - k
        if r > 0:
            xt, gt, xtv, gtv = _grad_input_tail(g, x, gi, i, j, k, r, s, ge)
            s2, c2 = _kahan_add(sums, comps, _term_of(xt, gt, xtv, gtv, ge))
            live = viota(LANES) < r
            sums = vselect(live, s2, sums)
            comps = vselect(live, c2, comps)
    return sums, comps


@njit(inline="always", **NJIT_OPTIONS)
def _halved(sums, comps):
    """Compensated pairs (sums - comps, lane by lane) added half to half: lane m of the result
    is lanes m and m + n/2 added compensated (their rounding error joins the comps)."""
    return _kahan_add(vhalf(sums, False), vhalf(comps, False) + vhalf(comps, True),
                      vhalf(sums, True))


@njit(inline="always", **NJIT_OPTIONS)
def _channel_total(sums, comps):
    """A channel's compensated lanes added compensated, as a tree (lanes m and m + 8, then m
    and m + 4, …: a fixed order, independent of the thread count), into ``(total, comp)``."""
    s, c = _halved(sums, comps)
    s, c = _halved(s, c)
    s, c = _halved(s, c)
    s, c = _halved(s, c)
    return vlane(s, 0), vlane(c, 0)


assert LANES == 16  # (_channel_total halves four times)


@_jit
def start_lanes(n, ge):
    """Channel lanes for ``n`` channels: sums at ``_sum_start(ge)``, comps at 0. A serial
    function of its own: inside a ``parallel=True`` function numba would turn ``np.zeros``
    into a parallel loop, a fan-out of the threads."""
    lanes = np.zeros((n, 2, LANES))
    z = _sum_start(ge)
    for j in range(n):
        for m in range(LANES):
            lanes[j, 0, m] = z
    return lanes


@_jit(_nrt=False)
def prelu_bwd_rows(g, x, gi, w, lanes, ge, lo, hi):
    """Channels lo:hi of C-contiguous (outer, C, inner) views with a slope per row: ``gi``
    written, and each channel's weight gradient as a compensated pair in ``lanes[j, :, 0]``
    (``round_lanes`` rounds it once; the caller does, once every part has read its data, so
    that a result that shares memory with an input cannot change what another thread has
    still to read). Channel j's rows add into its compensated lanes in order, in
    blocks of rows (``_rows_per_block``), each block channel by channel, the lanes kept in
    ``lanes[j]`` between blocks; at the end they are added as a tree (``_channel_total``),
    channel after channel in a loop of their own. (Measured: starting a channel's lanes in
    registers in the first block made a (4, 64, 39) bfloat16 call through the API 0.5-0.7 µs
    slower, though a loop of kernel calls alone was faster; finishing each channel right
    after its last block made a (4, 64, 39) float32 kernel call 0.2 µs slower.)"""
    n0 = x.shape[0]
    rows = _rows_per_block(x.shape[2])
    for b0 in range(0, n0, rows):
        b1 = min(b0 + rows, n0)
        for j in range(lo, hi):
            sums, comps = vload(lanes, (j, 0, 0), LANES), vload(lanes, (j, 1, 0), LANES)
            sums, comps = _rows_into_lanes(g, x, gi, b0, b1, j, _load(w[j], gi), ge, sums, comps)
            vstore(lanes, (j, 0, 0), sums)
            vstore(lanes, (j, 1, 0), comps)
    for j in range(lo, hi):
        total, tcomp = _channel_total(vload(lanes, (j, 0, 0), LANES),
                                      vload(lanes, (j, 1, 0), LANES))
        total, tcomp = _exact_if_not_finite(g, x, gi, j, _load(w[j], gi), ge, total, tcomp)
        lanes[j, 0, 0] = total
        lanes[j, 1, 0] = tcomp


#: Elements of a unit of a one-slope backward (``prelu_bwd_units``): small enough that two
#: threads get near-equal shares of 1e5 elements, large enough that a unit's start and total
#: (about 50 vector instructions) cost nothing next to its loop.
ONE_SLOPE_UNIT = 1 << 12


@njit(inline="always", **NJIT_OPTIONS)
def one_slope_units(x, w):
    """The units of a one-slope backward: ``(1, 1, N)`` views with a one-element weight
    (PyTorch's ``PReLU()``: the core views any shape so) are summed in units of
    ``ONE_SLOPE_UNIT`` elements, each a channel of its own for ``prelu_bwd_units``, combined in
    unit order; 0 for any other views (the channels are the parts)."""
    if w.shape[0] != 1 or x.shape[0] != 1 or x.shape[1] != 1:
        return 0
    return max(1, (x.shape[2] + ONE_SLOPE_UNIT - 1) // ONE_SLOPE_UNIT)


@_jit(_nrt=False)
def prelu_bwd_units(g, x, gi, w, lanes, ge, lo, hi):
    """Units lo:hi of a one-slope backward on ``(1, 1, N)`` views: ``gi`` written, and unit
    u's sum as a compensated pair in ``lanes[u, :, 0]``, as ``prelu_bwd_rows`` leaves a
    channel's (one unit: the same additions as that channel's). The bits depend on N only."""
    n = x.shape[2]
    for u in range(lo, hi):
        a = u * ONE_SLOPE_UNIT
        b = min(a + ONE_SLOPE_UNIT, n)
        shape = (1, 1, b - a)
        # (prelu_bwd_rows on the unit's views: one compiled loop for both; its one channel's
        # lanes are lanes[u])
        prelu_bwd_rows(g.reshape(n)[a:b].reshape(shape), x.reshape(n)[a:b].reshape(shape),
                       gi.reshape(n)[a:b].reshape(shape), w, lanes[u:u + 1], ge, _as_int64(0),
                       _as_int64(1))


@njit(inline="always", **NJIT_OPTIONS)
def lane_count(x, w):
    """The rows of a slope-per-row backward's lanes (``start_lanes``): its channels, or a
    one-slope backward's units; the parts of a threaded call split them."""
    units = one_slope_units(x, w)
    return units if units else w.shape[0]


@_jit(_nrt=False)
def prelu_bwd_lanes(g, x, gi, w, lanes, ge, lo, hi):
    """Lanes lo:hi of a slope-per-row backward: channels (``prelu_bwd_rows``) or a one-slope
    backward's units (``prelu_bwd_units``)."""
    if one_slope_units(x, w):
        prelu_bwd_units(g, x, gi, w, lanes, ge, lo, hi)
    else:
        prelu_bwd_rows(g, x, gi, w, lanes, ge, lo, hi)


@_jit(_nrt=False)
def finish_lanes(lanes, acc, x, w, ge):
    """``acc``: the channels' pairs rounded once each (``round_lanes``), or a one-slope
    backward's units combined in order and rounded once (``combine_partials``); after every
    part has read its data."""
    if one_slope_units(x, w):
        combine_partials(lanes, acc, ge)
    else:
        round_lanes(lanes, acc)


@_jit(_nrt=False)
def round_lanes(lanes, out):
    """``out[j]``: channel j's compensated pair left by ``prelu_bwd_rows`` rounded once to
    ``out``'s storage kind (float64: the sum, rounded once)."""
    for j in range(out.shape[0]):
        out[j] = _round_pair(lanes[j, 0, 0], lanes[j, 1, 0], out)


@_jit(_nrt=False)
def prelu_bwd_c(g, x, gi, w, acc, comp, lo, hi, ge):
    """Channels last, rows lo:hi (of axis 1) of C-contiguous 3-D views whose element k has
    the slope ``w[k]`` ((1, outer, C) from the contiguous path): ``gi`` written and each
    element's term added into its weight element's pair (``acc``, ``comp``), in memory
    order. A row's elements in vectors of ``LANES`` (element k's term into pair k, the
    operations the element-by-element tail makes: LLVM vectorised neither loop, the pairs'
    stores possibly aliasing the data's loads for all it knows), its last ones one by one."""
    n2 = x.shape[2]
    for i in range(x.shape[0]):
        for j in range(lo, hi):
            k = 0
            while k + LANES <= n2:
                xs, gs, _, _ = _grad_input_vector(g, x, gi, i, j, k,
                                                  _load(vload(w, (k,), LANES), gi), ge)
                a, c = _kahan_add(vload(acc, (k,), LANES), vload(comp, (k,), LANES),
                                  _prelu_term(_load64(xs), _load64(gs), ge))
                vstore(acc, (k,), a)
                vstore(comp, (k,), c)
                k += LANES
            for kk in range(k, n2):
                r = _lrelu_grad(_load(g[i, j, kk], gi), _load(x[i, j, kk], gi),
                                _load(w[kk], gi), ge)
                gi[i, j, kk] = _narrow(r, gi)
                term = _prelu_term(_load64(x[i, j, kk]), _load64(g[i, j, kk]), ge)
                acc[kk], comp[kk] = _kahan_add(acc[kk], comp[kk], term)


#: Elements a unit of a split reduction covers, independent of the thread count.
UNIT = 1 << 16
#: Largest float64 memory the per-unit partial sums of prelu_backward may take.
PARTIALS_BUDGET = 1 << 23  # elements (64 MiB)


@_jit
def prelu_bwd_c_state(shape, wsize, ge):
    """``(parts, partials)`` of channels last: the rows split in units of ``UNIT`` elements,
    each with its own (acc, comp) pairs at their start; the bits depend on the shapes only,
    not on the thread count. (Serial, as ``start_lanes``.)"""
    parts = max(1, min(shape[1], shape[0] * shape[1] * shape[2] // UNIT, PARTIALS_BUDGET // wsize))
    partials = np.zeros((parts, 2, wsize))
    _start_partials(partials, ge)
    return parts, partials


@_jit
def prelu_bwd_c_run(g, x, gi, w, acc, per_k, ge):
    """The whole backward on C-contiguous views, on this thread: ``gi`` written, the weight
    gradient in ``acc``, rounded once to its storage kind (a float64 ``acc``: the unrounded
    sums). Slope per row: (outer, C, inner) views, ``prelu_bwd_rows``; channels last:
    (1, outer, C) views, ``prelu_bwd_c`` over units of rows. The threaded twin gives the same
    bits (its parts: channels, or the same units). Returns False, nothing written, where
    ``gi`` shares memory with ``g``, ``x``, ``w`` or ``acc`` (a caller's ``out=``: it then goes
    the general way, through a temporary; four bounds tests cost nanoseconds here, 85 ns each
    in Python), else True."""
    if not _disjoint_gi(g, x, gi, w, acc):
        return False
    if not per_k:
        c = lane_count(x, w)
        lanes = start_lanes(c, ge)
        prelu_bwd_lanes(g, x, gi, w, lanes, ge, _as_int64(0), c)
        finish_lanes(lanes, acc, x, w, ge)
    else:
        parts, partials = prelu_bwd_c_state(x.shape, w.shape[0], ge)
        for u in range(parts):
            lo, hi = _part(x.shape[1], parts, u)
            prelu_bwd_c(g, x, gi, w, partials[u, 0], partials[u, 1], lo, hi, ge)
        combine_partials(partials, acc, ge)
    return True
