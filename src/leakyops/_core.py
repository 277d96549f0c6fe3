"""The functional core: validation, dtype rules, shapes, ``out=``/overlap handling, dispatch.

Every public function follows one path: check → normalise (dtype, shape, strides, slope) →
allocate → one kernel call → return. The ``*_impl`` functions carry the front-ends' options
(the ``>=`` comparison, the slope's rounding); see ``docs/internal-api.md``.
"""

from __future__ import annotations

import math
import numbers
import operator

import ml_dtypes
import numpy as np

from . import _kernels, _threads
from ._config import PARALLEL_MIN

__all__ = [
    "SUPPORTED_DTYPES",
    "result_dtype",
    "leaky_relu_impl",
    "leaky_relu_backward_impl",
    "prelu_impl",
    "prelu_backward_impl",
    "prelu_backward_parts",
    "sum_grad_weight_parts",
    "round_grad_weight",
]

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
SUPPORTED_DTYPES = (np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64))
_KINDS = ("f16", "bf16", "f32", "f64")
_KIND = dict(zip(SUPPORTED_DTYPES, _KINDS))
_VIEW = {dt: _kernels.VIEW_DTYPES[dt.name] for dt in SUPPORTED_DTYPES}
_SUPPORTED_NAMES = "float16, bfloat16, float32, float64"
_COMPARE = {">": False, ">=": True}

# Largest float64 memory the per-unit partial sums of prelu_backward may take.
_PARTIALS_BUDGET = 1 << 23  # elements (64 MiB)
# Elements a unit of a split reduction covers, independent of the thread count.
_UNIT = 1 << 20


# ---------------------------------------------------------------------------------------------
# argument checks


def _array(value, fname: str, arg: str) -> np.ndarray:
    if type(value) is not np.ndarray:
        if value is None or isinstance(value, (str, bytes)):
            raise TypeError(f"{fname}: {arg} must be an array of {_SUPPORTED_NAMES}, "
                            f"got {type(value).__name__}")
        try:
            value = np.asarray(value)
        except Exception as exc:  # ragged lists, objects NumPy cannot take
            raise TypeError(f"{fname}: {arg} is not an array-like: {exc}") from None
    _kind(value.dtype, fname, arg)
    return value


def _kind(dtype, fname: str, arg: str) -> str:
    kind = _KIND.get(dtype)
    if kind is None:
        hint = " (non-native byte order)" if dtype.byteorder not in "=|" and dtype.newbyteorder("=") in _KIND else ""
        raise TypeError(f"{fname}: {arg} has dtype {dtype}{hint}; supported: {_SUPPORTED_NAMES}")
    return kind


def _slope_value(value, fname: str, arg: str) -> float:
    """The slope as a Python float (exact for every float type; ints round to nearest)."""
    if type(value) is float:
        return value
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"{fname}: {arg} must be a real scalar, got an array of shape "
                             f"{value.shape}")
        value = value.reshape(()).item() if value.dtype.kind in "biuf" else value.reshape(())[()]
    if isinstance(value, (bool, np.bool_)):
        return 1.0 if value else 0.0
    if isinstance(value, (numbers.Integral, np.integer)):
        try:
            return float(int(value))
        except OverflowError:  # beyond float64: rounds to ±inf like any float overflow
            return float("inf") if value > 0 else float("-inf")
    if isinstance(value, (float, np.floating)) or (
            isinstance(value, np.generic) and value.dtype == BFLOAT16):
        return float(value)
    if isinstance(value, numbers.Real):  # fractions.Fraction and other registered reals
        return float(value)
    raise TypeError(f"{fname}: {arg} must be a real scalar (bool, int, float, a NumPy real "
                    f"scalar or a 0-d array), got {type(value).__name__}")


_F32_MAX = float(np.finfo(np.float32).max)


def _slope(value, kind: str, slope_dtype, fname: str, arg: str = "negative_slope"):
    """The slope converted for a kernel computing a ``kind`` result."""
    v = _slope_value(value, fname, arg)
    if slope_dtype is not None:
        if isinstance(slope_dtype, str):
            if slope_dtype != "storage":
                raise ValueError(f"{fname}: unknown slope_dtype {slope_dtype!r}")
            slope_dtype = SUPPORTED_DTYPES[_KINDS.index(kind)]
        with np.errstate(over="ignore"):  # beyond the type's range: ±inf, like any rounding
            v = float(np.asarray(v, dtype=np.float64).astype(slope_dtype))
    if kind == "f64":
        return np.float64(v)
    if -_F32_MAX <= v <= _F32_MAX:  # (np.errstate costs about 1 us: only where it is needed)
        return np.float32(v)
    with np.errstate(over="ignore"):  # beyond float32's range (or NaN): ±inf, like any rounding
        return np.float32(v)


