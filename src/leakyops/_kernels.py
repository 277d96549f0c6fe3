"""Numba kernels of the LeakyReLU family: plain serial loops, compiled lazily per variant.

A *variant* is fixed at compile time: the storage kind of each operand (``"f16"``,
``"bf16"``, ``"f32"``, ``"f64"``; half kinds arrive as ``uint16`` views) and the comparison
(``>`` or ``>=``). The scalar rules are written once (:func:`_make_rules`) and every loop of
the variant uses them.

Loops come in two shapes: a ``row`` over 1-D arrays (contiguous or strided) and a driver
``nd`` over 3-D views (the core coalesces any shape and strides into at most three axes).
Kernels never validate and never allocate; the core splits large calls across threads and
calls them on views, releasing the GIL (``nogil``).

Compute types: float32 for ``f16``, ``bf16`` and ``f32`` results, float64 for ``f64``
results; the slope arrives already converted to the compute type.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
from numba import njit, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from . import _scalar
from ._config import NJIT_OPTIONS, REDUCE_FASTMATH, cache_enabled

__all__ = ["KINDS", "lrelu_fwd", "lrelu_bwd", "prelu_fwd", "prelu_bwd", "combine_partials"]

KINDS = ("f16", "bf16", "f32", "f64")

_lock = threading.Lock()
_variants: dict = {}
_cache_ok = [cache_enabled()]


def _jit(fn=None, **extra):
    """``njit`` with the project's options, cached on disk when a cache directory works."""
    options = dict(NJIT_OPTIONS)
    options.update(extra)

    def wrap(f):
        if _cache_ok[0]:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return njit(cache=True, **options)(f)
            except Exception:  # no writable cache locator (read-only install and home)
                _cache_ok[0] = False
        return njit(**options)(f)

    return wrap(fn) if fn is not None else wrap


@intrinsic
def _as_c(typingctx, arr):
    """The same 1-D array typed as C-contiguous (the caller checked its stride).

    numba types a row taken from a non-contiguous 3-D view as 'A' (any layout), whose loop
    does not vectorise even when the row's own stride is the element size.
    """
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None
    ret = arr.copy(layout="C")

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return ret(arr), codegen


@njit(inline="always", **NJIT_OPTIONS)
def _unit(a):
    return a.strides[0] == a.itemsize


def _identity32(v):
    return np.float32(v)


def _identity64(v):
    return np.float64(v)


def _loader(kind, compute):
    """Load one stored element of ``kind`` as the compute type (exact)."""
    base = {"f16": _scalar.h2f, "bf16": _scalar.bf2f, "f32": njit(inline="always")(_identity32),
            "f64": njit(inline="always")(_identity64)}[kind]
    if compute == "f64" and kind != "f64":
        def load(v):
            return np.float64(base(v))

        return njit(inline="always", **NJIT_OPTIONS)(load)
    return base


def _storer(kind):
    """Round a compute-type value once to the storage kind."""
    return {"f16": _scalar.f2h, "bf16": _scalar.f2bf, "f32": njit(inline="always")(_identity32),
            "f64": njit(inline="always")(_identity64)}[kind]


def _compute(kind):
    return "f64" if kind == "f64" else "f32"


def _positive(ge):
    """The comparison that keeps the input: ``v > 0`` (PyTorch, aclnn) or ``v >= 0``."""
    if ge:
        def pos(v):
            return v >= 0
    else:
        def pos(v):
            return v > 0
    return njit(inline="always", **NJIT_OPTIONS)(pos)


def _get(key, build):
    fns = _variants.get(key)
    if fns is None:
        with _lock:
            fns = _variants.get(key)
            if fns is None:
                fns = build(*key[1:])
                _variants[key] = fns
    return fns


class _Fns:
    def __init__(self, **fns):
        self.__dict__.update(fns)


# --------------------------------------------------------------------------------------------
# leaky_relu forward: y = x if pos(x) else x * s


def _build_lrelu_fwd(kind, ge):
    load = _loader(kind, _compute(kind))
    store = _storer(kind)
    pos = _positive(ge)

    def row(x, out, s):
        for k in range(x.shape[0]):
            v = load(x[k])
            out[k] = store(v if pos(v) else v * s)

    row = _jit(row)

    def nd(x, out, s):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                xr, outr = x[i, j], out[i, j]
                if _unit(xr) and _unit(outr):
                    row(_as_c(xr), _as_c(outr), s)
                else:
                    row(xr, outr, s)

    return _Fns(row=row, nd=_jit(nd))


def lrelu_fwd(kind, ge):
    """Kernels ``row(x, out, s)`` and ``nd(x3, out3, s)`` of the forward."""
    return _get(("lrelu_fwd", kind, bool(ge)), _build_lrelu_fwd)


# --------------------------------------------------------------------------------------------
# leaky_relu backward: dx = g if pos(t) else g * s   (t: input, or result when self_is_result)


