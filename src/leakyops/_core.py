"""The functional core: validation, dtype rules, shapes, ``out=``/overlap handling, dispatch.

Every public function follows one path: check → normalise (dtype, shape, strides, slope) →
allocate → one kernel call → return. The ``*_impl`` functions carry the front-ends' options
(the ``>=`` comparison, the slope's rounding); see ``docs/internal-api.md``.
"""

from __future__ import annotations

import decimal
import math
import numbers
import operator
import sys
from fractions import Fraction

import ml_dtypes
import numpy as np

from . import _cpu, _kernels, _threads
from ._config import PARALLEL_MIN_BYTES

__all__ = [
    "SUPPORTED_DTYPES",
    "as_array",
    "plain_view",
    "check_dtype",
    "slope_value",
    "compute_dtype",
    "check_self_is_result",
    "result_dtype",
    "prelu_dtype",
    "prelu_weight_shape",
    "disjoint_layout",
    "dense_layout",
    "copy",
    "leaky_relu_impl",
    "leaky_relu_inplace_impl",
    "leaky_relu_backward_impl",
    "prelu_impl",
    "prelu_backward_impl",
    "prelu_backward_parts",
    "sum_grad_weight_parts",
    "round_grad_weight",
]

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
SUPPORTED_DTYPES = (np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64))
_SUPPORTED = frozenset(SUPPORTED_DTYPES)
_F64 = np.dtype(np.float64)
_VIEW = {dt: _kernels.VIEW_DTYPES[dt.name] for dt in SUPPORTED_DTYPES}
_SUPPORTED_NAMES = "float16, bfloat16, float32, float64"
_COMPARE = {">": False, ">=": True}
#: ``compare=`` values that reproduce one of oneDNN 3.2's kernels (``leakyops.onednn``; the
#: formulas are in ``_kernels.Rule``): its eltwise LeakyReLU for ``leaky_relu_impl`` (with a
#: zero slope the ReLU kernel, ``max(x, +0)``), its reference and jit PReLU for ``prelu_impl``
#: and ``prelu_backward_impl``, the jit kernels per instruction set. With these the weight may
#: have its own float dtype (oneDNN loads each operand in its type and computes in float32),
#: and ``prelu_backward``'s terms are float32 products, so its data may not be float64.
_DNNL_LRELU = {"dnnl-eltwise": _kernels.DNNL_ELTWISE}
_DNNL_PRELU = {"dnnl-ref": _kernels.DNNL_REF, "dnnl-jit": _kernels.DNNL_JIT,
               "dnnl-jit-avx2": _kernels.DNNL_JIT_AVX2, "dnnl-jit-avx": _kernels.DNNL_JIT_AVX,
               "dnnl-jit-sse41": _kernels.DNNL_JIT_SSE41}



# ---------------------------------------------------------------------------------------------
# argument checks
#
# The checks below raise _ArgTypeError/_ArgValueError with what is wrong ("x has dtype
# int8; ..."); the public function that was called adds its name once (_named_call), so
# that the message reads "leaky_relu: x has ...".


class _ArgError(Exception):
    """A failed argument check, not yet named after the public function that was called."""


class _ArgTypeError(_ArgError, TypeError):
    pass


class _ArgValueError(_ArgError, ValueError):
    pass


def _named(exc: _ArgError, fname: str) -> Exception:
    """``exc`` as the plain TypeError or ValueError a caller of ``fname`` sees."""
    return (TypeError if isinstance(exc, TypeError) else ValueError)(f"{fname}: {exc}")


def _named_call(fname: str, check, *args):
    """``check(*args)``, its argument errors named after the public function ``fname``."""
    try:
        return check(*args)
    except _ArgError as exc:
        raise _named(exc, fname) from None


def _masked(value) -> bool:
    """Whether ``value`` is a ``numpy.ma.MaskedArray`` (none exists before numpy.ma is imported)."""
    ma = sys.modules.get("numpy.ma")
    return ma is not None and isinstance(value, ma.MaskedArray)


def _refuse_masked(value, arg: str) -> None:
    if _masked(value):
        raise _ArgTypeError(f"{arg} is a numpy.ma.MaskedArray: leakyops does not apply masks, so "
                            f"masked elements would be computed (or written) like any other; "
                            f"pass {arg}.data, or {arg}.filled(value)")


def _as_array(value, arg: str) -> np.ndarray:
    if type(value) is not np.ndarray:
        if value is None or isinstance(value, (str, bytes)):
            raise _ArgTypeError(f"{arg} must be an array of {_SUPPORTED_NAMES}, "
                                f"got {type(value).__name__}")
        _refuse_masked(value, arg)
        try:
            value = np.asarray(value)  # (an ndarray subclass becomes a plain view)
        except Exception as exc:  # ragged lists, objects NumPy cannot take
            raise _ArgTypeError(f"{arg} is not an array-like: {exc}") from None
    _check_dtype(value.dtype, arg)
    return value


def as_array(value, fname: str, arg: str) -> np.ndarray:
    """``value`` as a plain ndarray of a supported dtype (array-likes converted, ndarray
    subclasses viewed, no copy of an ndarray); a TypeError naming ``fname`` and ``arg``
    otherwise (masked arrays included: see :func:`plain_view`)."""
    return _named_call(fname, _as_array, value, arg)


def _plain_view(value, arg: str, writable: bool = True, any_dtype: bool = False) -> np.ndarray:
    if type(value) is not np.ndarray:
        if not isinstance(value, np.ndarray):
            raise _ArgTypeError(f"{arg} must be a numpy.ndarray, got {type(value).__name__}")
        _refuse_masked(value, arg)
        # np.matrix, np.memmap and other subclasses: the same memory as a plain ndarray, so
        # that reshape and view behave as NumPy's own (a matrix stays 2-D when reshaped)
        value = np.ndarray.view(value, np.ndarray)
    if not any_dtype:
        _check_dtype(value.dtype, arg)
    if writable and not value.flags.writeable:
        raise _ArgValueError(f"{arg} is read-only")
    return value


def plain_view(value, fname: str, arg: str, *, writable: bool = True,
               any_dtype: bool = False) -> np.ndarray:
    """``value``'s memory as a plain ``numpy.ndarray`` (no copy), the one way every output and
    buffer enters the core: a plain ndarray as it is, a subclass (``np.matrix``,
    ``np.memmap``, ...) viewed as ``np.ndarray``; a masked array (its mask would be ignored)
    or anything that is not an ndarray a TypeError, a read-only array a ValueError when
    ``writable``, a dtype other than the four a TypeError unless ``any_dtype`` (raw buffers).
    Errors name ``fname`` and ``arg``. Unaligned memory and any strides are accepted."""
    return _named_call(fname, _plain_view, value, arg, writable, any_dtype)


def _check_dtype(dtype, arg: str) -> np.dtype:
    if dtype not in _SUPPORTED:
        hint = (" (non-native byte order)" if dtype.byteorder not in "=|"
                and dtype.newbyteorder("=") in _SUPPORTED else "")
        raise _ArgTypeError(f"{arg} has dtype {dtype}{hint}; supported: {_SUPPORTED_NAMES}")
    return dtype


def check_dtype(dtype, fname: str, arg: str) -> np.dtype:
    """``dtype`` if the operators take it; a TypeError naming ``fname`` and ``arg`` otherwise
    (shapes and dtypes only: front-ends check lazy or foreign arrays with it)."""
    return _named_call(fname, _check_dtype, np.dtype(dtype), arg)


#: Python ints whose float64 value is exact (every int up to 2**53 in magnitude)
_EXACT_INT = 2 ** 53
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
#: The types a slope is rounded to: (significand bits, smallest normal exponent, largest exponent)
_FORMATS = {_F16: (11, -14, 15), BFLOAT16: (8, -126, 127), _F32: (24, -126, 127),
            _F64: (53, -1022, 1023)}
_SLOPE_TYPES = ("bool, int, float, fractions.Fraction, decimal.Decimal, a NumPy real scalar "
                "or a one-element array")


def _slope_exact(value, arg: str = "negative_slope"):
    """The slope's exact value: a Python float where it is one (every float type up to
    float64, bools, ints up to 2**53), else an int or a Fraction (larger ints, NumPy's int64
    and uint64 among them, Fraction, Decimal, longdouble): nothing is rounded here."""
    if type(value) is float:
        return value
    if isinstance(value, np.ndarray):
        if type(value) is not np.ndarray:  # np.matrix, np.memmap: their memory, plainly
            value = _plain_view(value, arg, writable=False, any_dtype=True)
        if value.size != 1:
            raise _ArgValueError(f"{arg} must be a real scalar, got an array of shape "
                                 f"{value.shape}")
        value = value.reshape(())[()]  # a NumPy scalar of the array's dtype (or its object)
    if isinstance(value, (bool, np.bool_)):
        return 1.0 if value else 0.0
    if isinstance(value, (np.timedelta64, np.datetime64)):  # (timedelta64 is an np.integer)
        raise _ArgTypeError(f"{arg} must be a real number, got {type(value).__name__} "
                            f"{value!r} (a time, not a slope)")
    if isinstance(value, (numbers.Integral, np.integer)):
        n = int(value)
        return float(n) if -_EXACT_INT <= n <= _EXACT_INT else n
    if isinstance(value, np.floating) or (isinstance(value, np.generic)
                                          and value.dtype == BFLOAT16):
        if value.dtype.itemsize <= 8 or not np.isfinite(value):
            return float(value)  # exact: float16, bfloat16, float32, float64, ±inf, NaN
        return Fraction(*value.as_integer_ratio())  # longdouble
    if isinstance(value, float):
        return float(value)
    if isinstance(value, numbers.Rational):  # fractions.Fraction and other registered ones
        return Fraction(value.numerator, value.denominator)
    if isinstance(value, decimal.Decimal):
        if value.is_finite():
            return Fraction(value)
        return float("nan") if value.is_nan() else float(value)
    if isinstance(value, numbers.Real):  # other registered reals: their own float()
        return float(value)
    raise _ArgTypeError(f"{arg} must be a real scalar ({_SLOPE_TYPES}), "
                        f"got {type(value).__name__}")