def _out(out, shape, fname: str) -> np.ndarray:
    if type(out) is not np.ndarray and not isinstance(out, np.ndarray):
        raise TypeError(f"{fname}: out must be a numpy.ndarray, got {type(out).__name__}")
    _kind(out.dtype, fname, "out")
    if out.shape != shape:
        raise ValueError(f"{fname}: out has shape {out.shape}, the result has shape {shape}")
    if not out.flags.writeable:
        raise ValueError(f"{fname}: out is read-only")
    _no_internal_overlap(out, fname, "out")
    return out


def _no_internal_overlap(a: np.ndarray, fname: str, arg: str) -> None:
    if a.size == 0:
        return
    for n, st in zip(a.shape, a.strides):
        if st == 0 and n > 1:
            raise ValueError(f"{fname}: {arg} has internal overlap (a zero stride): more than "
                             f"one element refers to the same memory")


def result_dtype(a, b) -> np.dtype:
    """Promotion of ``leaky_relu_backward``: equal stays; half + half → float32; else the wider."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    if np.dtype(np.float64) in (a, b):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def _compare(compare: str, fname: str) -> bool:
    try:
        return _COMPARE[compare]
    except KeyError:
        raise ValueError(f"{fname}: compare must be '>' or '>=', got {compare!r}") from None


# ---------------------------------------------------------------------------------------------
# layouts: coalesce operands that share one shape into at most three axes


def _kview(a: np.ndarray) -> np.ndarray:
    """The kernel's view of an array: float16 as uint16 bits, bfloat16 as int16 bits."""
    return a.view(_VIEW[a.dtype]) if a.dtype.itemsize == 2 else a


class _Plan:
    """How operands of one shape are walked: at most three (coalesced) axes.

    Axes of extent 1 are dropped; the rest are ordered by the output's strides (largest
    first) and flipped where the output's stride is negative, so the output is written
    forwards; adjacent axes merge where every operand allows it. ``strides`` lists each
    operand's strides per axis of ``shape`` (bytes or elements: the merge rule does not mind),
    the output's first; broadcast operands have zeros.
    """

    def __init__(self, shape, strides):
        ref = strides[0]
        axes = [i for i, n in enumerate(shape) if n != 1]
        axes.sort(key=lambda i: -abs(ref[i]))
        self.axes = axes
        self.perm = [i for i, n in enumerate(shape) if n == 1] + axes
        self.sorted_shape = [shape[i] for i in axes]
        self.flip = [ref[i] < 0 for i in axes]
        groups: list[list[int]] = []
        for k, i in enumerate(axes):
            if groups:
                last = axes[groups[-1][-1]]
                if all(st[last] == st[i] * shape[i] for st in strides):
                    groups[-1].append(k)
                    continue
            groups.append([k])
        self.groups = groups
        merged = [math.prod(self.sorted_shape[k] for k in g) for g in groups]
        self.pad = max(0, 3 - len(merged))
        self.shape = (1,) * self.pad + tuple(merged)

    def view(self, a: np.ndarray) -> np.ndarray:
        """``a`` (of the planned shape) as a view with the planned axes."""
        b = a.transpose(self.perm).reshape(self.sorted_shape)
        if any(self.flip):
            b = b[tuple(slice(None, None, -1) if f else slice(None) for f in self.flip)]
        return b.reshape(self.shape, copy=False)

    def strides_of(self, strides) -> tuple[int, tuple[int, ...]]:
        """``(offset, strides)`` of a virtual operand with ``strides`` per axis of the shape."""
        offset = 0
        st = []
        for k, i in enumerate(self.axes):
            s = strides[i]
            if self.flip[k]:
                offset += (self.sorted_shape[k] - 1) * s
                s = -s
            st.append(s)
        return offset, (0,) * self.pad + tuple(st[g[-1]] for g in self.groups)


def _coalesce(arrays):
    """Views of ``arrays`` (same shape; the first is the output) with at most 3 axes."""
    plan = _Plan(arrays[0].shape, [a.strides for a in arrays])
    return [plan.view(a) for a in arrays]


