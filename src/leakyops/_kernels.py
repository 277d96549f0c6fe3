"""Numba kernels of the LeakyReLU family: plain serial loops over views, compiled lazily.

Storage kinds are told apart by the dtype of the view a kernel receives, so that every
kernel is one module-level function that numba caches on disk per signature:

==========  =====================  ================
kind        view the core passes   compute type
==========  =====================  ================
float16     ``uint16`` bits        float32
bfloat16    ``int16`` bits         float32
float32     ``float32``            float32
float64     ``float64``            float64
==========  =====================  ================

A result is computed in the compute type of the *output* view's kind and rounded once into
it; inputs of another kind are widened exactly (``leaky_relu_backward`` promotes). The
comparison is the ``ge`` flag: ``x > 0`` keeps the input (PyTorch, aclnn) or, with
``ge=True``, ``x >= 0`` does (the Ascend C API's documented rule); it is branch-free in the
loop, so both are one loop. In place of the flag a :class:`Rule` selects the formula one of
oneDNN's kernels computes (its eltwise ReLU, its reference and jit PReLU), compiled as a
literal into loops of its own. Each scalar rule is written once (``_keep``, ``_lrelu``,
``_lrelu_grad``, ``_prelu_term``, ``_load``, ``_narrow``) and every loop uses it.

Loops come in two shapes: a ``*_row`` over 1-D views (contiguous or strided) and a driver
``*_nd`` over 3-D views (the core coalesces any shape and strides into three axes). Rows of
a non-contiguous 3-D view are typed 'A' by numba and would not vectorise; the drivers check
their stride and re-type them as contiguous (``_as_c``). Kernels never validate and never
allocate; they release the GIL, and the core runs them on its thread pool.

float16 uses LLVM's ``half`` conversions (F16C instructions on x86), which vectorise; when
the target CPU lacks F16C they would compile to calls of ``__extendhfsf2``/``__truncsfhf2``
that numba's JIT does not resolve, so an exact software conversion replaces them (see
:func:`leakyops._config.use_soft_half`). bfloat16 is the top half of a float32: widening is
a shift, narrowing adds the round-to-nearest-even bias in 32-bit integers. NaN stays NaN
(quiet, sign and top payload bits kept), overflow goes to ±inf.

Everything compiled lives in this one file: numba's disk cache is invalidated by the source
file of the cached function only.
"""

from __future__ import annotations

import warnings

import numpy as np
from llvmlite import ir
from numba import njit, prange, typeof, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload, typeof_impl

from ._config import NJIT_OPTIONS, REDUCE_FASTMATH, cache_enabled, use_soft_half

__all__ = ["VIEW_DTYPES", "Rule", "DNNL_ELTWISE", "DNNL_RELU", "DNNL_REF", "DNNL_JIT",
           "DNNL_JIT_AVX2", "DNNL_JIT_AVX", "DNNL_JIT_SSE41", "DNNL_ELTWISE_HALF", "lrelu_fwd_row", "lrelu_fwd_nd", "lrelu_fwd_row_inplace",
           "lrelu_fwd_nd_inplace", "lrelu_bwd_row", "lrelu_bwd_nd",
           "prelu_fwd_nd", "prelu_bwd_nd", "combine_partials"]