def _round_exact(q, dtype: np.dtype) -> float:
    """An exact rational ``q`` (int or Fraction) rounded once to ``dtype``: to nearest, ties to
    even, beyond the largest finite value to ±inf; returned as the Python float of that value."""
    p, emin, emax = _FORMATS[dtype]
    n, d = (q, 1) if type(q) is int else (q.numerator, q.denominator)
    if n == 0:
        return 0.0
    sign = -1.0 if n < 0 else 1.0
    n = abs(n)
    e = n.bit_length() - d.bit_length()  # then 2**(e-1) < n/d < 2**(e+1)
    if (n << -e if e < 0 else n) < (d << e if e > 0 else d):
        e -= 1  # now 2**e <= n/d < 2**(e+1)
    if e > emax:
        return sign * math.inf
    ulp = max(e, emin) - (p - 1)  # the exponent of the result's last significand bit
    num, den = (n, d << ulp) if ulp >= 0 else (n << -ulp, d)
    m, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and m & 1):
        m += 1
    if ulp + m.bit_length() - 1 > emax:  # rounded up past the largest finite value
        return sign * math.inf
    return sign * math.ldexp(m, ulp)


_F32_MAX = float(np.finfo(np.float32).max)
_F16_MAX = float(np.finfo(np.float16).max)


def _round_slope(v, dtype: np.dtype) -> float:
    """An exact slope (from :func:`_slope_exact`) rounded once to ``dtype`` (float16,
    bfloat16, float32 or float64), as a Python float."""
    if type(v) is float:
        if dtype == _F64 or v != v:
            return v
        if dtype == _F32 and -_F32_MAX <= v <= _F32_MAX:
            return float(np.float32(v))  # (C's double-to-float: one rounding)
        if dtype == _F16 and -_F16_MAX <= v <= _F16_MAX:
            return float(np.float16(v))  # (NumPy's double-to-half: one rounding)
        if math.isinf(v):
            return v
        v = Fraction(v)  # beyond the range, or bfloat16 (ml_dtypes rounds through float32)
    return _round_exact(v, dtype)


def _slope_value(value, arg: str = "negative_slope", dtype: np.dtype = _F64) -> float:
    return _round_slope(_slope_exact(value, arg), dtype)


def slope_value(value, fname: str = "leaky_relu", arg: str = "negative_slope",
                dtype=np.float64) -> float:
    """The slope rounded once, from its exact value, to ``dtype`` (float16, bfloat16, float32
    or float64; the default float64), as a Python float; to round it as the kernels do for a
    result of some dtype, pass ``dtype=compute_dtype(that dtype)``.

    Any real scalar: bool, int of any size, float, Fraction, Decimal, a NumPy real scalar
    (int64, uint64 and longdouble included), a one-element array. A time (timedelta64,
    datetime64), complex, string or None is a TypeError naming ``fname`` and ``arg``.
    """
    dt = dtype if dtype in _FORMATS else np.dtype(dtype)  # (np.dtype() only where needed)
    if dt not in _FORMATS:
        raise ValueError(f"slope_value: dtype must be one of {_SUPPORTED_NAMES}, got {dt}")
    if type(value) is float and dt is _F64:  # the common case, at once
        return value
    return _named_call(fname, _slope_value, value, arg, dt)


def compute_dtype(dtype) -> np.dtype:
    """The type the kernels compute a result of ``dtype`` in: float64 for float64, float32 for
    float16, bfloat16 and float32 (its slope is rounded once to it)."""
    return _F64 if np.dtype(dtype) == _F64 else _F32


def _slope(value, dtype: np.dtype, slope_dtype):
    """The slope as the kernels take it for a ``dtype`` result: rounded once from its exact
    value to the compute type (np.float64 for float64, np.float32 otherwise), or, given
    ``slope_dtype`` (``"storage"``: ``dtype``), rounded once to that type and widened exactly.
    The kernels' own conversion (``_kernels._scalar``) then changes nothing."""
    v = _slope_exact(value)
    if slope_dtype is not None:
        if isinstance(slope_dtype, str):
            if slope_dtype != "storage":
                raise _ArgValueError(f"unknown slope_dtype {slope_dtype!r}")
            slope_dtype = dtype
        slope_dtype = np.dtype(slope_dtype)
        if slope_dtype not in _FORMATS:
            raise _ArgValueError(f"slope_dtype must be one of {_SUPPORTED_NAMES} or 'storage', "
                                 f"got {slope_dtype}")
        v = _round_slope(v, slope_dtype)
    if dtype == _F64:
        return np.float64(_round_slope(v, _F64))
    if type(v) is float and -_F32_MAX <= v <= _F32_MAX:  # the common case, at once
        return np.float32(v)
    return np.float32(_round_slope(v, _F32))  # exact: ±inf and NaN convert without warnings


def _out(out, shape, arg: str = "out") -> np.ndarray:
    """``out`` checked for a result of ``shape``, as the plain view the kernels write (the
    caller returns the ``out`` it was given: a subclass stays itself)."""
    view = _plain_view(out, arg)
    if view.shape != shape:
        raise _ArgValueError(f"{arg} has shape {view.shape}, the result has shape {shape}")
    _no_internal_overlap(view, arg)
    return view


def _no_internal_overlap(a: np.ndarray, arg: str) -> None:
    """A ValueError where elements of ``a`` (an array to be written) share memory: each would
    be written over another's result, or read after it was written. Contiguous arrays, the
    common case, cannot overlap and cost two flag reads."""
    f = a.flags
    if f.c_contiguous or f.f_contiguous or disjoint_layout(a.shape, a.strides, a.itemsize):
        return
    why = "a zero stride" if any(st == 0 and n > 1 for n, st in zip(a.shape, a.strides)) \
        else f"strides {a.strides} over shape {a.shape}, {a.itemsize}-byte elements"
    raise _ArgValueError(f"{arg} has internal overlap ({why}): more than one element refers "
                         f"to the same memory")


# ---------------------------------------------------------------------------------------------
# layouts: which strides give every element its own memory (the core's out= checks, and the
# front-ends' models, e.g. oneDNN's logical tensors, ask here)


def disjoint_layout(shape, strides, itemsize: int = 1) -> bool:
    """Whether elements of ``itemsize`` at ``strides`` (in the unit of ``itemsize``: bytes
    with an array's ``strides`` and ``itemsize``, elements with the default 1) over ``shape``
    occupy disjoint memory, decided exactly.

    First a sufficient rule that every permuted, padded or flipped layout meets: with the
    axes sorted by stride, each stride passes the reach of the axes before it. A layout that
    fails it either holds more elements than its extent has room for (they overlap), or is
    interleaved (element strides (3, 2) over shape (2, 3) put elements at 0, 2, 4, 3, 5, 7,
    each its own): then the offsets are listed and compared, at most one per element of the
    extent.
    """
    if 0 in shape:
        return True
    axes = sorted((abs(st), n) for n, st in zip(shape, strides) if n > 1)
    reach = 0  # the offset of the last element from the first, over the axes so far
    for st, n in axes:
        if st < reach + itemsize:
            break
        reach += (n - 1) * st
    else:
        return True
    count = math.prod(n for _, n in axes)
    extent = sum((n - 1) * st for st, n in axes) + itemsize
    if count * itemsize > extent:
        return False  # (more elements than the extent holds)
    offsets = np.zeros(1, np.int64)  # (a sign flips an axis: the same offsets, shifted)
    for st, n in axes:
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * st).reshape(-1)
    offsets.sort()
    return bool((np.diff(offsets) >= itemsize).all())


def dense_layout(shape, strides) -> bool:
    """Whether element ``strides`` over ``shape`` cover exactly ``prod(shape)`` consecutive
    elements, each once (any order of axes, any signs; axes of extent 1 ignored)."""
    expect = 1
    for st, n in sorted((abs(st), n) for n, st in zip(shape, strides) if n != 1):
        if st != expect:
            return False
        expect *= n
    return True


def _check_self_is_result(negative_slope, self_is_result) -> None:
    if not isinstance(self_is_result, (bool, np.bool_)):
        raise _ArgTypeError(f"self_is_result must be a bool, got {type(self_is_result).__name__}")
    if self_is_result:
        raw = _slope_value(negative_slope)
        if not raw >= 0:
            raise _ArgValueError(f"self_is_result=True needs negative_slope >= 0, got {raw!r}: "
                                 "the sign of the input cannot be recovered from the result; "
                                 "call the out-of-place forward instead")


def check_self_is_result(negative_slope, self_is_result,
                         fname: str = "leaky_relu_backward") -> None:
    """``leaky_relu_backward``'s rule for ``self_is_result``: a bool, and ``True`` only with
    ``negative_slope >= 0`` (NaN fails): from a result computed with a negative slope, the
    sign of the input cannot be told (a negative result may come from a positive input)."""
    _named_call(fname, _check_self_is_result, negative_slope, self_is_result)