def _split_axis(shape, allowed) -> int:
    """The axis to split across threads: the largest allowed one (ties: the outermost)."""
    best = -1
    for ax in allowed:
        if best < 0 or shape[ax] > shape[best]:
            best = ax
    return best


def _chunks(n: int, parts: int):
    step = -(-n // parts)
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


def _slice(v: np.ndarray, axis: int, lo: int, hi: int) -> np.ndarray:
    idx = [slice(None)] * v.ndim
    idx[axis] = slice(lo, hi)
    return v[tuple(idx)]


def _run_nd(fn, views, extra=(), reduce_axes=(), weight=None):
    """Run a 3-D driver over coalesced views, threaded when large.

    Calls ``fn(*views, *extra)``, or with ``weight = (flats, offset, strides)`` (a compact
    operand: flat arrays indexed ``offset + i*s0 + j*s1 + k*s2``)
    ``fn(*views, *flats, offset, s0, s1, s2, *extra)``. ``reduce_axes`` are axes the kernel
    reduces over (never split here).
    """
    v0 = views[0]
    if v0.ndim == 3 and v0.size < PARALLEL_MIN:  # small: one call, no splitting to consider
        if weight is None:
            fn(*views, *extra)
        else:
            flats, off, st = weight
            fn(*views, *flats, off, *st, *extra)
        return
    if v0.ndim > 3:  # rare: more than three axes survive coalescing
        for idx in np.ndindex(*v0.shape[:-3]):
            sub = None
            if weight is not None:
                flats, off, st = weight
                sub = (flats, off + sum(i * s for i, s in zip(idx, st)), st[len(idx):])
            _run_nd(fn, [v[idx] for v in views], extra, reduce_axes, sub)
        return

    def args(vs, lo=0, axis=0):
        if weight is None:
            return (*vs, *extra)
        flats, off, st = weight
        return (*vs, *flats, off + lo * st[axis], *st, *extra)

    total = v0.size
    threads = _threads.get_num_threads()
    axis = _split_axis(v0.shape, [a for a in range(3) if a not in reduce_axes])
    if total < PARALLEL_MIN or threads == 1 or axis < 0 or v0.shape[axis] < 2:
        fn(*args(views))
        return
    parts = min(threads, v0.shape[axis])
    _threads.run(fn, [args([_slice(v, axis, lo, hi) for v in views], lo, axis)
                      for lo, hi in _chunks(v0.shape[axis], parts)])


def _run_rows(fn, flats, extra=()):
    """Run a 1-D kernel ``fn(*flats, *extra)``, split into contiguous chunks when large."""
    n = flats[0].shape[0]
    threads = _threads.get_num_threads()
    if n < PARALLEL_MIN or threads == 1:
        fn(*flats, *extra)
        return
    tasks = [tuple(f[lo:hi] for f in flats) + tuple(extra) for lo, hi in _chunks(n, threads)]
    _threads.run(fn, tasks)


def _all_c_contiguous(*arrays) -> bool:
    return all(a.flags.c_contiguous for a in arrays)


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    if a is b:  # (reading a data pointer costs about 1 us)
        return True
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.strides == b.strides and a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize)


def _needs_temp(out: np.ndarray, dtype, inputs) -> bool:
    """Whether the result must go through a temporary (cast, or partial overlap)."""
    if out.dtype != dtype:
        return True
    for a in inputs:
        if np.may_share_memory(out, a) and not _same_view(out, a):
            return True
    return False


def _finish(out, shape, dtype, inputs, compute, fname):
    """Allocate or check ``out``, run ``compute(dest)``, honour casting and overlap."""
    if out is None:
        dest = np.empty(shape, dtype)
        compute(dest)
        return dest
    out = _out(out, shape, fname)
    if _needs_temp(out, dtype, inputs):
        tmp = np.empty(shape, dtype)
        compute(tmp)
        with np.errstate(over="ignore", invalid="ignore"):  # casts overflow to ±inf
            np.copyto(out, tmp, casting="unsafe")
    else:
        compute(out)
    return out


# ---------------------------------------------------------------------------------------------
# leaky_relu