def _build_lrelu_bwd(gkind, tkind, rkind, ge):
    compute = _compute(rkind)
    load_g = _loader(gkind, compute)
    load_t = _loader(tkind, compute)
    store = _storer(rkind)
    pos = _positive(ge)

    def row(g, t, out, s):
        for k in range(t.shape[0]):
            gv = load_g(g[k])
            out[k] = store(gv if pos(load_t(t[k])) else gv * s)

    row = _jit(row)

    def nd(g, t, out, s):
        for i in range(t.shape[0]):
            for j in range(t.shape[1]):
                gr, tr, outr = g[i, j], t[i, j], out[i, j]
                if _unit(gr) and _unit(tr) and _unit(outr):
                    row(_as_c(gr), _as_c(tr), _as_c(outr), s)
                else:
                    row(gr, tr, outr, s)

    return _Fns(row=row, nd=_jit(nd))


def lrelu_bwd(gkind, tkind, rkind, ge):
    """Kernels ``row(g, t, out, s)`` and ``nd(g3, t3, out3, s)`` of the backward."""
    return _get(("lrelu_bwd", gkind, tkind, rkind, bool(ge)), _build_lrelu_bwd)


# --------------------------------------------------------------------------------------------
# prelu forward: y = x if pos(x) else w * x   (w broadcast to x; stored like x)


def _build_prelu_fwd(kind, ge):
    load = _loader(kind, _compute(kind))
    store = _storer(kind)
    pos = _positive(ge)

    def row_scalar(x, out, s):
        for k in range(x.shape[0]):
            v = load(x[k])
            out[k] = store(v if pos(v) else s * v)

    row_scalar = _jit(row_scalar)

    def row(x, w, out):
        for k in range(x.shape[0]):
            v = load(x[k])
            out[k] = store(v if pos(v) else load(w[k]) * v)

    row = _jit(row)

    def nd(x, w, out):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                xr, wr, outr = x[i, j], w[i, j], out[i, j]
                if wr.strides[0] == 0:
                    if _unit(xr) and _unit(outr):
                        row_scalar(_as_c(xr), _as_c(outr), load(wr[0]))
                    else:
                        row_scalar(xr, outr, load(wr[0]))
                elif _unit(xr) and _unit(wr) and _unit(outr):
                    row(_as_c(xr), _as_c(wr), _as_c(outr))
                else:
                    row(xr, wr, outr)

    return _Fns(row=row, nd=_jit(nd))


def prelu_fwd(kind, ge):
    """Kernels ``row(x, w, out)`` and ``nd(x3, w3, out3)`` of prelu."""
    return _get(("prelu_fwd", kind, bool(ge)), _build_prelu_fwd)


# --------------------------------------------------------------------------------------------
# prelu backward, one pass: gi = g if pos(x) else w * g ;  acc[w] += (0 if pos(x) else x * g)
# The weight-gradient terms are formed and summed in float64 (x * g is exact there for the
# float32 and half kinds). ``acc`` is a float64 view broadcast like ``w``.

_BLOCK = 2048  # elements summed per block before the block sum joins the running total


def _build_prelu_bwd(kind, ge):
    compute = _compute(kind)
    load = _loader(kind, compute)
    load64 = _loader(kind, "f64")
    store = _storer(kind)
    pos = _positive(ge)

    def block_reduce(g, x, gi, s):
        part = 0.0
        for k in range(x.shape[0]):  # from 0: lets LLVM drop negative-index wraparound
            xv = load(x[k])
            gv = load(g[k])
            p = pos(xv)
            gi[k] = store(gv if p else s * gv)
            part += 0.0 if p else load64(x[k]) * load64(g[k])
        return part

    block_reduce = _jit(block_reduce, fastmath=REDUCE_FASTMATH)

    def row_reduce(g, x, gi, s):
        # blocks keep the reduction vectorised (reassoc inside a block) and its error small
        n = x.shape[0]
        total = 0.0
        for start in range(0, n, _BLOCK):
            stop = min(start + _BLOCK, n)
            total += block_reduce(g[start:stop], x[start:stop], gi[start:stop], s)
        return total

    row_reduce = _jit(row_reduce)

    def row(g, x, w, gi, acc):
        for k in range(x.shape[0]):
            xv = load(x[k])
            gv = load(g[k])
            p = pos(xv)
            gi[k] = store(gv if p else load(w[k]) * gv)
            acc[k] += 0.0 if p else load64(x[k]) * load64(g[k])

    row = _jit(row)

    def nd(g, x, w, gi, acc):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                gr, xr, wr, gir = g[i, j], x[i, j], w[i, j], gi[i, j]
                if acc.strides[2] == 0:
                    s = load(wr[0])
                    if _unit(gr) and _unit(xr) and _unit(gir):
                        acc[i, j, 0] += row_reduce(_as_c(gr), _as_c(xr), _as_c(gir), s)
                    else:
                        acc[i, j, 0] += row_reduce(gr, xr, gir, s)
                else:
                    row(gr, xr, wr, gir, acc[i, j])

    return _Fns(nd=_jit(nd))


def prelu_bwd(kind, ge):
    """Kernel ``nd(g3, x3, w3, gi3, acc3)`` of prelu's backward (accumulates into ``acc3``)."""
    return _get(("prelu_bwd", kind, bool(ge)), _build_prelu_bwd)


@_jit
def _combine(partials, out):
    for j in range(out.shape[0]):
        total = 0.0
        for i in range(partials.shape[0]):
            total += partials[i, j]
        out[j] = total


def combine_partials(partials, out):
    """``out[j] = sum_i partials[i, j]`` in the fixed order i = 0, 1, …"""
    _combine(partials, out)