#: The view dtype per storage dtype name (see the table above).
VIEW_DTYPES = {"float16": np.dtype(np.uint16), "bfloat16": np.dtype(np.int16),
               "float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}

_SOFT_HALF = use_soft_half()


def _jit(fn=None, **extra):
    """``njit`` with the project's options, cached on disk when a cache directory works."""
    options = dict(NJIT_OPTIONS)
    options.update(extra)

    def wrap(f):
        if cache_enabled():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return njit(cache=True, **options)(f)
            except Exception:  # no writable cache locator (read-only install and home)
                pass
        return njit(**options)(f)

    return wrap(fn) if fn is not None else wrap


def entry_point(kernel, *args):
    """The compiled function that ``kernel`` runs for arguments of the types of ``args``.

    Calling it directly skips numba's type dispatch (a large share of a small call's time;
    figures in docs/benchmarks.md); the caller must then pass arguments of exactly those types, because numba does not
    check them there (an array of another dtype would be read as this one). Python bools
    (the flags: the comparison, the weight's layout) are compiled as literals, so each value
    gets its own loop with the flag folded in (one compare less per vector); a :class:`Rule`
    is a literal by its type already.
    """
    sig = tuple(types.literal(a) if isinstance(a, bool) else typeof(a) for a in args)
    return kernel.compile(sig)


# ---------------------------------------------------------------------------------------------
# bit-level conversions


@intrinsic
def _u32_as_f32(typingctx, bits):
    """Reinterpret the low 32 bits of an integer as a float32."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        low = context.cast(builder, args[0], signature.args[0], types.uint32)
        return builder.bitcast(low, ir.FloatType())

    return types.float32(bits), codegen


@intrinsic
def _f32_as_u32(typingctx, value):
    """Reinterpret a float32 as a uint32."""
    if value != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@intrinsic
def _h2f_llvm(typingctx, bits):
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        low = context.cast(builder, args[0], signature.args[0], types.uint16)
        return builder.fpext(builder.bitcast(low, ir.HalfType()), ir.FloatType())

    return types.float32(bits), codegen


@intrinsic
def _f2h_llvm(typingctx, value):
    if value != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(types.float32), codegen


@njit(**NJIT_OPTIONS)  # (not inline="always": see f2h_soft)
def h2f_soft(h):
    """float16 bits to float32, exactly, in integer arithmetic."""
    h32 = np.uint32(np.uint16(h))
    sign = (h32 & np.uint32(0x8000)) << np.uint32(16)
    exp = (h32 >> np.uint32(10)) & np.uint32(0x1F)
    mant = h32 & np.uint32(0x3FF)
    if exp == 0x1F:
        return _u32_as_f32(sign | np.uint32(0x7F800000) | (mant << np.uint32(13)))
    if exp == 0:
        # subnormal or zero: mant * 2**-24, exact in float32
        mag = np.float32(mant) * np.float32(5.960464477539063e-08)
        return -mag if sign else mag
    return _u32_as_f32(sign | ((exp + np.uint32(112)) << np.uint32(23)) | (mant << np.uint32(13)))


@njit(**NJIT_OPTIONS)
def f2h_soft(value):
    """float32 to float16 bits, to nearest with ties to even, in integer arithmetic.

    Not ``inline="always"`` (nor ``h2f_soft``): numba 0.68's own inlining of their branches
    into some loops trips its internal IR check (``NumbaIRAssumptionWarning``: "variable ...
    is not in scope"); as plain functions LLVM still inlines them.
    """
    u = _f32_as_u32(value)
    sign = np.uint32((u >> np.uint32(16)) & np.uint32(0x8000))
    a = u & np.uint32(0x7FFFFFFF)
    if a >= np.uint32(0x7F800000):  # inf or NaN (NaN: quiet, keep the top payload bits)
        nan_bits = np.uint32(0x200) | ((a >> np.uint32(13)) & np.uint32(0x3FF))
        return np.uint16(sign | np.uint32(0x7C00) | (nan_bits if a > np.uint32(0x7F800000) else np.uint32(0)))
    if a >= np.uint32(0x477FF000):  # >= 65520: rounds to inf
        return np.uint16(sign | np.uint32(0x7C00))
    if a < np.uint32(0x38800000):  # below 2**-14: a float16 subnormal (or zero)
        if a <= np.uint32(0x33000000):  # <= 2**-25: rounds to zero (2**-25 is a tie to even 0)
            return np.uint16(sign)
        e = a >> np.uint32(23)
        m = (a & np.uint32(0x7FFFFF)) | np.uint32(0x800000)
        shift = np.uint32(126) - e
        r = m >> shift
        rem = m & ((np.uint32(1) << shift) - np.uint32(1))
        half = np.uint32(1) << (shift - np.uint32(1))
        if rem > half or (rem == half and (r & np.uint32(1))):
            r += np.uint32(1)
        return np.uint16(sign | r)
    a = a + np.uint32(0xFFF) + ((a >> np.uint32(13)) & np.uint32(1))
    return np.uint16(sign | ((a >> np.uint32(13)) - np.uint32(112 << 10)))


@intrinsic
def _bf2f(typingctx, bits):
    """Widen bfloat16 bits to float32 (exact)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        low = context.cast(builder, args[0], signature.args[0], types.uint16)
        wide = builder.shl(builder.zext(low, i32), ir.Constant(i32, 16))
        return builder.bitcast(wide, ir.FloatType())

    return types.float32(bits), codegen


@intrinsic
def _f2bf(typingctx, value):
    """Round float32 to bfloat16 bits (as int16), to nearest with ties to even.

    Written in 32-bit LLVM integer operations (numba would widen them to 64 bits, which
    halves the vector width of the loops that use it).
    """
    if value != types.float32:
        return None

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        u = builder.bitcast(args[0], i32)
        hi = builder.lshr(u, ir.Constant(i32, 16))
        bias = builder.add(builder.and_(hi, ir.Constant(i32, 1)), ir.Constant(i32, 0x7FFF))
        rounded = builder.lshr(builder.add(u, bias), ir.Constant(i32, 16))
        quiet = builder.or_(hi, ir.Constant(i32, 0x40))
        is_nan = builder.fcmp_unordered("uno", args[0], args[0])
        return builder.trunc(builder.select(is_nan, quiet, rounded), ir.IntType(16))

    return types.int16(types.float32), codegen


@intrinsic
def _as_c(typingctx, arr):
    """The same 1-D array typed as C-contiguous (the caller checked its stride)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None
    ret = arr.copy(layout="C")

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return ret(arr), codegen


# ---------------------------------------------------------------------------------------------
# the scalar rules, dispatched on the view's element type


# The inline="always" helpers are pure functions of values; stores stay in the loops, and
# their arguments are plain names or subscripts. numba 0.68 mis-inlines otherwise (seen
# here: an inlined helper that wrote ``out[k]`` was dropped from the loop, and one called
# with a conditional expression as argument wrote nothing).


def _widen(v):
    """A stored element as float32 (half kinds, float32) or float64 (float64), exactly."""


def _load(v, like):
    """A stored element as the compute type of the result array ``like`` (exact)."""


def _load64(v):
    """A stored element as float64 (exact)."""


def _narrow(value, like):
    """A compute-type value rounded once to the element type of the result array ``like``."""


@overload(_widen, inline="always", jit_options=NJIT_OPTIONS)
def _ol_widen(v):
    if v == types.uint16:
        return (lambda v: h2f_soft(v)) if _SOFT_HALF else (lambda v: _h2f_llvm(v))
    if v == types.int16:
        return lambda v: _bf2f(v)
    if v in (types.float32, types.float64):
        return lambda v: v
    return None


@overload(_load, inline="always", jit_options=NJIT_OPTIONS)
def _ol_load(v, like):
    if like.dtype == types.float64:
        return lambda v, like: np.float64(_widen(v))
    return lambda v, like: _widen(v)


@overload(_load64, inline="always", jit_options=NJIT_OPTIONS)
def _ol_load64(v):
    return lambda v: np.float64(_widen(v))


@overload(_narrow, inline="always", jit_options=NJIT_OPTIONS)
def _ol_narrow(value, like):
    dt = like.dtype
    if dt == types.uint16:
        return (lambda value, like: f2h_soft(value)) if _SOFT_HALF else (lambda value, like: _f2h_llvm(value))
    if dt == types.int16:
        return lambda value, like: _f2bf(value)
    if dt in (types.float32, types.float64):
        return lambda value, like: value
    return None


def _scalar(s, like):
    """A slope (any float) in the compute type of the result array ``like``, rounded once."""


@overload(_scalar, inline="always", jit_options=NJIT_OPTIONS)
def _ol_scalar(s, like):
    if like.dtype == types.float64:
        return lambda s, like: np.float64(s)
    return lambda s, like: np.float32(s)


# ---------------------------------------------------------------------------------------------
# the rule: which input is kept, and how the other branch is formed
#
# Every loop takes the rule as its ``ge`` argument. A bool is the comparison (``x > 0``, or
# ``x >= 0`` with True): the core and the aclnn, Ascend C and torch front-ends use it. A
# :class:`Rule` selects the formula a oneDNN kernel computes (``leakyops.onednn``, through the
# core's ``compare=`` values "dnnl-…"): numba types it as an integer literal (see
# ``_typeof_rule``), so each rule compiles to its own loop with the formula folded in, and the
# bool loops are the code they always were.


class Rule(int):
    """A oneDNN kernel's formula, passed where the comparison flag ``ge`` goes."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Rule({int(self)}: {_RULE_NAMES.get(int(self), '?')})"


#: oneDNN's eltwise ReLU with alpha != 0 (LeakyReLU): ``x * s if x <= 0 else x``; NaN is not
#: ``<= 0``, so it passes through unchanged (f32 signalling NaNs stay signalling).
DNNL_ELTWISE = Rule(2)
#: oneDNN's eltwise ReLU with alpha == 0 (x86 ``maxps(x, +0)``): ``x if x > 0 else +0``;
#: negatives, -0, -inf and NaN all give +0.
DNNL_RELU = Rule(3)
#: oneDNN's reference PReLU (``ref_prelu.cpp``): the forward and ``diff_src`` as ``>``; the
#: ``diff_slope`` terms are float32 products ``diff_dst * src`` (NaN ``src`` included) and
#: their sum is the plain IEEE sum (a sum of -0 terms is -0).
DNNL_REF = Rule(4)
#: oneDNN's jit PReLU on AVX-512 (``jit_uni_prelu_*_kernel``, Zmm): forward
#: ``fma(min(0, x), w, max(0, x))``; backward ``diff_src = w*dd`` where ``x <= 0``, ``1*dd``
#: where ``x > 0``, ``0*dd`` where x is NaN (neither), and ``diff_slope`` terms
#: ``dd * x`` where ``x <= 0``, else +0 (NaN left out).
DNNL_JIT = Rule(5)
#: The same kernels on AVX2 (Ymm): the forward as AVX-512; the backward from 0/1 factors,
#: ``diff_src = (le*w + gt) * dd`` and terms ``(dd*x) * le`` (``le = x <= 0``, ``gt = x > 0``
#: as 1.0/0.0), so a NaN ``src`` gives a NaN term and an infinite product times 0 is NaN.
DNNL_JIT_AVX2 = Rule(6)
#: On AVX (no FMA): the forward ``min(0, x)*w + max(0, x)`` in two roundings; the backward as
#: AVX2.
DNNL_JIT_AVX = Rule(7)
#: On SSE4.1: the forward as AVX; in the backward ``gt`` is "not ``x <= 0``" (the legacy
#: ``cmpps`` has no ``>`` predicate), so a NaN ``src`` takes the ``x > 0`` branch.
DNNL_JIT_SSE41 = Rule(8)
#: ``DNNL_ELTWISE`` for float16 and bfloat16 data: NaN comes back quiet, as oneDNN's
#: conversions through float32 leave it (only float32 keeps a signalling NaN unchanged).
DNNL_ELTWISE_HALF = Rule(9)

_RULE_NAMES = {2: "dnnl eltwise", 3: "dnnl relu", 4: "dnnl ref", 5: "dnnl jit avx512",
               6: "dnnl jit avx2", 7: "dnnl jit avx", 8: "dnnl jit sse41",
               9: "dnnl eltwise half"}
_FMA_FWD = (5, 6)            # forward with one rounding (FMA)
_VEX_BWD = (6, 7)            # backward from 0/1 factors


@typeof_impl.register(Rule)
def _typeof_rule(val, c):
    return types.literal(int(val))


_NO_RULE = -1


def _rule_of(ge):
    """The rule an argument type stands for: None for the comparison flag (a bool type),
    ``_NO_RULE`` for a type that is neither (an overload then offers no implementation: numba
    types the literal it was given, not this)."""
    if isinstance(ge, types.Boolean):
        return None
    if isinstance(ge, types.IntegerLiteral) and ge.literal_value in _RULE_NAMES:
        return ge.literal_value
    return _NO_RULE


def _keep(v, ge):
    """Whether the input is kept: ``v > 0``, or ``v >= 0`` with ``ge`` (NaN: never).

    The comparison flag only: a :class:`Rule` has its own formulas below.
    """


@overload(_keep, inline="always", jit_options=NJIT_OPTIONS)
def _ol_keep(v, ge):
    if _rule_of(ge) is None:
        return lambda v, ge: (v > 0) | (ge & (v == 0))
    return None


@intrinsic
def _select(typingctx, cond, a, b):
    """``a if cond else b`` as one LLVM ``select`` (no branch, no phi: numba 0.68 mis-scopes
    the phi nodes of several conditional expressions in an inlined helper). ``a`` and ``b``
    are unified (``np.float32`` constants take a float64 operand's type)."""
    if not isinstance(cond, types.Boolean):
        return None
    rtype = typingctx.unify_pairs(a, b)
    if not isinstance(rtype, types.Float):
        return None

    def codegen(context, builder, signature, args):
        c, x, y = args
        x = context.cast(builder, x, signature.args[1], rtype)
        y = context.cast(builder, y, signature.args[2], rtype)
        return builder.select(c, x, y)

    return rtype(cond, a, b), codegen


@intrinsic
def _mul_first_nan(typingctx, a, b):
    """``a * b`` where a NaN ``a`` gives ``a`` quieted, whatever ``b`` is: x86's rule for
    ``mulps a, b`` when both operands are NaN (the first source wins), written out because
    LLVM treats ``fmul`` as commutative and may swap the operands. The quiet bit is set in
    integers, so no floating-point fold can replace the NaN kept."""
    if not (isinstance(a, types.Float) and a == b):
        return None
    width = a.bitwidth

    def codegen(context, builder, signature, args):
        x, y = args
        ity = ir.IntType(width)
        quiet = ir.Constant(ity, 1 << (22 if width == 32 else 51))
        kept = builder.bitcast(builder.or_(builder.bitcast(x, ity), quiet), x.type)
        return builder.select(builder.fcmp_unordered("uno", x, x), kept, builder.fmul(x, y))

    return a(a, b), codegen


def _lrelu(v, s, ge):
    """The forward rule on compute-type values: ``v`` where kept, else ``v * s`` (or a Rule's
    formula)."""


@overload(_lrelu, inline="always", prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_lrelu(v, s, ge):
    rule = _rule_of(ge)
    if rule is None:
        return lambda v, s, ge: _select(_keep(v, ge), v, v * s)
    if rule == DNNL_REF:  # (NaN v: its own payload, quieted, whatever the slope)
        return lambda v, s, ge: _select(v > 0, v, _select(v != v, v + v, v * s))
    if rule == DNNL_ELTWISE:
        return lambda v, s, ge: _select(v <= 0, v * s, v)
    if rule == DNNL_ELTWISE_HALF:
        return lambda v, s, ge: _select(v <= 0, v * s, _select(v != v, v + v, v))
    if rule == DNNL_RELU:
        return lambda v, s, ge: _select(v > 0, v, np.float32(0.0))
    if rule in _FMA_FWD:
        return _minmax_fused
    if rule in (DNNL_JIT_AVX, DNNL_JIT_SSE41):
        return _minmax_two_roundings
    return None


def _minmax_fused(v, s, ge):
    """``fma(min(0, v), s, max(0, v))`` (one rounding), case by case without an FMA:
    ``v < 0``: ``v*s`` plus a zero that only matters where the product is zero, +0 for a zero
    slope (an exact zero product) and -0 otherwise (keeping an underflowed product's sign);
    ``v > 0``: ``v + 0*s`` (NaN for an infinite or NaN slope); ``v`` zero: ``v*s + v``; NaN
    ``v``: itself, quieted (the kernels' operand order makes its payload win). Written with
    selects between computed values only: LLVM rewrites ``0 < v ? 0 : v`` on float16 data
    into ``v >= 0 ? 0 : v``, which differs at ``v = -0``."""
    z = _select(s == 0, np.float32(0.0), np.float32(-0.0))
    r = _select(v < 0, v * s + z, _select(v > 0, v + np.float32(0.0) * s, v * s + v))
    return _select(v != v, v + v, r)


def _minmax_two_roundings(v, s, ge):
    """``min(0, v)*s + max(0, v)`` in two roundings (AVX and SSE4.1 have no FMA): as
    ``_minmax_fused`` with +0 added to every negative ``v``'s product."""
    r = _select(v < 0, v * s + np.float32(0.0),
                _select(v > 0, v + np.float32(0.0) * s, v * s + v))
    return _select(v != v, v + v, r)


def _lrelu_grad(gv, tv, s, ge):
    """The backward rule on compute-type values: ``gv`` where ``tv`` is kept, else ``gv * s``
    (or a Rule's formula)."""


@overload(_lrelu_grad, inline="always", prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_lrelu_grad(gv, tv, s, ge):
    rule = _rule_of(ge)
    if rule is None:
        return lambda gv, tv, s, ge: _select(_keep(tv, ge), gv, gv * s)
    # Every oneDNN kernel multiplies the factor by diff_dst with the factor as the first
    # source (``vmulps(diff_src, factor, diff_dst)``; the reference kernel as compiled), so a
    # NaN factor's payload wins over a NaN diff_dst: ``_mul_first_nan`` keeps that order.
    if rule == DNNL_REF:
        return lambda gv, tv, s, ge: _select(tv > 0, gv, _mul_first_nan(s, gv))
    if rule == DNNL_JIT:  # masked moves: w where x <= 0, 1 where x > 0, 0 where x is NaN
        return lambda gv, tv, s, ge: _mul_first_nan(_select(
            tv <= 0, s, _select(tv > 0, np.float32(1.0), np.float32(0.0))), gv)
    if rule in _VEX_BWD:  # factors le*w + gt, le and gt 1.0 or 0.0
        return lambda gv, tv, s, ge: _mul_first_nan(
            _select(tv <= 0, np.float32(1.0), np.float32(0.0)) * s
            + _select(tv > 0, np.float32(1.0), np.float32(0.0)), gv)
    if rule == DNNL_JIT_SSE41:  # gt is "not <=": NaN counts as > 0
        return lambda gv, tv, s, ge: _mul_first_nan(
            _select(tv <= 0, np.float32(1.0), np.float32(0.0)) * s
            + _select(tv <= 0, np.float32(0.0), np.float32(1.0)), gv)
    return None


def _term32(xv, gv, ge):
    """A oneDNN rule's weight-gradient term: the float32 product ``gv * xv`` where the kernel
    counts the element (float32 values in, a float32 out)."""


@overload(_term32, inline="always", prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_term32(xv, gv, ge):
    rule = _rule_of(ge)
    if rule == DNNL_REF:
        return lambda xv, gv, ge: _select(xv > 0, np.float32(0.0), gv * xv)
    if rule == DNNL_JIT:
        return lambda xv, gv, ge: _select(xv <= 0, gv * xv, np.float32(0.0))
    if rule in (DNNL_JIT_AVX2, DNNL_JIT_AVX, DNNL_JIT_SSE41):
        return lambda xv, gv, ge: (gv * xv) * _select(xv <= 0, np.float32(1.0), np.float32(0.0))
    return None


def _sum_start(ge):
    """The value a weight-gradient sum starts from: +0 for the comparison flag; -0 for a
    oneDNN rule, whose sums are plain IEEE sums of their terms (-0 when every term is -0)."""


@overload(_sum_start, inline="always", prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_sum_start(ge):
    if _rule_of(ge) == _NO_RULE:
        return None
    if _rule_of(ge) is None:
        return lambda ge: 0.0
    return lambda ge: -0.0


def _start_partials(partials, ge):
    """Set the sums of (acc, comp) pairs to their start (``_sum_start``); acc rows only."""


@overload(_start_partials, inline="always", prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_start_partials(partials, ge):
    if _rule_of(ge) == _NO_RULE:
        return None
    if _rule_of(ge) is None:
        return lambda partials, ge: None

    def start(partials, ge):
        for p in range(partials.shape[0]):
            for m in range(partials.shape[2]):
                partials[p, 0, m] = -0.0
    return start


@njit(inline="always", **NJIT_OPTIONS)
def _unit_stride(a):
    """Whether a 1-D view's elements are adjacent (its loop then runs on a contiguous view)."""
    return a.strides[0] == a.itemsize


# ---------------------------------------------------------------------------------------------
# leaky_relu forward: y = x if keep(x) else x * s


@_jit
def lrelu_fwd_row(x, out, s, ge):
    sc = _scalar(s, out)
    for k in range(x.shape[0]):
        v = _load(x[k], out)
        r = _lrelu(v, sc, ge)
        out[k] = _narrow(r, out)


@_jit
def lrelu_fwd_nd(x, out, s, ge):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            xr, outr = x[i, j], out[i, j]
            if _unit_stride(xr) and _unit_stride(outr):
                lrelu_fwd_row(_as_c(xr), _as_c(outr), s, ge)
            else:
                lrelu_fwd_row(xr, outr, s, ge)


@_jit
def lrelu_fwd_row_inplace(x, s, ge):
    """The forward written into ``x``: one array, so LLVM needs no overlap check.

    (With ``out`` the same memory as ``x``, the vectoriser's run-time overlap check fails
    and the scalar loop runs: in place was 4x slower than out-of-place.)
    """
    sc = _scalar(s, x)
    for k in range(x.shape[0]):
        v = _load(x[k], x)
        r = _lrelu(v, sc, ge)
        x[k] = _narrow(r, x)


@_jit
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


@_jit
def lrelu_bwd_row(g, t, out, s, ge):
    sc = _scalar(s, out)
    for k in range(t.shape[0]):
        gv = _load(g[k], out)
        tv = _load(t[k], out)
        r = _lrelu_grad(gv, tv, sc, ge)
        out[k] = _narrow(r, out)


@_jit
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


@_jit
def prelu_fwd_row(x, w, base, ws, out, ge):
    for k in range(x.shape[0]):
        v = _load(x[k], out)
        wv = _load(w[base + k * ws], out)
        r = _lrelu(v, wv, ge)
        out[k] = _narrow(r, out)


@_jit
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
# The weight-gradient terms are formed and summed in float64 (x * g is exact there for the
# float32 and half kinds). Sums are compensated (Kahan): ``acc`` and ``comp`` are float64
# views broadcast like ``w``, and the sum is ``acc - comp``. Within a row, the float32 and half
# kinds sum their exact terms in vectorised blocks whose sums are added compensated (far below
# the result's precision); float64 data, whose terms are rounded, sums them in eight
# compensated lanes (``_prelu_bwd_row_reduce_lanes``), so the error is a few ulps of the
# absolute sum, does not grow with the row's length, and does not depend on the CPU.

_BLOCK = 2048  # elements per L1 stretch; for the float32 and half kinds, per vectorised block
_LANES = 8  # float64 data: compensated sums in this many lanes, element k in lane k % 8


@njit(inline="always", **NJIT_OPTIONS)
def _kahan_add(s, c, t):
    """One compensated step: returns the new (sum, compensation); the value is sum - comp.

    Once the sum is ±inf or NaN the compensation is dropped (it would turn inf into NaN).
    """
    y = t - c
    u = s + y
    d = (u - s) - y
    return u, d if abs(u) < np.inf else 0.0


def _prelu_term(x64, g64, ge):
    """The weight-gradient term of one element in float64 (exact for the float32 and half
    kinds): 0 where x is kept, else x * g; a oneDNN rule's float32 product (``_term32``)."""


@overload(_prelu_term, inline="always", prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_prelu_term(x64, g64, ge):
    if _rule_of(ge) == _NO_RULE:
        return None
    if _rule_of(ge) is None:
        return lambda x64, g64, ge: _select(_keep(x64, ge), 0.0, x64 * g64)
    return lambda x64, g64, ge: np.float64(_term32(np.float32(x64), np.float32(g64), ge))


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


@_jit(fastmath=REDUCE_FASTMATH)
def _prelu_bwd_terms_sum(g, x, ge):
    part = _sum_start(ge)
    for k in range(x.shape[0]):  # from 0: lets LLVM drop negative-index wraparound
        term = _prelu_bwd_term(g, x, k, ge)
        part += term
    return part


@_jit
def _prelu_bwd_row_reduce_blocks(g, x, gi, s, ge):
    # two passes over each stretch of _BLOCK elements while it is in L1: grad_input (the
    # leaky_relu backward loop, full-width vectors), then the float64 sum of the terms
    n = x.shape[0]
    total, comp = _sum_start(ge), 0.0
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        lrelu_bwd_row(g[start:stop], x[start:stop], gi[start:stop], s, ge)
        part = _prelu_bwd_terms_sum(g[start:stop], x[start:stop], ge)
        total, comp = _kahan_add(total, comp, part)
    return total, comp


@njit(inline="always", **NJIT_OPTIONS)
def _kahan_lanes(sums, comps, g, x, k, ge):
    """Add the terms of elements k … k+7 into the eight compensated lanes."""
    s0, s1, s2, s3, s4, s5, s6, s7 = sums
    c0, c1, c2, c3, c4, c5, c6, c7 = comps
    s0, c0 = _kahan_add(s0, c0, _prelu_bwd_term(g, x, k, ge))
    s1, c1 = _kahan_add(s1, c1, _prelu_bwd_term(g, x, k + 1, ge))
    s2, c2 = _kahan_add(s2, c2, _prelu_bwd_term(g, x, k + 2, ge))
    s3, c3 = _kahan_add(s3, c3, _prelu_bwd_term(g, x, k + 3, ge))
    s4, c4 = _kahan_add(s4, c4, _prelu_bwd_term(g, x, k + 4, ge))
    s5, c5 = _kahan_add(s5, c5, _prelu_bwd_term(g, x, k + 5, ge))
    s6, c6 = _kahan_add(s6, c6, _prelu_bwd_term(g, x, k + 6, ge))
    s7, c7 = _kahan_add(s7, c7, _prelu_bwd_term(g, x, k + 7, ge))
    return (s0, s1, s2, s3, s4, s5, s6, s7), (c0, c1, c2, c3, c4, c5, c6, c7)


@_jit
def _prelu_bwd_row_reduce_lanes(g, x, gi, s, ge):
    # float64 data, whose terms are rounded products: every term goes into one of eight
    # compensated (Kahan) sums, element k into lane k % 8, and the lanes are added
    # compensated at the end. The order is written out here, not left to the vectoriser,
    # so the bits do not depend on the CPU's vector width.
    n = x.shape[0]
    z = _sum_start(ge)
    zero = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    sums, comps = (z, z, z, z, z, z, z, z), zero
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        lrelu_bwd_row(g[start:stop], x[start:stop], gi[start:stop], s, ge)
        for k in range(start, stop - _LANES + 1, _LANES):
            sums, comps = _kahan_lanes(sums, comps, g, x, k, ge)
    total, comp = z, 0.0
    for k in range(n - n % _LANES, n):  # the tail, in order
        total, comp = _kahan_add(total, comp, _prelu_bwd_term(g, x, k, ge))
    for lane in range(_LANES):
        total, comp = _kahan_add(total, comp, sums[lane])
        total, comp = _kahan_add(total, comp, -comps[lane])
    return total, comp


def _prelu_bwd_row_reduce(g, x, gi, s, ge):
    """Sum of a row's weight-gradient terms as a compensated (sum, compensation) pair."""


@overload(_prelu_bwd_row_reduce, jit_options=NJIT_OPTIONS)
def _ol_prelu_bwd_row_reduce(g, x, gi, s, ge):
    if x.dtype == types.float64:
        return lambda g, x, gi, s, ge: _prelu_bwd_row_reduce_lanes(g, x, gi, s, ge)
    return lambda g, x, gi, s, ge: _prelu_bwd_row_reduce_blocks(g, x, gi, s, ge)


@_jit
def _prelu_bwd_row(g, x, gi, w, acc, comp, base, ws, ge):
    for k in range(x.shape[0]):
        m = base + k * ws
        wv = _load(w[m], gi)
        term = _prelu_bwd_step(g, x, gi, wv, k, ge)
        a, c = acc[m], comp[m]
        acc[m], comp[m] = _kahan_add(a, c, term)


@_jit
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
                if _unit_stride(gr) and _unit_stride(xr) and _unit_stride(gir):
                    total, c = _prelu_bwd_row_reduce(_as_c(gr), _as_c(xr), _as_c(gir), s, ge)
                else:
                    total, c = _prelu_bwd_row_reduce(gr, xr, gir, s, ge)
                a0, c0 = acc[base], comp[base]
                a, b = _kahan_add(a0, c0, total)
                acc[base] = a
                comp[base] = b + c
            else:
                _prelu_bwd_row(gr, xr, gir, w, acc, comp, base, ws2, ge)


@_jit
def combine_partials(partials, out, ge):
    """``out[j] = sum_i (partials[i, 0, j] - partials[i, 1, j])``, compensated, i = 0, 1, …
    (from ``_sum_start(ge)``)."""
    for j in range(out.shape[0]):
        total, comp = _sum_start(ge), 0.0
        for i in range(partials.shape[0]):
            hi, lo = partials[i, 0, j], -partials[i, 1, j]
            total, comp = _kahan_add(total, comp, hi)
            total, comp = _kahan_add(total, comp, lo)
        out[j] = total - comp


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


@_jit
def copy_row(src, dst):
    for k in range(src.shape[0]):
        dst[k] = src[k]


@_jit(parallel=True)
def copy_row_par(src, dst, nthreads):
    n = src.shape[0]
    for c in prange(nthreads):
        lo, hi = _chunk(n, nthreads, c)
        copy_row(src[lo:hi], dst[lo:hi])


@njit(inline="always", **NJIT_OPTIONS)
def _part(n, parts, c):
    """Bounds ``(lo, hi)`` of part ``c`` when ``n`` rows are split into ``parts``."""
    step = (n + parts - 1) // parts
    lo = min(c * step, n)
    return lo, min(lo + step, n)


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


@_jit
def prelu_fwd_c(x, out, w, per_k, ge, axis, lo, hi):
    i0, i1, j0, j1 = _ranges(x.shape, axis, lo, hi)
    for i in range(i0, i1):
        for j in range(j0, j1):
            if per_k:
                for k in range(x.shape[2]):
                    v = _load(x[i, j, k], out)
                    wv = _load(w[k], out)
                    r = _lrelu(v, wv, ge)
                    out[i, j, k] = _narrow(r, out)
            else:
                s = _load(w[j], out)
                for k in range(x.shape[2]):
                    v = _load(x[i, j, k], out)
                    r = _lrelu(v, s, ge)
                    out[i, j, k] = _narrow(r, out)


@_jit
def prelu_fwd_c_run(x, out, w, per_k, ge, axis):
    prelu_fwd_c(x, out, w, per_k, ge, axis, 0, x.shape[axis])


@_jit(parallel=True)
def prelu_fwd_c_run_par(x, out, w, per_k, ge, axis, nthreads):
    n = x.shape[axis]
    for c in prange(nthreads):
        lo, hi = _part(n, nthreads, c)
        prelu_fwd_c(x, out, w, per_k, ge, axis, lo, hi)


def _term_of(xs, gs, xv, gv, ge):
    """The weight-gradient term of stored elements ``xs``, ``gs`` whose compute-type values
    are ``xv``, ``gv``, exact, in the type ``_sum_zero`` gives for their kind."""


@overload(_term_of, inline="always", jit_options=NJIT_OPTIONS)
def _ol_term_of(xs, gs, xv, gv, ge):
    if _rule_of(ge) == _NO_RULE:
        return None
    if xs == types.uint16:  # float16: a product of two halves is exact in float32
        if _rule_of(ge) is not None:
            return lambda xs, gs, xv, gv, ge: _term32(xv, gv, ge)
        return lambda xs, gs, xv, gv, ge: np.float32(0.0) if _keep(xv, ge) else xv * gv
    return lambda xs, gs, xv, gv, ge: _prelu_term(_load64(xs), _load64(gs), ge)


def _sum_zero(xs, ge):
    """The zero a sum of ``_term_of`` terms of kind ``xs`` starts from: float32 for float16
    (exact products; a stretch of at most 2,048 summed in full-width vectors then added
    compensated in float64: far below float16's precision, and float32 cannot overflow
    there), float64 otherwise (float32 and bfloat16 products need float64 to be exact)."""


@overload(_sum_zero, inline="always", prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_sum_zero(xs, ge):
    if _rule_of(ge) == _NO_RULE:
        return None
    signed = _rule_of(ge) is not None  # -0 for a oneDNN rule (see _sum_start)
    if xs.dtype == types.uint16:
        if signed:
            return lambda xs, ge: np.float32(-0.0)
        return lambda xs, ge: np.float32(0.0)
    return lambda xs, ge: _sum_start(ge)


@_jit(fastmath=REDUCE_FASTMATH)
def _prelu_terms_sum_c(g, x, i, j, k0, k1, ge):
    """Sum of the terms of row (i, j), elements k0:k1 (float32 and half kinds: exact terms,
    summed in an order the vectoriser picks)."""
    part = _sum_zero(x, ge)
    for k in range(np.uint64(k0), np.uint64(k1)):
        xs = x[i, j, k]
        gs = g[i, j, k]
        term = _term_of(xs, gs, _widen(xs), _widen(gs), ge)
        part += term
    return np.float64(part)


@_jit
def _prelu_terms_kahan_c(g, x, i, j, k0, k1, ge):
    """The same for float64 data, whose terms are rounded: eight compensated lanes in a
    written-out order (element k in lane (k - k0) % 8), returned as a (sum, comp) pair."""
    z = _sum_start(ge)
    zero = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    sums, comps = (z, z, z, z, z, z, z, z), zero
    k = k0
    while k + _LANES <= k1:
        sums, comps = _kahan_lanes3(sums, comps, g, x, i, j, k, ge)
        k += _LANES
    total, comp = z, 0.0
    for kk in range(k, k1):  # the tail, in order
        total, comp = _kahan_add(total, comp, _prelu_term(_load64(x[i, j, kk]), _load64(g[i, j, kk]), ge))
    for lane in range(_LANES):
        total, comp = _kahan_add(total, comp, sums[lane])
        total, comp = _kahan_add(total, comp, -comps[lane])
    return total, comp


@njit(inline="always", **NJIT_OPTIONS)
def _kahan_lanes3(sums, comps, g, x, i, j, k, ge):
    """Add the terms of elements k … k+7 of row (i, j) into the eight compensated lanes."""
    s0, s1, s2, s3, s4, s5, s6, s7 = sums
    c0, c1, c2, c3, c4, c5, c6, c7 = comps
    s0, c0 = _kahan_add(s0, c0, _prelu_term(_load64(x[i, j, k]), _load64(g[i, j, k]), ge))
    s1, c1 = _kahan_add(s1, c1, _prelu_term(_load64(x[i, j, k + 1]), _load64(g[i, j, k + 1]), ge))
    s2, c2 = _kahan_add(s2, c2, _prelu_term(_load64(x[i, j, k + 2]), _load64(g[i, j, k + 2]), ge))
    s3, c3 = _kahan_add(s3, c3, _prelu_term(_load64(x[i, j, k + 3]), _load64(g[i, j, k + 3]), ge))
    s4, c4 = _kahan_add(s4, c4, _prelu_term(_load64(x[i, j, k + 4]), _load64(g[i, j, k + 4]), ge))
    s5, c5 = _kahan_add(s5, c5, _prelu_term(_load64(x[i, j, k + 5]), _load64(g[i, j, k + 5]), ge))
    s6, c6 = _kahan_add(s6, c6, _prelu_term(_load64(x[i, j, k + 6]), _load64(g[i, j, k + 6]), ge))
    s7, c7 = _kahan_add(s7, c7, _prelu_term(_load64(x[i, j, k + 7]), _load64(g[i, j, k + 7]), ge))
    return (s0, s1, s2, s3, s4, s5, s6, s7), (c0, c1, c2, c3, c4, c5, c6, c7)


@_jit(fastmath=REDUCE_FASTMATH)
def _prelu_bwd_row_fused(g, x, gi, i, j, k0, k1, s, ge):
    """Write ``gi`` over row (i, j), elements k0:k1, and return the sum of their terms, in one
    loop (float32 and half kinds: exact terms, summed in an order the vectoriser picks)."""
    part = _sum_zero(x, ge)
    for k in range(np.uint64(k0), np.uint64(k1)):
        xs = x[i, j, k]
        gs = g[i, j, k]
        xv = _load(xs, gi)
        gv = _load(gs, gi)
        r = _lrelu_grad(gv, xv, s, ge)
        gi[i, j, k] = _narrow(r, gi)
        part += _term_of(xs, gs, xv, gv, ge)
    return np.float64(part)


def _fused(like, n):
    """Whether rows of ``n`` elements of a ``like`` result take the one-loop backward."""


@overload(_fused, inline="always", jit_options=NJIT_OPTIONS)
def _ol_fused(like, n):
    # float32 and float16: one loop was faster at every row length measured (figures in
    # docs/benchmarks.md); bfloat16 only for short rows (its single loop, with float64 terms, runs at a narrower vector
    # width); float64 sums in compensated lanes
    if like.dtype in (types.float32, types.uint16):
        return lambda like, n: True
    if like.dtype == types.float64:
        return lambda like, n: False
    return lambda like, n: n < 256


def _prelu_row_terms(g, x, i, j, k0, k1, ge):
    """Sum of the terms of row (i, j), elements k0:k1, as a (sum, comp) pair."""


@overload(_prelu_row_terms, jit_options=NJIT_OPTIONS)
def _ol_prelu_row_terms(g, x, i, j, k0, k1, ge):
    if x.dtype == types.float64:
        return lambda g, x, i, j, k0, k1, ge: _prelu_terms_kahan_c(g, x, i, j, k0, k1, ge)
    return lambda g, x, i, j, k0, k1, ge: (_prelu_terms_sum_c(g, x, i, j, k0, k1, ge), 0.0)


@_jit
def prelu_bwd_c(g, x, gi, w, acc, comp, per_k, ge, axis, lo, hi):
    """Write ``gi`` over the range and add the weight gradient into (``acc``, ``comp``)."""
    i0, i1, j0, j1 = _ranges(x.shape, axis, lo, hi)
    n2 = x.shape[2]
    for i in range(i0, i1):
        for j in range(j0, j1):
            if per_k:  # channels last: every element has its own weight element
                for k in range(n2):
                    xv = _load(x[i, j, k], gi)
                    gv = _load(g[i, j, k], gi)
                    wv = _load(w[k], gi)
                    r = _lrelu_grad(gv, xv, wv, ge)
                    gi[i, j, k] = _narrow(r, gi)
                    term = _prelu_term(_load64(x[i, j, k]), _load64(g[i, j, k]), ge)
                    a, c = acc[k], comp[k]
                    acc[k], comp[k] = _kahan_add(a, c, term)
                continue
            s = _load(w[j], gi)
            total, tcomp = _sum_start(ge), 0.0
            fused = _fused(gi, n2)
            for start in range(0, n2, _BLOCK):  # stretches that stay in L1
                stop = min(start + _BLOCK, n2)
                if fused:
                    part = _prelu_bwd_row_fused(g, x, gi, i, j, start, stop, s, ge)
                    total, tcomp = _kahan_add(total, tcomp, part)
                    continue
                for k in range(np.uint64(start), np.uint64(stop)):  # two passes
                    xv = _load(x[i, j, k], gi)
                    gv = _load(g[i, j, k], gi)
                    r = _lrelu_grad(gv, xv, s, ge)
                    gi[i, j, k] = _narrow(r, gi)
                part, pcomp = _prelu_row_terms(g, x, i, j, start, stop, ge)
                total, tcomp = _kahan_add(total, tcomp, part)
                total, tcomp = _kahan_add(total, tcomp, -pcomp)
            a, c = acc[j], comp[j]
            a, b = _kahan_add(a, c, total)
            acc[j] = a
            comp[j] = b + tcomp


#: Elements a unit of a split reduction covers, independent of the thread count.
UNIT = 1 << 16
#: Largest float64 memory the per-unit partial sums of prelu_backward may take.
PARTIALS_BUDGET = 1 << 23  # elements (64 MiB)


@njit(inline="always", **NJIT_OPTIONS)
def _prelu_bwd_c_plan(shape, wsize, per_k, nthreads):
    """How ``prelu_bwd_c_run`` splits its work: ``(axis, parts, shared)``.

    Slope per row: along the channels, as many parts as threads, all adding into one pair
    (each channel's rows stay in one part, in order). Channels last: along the rows in units
    of ``UNIT`` elements, each with its own pair. Either way the bits depend on the shapes
    only, not on the thread count.
    """
    if not per_k:
        return 1, max(1, min(nthreads, shape[1])), True
    parts = max(1, min(shape[1], shape[0] * shape[1] * shape[2] // UNIT, PARTIALS_BUDGET // wsize))
    return 1, parts, False


@_jit
def prelu_bwd_c_run(g, x, gi, w, acc, per_k, ge):
    """The whole backward on C-contiguous views, on this thread: ``gi`` written, the float64
    weight gradient in ``acc`` (the threaded twin below gives the same bits)."""
    axis, parts, shared = _prelu_bwd_c_plan(x.shape, w.shape[0], per_k, 1)
    partials = np.zeros((1 if shared else parts, 2, w.shape[0]))
    _start_partials(partials, ge)
    n = x.shape[axis]
    for u in range(parts):
        lo, hi = _part(n, parts, u)
        p = partials[0] if shared else partials[u]
        prelu_bwd_c(g, x, gi, w, p[0], p[1], per_k, ge, axis, lo, hi)
    combine_partials(partials, acc, ge)


@_jit(parallel=True)
def prelu_bwd_c_run_par(g, x, gi, w, acc, per_k, ge, nthreads):
    axis, parts, shared = _prelu_bwd_c_plan(x.shape, w.shape[0], per_k, nthreads)
    partials = np.zeros((1 if shared else parts, 2, w.shape[0]))
    _start_partials(partials, ge)
    n = x.shape[axis]
    for u in prange(parts):
        lo, hi = _part(n, parts, u)
        p = partials[0] if shared else partials[u]
        prelu_bwd_c(g, x, gi, w, p[0], p[1], per_k, ge, axis, lo, hi)
    combine_partials(partials, acc, ge)