#: The small-array paths: (op, slope, dtype, compare) -> (the kernel's slope, the view dtype
#: or None, the kernel's compiled function for 1-D C arrays, ge). The compiled function is
#: called without numba's type dispatch (about 0.2 us of a 1-2 us call), so only with
#: arguments of exactly its types: 1-D C-contiguous aligned arrays of the view dtype.
_SMALL: dict = {}
_SMALL_KERNELS = {"fwd": ("lrelu_fwd_row", 2), "inplace": ("lrelu_fwd_row_inplace", 1),
                  "bwd": ("lrelu_bwd_row", 3), "prelu": ("prelu_fwd_nd", None),
                  "prelu_bwd": ("prelu_bwd_nd", None)}


def _plain_out(out: np.ndarray, x: np.ndarray) -> bool:
    """Whether ``out`` can be written directly by a 1-D C kernel next to ``x``."""
    flags = out.flags
    return flags.c_contiguous and flags.aligned and flags.writeable and out is not x \
        and not np.may_share_memory(out, x)


def _small_call(op: str, slope, x: np.ndarray, out, inputs, compare, fname: str):
    """``(fast, dest)`` for the small-array path, or None where it does not apply: ``dest``
    is a new array, or ``out`` when it is plain and shares no memory with ``inputs``."""
    fast = _SMALL.get((op, slope, x.dtype, compare))
    if fast is None:
        fast = _small(op, slope, x.dtype, compare, fname)
        if fast is None:
            return None
    if out is None:
        return fast, np.empty(x.shape, x.dtype)
    if type(out) is not np.ndarray or out.dtype != x.dtype or out.shape != x.shape:
        return None
    for a in inputs:
        if not _plain_out(out, a):
            return None
    return fast, out


def _small(op: str, slope: float, dtype, compare, fname: str):
    kind = _KIND.get(dtype)
    if kind is None or compare not in _COMPARE:
        return None  # the general path reports it
    view = _VIEW[dtype] if dtype.itemsize == 2 else None
    name, arrays = _SMALL_KERNELS[op]
    probe = np.empty(1, view or dtype)  # typed as the kernel will be called: C, aligned
    if op == "prelu":  # prelu_fwd_nd(x3, out3, w, woff, ws0, ws1, ws2, ge): no slope
        s = None
        probes = (probe.reshape(1, 1, 1),) * 2 + (probe, 0, 0, 0, 0, False)
    elif op == "prelu_bwd":  # prelu_bwd_nd(g3, x3, gi3, w, acc, comp, woff, ws0, ws1, ws2, ge)
        s, f64 = None, np.zeros((1, 2, 1))
        probes = (probe.reshape(1, 1, 1),) * 3 + (probe, f64[0, 0], f64[0, 1], 0, 0, 0, 0, False)
    else:
        s = _slope(slope, kind, None, fname)
        probes = (probe,) * arrays + (s, False)
    run = _kernels.entry_point(getattr(_kernels, name), *probes)
    if len(_SMALL) > 256:
        _SMALL.clear()
    fast = _SMALL[(op, slope, dtype, compare)] = (s, view, run, _COMPARE[compare])
    return fast


def _small_prelu_shape(x: np.ndarray, weight, axis):
    """``(shape, ws1, ws2)`` for the small prelu paths, or None: an aligned C-contiguous
    ``x`` with a contiguous 1-D weight of its dtype along ``axis``, seen as (outer, C, inner)
    with weight strides (0, 1, 0), or channels last as (1, outer, C) with (0, 0, 1)."""
    if type(weight) is not np.ndarray or weight.ndim != 1 or type(axis) is not int \
            or weight.dtype != x.dtype:
        return None
    c = weight.shape[0]
    if c < 2 or not -x.ndim <= axis < x.ndim or x.shape[axis] != c:
        return None
    xfl, wfl = x.flags, weight.flags
    if not (xfl.c_contiguous and xfl.aligned and wfl.c_contiguous and wfl.aligned):
        return None
    a = axis % x.ndim
    outer, inner = math.prod(x.shape[:a]), math.prod(x.shape[a + 1:])
    if inner == 1:
        return (1, outer, c), 0, 1
    return (outer, c, inner), 1, 0