def result_dtype(a, b) -> np.dtype:
    """Promotion of ``leaky_relu_backward``: equal stays; half + half → float32; else the wider."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    if _F64 in (a, b):
        return _F64
    return np.dtype(np.float32)


def _rule(compare: str, vendor_rules=None):
    """The kernels' rule argument (their ``ge``) for ``compare``: ``True`` for ``">="``,
    ``False`` for ``">"``, or one of ``vendor_rules`` (a :class:`_kernels.Rule`)."""
    rule = _COMPARE.get(compare) if type(compare) is str else None
    if rule is None and vendor_rules and type(compare) is str:
        rule = vendor_rules.get(compare)
    if rule is None:
        names = ", ".join(repr(c) for c in [*_COMPARE, *(vendor_rules or ())])
        raise _ArgValueError(f"compare must be one of {names}, got {compare!r}")
    return rule


# ---------------------------------------------------------------------------------------------
# layouts: coalesce operands that share one shape into at most three axes


def _kernel_view(a: np.ndarray) -> np.ndarray:
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


#: The threaded driver of each serial kernel (``_kernels``): same arguments, then the split
#: axis (3-D drivers) and the thread count.
_THREADED = {
    _kernels.lrelu_fwd_row: _kernels.lrelu_fwd_row_par,
    _kernels.lrelu_fwd_row_inplace: _kernels.lrelu_fwd_row_inplace_par,
    _kernels.lrelu_bwd_row: _kernels.lrelu_bwd_row_par,
    _kernels.lrelu_fwd_nd: _kernels.lrelu_fwd_nd_par,
    _kernels.lrelu_fwd_nd_inplace: _kernels.lrelu_fwd_nd_inplace_par,
    _kernels.lrelu_bwd_nd: _kernels.lrelu_bwd_nd_par,
    _kernels.prelu_fwd_nd: _kernels.prelu_fwd_nd_par,
    _kernels.prelu_bwd_c_run: _kernels.prelu_bwd_c_run_par,
}


def _threads_for(nbytes: int) -> int:
    """Threads a kernel call writing ``nbytes`` of output uses (1: the serial kernel)."""
    if nbytes < PARALLEL_MIN_BYTES:
        return 1
    return _threads.parallel_threads()


def _call(fn, args, threaded_args, threads: int) -> None:
    """``fn(*args)``, or its threaded driver with ``threaded_args`` appended when threads > 1."""
    if threads > 1 and _threads.enter_parallel():
        try:
            _THREADED[fn](*args, *threaded_args, threads)
        finally:
            _threads.exit_parallel()
        return
    fn(*args)


def _run_nd(fn, views, extra=(), weight=None):
    """Run a 3-D driver over coalesced views, threaded when large.

    Calls ``fn(*views, *extra)``, or with ``weight = (flats, offset, strides)`` (a compact
    operand: flat arrays indexed ``offset + i*s0 + j*s1 + k*s2``)
    ``fn(*views, *flats, offset, s0, s1, s2, *extra)``.
    """
    v0 = views[0]
    if v0.ndim > 3:  # rare: more than three axes survive coalescing
        for idx in np.ndindex(*v0.shape[:-3]):
            sub = None
            if weight is not None:
                flats, off, st = weight
                sub = (flats, off + sum(i * s for i, s in zip(idx, st)), st[len(idx):])
            _run_nd(fn, [v[idx] for v in views], extra, sub)
        return
    args = (*views, *extra) if weight is None else (*views, *weight[0], weight[1], *weight[2], *extra)
    axis = _split_axis(v0.shape, range(3))
    threads = min(_threads_for(v0.nbytes), v0.shape[axis])
    _call(fn, args, (axis,), threads)


def _run_rows(fn, flats, extra=()):
    """Run a 1-D kernel ``fn(*flats, *extra)``, split into contiguous chunks when large."""
    _call(fn, (*flats, *extra), (), _threads_for(flats[-1].nbytes))


def copy(src: np.ndarray, dst: np.ndarray) -> None:
    """``dst[...] = src`` for C-contiguous arrays of one dtype, on the kernels' threads.

    The benchmark's copy ceiling: the same runtime as the operators, moving the same bytes.
    """
    s, d = _kernel_view(src).reshape(-1), _kernel_view(dst).reshape(-1)
    _run_fast(_kernels.copy_row, (s, d), False, d.nbytes)  # (as the operators' paths run)


def _all_c_contiguous(*arrays) -> bool:
    return all(a.flags.c_contiguous for a in arrays)


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    if a is b:  # (reading a data pointer through __array_interface__ is slow: only if needed)
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


def _finish(out, shape, dtype, inputs, compute):
    """Allocate or check ``out``, run ``compute(dest)``, honour casting and overlap; returns
    the plain array written (the caller returns the ``out`` it was given, if any)."""
    if out is None:
        dest = np.empty(shape, dtype)
        compute(dest)
        return dest
    dest = _out(out, shape)
    if _needs_temp(dest, dtype, inputs):
        tmp = np.empty(shape, dtype)
        compute(tmp)
        with np.errstate(over="ignore", invalid="ignore"):  # casts overflow to ±inf
            np.copyto(dest, tmp, casting="unsafe")
    else:
        compute(dest)
    return dest


def _returned(out, result: np.ndarray):
    """What a public function returns: the ``out`` it was given (a subclass stays itself, as
    NumPy's ufuncs return theirs), else the new ``result``."""
    return result if out is None else out


# ---------------------------------------------------------------------------------------------
# leaky_relu


#: The view dtype a kernel receives for each storage dtype (None: the array itself).
_FAST_VIEW = {dt: (_VIEW[dt] if dt.itemsize == 2 else None) for dt in SUPPORTED_DTYPES}
# (A compiled entry point reads a half-type array as its integer view without ``.view()``,
# 0.1 µs an array: numba's unboxing takes an array's data, shape, strides and itemsize, never
# its dtype. Checked by the tests of the contiguous paths, which compare every bit.)
#: Compiled entry points of the contiguous path's kernels, per kernel, then per (storage dtype,
#: flags): called without numba's type dispatch (a large share of a small call's time), so
#: only with arguments of exactly the types they were compiled for: 1-D C-contiguous aligned
#: arrays of the view dtype, a Python float slope (or weight arrays), the ``rule`` bool.
_ENTRY: dict = {}


def _entry(fn, args, flags):
    """The cached entry point of ``fn`` for the contiguous path's argument types (see
    ``_ENTRY``); ``flags`` (a bool or a tuple of bools) are the bool arguments, compiled as
    literals."""
    key = (fn, args[0].dtype, flags)
    ep = _ENTRY.get(key)
    if ep is None:
        ep = _ENTRY[key] = _kernels.entry_point(fn, *args)
    return ep


#: How much a byte of output weighs against ``PARALLEL_MIN_BYTES``, per contiguous-path kernel
#: and storage dtype (and its kernel view): ``_cpu.thread_weights``, the measured crossovers of
#: one thread and two on this CPU's paths.
_cpu_weights = _cpu.thread_weights()  # (one call: it reads the CPU's features and the caps)
_WEIGHTS = {}
for _fn, _op in ((_kernels.lrelu_fwd_row, "leaky_relu"), (_kernels.lrelu_fwd_row_inplace,
                 "leaky_relu_"), (_kernels.lrelu_bwd_row, "leaky_relu_backward"),
                (_kernels.prelu_fwd_c_run, "prelu"), (_kernels.prelu_fwd_short_run, "prelu"),
                (_kernels.prelu_bwd_c_run, "prelu_backward")):
    _WEIGHTS[_fn] = {dt: _cpu_weights[_op][dt.name] for dt in SUPPORTED_DTYPES}
    _WEIGHTS[_fn].update({_FAST_VIEW[dt]: _cpu_weights[_op][dt.name] for dt in SUPPORTED_DTYPES
                          if _FAST_VIEW[dt] is not None})
_WEIGHTS[_kernels.copy_row] = {}  # (the copy: every byte weighs one)

#: prelu's rows (slope per row) shorter than this many elements run as channels last over the
#: slopes laid out per element (``prelu_fwd_short_run``): a half type's rows of at least 32
#: elements run as one stretch of vectors (``_kernels._loops._slope_run``), a shorter row would
#: cost one vector with a masked (AVX-512) or element-by-element (AVX2) tail. Kernel on one
#: thread, (4, 64, L), AMD Zen 5, rows against channels last: bfloat16 with AVX512-BF16,
#: L = 16 / 31 / 32 / 39 / 48 / 56 / 64 1.08 / 2.26 / 0.47 / 0.66 / 0.69 / 0.80 / 0.80 against
#: 0.52 / 0.78 / 0.73 / 0.89 / 0.93 / 1.03 / 1.12 µs; float16 on AVX-512 0.77 / 1.76 / 0.51 /
#: 0.69 / 0.72 / 0.86 / 0.79 against 0.65 / 0.89 / 0.85 / 1.00 / 1.06 / 1.20 / 1.28; float16
#: on AVX2 (F16C) 0.80 / 1.84 / 0.79 / 1.10 / 1.19 / 1.39 / 1.44 against 0.67 / 1.20 / 1.15 /
#: 1.39 / 1.55 / 1.76 / 1.90. bfloat16 on AVX2, float32 and float64 gained nowhere from the
#: channels-last path or lost (measured before the runs).
_limits = _cpu.prelu_short_rows()  # (one call: it reads the CPU's features and the caps)
_SHORT_ROW = {dt: _limits[dt.name] for dt in SUPPORTED_DTYPES}


def _kernel_args(args, dt, view):
    """``args`` with the arrays of dtype ``dt`` viewed as ``view`` (a half storage dtype's
    kernel view; None: as they are), for numba to see the kernel's types."""
    if view is None:
        return args
    return tuple(a.view(view) if type(a) is np.ndarray and a.dtype is dt else a for a in args)


#: The contiguous paths' entry points per (kernel, dtype, flags), the storage dtype's and its
#: kernel view's, as one list: ``[weight, serial entry point, team driver's entry point, part
#: function's address, team's address]`` (``_WEIGHTS``' weight; None where that entry point is
#: not made yet: ``_run_slow`` makes it). One lookup where ``_ENTRY``, ``_WEIGHTS``,
#: ``_TEAM_KIND`` and ``_TEAM_ENTRY`` took four, and with ``_threads.team_call`` one call
#: for the threads: ``_run_fast`` less its team driver 0.64-0.65 -> 0.58 µs (float32
#: ``leaky_relu`` of 1e5 elements; docs/benchmarks.md, stop 43).
_PLAN: dict = {}


def _planned(fn, dts, flags, i, value) -> None:
    """Item ``i`` of the plans of ``fn`` for the dtypes ``dts`` and ``flags`` set to ``value``."""
    for dt in dts:
        plan = _PLAN.get((fn, dt, flags))
        if plan is None:
            plan = _PLAN[fn, dt, flags] = [_WEIGHTS[fn].get(dt, 1.0), None, None, 0, 0]
        plan[i:i + len(value)] = value


def _run_fast(fn, args, flags, nbytes: int, team: bool = True):
    """A contiguous-path kernel ``fn(*args)``, or its threaded twin with the thread count
    appended when the work (``nbytes`` of output, weighted) is large: on leakyops' team where
    ``fn`` has a team driver and ``team``, else on numba's region (``_THREADED[fn]``); returns
    what the kernel returns (None, or prelu's and prelu_backward's bool or 0/1).

    The arrays may be of a half storage dtype, not yet viewed as the kernel's integer dtype:
    a compiled entry point takes them as they are (see ``_FAST_VIEW``); they are viewed only
    where numba must see the types (a first call, the threaded twin). The entry points come
    from ``_PLAN`` where they are made, else from ``_run_slow``."""
    plan = _PLAN.get((fn, args[0].dtype, flags))
    if plan is not None:
        work = nbytes * plan[0]
        if work < PARALLEL_MIN_BYTES:  # (too little work: the serial entry point)
            if plan[1] is not None:
                return plan[1](*args)
        elif team and plan[2] is not None:
            threads, words = _threads.team_call(plan[4])
            if threads > 1:
                return plan[2](*args, words, plan[3], work >= _WAKE_WAIT_BYTES, threads)
            if plan[1] is not None:  # (one thread allowed)
                return plan[1](*args)
    return _run_slow(fn, args, flags, nbytes, team)


_WAKE_WAIT_BYTES = _threads.WAKE_WAIT_BYTES


def _run_slow(fn, args, flags, nbytes: int, team: bool):
    """``_run_fast`` where an entry point it needs is not made yet (numba compiles it or
    finds it on disk; a half storage dtype's arrays viewed, both dtypes given the same entry
    point), or the call runs on numba's region."""
    dt = args[0].dtype
    nbytes *= _WEIGHTS[fn].get(dt, 1.0)
    if nbytes < PARALLEL_MIN_BYTES:
        threads = 1
    elif team and fn in _TEAM_KIND:  # (leakyops' own team: _kernels/_team.py)
        threads, words = _threads.team_call(0)
        if threads > 1:
            return _run_team(fn, args, flags, nbytes, threads, words)
    else:
        threads = _threads.parallel_threads()
    view = _FAST_VIEW.get(dt)
    dts = (dt,) if view is None else (dt, view)
    if threads == 1:
        ep = _ENTRY.get((fn, dt, flags))
        if ep is None:
            ep = _entry(fn, _kernel_args(args, dt, view), flags)
            for d in dts:
                _ENTRY[fn, d, flags] = ep
        _planned(fn, dts, flags, 1, [ep])
        return ep(*args)
    if not _threads.enter_parallel():  # (the workqueue layer busy elsewhere: one thread)
        return _run_slow(fn, args, flags, 0, team)
    try:
        tfn = _THREADED[fn]
        ep = _ENTRY.get((tfn, dt, flags))
        if ep is None:
            ep = _entry(tfn, (*_kernel_args(args, dt, view), threads), flags)
            for d in dts:
                _ENTRY[tfn, d, flags] = ep
        return ep(*args, threads)
    finally:
        _threads.exit_parallel()


#: The contiguous-path kernels that run threaded on leakyops' own team, with their part
#: function's kind (``_kernels.part_address``) and flags: prelu's short rows run the per-element
#: part, ``(per_k=True, rule)``.
_TEAM_KIND = {
    _kernels.lrelu_fwd_row: ("fwd", lambda flags: flags),
    _kernels.lrelu_fwd_row_inplace: ("inplace", lambda flags: flags),
    _kernels.lrelu_bwd_row: ("bwd", lambda flags: flags),
    _kernels.copy_row: ("copy", lambda flags: flags),
    _kernels.prelu_fwd_c_run: ("prelu", lambda flags: flags),
    _kernels.prelu_fwd_short_run: ("prelu", lambda flags: (True, flags)),
    _kernels.prelu_bwd_c_run: ("prelu_bwd", lambda flags: flags),
}
#: Team entry points: (driver's entry point, part function's address, team's address) per
#: (kernel, dtype, flags).
_TEAM_ENTRY: dict = {}


def _run_team(fn, args, flags, nbytes, threads, words=0):
    """``fn`` on ``threads`` threads of the team (see ``_run_fast``): its driver's entry point
    with the words to post the parts to (``_threads.team_call``'s; 0: the team's own), the part
    function's address, whether the call is large enough to wait for a sleeping worker, and
    the thread count."""
    ent = _TEAM_ENTRY.get((fn, args[0].dtype, flags)) or _team_entry(fn, args, flags, threads)
    return ent[0](*args, words or ent[2], ent[1], nbytes >= _WAKE_WAIT_BYTES, threads)


def _team_entry(fn, args, flags, threads):
    """Compile (or load) ``fn``'s team driver and part function for these arguments:
    ``(entry point, part function's address, team's address)``."""
    dt = args[0].dtype
    args = _kernel_args(args, dt, _FAST_VIEW.get(dt))
    kind, part_flags = _TEAM_KIND[fn]
    part = _kernels.part_address(kind, args[0].dtype, part_flags(flags))
    team = _threads.team().addr
    ep = _kernels.entry_point(_kernels.TEAM_DRIVERS[fn], *args, team, part, 0, threads)
    # (``wait`` compiled as an int, not as a literal bool)
    _TEAM_ENTRY[fn, dt, flags] = _TEAM_ENTRY[fn, args[0].dtype, flags] = ent = (ep, part, team)
    _planned(fn, {dt, args[0].dtype}, flags, 2, list(ent))
    return ent


#: The element-wise operators a front-end may run on raw memory (``rows_at``), their kernels.
_AT_KERNEL = {"leaky_relu": _kernels.lrelu_fwd_row, "leaky_relu_": _kernels.lrelu_fwd_row_inplace,
              "leaky_relu_backward": _kernels.lrelu_bwd_row}
#: ``rows_at``'s plans per (operator, storage dtype): ``[bytes an element weighs, entry point,
#: part function's address (0 until a threaded call makes it), the team's address (0 until
#: then)]``.
_AT_PLAN: dict = {}


def rows_at(op: str, dt, n: int, a0: int, a1: int, a2: int, s: float, pool: int = 0) -> bool:
    """The contiguous path of an element-wise operator on memory a front-end holds, without
    NumPy views (``leakyops.torch``'s tensors): ``op`` (``"leaky_relu"``, ``"leaky_relu_"``
    or ``"leaky_relu_backward"``, compared with ``>``) over ``n`` elements of the storage
    dtype ``dt`` at the addresses ``a0``, ``a1``, ``a2`` (the forward's x and out, the in-place
    x, the backward's grad_output, x and out; 0 for none), each C-contiguous, an output not
    overlapping an input, ``s`` the slope as a Python float. The same kernel, thread count (the
    weighed bytes against ``PARALLEL_MIN_BYTES``; the parts posted to ``pool``, an OpenMP
    pool's address, else to the team) and bits as the arrays' contiguous path (``_run_fast``).
    False, nothing written, where an address is not a multiple of the element size (the
    caller's NumPy path then decides)."""
    plan = _AT_PLAN.get((op, dt))
    if plan is None:
        fn = _AT_KERNEL[op]
        plan = _AT_PLAN[op, dt] = [_WEIGHTS[fn][dt] * dt.itemsize,
                                   _kernels.rows_at(fn, _FAST_VIEW[dt] or dt, False), 0, 0]
    if (a0 | a1 | a2) % dt.itemsize:
        return False
    work = n * plan[0]
    if work < PARALLEL_MIN_BYTES:
        plan[1](n, a0, a1, a2, s, 0, 0, 0, 1)
        return True
    if not plan[3]:
        plan[3] = _threads.team().addr
    threads, words = _threads.team_call(plan[3], pool)
    if threads > 1 and not plan[2]:
        fn = _AT_KERNEL[op]
        plan[2] = _kernels.part_address(_kernels.ROWS_AT_KIND[fn], _FAST_VIEW[dt] or dt, False)
    plan[1](n, a0, a1, a2, s, words, plan[2], work >= _WAKE_WAIT_BYTES, threads)
    return True


#: ``np.may_share_memory`` without NumPy's ``__array_function__`` dispatch (85 ns instead of
#: 150-180 ns), for the contiguous paths, which call it on exact ``np.ndarray`` objects only.
_may_share = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


def _plain_dest(out, x, other=None, tested=True):
    """The array a contiguous path writes: a new one like ``x``, or ``out`` where it is a
    C-contiguous aligned writable ndarray of x's dtype and shape sharing no memory with ``x``
    nor ``other`` (an array, or None); None where the general path must decide. (Dtypes are
    compared by identity: NumPy's own dtypes are singletons, and any other goes the general
    way.) ``tested=False``: the sharing is not tested here (the kernel tests it). (The
    arguments are positional, without ``*others``: 50 ns of a 1,000-element call's 1 µs.)"""
    if out is None:
        return np.empty(x.shape, x.dtype)
    if type(out) is np.ndarray and out.dtype is x.dtype and out.shape == x.shape \
            and out.flags.carray:  # (C-contiguous, aligned, writeable)
        if tested and (_may_share(out, x) or other is not None and _may_share(out, other)):
            return None
        return out
    return None


def leaky_relu_impl(x, negative_slope=0.01, out=None, *, compare=">", slope_dtype=None,
                    bf16_flush=False, fname="leaky_relu"):
    """``y = x if x > 0 else x * negative_slope`` (see :func:`leakyops.leaky_relu`).

    ``bf16_flush=True``: a bfloat16 result whose float32 value lies below 2**-126 in magnitude
    becomes a zero of its sign, as oneDNN's conversion on CPUs with avx512_bf16 does.
    """
    if type(negative_slope) is float and slope_dtype is None and type(x) is np.ndarray \
            and bf16_flush is False:
        # the contiguous path, written out: a 1,000-element call is mostly this Python
        rule = _COMPARE.get(compare)
        view = _FAST_VIEW.get(x.dtype, False)
        f = x.flags
        if rule is not None and view is not False and f.c_contiguous and f.aligned:
            dest = _plain_dest(out, x)
            if dest is not None:
                xf, df = (x, dest) if x.ndim == 1 else (x.ravel(), dest.ravel())
                _run_fast(_kernels.lrelu_fwd_row, (xf, df, negative_slope, rule), rule, dest.nbytes)
                return dest
    return _named_call(fname, _leaky_relu, x, negative_slope, out, compare, slope_dtype,
                       bf16_flush)


def _leaky_relu(x, negative_slope, out, compare, slope_dtype, bf16_flush):
    """:func:`leaky_relu_impl` past its contiguous path: check, normalise, call a kernel."""
    x = _as_array(x, "x")
    s = _slope(negative_slope, x.dtype, slope_dtype)
    rule = _rule(compare, _DNNL_LRELU)
    if rule is _kernels.DNNL_ELTWISE:
        if s == 0:
            rule = _kernels.DNNL_RELU  # oneDNN's eltwise kernel with alpha == 0: max(x, +0)
        elif x.dtype.itemsize == 2:
            rule = _kernels.DNNL_ELTWISE_HALF  # its half types' NaNs come back quiet
    if x.size == 0:
        return _returned(out, _finish(out, x.shape, x.dtype, (x,), lambda dest: None))

    def compute(dest):
        _lrelu_fwd(x, dest, s, rule)

    # the float32 values decide the flush; formed before the result is written, which may be
    # x itself (in place)
    wide = _leaky_relu(_as_f32(x), float(s), None, compare, None, False) \
        if bf16_flush and x.dtype == BFLOAT16 else None
    result = _finish(out, x.shape, x.dtype, (x,), compute)
    if wide is not None:
        _flush_bf16(result, wide)
    return _returned(out, result)


_TINY_F32 = np.float32(2.0**-126)


def _as_f32(a: np.ndarray) -> np.ndarray:
    return a if a.dtype == np.float32 else a.astype(np.float32)


def _flush_bf16(result: np.ndarray, wide: np.ndarray) -> None:
    """Where ``wide``, the float32 value of the bfloat16 ``result``, lies below 2**-126 in
    magnitude, ``result`` becomes a zero of its sign (``vcvtneps2bf16`` treats float32
    subnormals as zero; a float32 just below 2**-126 would otherwise round up to it)."""
    with np.errstate(invalid="ignore"):
        tiny = np.abs(wide) < _TINY_F32
    if tiny.any():
        zeros = np.where(np.signbit(wide), result.dtype.type(-0.0), result.dtype.type(0.0))
        np.copyto(result, zeros, where=tiny)


def _lrelu_fwd(x: np.ndarray, dest: np.ndarray, s, rule) -> None:
    """The forward kernel call for ``dest`` (``x`` itself, or memory that does not overlap)."""
    if dest is x or _same_view(dest, x):
        if x.flags.c_contiguous:
            _run_rows(_kernels.lrelu_fwd_row_inplace, [_kernel_view(x).reshape(-1)], (s, rule))
        else:
            _run_nd(_kernels.lrelu_fwd_nd_inplace, _coalesce([_kernel_view(x)]), (s, rule))
    elif x.flags.c_contiguous and dest.flags.c_contiguous:
        _run_rows(_kernels.lrelu_fwd_row,
                  [_kernel_view(x).reshape(-1), _kernel_view(dest).reshape(-1)], (s, rule))
    else:
        views = _coalesce([_kernel_view(dest), _kernel_view(x)])
        _run_nd(_kernels.lrelu_fwd_nd, [views[1], views[0]], (s, rule))


def leaky_relu_inplace_impl(x, negative_slope=0.01, *, compare=">", slope_dtype=None,
                            fname="leaky_relu_"):
    if type(negative_slope) is float and slope_dtype is None and type(x) is np.ndarray:
        # the contiguous path (see leaky_relu_impl)
        rule = _COMPARE.get(compare)
        view = _FAST_VIEW.get(x.dtype, False)
        f = x.flags
        if rule is not None and view is not False and f.c_contiguous and f.aligned and f.writeable:
            flat = x if x.ndim == 1 else x.ravel()
            _run_fast(_kernels.lrelu_fwd_row_inplace, (flat, negative_slope, rule), rule, x.nbytes)
            return x
    return _named_call(fname, _leaky_relu_inplace, x, negative_slope, compare, slope_dtype)


def _leaky_relu_inplace(x, negative_slope, compare, slope_dtype):
    """:func:`leaky_relu_inplace_impl` past its contiguous path."""
    if not isinstance(x, np.ndarray):
        raise _ArgTypeError(f"x must be a numpy.ndarray to be modified in place, "
                            f"got {type(x).__name__}")
    view = _plain_view(x, "x")
    _no_internal_overlap(view, "x")
    _leaky_relu(view, negative_slope, view, compare, slope_dtype, False)
    return x


# ---------------------------------------------------------------------------------------------
# leaky_relu_backward


def leaky_relu_backward_impl(grad_output, x, negative_slope, self_is_result=False, out=None, *,
                             compare=">", slope_dtype=None, fname="leaky_relu_backward"):
    """``dx = g if t > 0 else g * negative_slope`` (see :func:`leakyops.leaky_relu_backward`)."""
    if type(negative_slope) is float and slope_dtype is None and type(x) is np.ndarray \
            and type(grad_output) is np.ndarray \
            and (self_is_result is False or (self_is_result is True and negative_slope >= 0)):
        # the contiguous path, written out (see leaky_relu_impl): operands of one dtype and shape
        rule = _COMPARE.get(compare)
        dt = x.dtype
        view = _FAST_VIEW.get(dt, False)
        fx, fg = x.flags, grad_output.flags
        if rule is not None and view is not False and grad_output.dtype is dt \
                and grad_output.shape == x.shape and fx.c_contiguous and fx.aligned \
                and fg.c_contiguous and fg.aligned:
            dest = _plain_dest(out, x, grad_output)
            if dest is not None:
                if x.ndim == 1:
                    gf, xf, df = grad_output, x, dest
                else:
                    gf, xf, df = grad_output.ravel(), x.ravel(), dest.ravel()
                _run_fast(_kernels.lrelu_bwd_row, (gf, xf, df, negative_slope, rule), rule,
                          dest.nbytes)
                return dest
    return _named_call(fname, _leaky_relu_backward, grad_output, x, negative_slope,
                       self_is_result, out, compare, slope_dtype)


def _leaky_relu_backward(grad_output, x, negative_slope, self_is_result, out, compare,
                         slope_dtype):
    """:func:`leaky_relu_backward_impl` past its contiguous path."""
    g = _as_array(grad_output, "grad_output")
    x = _as_array(x, "x")
    rdtype = result_dtype(g.dtype, x.dtype)
    s = _slope(negative_slope, rdtype, slope_dtype)
    _check_self_is_result(negative_slope, self_is_result)
    shape = g.shape
    if shape != x.shape:
        try:
            shape = np.broadcast_shapes(g.shape, x.shape)
        except ValueError:
            raise _ArgValueError(f"grad_output of shape {g.shape} and x of shape {x.shape} "
                                 "do not broadcast") from None
    rule = _rule(compare)
    if math.prod(shape) == 0:
        return _returned(out, _finish(out, shape, rdtype, (g, x), lambda dest: None))

    def compute(dest):
        gb, xb = np.broadcast_to(g, shape), np.broadcast_to(x, shape)
        if dest.flags.c_contiguous:  # (the contiguous kernels can run: a broadcast made dense)
            gb, xb = _dense_if_broadcast(gb), _dense_if_broadcast(xb)
        if _all_c_contiguous(gb, xb, dest):
            flats = [_kernel_view(a).reshape(-1) for a in (gb, xb, dest)]
            _run_rows(_kernels.lrelu_bwd_row, flats, (s, rule))
        else:
            views = _coalesce([_kernel_view(dest), _kernel_view(gb), _kernel_view(xb)])
            _run_nd(_kernels.lrelu_bwd_nd, [views[1], views[2], views[0]], (s, rule))

    return _returned(out, _finish(out, shape, rdtype, (g, x), compute))


#: The largest broadcast input (elements) that the backward operators copy to a dense
#: temporary, so that the contiguous kernels read it (autograd's gradient of a ``sum()`` is
#: one value broadcast to the shape). A broadcast read where it lies ran element by element:
#: 100,096 float32 elements, prelu_backward 417 µs against 10 µs dense, leaky_relu_backward 43
#: against 6 µs. Above this size the general path reads it in place, so memory stays flat.
DENSE_BROADCAST_MAX = 1 << 24


def _dense_if_broadcast(b):
    """A dense copy of ``b`` where it repeats elements (a zero stride along an axis longer than
    1) and has at most ``DENSE_BROADCAST_MAX`` elements; else ``b`` itself."""
    if 0 in b.strides and b.size <= DENSE_BROADCAST_MAX \
            and any(st == 0 and n > 1 for st, n in zip(b.strides, b.shape)):
        # (one pass writing, one reading: far less than the element-wise general path)
        return np.ascontiguousarray(b)
    return b


# ---------------------------------------------------------------------------------------------
# prelu


def _unknown(n) -> bool:
    """An extent not known yet (dask's NaN for unknown chunk sizes, or None)."""
    return n is None or (isinstance(n, float) and math.isnan(n))


def _prelu_weight_shape(x_shape, weight_shape, axis) -> tuple:
    x_shape, weight_shape = tuple(x_shape), tuple(weight_shape)
    ndim = len(x_shape)
    if isinstance(axis, (bool, np.bool_)):  # (operator.index takes Python's bools)
        raise _ArgTypeError(f"axis must be an int, got {type(axis).__name__}")
    try:
        axis = operator.index(axis)
    except TypeError:
        raise _ArgTypeError(f"axis must be an int, got {type(axis).__name__}") from None
    if math.prod(weight_shape) == 1 or len(weight_shape) >= 2:
        # a shared slope or a broadcast weight: the axis is not used, but must still name one
        # (x counts as having at least two axes here: the default, 1, is PyTorch's channel
        # axis for every rank)
        n = max(ndim, 2)
        if not -n <= axis < n:
            raise _ArgValueError(f"axis {axis} is out of bounds for x of shape {x_shape}")
        if math.prod(weight_shape) == 1:
            return (1,) * ndim
    if len(weight_shape) == 1:
        if ndim == 0 or not -ndim <= axis < ndim:
            raise _ArgValueError(f"weight has {weight_shape[0]} elements but axis={axis} is "
                                 f"out of range for x of shape {x_shape}"
                                 + ("; for a 1-D x pass axis=0" if ndim == 1 else ""))
        axis %= ndim
        if not _unknown(x_shape[axis]) and x_shape[axis] != weight_shape[0]:
            raise _ArgValueError(f"weight has {weight_shape[0]} elements but x has size "
                                 f"{x_shape[axis]} along axis {axis}")
        wshape = [1] * ndim
        wshape[axis] = weight_shape[0]
        return tuple(wshape)
    if len(weight_shape) > ndim or any(w != 1 and w != n and not _unknown(n)
                                       for w, n in zip(weight_shape[::-1], x_shape[::-1])):
        raise _ArgValueError(f"weight of shape {weight_shape} does not broadcast to x of "
                             f"shape {x_shape} (unidirectional, right-aligned)")
    return (1,) * (ndim - len(weight_shape)) + weight_shape


def prelu_weight_shape(x_shape, weight_shape, axis=1, fname: str = "prelu") -> tuple:
    """The shape, of x's rank, that a weight of ``weight_shape`` broadcasts from along x.

    One element: a shared slope. A 1-D weight: along ``axis`` (its length must be x's
    extent there). Rank >= 2: right-aligned, unidirectional (NumPy) broadcasting. Shapes
    only; extents of x that are not known yet (None or NaN) are not compared.
    """
    return _named_call(fname, _prelu_weight_shape, x_shape, weight_shape, axis)


def _prelu_dtype(x_dtype, weight_dtype, grad_dtype) -> np.dtype:
    x_dtype = _check_dtype(x_dtype, "x")
    for arg, dt in (("weight", weight_dtype), ("grad_output", grad_dtype)):
        if dt is None:
            continue
        dt = _check_dtype(dt, arg)
        if dt != x_dtype:
            op = "prelu" if arg == "weight" else "prelu_backward"
            raise _ArgTypeError(f"{arg} has dtype {dt} but x has dtype {x_dtype}; "
                                f"{op} does not promote: they must match")
    return x_dtype


def prelu_dtype(x_dtype, weight_dtype, grad_dtype=None, fname: str = "prelu") -> np.dtype:
    """``prelu``'s (and ``prelu_backward``'s) dtype rule: a supported dtype, and the weight
    (and ``grad_output``) of x's dtype: no promotion. Returns x's dtype."""
    dtypes = [None if d is None else np.dtype(d) for d in (x_dtype, weight_dtype, grad_dtype)]
    return _named_call(fname, _prelu_dtype, *dtypes)


def _prelu_args(x, weight, compare=">"):
    x = _as_array(x, "x")
    weight = _as_array(weight, "weight")
    if compare not in _DNNL_PRELU:  # (oneDNN: any float weight)
        _prelu_dtype(x.dtype, weight.dtype, None)
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
        return [_kernel_view(a).reshape(shape) for a in arrays], (0, st)
    wst = [0] * len(wshape)
    step = 1
    for i in range(len(wshape) - 1, -1, -1):
        if wshape[i] != 1:
            wst[i] = step
            step *= wshape[i]
    plan = _Plan(x.shape, [a.strides for a in others] + [x.strides, wst])
    return [plan.view(_kernel_view(a)) for a in arrays], plan.strides_of(wst)


def _flat_weight(weight: np.ndarray) -> np.ndarray:
    return _kernel_view(np.ascontiguousarray(weight).reshape(-1))


def prelu_impl(x, weight, axis=1, out=None, *, compare=">", bf16_flush=False, fname="prelu"):
    """``y = x if x > 0 else w[c] * x`` (see :func:`leakyops.prelu`); ``bf16_flush`` as in
    :func:`leaky_relu_impl`."""
    if bf16_flush is False:
        rule = _COMPARE.get(compare)
        if rule is not None:
            dest = _prelu_plain(x, weight, axis, out, rule)
            if dest is not None:
                return dest
    return _named_call(fname, _prelu, x, weight, axis, out, compare, bf16_flush)


def _prelu_plain(x, weight, axis, out, rule):
    """The contiguous path of prelu, as ``_prelu_backward_plain``'s: the result, or None
    where the operands do not qualify (nothing written; the general path then runs). Here
    each array's type, dtype and ndim and out's writeability (an int axis within NumPy's
    dimensions); in the compiled entry (``_kernels.prelu_fwd_plain``) the shapes, strides,
    alignment and overlap, and the choice of kernel: one shared slope on leaky_relu's rows,
    short rows over the slopes laid out per element (``_SHORT_ROW``), other rows, each on
    the team where its bytes weigh enough (``_WEIGHTS``)."""
    if type(x) is not np.ndarray or type(weight) is not np.ndarray or type(axis) is not int:
        return None
    dt = x.dtype
    if weight.dtype is not dt:
        return None
    nd = x.ndim
    if weight.ndim != 1 or not -64 <= axis <= 64:  # (the entry takes an int64)
        return None
    plan = _PRELU_PLAN.get((dt, nd, rule))
    if plan is None:
        if dt not in _FAST_VIEW:  # (another dtype: the general path names it)
            return None
        plan = _prelu_plan(dt, nd, rule)
    if out is None:
        dest = np.empty(x.shape, dt)
    elif type(out) is np.ndarray and out.dtype is dt and out.ndim == nd and out.flags.writeable:
        dest = out
    else:
        return None
    nbytes = dest.nbytes
    if nbytes < plan[1]:
        threads, words = 1, plan[2]
    elif nbytes < plan[13]:  # (enough for some of its kernels: the entry tells)
        threads, words = 0, plan[2]
    else:
        threads, words = _threads.team_call(plan[2])
    while True:
        ran = plan[0](x, weight, dest, axis, rule, threads, words, plan[3], plan[4], plan[5],
                      plan[6], plan[7], plan[8], plan[9], plan[10],
                      nbytes * plan[11] >= _WAKE_WAIT_BYTES)
        if ran == 1:
            return dest
        if ran == 0:  # (a shape, stride or overlap the kernels do not take: nothing written)
            return None
        if ran == _kernels.NEEDS_THREADS:
            threads, words = _threads.team_call(plan[2])
        else:
            _make_part(plan, 8, ran, "prelu", plan[12], rule)


def _make_part(plan: list, at: int, ran: int, kind: str, view, rule) -> None:
    """Make the part function a prelu or prelu_backward entry (``kind``: ``"prelu"``,
    ``"prelu_bwd"``) found missing (``ran``: ``MISSING_ROWS``, ``MISSING_LAST``,
    ``MISSING_ONE``) for the kernels' view dtype ``view`` and ``rule``, and keep its address
    in ``plan[at]`` (a slope per row), ``plan[at + 1]`` (channels last and short rows) or
    ``plan[at + 2]`` (one shared slope: leaky_relu's forward part)."""
    if ran == _kernels.MISSING_ROWS:
        plan[at] = _kernels.part_address(kind, view, (False, rule))
    elif ran == _kernels.MISSING_LAST:
        plan[at + 1] = _kernels.part_address(kind, view, (True, rule))
    else:  # (MISSING_ONE: prelu's forward only)
        plan[at + 2] = _kernels.part_address("fwd", view, rule)


#: prelu's contiguous path per (storage dtype, ndim, rule): ``[compiled entry
#: (``_kernels.prelu_fwd_plain``), the fewest bytes of output any of its kernels runs
#: threaded from, the team's own words, the short-row limit (``_SHORT_ROW``), the bytes from
#: which each kernel runs threaded (rows, channels last, short rows, one shared slope), the
#: part functions' addresses (rows; channels last and short rows; one shared slope: each 0
#: until a call needs it, ``_kernels.MISSING_ROWS``/``MISSING_LAST``/``MISSING_ONE``), the
#: thread weight of a byte of the rows' kernel, the kernels' view dtype, the most bytes any
#: of its kernels needs to run threaded]``.
_PRELU_PLAN: dict = {}


def _prelu_weights(dt) -> list:
    """The thread weights of a byte of prelu's kernels for the storage dtype ``dt``: rows,
    channels last, short rows, one shared slope."""
    return [_WEIGHTS[k][dt] for k in (_kernels.prelu_fwd_c_run, _kernels.prelu_fwd_c_run,
                                      _kernels.prelu_fwd_short_run, _kernels.lrelu_fwd_row)]


def _prelu_plan(dt, nd, rule) -> list:
    """Compile (or load) ``_PRELU_PLAN``'s entry for ``dt``, ``nd`` dimensions and ``rule``."""
    view = np.dtype(_FAST_VIEW[dt] or dt)
    a, w = np.zeros((1,) * nd, view), np.zeros(1, view)
    weights = _prelu_weights(dt)
    limits = [PARALLEL_MIN_BYTES / wt for wt in weights]
    ep = _kernels.entry_point(_kernels.prelu_fwd_plain, a, w, a, 0, rule, 0, 0, 0, 0.0, 0.0,
                              0.0, 0.0, 0, 0, 0, 0)
    plan = [ep, min(limits), _threads.team().addr, _SHORT_ROW[dt], *limits, 0, 0, 0,
            weights[0], view, max(limits)]
    _PRELU_PLAN[dt, nd, rule] = plan
    return plan


def prelu_at(dt, outer: int, c: int, inner: int, ax: int, aw: int, aout: int,
             pool: int = 0) -> bool:
    """prelu's contiguous path with a slope per channel on memory a front-end holds
    (``leakyops.torch``'s tensors), as :func:`rows_at` is leaky_relu's: ``x`` at ``ax`` and
    ``out`` at ``aout``, ``outer * c * inner`` C-contiguous elements of the storage dtype
    ``dt`` (``c`` > 1 channels, each a row of ``inner``), ``out`` overlapping neither input,
    the ``c`` slopes at ``aw``, compared with ``>``. The same kernels, threads (the team's
    parts posted to ``pool``, an OpenMP pool's address, else to the team) and bits as
    ``_prelu_plain``'s. False, nothing written, where an address is not a multiple of the
    element size."""
    plan = _PRELU_AT_PLAN.get(dt)
    if plan is None:
        weights = _prelu_weights(dt)[:3]
        limits = [PARALLEL_MIN_BYTES / wt for wt in weights]
        plan = _PRELU_AT_PLAN[dt] = [_kernels.prelu_fwd_at(_FAST_VIEW[dt] or dt, False),
                                     min(limits), max(limits), _SHORT_ROW[dt], *limits, 0, 0,
                                     weights[0], np.dtype(_FAST_VIEW[dt] or dt),
                                     _threads.team().addr]
    if (ax | aw | aout) % dt.itemsize:
        return False
    nbytes = outer * c * inner * dt.itemsize
    own = plan[11]  # (a team driver on one thread still names it)
    if nbytes < plan[1]:
        threads, words = 1, own
    elif nbytes < plan[2]:  # (enough for some of its kernels: the entry tells)
        threads, words = 0, own
    else:
        threads, words = _threads.team_call(own, pool)
    while True:
        ran = plan[0](outer, c, inner, ax, aw, aout, threads, words, plan[3], plan[4],
                      plan[5], plan[6], plan[7], plan[8], nbytes * plan[9] >= _WAKE_WAIT_BYTES)
        if ran == 1:
            return True
        if ran == 0:  # (out overlaps an input: the caller's general path decides)
            return False
        if ran == _kernels.NEEDS_THREADS:
            threads, words = _threads.team_call(own, pool)
        else:
            _make_part(plan, 7, ran, "prelu", plan[10], False)


#: ``prelu_at``'s plans per storage dtype: ``[entry point, the fewest bytes of output any of
#: its kernels runs threaded from, the most, the short-row limit, the bytes from which each
#: kernel runs threaded (rows, channels last, short rows), the part functions' addresses
#: (rows; channels last and short rows: 0 until a call needs them), the thread weight of a
#: byte of the rows' kernel, the kernels' view dtype, the team's address]``.
_PRELU_AT_PLAN: dict = {}


def _prelu(x, weight, axis, out, compare, bf16_flush):
    """:func:`prelu_impl` past its contiguous path."""
    x, weight = _prelu_args(x, weight, compare)
    wshape = _prelu_weight_shape(x.shape, weight.shape, axis)
    rule = _rule(compare, _DNNL_PRELU)
    if x.size == 0:
        return _returned(out, _finish(out, x.shape, x.dtype, (x, weight), lambda dest: None))
    if weight.size == 1:
        s = _kernels_slope(weight, x.dtype)

        def compute(dest):
            _lrelu_fwd(x, dest, s, rule)
    else:
        wflat = _flat_weight(weight)

        def compute(dest):
            views, (off, st) = _prelu_layout(x, wshape, [dest])
            _run_nd(_kernels.prelu_fwd_nd, views, (rule,), weight=((wflat,), off, st))

    wide = _prelu(_as_f32(x), _as_f32(weight), axis, None, compare, False) \
        if bf16_flush and x.dtype == BFLOAT16 else None  # (before x may be overwritten)
    result = _finish(out, x.shape, x.dtype, (x, weight), compute)
    if wide is not None:
        _flush_bf16(result, wide)
    return _returned(out, result)


def _kernels_slope(weight: np.ndarray, dtype: np.dtype):
    """A one-element weight as the kernel's slope for a ``dtype`` result (exact widening)."""
    value = weight.reshape(())[()]
    return np.float64(value) if dtype == _F64 else np.float32(value)


def _prelu_backward_args(grad_output, x, weight, axis, compare=">"):
    """Checked ``(g, x, weight, wshape)``: ``g`` broadcast to ``x``'s shape."""
    x, weight = _prelu_args(x, weight, compare)
    if compare in _DNNL_PRELU and x.dtype == _F64:
        raise _ArgTypeError(f"compare={compare!r} (oneDNN's float32 arithmetic) needs "
                            f"float16, bfloat16 or float32 data, got {x.dtype}")
    g = _as_array(grad_output, "grad_output")
    if g.dtype != x.dtype:
        _prelu_dtype(x.dtype, None, g.dtype)
    if g.shape != x.shape:
        try:
            if np.broadcast_shapes(g.shape, x.shape) != x.shape:
                raise ValueError
        except ValueError:
            raise _ArgValueError(f"grad_output of shape {g.shape} does not broadcast to x's "
                                 f"shape {x.shape}") from None
        g = np.broadcast_to(g, x.shape)
    return g, x, weight, _prelu_weight_shape(x.shape, weight.shape, axis)


def prelu_backward_parts(grad_output, x, weight, axis=1, *, compare=">", bf16_flush=False,
                         fname="prelu_backward"):
    """``(grad_input, acc)``: ``acc`` is the unrounded float64 ``grad_weight``, shaped like
    weight (``bf16_flush``: a bfloat16 ``grad_input`` as in :func:`leaky_relu_impl`)."""
    return _named_call(fname, _prelu_backward_parts, grad_output, x, weight, axis, compare,
                       bf16_flush)


def _prelu_backward_parts(grad_output, x, weight, axis, compare, bf16_flush):
    g, x, weight, wshape = _prelu_backward_args(grad_output, x, weight, axis, compare)
    rule = _rule(compare, _DNNL_PRELU)
    grad_input = np.empty(x.shape, x.dtype)
    acc = _prelu_backward_into(grad_input, g, x, weight, wshape, rule)
    if bf16_flush and grad_input.dtype == BFLOAT16 and grad_input.size:
        wide, _ = _prelu_backward_parts(_as_f32(g), _as_f32(x), _as_f32(weight), axis, compare,
                                        False)
        _flush_bf16(grad_input, wide)
    return grad_input, acc


def _prelu_backward_c(g, x, gi, weight, per_k: bool, rule: bool, acc: np.ndarray) -> bool:
    """The backward over C-contiguous 3-D kernel views, or arrays of a half storage dtype
    (``_run_fast`` views them where it must; see ``_kernels.prelu_bwd_c_run``):
    ``gi`` written, the weight gradient in ``acc``: rounded once into a kernel view of the
    result's storage dtype, or the unrounded sums into a float64 array; threaded when large.
    False, nothing written, where ``gi`` shares memory with another array (the general path's
    never does: its grad_input is a temporary wherever a given one would)."""
    # (the entry points are cached by the first operand's dtype; where the weight's dtype,
    # which oneDNN's rules allow to differ, or the sums' is another, they join the key)
    dt = g.dtype
    plain = weight.dtype is dt and acc.dtype is dt
    flags = (per_k, rule) if plain else (per_k, rule, weight.dtype, acc.dtype)
    # (the team's part functions take one dtype and the comparison flag; oneDNN's rules and
    # float64 sums run on numba's region)
    return _run_fast(_kernels.prelu_bwd_c_run, (g, x, gi, weight, acc, per_k, rule), flags,
                     gi.nbytes, plain and type(rule) is bool)


def _prelu_backward_into(grad_input, g, x, weight, wshape, rule, out=None) -> np.ndarray:
    """Write ``grad_input`` (x's shape and dtype, not overlapping the inputs) and return the
    weight gradient shaped like ``weight``: unrounded float64 sums, or, with ``out`` (a flat
    C-contiguous kernel view of the result's storage dtype), the sums rounded once from their
    compensated pairs into it.

    How the work is split depends on the shapes and the memory layout (the axes are walked
    in memory order), never on the thread count, so the bits do not either: along an axis
    the weight is not broadcast over (each weight element's sum stays in one part), else
    along a reduced axis in units of ``UNIT`` elements, each with its own partial sums,
    combined in unit order. Threads then take the parts.
    """
    wsize = weight.size
    result = np.zeros(wsize, np.float64) if out is None else out
    if x.size == 0:
        result[...] = 0  # (+0 in every storage kind)
        return result.reshape(weight.shape)
    wflat = _flat_weight(weight)
    if wsize == 1 and all(a.flags.c_contiguous for a in (g, x, grad_input)) \
            and g.shape == x.shape:
        # one slope for every element (PyTorch's PReLU()): the one-slope units of the kernels
        flat = (1, 1, x.size)
        _prelu_backward_c(g.reshape(flat), x.reshape(flat), grad_input.reshape(flat), wflat,
                          False, rule, result)
        return _dnnl_sum_zero(result, rule, wsize < x.size).reshape(weight.shape)
    (x3, gi3, g3), (off, st) = _prelu_layout(x, wshape, [grad_input, g])
    views = [g3, x3, gi3]
    if x3.ndim == 3 and off == 0 and st in ((0, 1, 0), (0, 0, 1)) \
            and all(v.flags.c_contiguous for v in views):
        # C-contiguous views with a 1-D weight along one axis: the loops without per-row slices
        _prelu_backward_c(g3, x3, gi3, wflat, st[2] == 1, rule, result)
        return _dnnl_sum_zero(result, rule, wsize < x.size).reshape(weight.shape)
    if x3.ndim > 3:  # rare: more than three axes survive coalescing; one part per leading index
        pair = _partials(1, wsize, rule)
        for idx in np.ndindex(*x3.shape[:-3]):
            o = off + sum(i * s for i, s in zip(idx, st))
            _kernels.prelu_bwd_nd(*(v[idx] for v in views), wflat, pair[0, 0], pair[0, 1], o,
                                  *st[len(idx):], rule)
        _kernels.combine_partials(pair, result, rule)
        return _dnnl_sum_zero(result, rule, wsize < x.size).reshape(weight.shape)
    shape = x3.shape
    reduced = [a for a in range(3) if st[a] == 0 and shape[a] > 1]
    kept = [a for a in range(3) if a not in reduced and shape[a] > 1]
    axis_k = _split_axis(shape, [a for a in kept if a < 2])  # not the innermost axis
    if axis_k >= 0 and shape[axis_k] >= 2:
        axis, parts, partials = axis_k, shape[axis_k], _partials(1, wsize, rule)
    else:
        axis = max(_split_axis(shape, reduced), 0)
        parts = max(1, min(shape[axis], x.size // _kernels.UNIT,
                           _kernels.PARTIALS_BUDGET // max(wsize, 1)))
        partials = _partials(min(parts, shape[axis]), wsize, rule)
    threads = min(_threads_for(x.nbytes), parts)
    if partials.shape[0] == 1:  # parts share one pair: as many parts as threads
        parts = threads
    bounds = np.array([lo for lo, _ in _chunks(shape[axis], parts)] + [shape[axis]], np.int64)
    if threads > 1 and _threads.enter_parallel():
        try:
            _kernels.prelu_bwd_nd_par(*views, wflat, partials, off, *st, rule, axis, bounds)
        finally:
            _threads.exit_parallel()
    else:
        for u in range(bounds.size - 1):
            lo, hi = int(bounds[u]), int(bounds[u + 1])
            p = partials[0 if partials.shape[0] == 1 else u]
            _kernels.prelu_bwd_nd(*(_slice(v, axis, lo, hi) for v in views), wflat, p[0], p[1],
                                  off + lo * st[axis], *st, rule)
    _kernels.combine_partials(partials, result, rule)
    return _dnnl_sum_zero(result, rule, wsize < x.size).reshape(weight.shape)


def _partials(n: int, wsize: int, rule) -> np.ndarray:
    """``n`` (sum, compensation) pairs for ``wsize`` weight elements, at the sums' start:
    +0, or -0 for a oneDNN rule (its sums are plain IEEE sums: -0 when every term is -0)."""
    partials = np.zeros((n, 2, wsize))
    if type(rule) is not bool:
        partials[:, 0] = -0.0
    return partials


def _dnnl_sum_zero(result: np.ndarray, rule, reduced: bool) -> np.ndarray:
    """The weight gradient as oneDNN's jit kernels leave it: where a weight element sums
    several terms they add them into a zeroed (+0) buffer, so a zero sum is +0 there (with a
    weight shaped like the data, each element is its single term, sign and all)."""
    if reduced and type(rule) is not bool and rule != _kernels.DNNL_REF:
        result += 0.0
    return result


def sum_grad_weight_parts(parts, axis=None, keepdims=False) -> np.ndarray:
    """Add unrounded float64 ``grad_weight`` partial sums (from :func:`prelu_backward_parts`).

    The reduction step of block-wise backwards (Dask): NumPy's float64 sum, whose order is
    fixed by the array's layout, so results are reproducible for a fixed blocking.
    """
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf is NaN, as in the kernels
        return np.sum(parts, axis=axis, keepdims=keepdims, dtype=np.float64)


def round_grad_weight(acc, dtype, *, bf16_flush=False) -> np.ndarray:
    """Round a float64 ``grad_weight`` sum once to ``dtype`` (nearest, ties to even; the
    kernels' ``round_sums``: NumPy's cast to bfloat16 goes through float32 and can round
    twice); ``bf16_flush``: a bfloat16 one as oneDNN's (see :func:`leaky_relu_impl`)."""
    acc = np.asarray(acc, np.float64)
    if not acc.flags.c_contiguous:
        acc = acc.copy()  # (not ascontiguousarray: it makes a 0-d sum 1-d)
    result = np.empty(acc.shape, dtype)
    if acc.size:
        _kernels.round_sums(acc.reshape(-1), _kernel_view(result).reshape(-1))
    if bf16_flush and result.dtype == BFLOAT16:
        with np.errstate(over="ignore"):  # (overflow: ±inf, not small)
            _flush_bf16(result, acc.astype(np.float32))
    return result


def _exact_grad_weight(g, x, grad_weight, wshape, rule) -> None:
    """Sum again, exactly, each element of float64 data's ``grad_weight`` that came out of the
    kernels infinite or NaN, and write the sum of its terms correctly rounded (``g``, ``x``:
    x's shape; ``grad_weight``: C-contiguous, ``wshape``'s elements; ``rule``: the comparison
    flag). float64 terms, and sums of finite terms, can overflow, and which of ±inf and NaN
    the kernels' lanes then give depends on the order of their additions (PyTorch's too); the
    exact sum does not: NaN where a term is NaN or the terms hold infinities of both signs,
    ±inf where they hold one sign's, else the correctly rounded sum of the finite terms (±inf
    only where it is beyond float64's range). A NaN the kernels gave where the exact sum is
    NaN stays as it is. Runs only where an element is not finite."""
    gw = grad_weight.reshape(wshape)
    for idx in np.argwhere(~np.isfinite(gw)):
        at = tuple(int(i) if n > 1 else slice(None) for i, n in zip(idx, wshape))
        total = _exact_sum(x[at], g[at], rule)
        if not (math.isnan(total) and math.isnan(gw[tuple(idx)])):
            gw[tuple(idx)] = total


#: ``_exact_sum``'s chunk (elements): its temporaries stay a few MB, its integer sums exact.
_EXACT_CHUNK = 1 << 18


def _exact_sum(x, g, rule) -> float:
    """The exact sum of the float64 weight-gradient terms of ``x`` and ``g`` (views of one
    shape, read in chunks of at most ``_EXACT_CHUNK`` elements, never copied whole; 0 where x
    is kept, else the rounded product ``x * g``), rounded once to float64: each finite term is
    ``m * 2**(e - 53)`` with an integer ``|m| < 2**53``; the three 18-bit pieces of the ``m``
    are summed per exponent as float64 integers (exact below 2**35 terms per exponent), and
    the per-exponent totals as one Python integer, which Python divides by the scale with one
    correct rounding (OverflowError: beyond float64's range)."""
    has_nan = has_pos = has_neg = False
    pieces = np.zeros((3, 2098), np.int64)  # (e + 1073 for e of np.frexp: 0 ... 2097)
    chunks = np.nditer([x, g], flags=["external_loop", "buffered", "zerosize_ok"],
                       op_flags=[["readonly"], ["readonly"]], buffersize=_EXACT_CHUNK)
    for xs, gs in chunks:
        with np.errstate(all="ignore"):
            t = np.where(xs >= 0 if rule else xs > 0, 0.0, xs * gs)
        has_nan = has_nan or bool(np.isnan(t).any())
        has_pos = has_pos or bool((t == np.inf).any())
        has_neg = has_neg or bool((t == -np.inf).any())
        if has_nan or has_pos or has_neg:
            continue
        frac, exp = np.frexp(t)
        m = (frac * 2.0 ** 53).astype(np.int64)
        mag, sign = np.abs(m), np.sign(m)
        where = exp.astype(np.intp) + 1073
        for k, shift in enumerate((36, 18, 0)):
            part = sign * ((mag >> shift) & 0x3FFFF)
            pieces[k] += np.bincount(where, weights=part, minlength=2098).astype(np.int64)
    if has_nan or (has_pos and has_neg):
        return math.nan
    if has_pos or has_neg:
        return math.inf if has_pos else -math.inf
    total = 0
    for e in np.flatnonzero(pieces.any(axis=0)):
        total += ((int(pieces[0, e]) << 36) + (int(pieces[1, e]) << 18) + int(pieces[2, e])) << int(e)
    try:
        return total / (1 << (1073 + 53))
    except OverflowError:
        return math.inf if total > 0 else -math.inf


def _prelu_backward_outs(out, x, weight):
    """``(grad_input out, grad_weight out)``, each None or a checked array."""
    if out is None:
        return None, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise _ArgTypeError(f"out must be None or a tuple (grad_input, grad_weight), either "
                            f"of them None, got {type(out).__name__}"
                            + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else ""))
    gi = None if out[0] is None else _out(out[0], x.shape, "out[0] (grad_input)")
    gw = None if out[1] is None else _out(out[1], weight.shape, "out[1] (grad_weight)")
    if gi is not None and gw is not None and np.may_share_memory(gi, gw):
        raise _ArgValueError("out[0] (grad_input) and out[1] (grad_weight) overlap")
    return gi, gw


def _prelu_backward_plain(g, x, weight, axis, out, rule):
    """The contiguous path of prelu_backward (its checks are most of a small call's time):
    the results, or None where the operands do not qualify (the general path then runs, with
    its checks and messages). ndarrays of one supported dtype, C-contiguous and aligned, a
    1-D weight along ``axis`` (or one shared slope: ``_kernels._plain.prelu_layout``), and
    results that are new arrays or writeable arrays of that dtype and shape; grad_input
    sharing no memory with an input or grad_weight (grad_weight is written after everything
    is read). Here only what numba's unboxing does not read is tested (each array's type,
    dtype and ndim, the outputs' writeability; an int axis within NumPy's dimensions); the
    shapes, strides, alignment and overlap are tested in the compiled entry
    (``_kernels.prelu_bwd_plain``), which then runs the kernel: 0.4-0.5 µs less a call (see
    ``_kernels/_plain.py``)."""
    if type(x) is not np.ndarray or type(g) is not np.ndarray or type(weight) is not np.ndarray \
            or type(axis) is not int:
        return None
    dt = x.dtype
    if g.dtype is not dt or weight.dtype is not dt:
        return None
    nd = x.ndim
    if g.ndim != nd or weight.ndim != 1 or not -64 <= axis <= 64:  # (the entry takes an int64)
        return None
    gi = gw = None
    if out is not None:
        if type(out) is not tuple or len(out) != 2:
            return None
        gi, gw = out
    plan = _PRELU_BWD_PLAN.get((dt, nd, rule))
    if plan is None:
        if dt not in _FAST_VIEW:  # (another dtype: the general path names it)
            return None
        plan = _prelu_bwd_plan(dt, nd, rule)
    if gi is None:
        gi = np.empty(x.shape, dt)
    elif type(gi) is not np.ndarray or gi.dtype is not dt or gi.ndim != nd \
            or not gi.flags.writeable:
        return None
    if gw is None:
        gw = np.empty(weight.shape, dt)
    elif type(gw) is not np.ndarray or gw.dtype is not dt or gw.ndim != 1 \
            or not gw.flags.writeable:
        return None
    work = x.nbytes * plan[1]
    if work < PARALLEL_MIN_BYTES:
        threads, words = 1, plan[2]
    else:
        threads, words = _threads.team_call(plan[2])
    while True:  # (as _prelu_plain's)
        ran = plan[0](g, x, weight, gi, gw, axis, rule, threads, words, plan[3], plan[4],
                      work >= _WAKE_WAIT_BYTES)
        if ran == 1:
            return gi, gw
        if ran == 0:  # (a shape, stride or overlap the kernels do not take: nothing written)
            return None
        if ran == _kernels.NOT_FINITE:  # (float64: ran; an element to sum again exactly)
            _exact_grad_weight(g, x, gw, _prelu_weight_shape(x.shape, weight.shape, axis), rule)
            return gi, gw
        _make_part(plan, 3, ran, "prelu_bwd", plan[5], rule)


#: prelu_backward's contiguous path per (storage dtype, ndim, rule): ``[compiled entry
#: (``_kernels.prelu_bwd_plain``), thread weight of a byte, the team's own words, the part
#: functions' addresses for a slope per row and for channels last (0 until a call needs it:
#: ``_kernels.MISSING_ROWS``, ``MISSING_LAST``), the kernels' view dtype]``.
_PRELU_BWD_PLAN: dict = {}


def _prelu_bwd_plan(dt, nd, rule) -> list:
    """Compile (or load) ``_PRELU_BWD_PLAN``'s entry for ``dt``, ``nd`` dimensions and
    ``rule``."""
    view = np.dtype(_FAST_VIEW[dt] or dt)
    a, w = np.zeros((1,) * nd, view), np.zeros(1, view)
    ep = _kernels.entry_point(_kernels.prelu_bwd_plain, a, a, w, a, w, 0, rule, 0, 0, 0, 0, 0)
    plan = [ep, _WEIGHTS[_kernels.prelu_bwd_c_run][dt], _threads.team().addr, 0, 0, view]
    _PRELU_BWD_PLAN[dt, nd, rule] = plan
    return plan


def prelu_backward_impl(grad_output, x, weight, axis=1, out=None, *, compare=">",
                        fname="prelu_backward"):
    """``(grad_input, grad_weight)`` (see :func:`leakyops.prelu_backward`)."""
    if compare in _COMPARE:
        result = _prelu_backward_plain(grad_output, x, weight, axis, out, _COMPARE[compare])
        if result is not None:
            return result
    return _named_call(fname, _prelu_backward, grad_output, x, weight, axis, out, compare)


def _prelu_backward(grad_output, x, weight, axis, out, compare):
    """:func:`prelu_backward_impl` past its contiguous path."""
    g, x, weight, wshape = _prelu_backward_args(grad_output, x, weight, axis, compare)
    rule = _rule(compare, _DNNL_PRELU)
    dense = _dense_if_broadcast(g) if type(rule) is bool and x.flags.c_contiguous else g
    if dense is not g:  # (a broadcast grad_output made dense: the contiguous path, if it applies)
        result = _prelu_backward_plain(dense, x, weight, axis, out, rule)
        if result is not None:
            return result
        g = dense
    gi_view, gw_view = _prelu_backward_outs(out, x, weight)
    # grad_input is read back while it is written (the kernel makes two passes over each
    # stretch), so any overlap with an input goes through a temporary, even out=x
    direct = gi_view is not None and gi_view.dtype == x.dtype and not any(
        np.may_share_memory(gi_view, a) for a in (g, x, weight))
    grad_input = gi_view if direct else np.empty(x.shape, x.dtype)
    if type(rule) is bool:  # the sums rounded once from their compensated pairs, in the kernel
        grad_weight = np.empty(weight.shape, x.dtype)
        _prelu_backward_into(grad_input, g, x, weight, wshape, rule,
                             out=_kernel_view(grad_weight).reshape(-1))
    else:  # a oneDNN kernel's sums: their zero's sign first (_dnnl_sum_zero), then rounded
        grad_weight = round_grad_weight(
            _prelu_backward_into(grad_input, g, x, weight, wshape, rule), x.dtype)
    if x.dtype == _F64 and not np.isfinite(grad_weight).all():
        _exact_grad_weight(g, x, grad_weight, wshape, rule)
    with np.errstate(over="ignore", invalid="ignore"):  # casts overflow to ±inf
        if gi_view is not None and not direct:
            np.copyto(gi_view, grad_input, casting="unsafe")
        if gw_view is not None:
            np.copyto(gw_view, grad_weight, casting="unsafe")
    if out is None:
        return grad_input, grad_weight
    return _returned(out[0], grad_input), _returned(out[1], grad_weight)