def leaky_relu_impl(x, negative_slope=0.01, out=None, *, compare=">", slope_dtype=None,
                    fname="leaky_relu"):
    """``y = x if x > 0 else x * negative_slope`` (see :func:`leakyops.leaky_relu`)."""
    if type(x) is np.ndarray and x.size < PARALLEL_MIN and slope_dtype is None \
            and type(negative_slope) is float and negative_slope != 0.0:
        # the small-array path: the same checks and kernel with less Python around them
        # (±0.0 compare equal, so they never become keys); an ``out`` it cannot take as it
        # is (another dtype or layout, read-only, overlapping x) goes the general way
        flags = x.flags
        if flags.c_contiguous and flags.aligned:
            call = _small_call("fwd", negative_slope, x, out, (x,), compare, fname)
            if call is not None:
                (s, view, run, ge), dest = call
                xf, df = (x, dest) if x.ndim == 1 else (x.reshape(-1), dest.reshape(-1))
                if view is not None:
                    xf, df = xf.view(view), df.view(view)
                run(xf, df, s, ge)
                return dest
    x = _array(x, fname, "x")
    kind = _KIND[x.dtype]
    s = _slope(negative_slope, kind, slope_dtype, fname)
    ge = _compare(compare, fname)
    if x.size == 0:
        return _finish(out, x.shape, x.dtype, (x,), lambda dest: None, fname)

    def compute(dest):
        _lrelu_fwd(x, dest, s, ge)

    return _finish(out, x.shape, x.dtype, (x,), compute, fname)


def _lrelu_fwd(x: np.ndarray, dest: np.ndarray, s, ge: bool) -> None:
    """The forward kernel call for ``dest`` (``x`` itself, or memory that does not overlap)."""
    if dest is x or _same_view(dest, x):
        if x.flags.c_contiguous:
            _run_rows(_kernels.lrelu_fwd_row_inplace, [_kview(x).reshape(-1)], (s, ge))
        else:
            _run_nd(_kernels.lrelu_fwd_nd_inplace, _coalesce([_kview(x)]), (s, ge))
    elif x.flags.c_contiguous and dest.flags.c_contiguous:
        _run_rows(_kernels.lrelu_fwd_row, [_kview(x).reshape(-1), _kview(dest).reshape(-1)], (s, ge))
    else:
        views = _coalesce([_kview(dest), _kview(x)])
        _run_nd(_kernels.lrelu_fwd_nd, [views[1], views[0]], (s, ge))


def leaky_relu_inplace_impl(x, negative_slope=0.01, *, compare=">", slope_dtype=None,
                            fname="leaky_relu_"):
    if type(x) is np.ndarray and x.size < PARALLEL_MIN and slope_dtype is None \
            and type(negative_slope) is float and negative_slope != 0.0:
        flags = x.flags  # the small-array path (see leaky_relu_impl)
        if flags.c_contiguous and flags.aligned and flags.writeable:
            fast = _SMALL.get(("inplace", negative_slope, x.dtype, compare))
            if fast is None:
                fast = _small("inplace", negative_slope, x.dtype, compare, fname)
            if fast is not None:
                s, view, run, ge = fast
                xf = x if x.ndim == 1 else x.reshape(-1)
                run(xf if view is None else xf.view(view), s, ge)
                return x
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{fname}: x must be a numpy.ndarray to be modified in place, "
                        f"got {type(x).__name__}")
    _kind(x.dtype, fname, "x")
    if not x.flags.writeable:
        raise ValueError(f"{fname}: x is read-only")
    _no_internal_overlap(x, fname, "x")
    leaky_relu_impl(x, negative_slope, x, compare=compare, slope_dtype=slope_dtype, fname=fname)
    return x


# ---------------------------------------------------------------------------------------------
# leaky_relu_backward


def leaky_relu_backward_impl(grad_output, x, negative_slope, self_is_result=False, out=None, *,
                             compare=">", slope_dtype=None, fname="leaky_relu_backward"):
    """``dx = g if t > 0 else g * negative_slope`` (see :func:`leakyops.leaky_relu_backward`)."""
    if type(x) is np.ndarray and type(grad_output) is np.ndarray and x.size < PARALLEL_MIN \
            and slope_dtype is None and type(negative_slope) is float and negative_slope != 0.0 \
            and (self_is_result is False or (self_is_result is True and negative_slope > 0)) \
            and grad_output.shape == x.shape and grad_output.dtype == x.dtype:
        # the small-array path (see leaky_relu_impl): operands of one dtype and shape
        gf, xfl = grad_output.flags, x.flags
        if gf.c_contiguous and xfl.c_contiguous and gf.aligned and xfl.aligned:
            call = _small_call("bwd", negative_slope, x, out, (x, grad_output), compare, fname)
            if call is not None:
                (s, view, run, ge), dest = call
                if x.ndim == 1:
                    gv, xv, dv = grad_output, x, dest
                else:
                    gv, xv, dv = grad_output.reshape(-1), x.reshape(-1), dest.reshape(-1)
                if view is not None:
                    gv, xv, dv = gv.view(view), xv.view(view), dv.view(view)
                run(gv, xv, dv, s, ge)
                return dest
    g = _array(grad_output, fname, "grad_output")
    x = _array(x, fname, "x")
    if not isinstance(self_is_result, (bool, np.bool_)):
        raise TypeError(f"{fname}: self_is_result must be a bool, got {type(self_is_result).__name__}")
    rdtype = result_dtype(g.dtype, x.dtype)
    rkind = _KIND[rdtype]
    s = _slope(negative_slope, rkind, slope_dtype, fname)
    if self_is_result:
        raw = _slope_value(negative_slope, fname, "negative_slope")
        if not raw >= 0:
            raise ValueError(f"{fname}: self_is_result=True needs negative_slope >= 0, got {raw!r}: "
                             "the sign of the input cannot be recovered from the result; "
                             "call the out-of-place forward instead")
    shape = g.shape
    if shape != x.shape:
        try:
            shape = np.broadcast_shapes(g.shape, x.shape)
        except ValueError:
            raise ValueError(f"{fname}: grad_output of shape {g.shape} and x of shape {x.shape} "
                             "do not broadcast") from None
    ge = _compare(compare, fname)
    if math.prod(shape) == 0:
        return _finish(out, shape, rdtype, (g, x), lambda dest: None, fname)

    def compute(dest):
        if g.shape == x.shape == shape and _all_c_contiguous(g, x, dest):
            _run_rows(_kernels.lrelu_bwd_row, [_kview(g).reshape(-1), _kview(x).reshape(-1),
                                               _kview(dest).reshape(-1)], (s, ge))
        else:
            views = _coalesce([_kview(dest), _kview(np.broadcast_to(g, shape)),
                               _kview(np.broadcast_to(x, shape))])
            _run_nd(_kernels.lrelu_bwd_nd, [views[1], views[2], views[0]], (s, ge))

    return _finish(out, shape, rdtype, (g, x), compute, fname)


# ---------------------------------------------------------------------------------------------
# prelu


def _weight_shape(x: np.ndarray, weight: np.ndarray, axis, fname: str):
    """The shape (of x's rank) that ``weight`` broadcasts from along x."""
    if weight.size == 1:
        return (1,) * x.ndim
    if weight.ndim == 1:
        try:
            axis = operator.index(axis)
        except TypeError:
            raise TypeError(f"{fname}: axis must be an int, got {type(axis).__name__}") from None
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
            raise ValueError(f"{fname}: weight has {weight.shape[0]} elements but axis={axis} is "
                             f"out of range for x of shape {x.shape}"
                             + ("; for a 1-D x pass axis=0" if x.ndim == 1 else ""))
        axis %= x.ndim
        if x.shape[axis] != weight.shape[0]:
            raise ValueError(f"{fname}: weight has {weight.shape[0]} elements but x has size "
                             f"{x.shape[axis]} along axis {axis}")
        wshape = [1] * x.ndim
        wshape[axis] = weight.shape[0]
        return tuple(wshape)
    if weight.ndim > x.ndim or any(w not in (1, n) for w, n in zip(weight.shape[::-1], x.shape[::-1])):
        raise ValueError(f"{fname}: weight of shape {weight.shape} does not broadcast to x of "
                         f"shape {x.shape} (unidirectional, right-aligned)")
    return (1,) * (x.ndim - weight.ndim) + weight.shape


def _prelu_args(x, weight, fname):
    x = _array(x, fname, "x")
    weight = _array(weight, fname, "weight")
    if weight.dtype != x.dtype:
        raise TypeError(f"{fname}: weight has dtype {weight.dtype} but x has dtype {x.dtype}; "
                        "prelu does not promote: they must match")
    return x, weight


def _prelu_layout(x: np.ndarray, wshape, others):
    """3-D views of ``x`` and ``others`` (x's shape) and the compact weight's place in them.

    Returns ``(views, (offset, strides))``: views of ``[x, *others]`` (kernel dtypes) and
    the weight's element offset and strides along the three axes.
    """
    arrays = [x, *others]
    channels = [i for i, n in enumerate(wshape) if n != 1]
    if len(channels) == 1 and _all_c_contiguous(*arrays):
        # the common case, without a plan: (outer, C, inner), or (1, outer, C) channels-last
        c = channels[0]
        outer, inner = math.prod(x.shape[:c]), math.prod(x.shape[c + 1:])
        if inner == 1:
            shape, st = (1, outer, x.shape[c]), (0, 0, 1)
        else:
            shape, st = (outer, x.shape[c], inner), (0, 1, 0)
        return [_kview(a).reshape(shape) for a in arrays], (0, st)
    wst = [0] * len(wshape)
    step = 1
    for i in range(len(wshape) - 1, -1, -1):
        if wshape[i] != 1:
            wst[i] = step
            step *= wshape[i]
    plan = _Plan(x.shape, [a.strides for a in others] + [x.strides, wst])
    return [plan.view(_kview(a)) for a in arrays], plan.strides_of(wst)


def _flat_weight(weight: np.ndarray) -> np.ndarray:
    return _kview(np.ascontiguousarray(weight).reshape(-1))


def prelu_impl(x, weight, axis=1, out=None, *, compare=">", fname="prelu"):
    """``y = x if x > 0 else w[c] * x`` (see :func:`leakyops.prelu`)."""
    if type(x) is np.ndarray and x.size < PARALLEL_MIN:
        # the small-array path (see leaky_relu_impl)
        layout = _small_prelu_shape(x, weight, axis)
        if layout is not None:
            call = _small_call("prelu", None, x, out, (x, weight), compare, fname)
            if call is not None:
                (_, view, run, ge), dest = call
                shape, ws1, ws2 = layout
                xv, dv, wv = x.reshape(shape), dest.reshape(shape), weight
                if view is not None:
                    xv, dv, wv = xv.view(view), dv.view(view), wv.view(view)
                run(xv, dv, wv, 0, 0, ws1, ws2, ge)
                return dest
    x, weight = _prelu_args(x, weight, fname)
    wshape = _weight_shape(x, weight, axis, fname)
    kind = _KIND[x.dtype]
    ge = _compare(compare, fname)
    if x.size == 0:
        return _finish(out, x.shape, x.dtype, (x, weight), lambda dest: None, fname)
    if weight.size == 1:
        s = _kernels_slope(weight, kind)

        def compute(dest):
            _lrelu_fwd(x, dest, s, ge)
    else:
        wflat = _flat_weight(weight)

        def compute(dest):
            views, (off, st) = _prelu_layout(x, wshape, [dest])
            _run_nd(_kernels.prelu_fwd_nd, views, (ge,), weight=((wflat,), off, st))

    return _finish(out, x.shape, x.dtype, (x, weight), compute, fname)


def _kernels_slope(weight: np.ndarray, kind: str):
    """A one-element weight as the kernel's slope (exact widening of the stored value)."""
    value = weight.reshape(())[()]
    return np.float64(value) if kind == "f64" else np.float32(value)


def prelu_backward_parts(grad_output, x, weight, axis=1, *, compare=">", fname="prelu_backward"):
    """``(grad_input, acc)``: ``acc`` is the unrounded float64 ``grad_weight``, shaped like weight."""
    x, weight = _prelu_args(x, weight, fname)
    g = _array(grad_output, fname, "grad_output")
    if g.dtype != x.dtype:
        raise TypeError(f"{fname}: grad_output has dtype {g.dtype} but x has dtype {x.dtype}; "
                        "prelu_backward does not promote: they must match")
    if g.shape != x.shape:
        try:
            if np.broadcast_shapes(g.shape, x.shape) != x.shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"{fname}: grad_output of shape {g.shape} does not broadcast to x's "
                             f"shape {x.shape}") from None
        g = np.broadcast_to(g, x.shape)
    wshape = _weight_shape(x, weight, axis, fname)
    ge = _compare(compare, fname)
    grad_input = np.empty(x.shape, x.dtype)
    wsize = weight.size
    result = np.zeros(wsize, np.float64)
    if x.size == 0:
        return grad_input, result.reshape(weight.shape)
    wflat = _flat_weight(weight)
    (x3, gi3, g3), (off, st) = _prelu_layout(x, wshape, [grad_input, g])
    views = [g3, x3, gi3]
    inner = x3.shape[-3:]  # the axes the 3-D driver sees (more lead only in rare layouts)
    reduced = [a for a in range(3) if st[a - 3] == 0 and inner[a] > 1]
    kept = [a for a in range(3) if a not in reduced and inner[a] > 1]
    axis_k = _split_axis(inner, kept)
    if x3.ndim > 3 or x.size < PARALLEL_MIN or (axis_k >= 0 and inner[axis_k] >= 8):
        # no split, or a split along an axis that is not reduced: every sum stays in one
        # chunk, so the result does not depend on the number of threads
        pair = np.zeros((1, 2, wsize))
        _run_nd(_kernels.prelu_bwd_nd, views, (ge,), reduced, ((wflat, pair[0, 0], pair[0, 1]), off, st))
        _kernels.combine_partials(pair, result)
        return grad_input, result.reshape(weight.shape)
    # split along a reduced axis into units fixed by the shape (not by the thread count),
    # each with its own partial sums, combined in unit order
    axis_r = _split_axis(inner, reduced)
    units = max(1, min(inner[axis_r], x.size // _UNIT, _PARTIALS_BUDGET // max(wsize, 1)))
    bounds = _chunks(inner[axis_r], units)
    partials = np.zeros((len(bounds), 2, wsize))
    tasks = [tuple(_slice(v, axis_r, lo, hi) for v in views)
             + (wflat, partials[u, 0], partials[u, 1], off + lo * st[axis_r], *st, ge)
             for u, (lo, hi) in enumerate(bounds)]
    _run_units(_kernels.prelu_bwd_nd, tasks)
    _kernels.combine_partials(partials, result)
    return grad_input, result.reshape(weight.shape)


def _run_units(fn, tasks):
    threads = min(_threads.get_num_threads(), len(tasks))
    if threads <= 1:
        for t in tasks:
            fn(*t)
        return
    groups = [tasks[lo:hi] for lo, hi in _chunks(len(tasks), threads)]

    def run_group(group):
        for t in group:
            fn(*t)

    _threads.run(run_group, [(grp,) for grp in groups])


def sum_grad_weight_parts(parts, axis=None, keepdims=False) -> np.ndarray:
    """Add unrounded float64 ``grad_weight`` partial sums (from :func:`prelu_backward_parts`).

    The reduction step of block-wise backwards (Dask): NumPy's float64 sum, whose order is
    fixed by the array's layout, so results are reproducible for a fixed blocking.
    """
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf is NaN, as in the kernels
        return np.sum(parts, axis=axis, keepdims=keepdims, dtype=np.float64)


def round_grad_weight(acc, dtype) -> np.ndarray:
    """Round a float64 ``grad_weight`` sum once to ``dtype`` (nearest, ties to even)."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow rounds to ±inf
        return np.asarray(acc, np.float64).astype(dtype)


def prelu_backward_impl(grad_output, x, weight, axis=1, *, compare=">", fname="prelu_backward"):
    """``(grad_input, grad_weight)`` (see :func:`leakyops.prelu_backward`)."""
    if type(x) is np.ndarray and type(grad_output) is np.ndarray and 0 < x.size < PARALLEL_MIN \
            and grad_output.shape == x.shape and grad_output.dtype == x.dtype:
        # the small-array path (see leaky_relu_impl): the same kernel call and combine as
        # prelu_backward_parts makes for one unthreaded chunk, so the same bits
        gfl = grad_output.flags
        layout = _small_prelu_shape(x, weight, axis) if gfl.c_contiguous and gfl.aligned else None
        if layout is not None:
            call = _small_call("prelu_bwd", None, x, None, (), compare, fname)
            if call is not None:
                (_, view, run, ge), grad_input = call
                shape, ws1, ws2 = layout
                pair = np.zeros((1, 2, weight.shape[0]))
                gv, xv, dv, wv = grad_output.reshape(shape), x.reshape(shape), \
                    grad_input.reshape(shape), weight
                if view is not None:
                    gv, xv, dv, wv = gv.view(view), xv.view(view), dv.view(view), wv.view(view)
                run(gv, xv, dv, wv, pair[0, 0], pair[0, 1], 0, 0, ws1, ws2, ge)
                acc = np.empty(weight.shape[0])
                _kernels.combine_partials(pair, acc)
                return grad_input, round_grad_weight(acc, x.dtype)
    grad_input, acc = prelu_backward_parts(grad_output, x, weight, axis, compare=compare, fname=fname)
    return grad_input, round_grad_weight(acc, grad_input.dtype)
