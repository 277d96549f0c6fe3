"""The scalar rules of the kernels: storage conversions and the formulas, each written once.

Storage kinds are told apart by the dtype of the view a kernel receives (``VIEW_DTYPES``);
``_load``/``_narrow`` convert one element exactly to and from the compute type, and
``_lrelu``, ``_lrelu_grad``, ``_prelu_term`` are the operators' formulas on compute-type
values, for the comparison flag or a oneDNN kernel's :class:`Rule`. Everything here ends up
inlined into the loops: the grad_weight terms by numba (``inline="always"``), the others by
LLVM (see "Compiled as functions of their own" below).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload, typeof_impl

from .._config import NJIT_OPTIONS
from ._jit import AVX_BLEND as _AVX_BLEND
from ._jit import BF16_CVT as _BF16_CVT
from ._jit import SOFT_HALF as _SOFT_HALF
from ._vector import (Vec, _is_mask, _operand, blend_avx, blends_avx, clear_avx, round_bf16_hw,
                      vbitcast, vconvert, vlane, vset_lane)


VIEW_DTYPES = {"float16": np.dtype(np.uint16), "bfloat16": np.dtype(np.int16),
               "float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}


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


def _const(builder, ty, value):
    """An LLVM constant of the integer type ``ty`` or of a vector of it (all lanes)."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def _bf16_in_high_half(builder, value, i32):
    """float32 ``value`` (LLVM, a scalar or vector of ``i32``'s shape) rounded to bfloat16, to
    nearest with ties to even, in the upper 16 bits of an ``i32`` (the lower bits are left
    over): ``u + 0x7FFF + (bit 16 of u)``; NaN quiet with its top payload (bit 22 set). The
    rounding of ``_f2bf``, which selects after the shift (kept as it was measured: written
    through this helper, prelu's bfloat16 rows of (4, 64, 39) and (4, 64, 391) measured 3-5 %
    slower on one thread, Zen 2)."""
    u = builder.bitcast(value, i32)
    lsb = builder.and_(builder.lshr(u, _const(builder, i32, 16)), _const(builder, i32, 1))
    rounded = builder.add(builder.add(u, _const(builder, i32, 0x7FFF)), lsb)
    quiet = builder.or_(u, _const(builder, i32, 0x00400000))
    return builder.select(builder.fcmp_unordered("uno", value, value), quiet, rounded)


@intrinsic
def _bf2f(typingctx, bits):
    """Widen bfloat16 bits to float32 (exact); a ``Vec`` of int16 lane by lane."""
    if isinstance(bits, Vec) and bits.dtype == types.int16:
        rt, n = Vec(types.float32, bits.n), bits.n
    elif isinstance(bits, types.Integer):
        rt, n = types.float32, 0
    else:
        return None

    def codegen(context, builder, signature, args):
        i32 = ir.VectorType(ir.IntType(32), n) if n else ir.IntType(32)
        low = args[0] if n else context.cast(builder, args[0], signature.args[0], types.uint16)
        wide = builder.shl(builder.zext(low, i32), _const(builder, i32, 16))
        return builder.bitcast(wide, context.get_value_type(rt))

    return rt(bits), codegen


@intrinsic
def _f2bf(typingctx, value):
    """Round float32 to bfloat16 bits (as int16), to nearest with ties to even; a ``Vec``
    with AVX512-BF16's instruction where the target has it (``_vector.round_bf16_hw``).

    Written in 32-bit LLVM integer operations (numba would widen them to 64 bits, which
    halves the vector width of the loops that use it).
    """
    if isinstance(value, Vec) and value.dtype == types.float32:
        rt, n = Vec(types.int16, value.n), value.n
    elif value == types.float32:
        rt, n = types.int16, 0
    else:
        return None

    def codegen(context, builder, signature, args):
        def exact(builder):
            i32 = ir.VectorType(ir.IntType(32), n) if n else ir.IntType(32)
            u = builder.bitcast(args[0], i32)
            hi = builder.lshr(u, _const(builder, i32, 16))
            bias = builder.add(builder.and_(hi, _const(builder, i32, 1)),
                               _const(builder, i32, 0x7FFF))
            rounded = builder.lshr(builder.add(u, bias), _const(builder, i32, 16))
            quiet = builder.or_(hi, _const(builder, i32, 0x40))
            is_nan = builder.fcmp_unordered("uno", args[0], args[0])
            return builder.trunc(builder.select(is_nan, quiet, rounded),
                                 context.get_value_type(rt))

        if n and _BF16_CVT:
            return round_bf16_hw(builder, args[0], exact)
        return exact(builder)

    return rt(value), codegen


#: The upper 16 bits of a 32-bit lane (``_bf16_pairs`` and ``_bf16_unpair``).
_HIGH_HALF = 0xFFFF0000 - (1 << 32)


def _lane_numbers(first, n):
    """A shuffle's mask: lanes first, first + 1, …, first + n - 1."""
    i32 = ir.IntType(32)
    return ir.Constant(ir.VectorType(i32, n), [ir.Constant(i32, first + m) for m in range(n)])


@intrinsic
def _bf16_pairs(typingctx, bits):
    """bfloat16 bits (a ``Vec`` of int16, an even number of lanes) widened to float32 in pair
    order: the even elements' values in the first half of the lanes, the odd elements' in the
    second. Each 32-bit word of the memory holds an even element in its lower half and the next
    odd one in its upper half, so the even values are the words shifted left by 16 and the odd
    values the words with their lower half cleared: one shift and one and (AVX2: one
    ``vpblendw``) per 256 bits, where widening in element order takes a ``vpmovzxwd`` and a
    shift per 128 bits. Element-wise code with one slope gives the same results in either
    order; ``_bf16_unpair`` puts them back."""
    if not (isinstance(bits, Vec) and bits.dtype == types.int16 and bits.n % 2 == 0):
        return None
    half = bits.n // 2
    rt = Vec(types.float32, bits.n)

    def codegen(context, builder, signature, args):
        i32 = ir.VectorType(ir.IntType(32), half)
        f32 = ir.VectorType(ir.FloatType(), half)
        words = builder.bitcast(args[0], i32)
        even = builder.bitcast(builder.shl(words, _const(builder, i32, 16)), f32)
        odd = builder.bitcast(builder.and_(words, _const(builder, i32, _HIGH_HALF)), f32)
        return builder.shuffle_vector(even, odd, _lane_numbers(0, bits.n))

    return rt(bits), codegen


@intrinsic
def _bf16_unpair(typingctx, value):
    """float32 lanes in pair order (``_bf16_pairs``) rounded to bfloat16 as ``_f2bf`` rounds
    them, back in element order (a ``Vec`` of int16): the even elements' rounded words shifted
    right by 16, the odd ones' kept in the upper half, one word of two elements (AVX2: one
    shift and one ``vpblendw`` per 256 bits, where rounding in element order packs with a
    ``vpackusdw`` and a lane-crossing ``vpermq``)."""
    if not (isinstance(value, Vec) and value.dtype == types.float32 and value.n % 2 == 0):
        return None
    half = value.n // 2
    rt = Vec(types.int16, value.n)

    def codegen(context, builder, signature, args):
        i32 = ir.VectorType(ir.IntType(32), half)

        def part(first):
            return builder.shuffle_vector(args[0], args[0], _lane_numbers(first, half))

        even = _bf16_in_high_half(builder, part(0), i32)
        odd = _bf16_in_high_half(builder, part(half), i32)
        words = builder.or_(builder.lshr(even, _const(builder, i32, 16)),
                            builder.and_(odd, _const(builder, i32, _HIGH_HALF)))
        return builder.bitcast(words, ir.VectorType(ir.IntType(16), value.n))

    return rt(value), codegen


# ---------------------------------------------------------------------------------------------
# the scalar rules, dispatched on the view's element type


# The helpers are pure functions of values; stores stay in the loops, and their arguments are
# plain names or subscripts. numba 0.68 mis-inlines otherwise (seen here: an inlined helper
# that wrote ``out[k]`` was dropped from the loop, and one called with a conditional
# expression as argument wrote nothing).
#
# Compiled as functions of their own: the conversions and the element-wise formulas are not
# ``inline="always"``. numba inlines such a helper at its own IR level once per call site and
# per typing pass (the untyped passes run again each time: 2,159 times for one signature of
# ``lrelu_bwd_row``, 860 of them ``_widen``), which made a kernel's cold compile 7-15 s. As
# functions of their own they compile once per signature and process, and LLVM inlines them
# into the loops (the same vectors, the same speed: docs/benchmarks.md, stop 56).
# ``prefer_literal=True`` types them with the caller's literal flags first, as inlining did,
# so the comparison flag still folds into each loop. The grad_weight terms (``_term32``,
# ``_prelu_term``, ``_term_of``, ``_round_pair``, ``_sum_start``, ``_start_partials``) stay
# ``inline="always"``: compiled on their own they saved no compile time.


def _widen(v):
    """A stored element as float32 (half kinds, float32) or float64 (float64), exactly."""


def _load(v, like):
    """A stored element as the compute type of the result array ``like`` (exact)."""


def _load64(v):
    """A stored element as float64 (exact)."""


def _narrow(value, like):
    """A compute-type value rounded once to the element type of the result array ``like``."""


@overload(_widen, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_widen(v):
    if isinstance(v, Vec):
        if v.dtype == types.uint16:
            return (lambda v: _lanes_h2f_soft(v)) if _SOFT_HALF else \
                (lambda v: vconvert(v, np.float32))
        if v.dtype == types.int16:
            return lambda v: _bf2f(v)
        if v.dtype in (types.float32, types.float64):
            return lambda v: v
        return None
    if v == types.uint16:
        return (lambda v: h2f_soft(v)) if _SOFT_HALF else (lambda v: _h2f_llvm(v))
    if v == types.int16:
        return lambda v: _bf2f(v)
    if v in (types.float32, types.float64):
        return lambda v: v
    return None


@overload(_load, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_load(v, like):
    if like.dtype == types.float64:
        return lambda v, like: _to64(_widen(v))
    return lambda v, like: _widen(v)


@overload(_load64, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_load64(v):
    return lambda v: _to64(_widen(v))


def _to64(v):
    """A float (or a ``Vec`` of floats) as float64, exactly."""


def _to32(v):
    """A float (or a ``Vec`` of floats) rounded to float32."""


@overload(_to64, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_to64(v):
    if isinstance(v, Vec):
        return lambda v: vconvert(v, np.float64)
    return lambda v: np.float64(v)


@overload(_to32, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_to32(v):
    if isinstance(v, Vec):
        return lambda v: vconvert(v, np.float32)
    return lambda v: np.float32(v)


def _lanes_h2f_soft(v):
    """float16 bits to float32 lane by lane, in software (no F16C): the same values."""


@overload(_lanes_h2f_soft, jit_options=NJIT_OPTIONS)
def _ol_lanes_h2f_soft(v):
    n = v.n  # (every lane of a vector of any width: a loop over LANES left 8-lane ones wrong)

    def widen(v):
        out = vconvert(v, np.float32)  # (only the type: every lane is replaced)
        for m in range(n):
            out = vset_lane(out, m, h2f_soft(vlane(v, m)))
        return out
    return widen


def _lanes_f2h_soft(v):
    """float32 to float16 bits lane by lane, in software (no F16C)."""


@overload(_lanes_f2h_soft, jit_options=NJIT_OPTIONS)
def _ol_lanes_f2h_soft(v):
    n = v.n

    def narrow(v):
        out = vconvert(vbitcast(v, np.uint32), np.uint16)  # (only the type)
        for m in range(n):
            out = vset_lane(out, m, f2h_soft(vlane(v, m)))
        return out
    return narrow


@overload(_narrow, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_narrow(value, like):
    dt = like.dtype
    if isinstance(value, Vec):
        if dt == types.uint16:
            return (lambda value, like: _lanes_f2h_soft(value)) if _SOFT_HALF else \
                (lambda value, like: vconvert(value, np.uint16))
        if dt == types.int16:
            return lambda value, like: _f2bf(value)
        if dt in (types.float32, types.float64):
            return lambda value, like: value
        return None
    if dt == types.uint16:
        return (lambda value, like: f2h_soft(value)) if _SOFT_HALF else (lambda value, like: _f2h_llvm(value))
    if dt == types.int16:
        return lambda value, like: _f2bf(value)
    if dt in (types.float32, types.float64):
        return lambda value, like: value
    return None


@njit(inline="always", **NJIT_OPTIONS)
def _odd32(v):
    """A float64 rounded to float32 to odd: truncated, then the last bit set where anything was
    cut off. Rounding that once more to nearest even in a format with at least two bits fewer
    (float16, bfloat16) gives the float64 rounded once (overflow included: a too-large value
    becomes float32's largest odd number, which rounds on to ±inf)."""
    r = np.float32(v)  # to nearest even
    if r != r or np.float64(r) == v:
        return r  # NaN, or exact
    u = _f32_as_u32(r)
    if u & np.uint32(1):
        return r  # already odd: the neighbour on the other side of v is even
    # r is the even neighbour of v: take the other one, which is odd (toward v)
    toward_zero = abs(np.float64(r)) > abs(v)
    return _u32_as_f32(u - np.uint32(1) if toward_zero else u + np.uint32(1))


def _round_sum(v, like):
    """A float64 sum rounded once to the element type of the result array ``like``."""


@overload(_round_sum, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_round_sum(v, like):
    dt = like.dtype
    if dt == types.float64:
        return lambda v, like: v
    if dt == types.float32:
        return lambda v, like: np.float32(v)
    if dt in (types.uint16, types.int16):
        return lambda v, like: _narrow(_odd32(v), like)
    return None


def _scalar(s, like):
    """A slope (any float) in the compute type of the result array ``like``, rounded once."""


@overload(_scalar, prefer_literal=True, jit_options=NJIT_OPTIONS)
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


@overload(_keep, prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_keep(v, ge):
    if _rule_of(ge) is None:
        return lambda v, ge: (v > 0) | (ge & (v == 0))
    return None


@intrinsic
def _select(typingctx, cond, a, b):
    """``a if cond else b`` as one LLVM ``select`` (no branch, no phi: numba 0.68 mis-scopes
    the phi nodes of several conditional expressions in an inlined helper). ``a`` and ``b``
    are unified (``np.float32`` constants take a float64 operand's type)."""
    if _is_mask(cond):  # lane by lane; a scalar a or b stands for all lanes
        elt = typingctx.unify_pairs(*[t.dtype if isinstance(t, Vec) else t for t in (a, b)])
        if not isinstance(elt, types.Float) or any(isinstance(t, Vec) and t.n != cond.n
                                                   for t in (a, b)):
            return None
        vec = Vec(elt, cond.n)
        opaque = _AVX_BLEND and blends_avx(vec)

        def vcodegen(context, builder, signature, args):
            c, x, y = args
            x = _operand(context, builder, x, signature.args[1], vec)
            y = _operand(context, builder, y, signature.args[2], vec)
            return blend_avx(context, builder, c, x, y) if opaque else builder.select(c, x, y)

        return vec(cond, a, b), vcodegen
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
def _cleared(typingctx, cond, v):
    """``_select(cond, 0.0, v)`` for a float ``Vec`` ``v``: the lanes where ``cond`` holds set
    to +0. Where AVX blends stand in for selects (``_AVX_BLEND``), an and-not of the bits with
    the mask (``clear_avx``), cheaper than the blend; elsewhere the select (AVX-512: a
    zeroing masked move)."""
    if not (_is_mask(cond) and isinstance(v, Vec) and isinstance(v.dtype, types.Float)
            and v.n == cond.n):
        return None
    andnot = _AVX_BLEND and blends_avx(v)

    def codegen(context, builder, signature, args):
        c, x = args
        if andnot:
            return clear_avx(context, builder, c, x)
        return builder.select(c, ir.Constant(x.type, None), x)

    return v(cond, v), codegen


@intrinsic
def _mul_first_nan(typingctx, a, b):
    """``a * b`` where a NaN ``a`` gives ``a`` quieted, whatever ``b`` is: x86's rule for
    ``mulps a, b`` when both operands are NaN (the first source wins), written out because
    LLVM treats ``fmul`` as commutative and may swap the operands. The quiet bit is set in
    integers, so no floating-point fold can replace the NaN kept. Either operand may be a
    ``Vec`` (a scalar then stands for all lanes)."""
    vec = next((t for t in (a, b) if isinstance(t, Vec)), None)
    elt = vec.dtype if vec is not None else a
    if not (isinstance(elt, types.Float)
            and all((t == vec if isinstance(t, Vec) else t == elt) for t in (a, b))):
        return None
    rt = vec if vec is not None else elt
    width = elt.bitwidth

    def codegen(context, builder, signature, args):
        x, y = (_operand(context, builder, v, t, vec) if vec is not None else v
                for v, t in zip(args, signature.args))
        ity = ir.VectorType(ir.IntType(width), vec.n) if vec is not None else ir.IntType(width)
        quiet = _const(builder, ity, 1 << (22 if width == 32 else 51))
        kept = builder.bitcast(builder.or_(builder.bitcast(x, ity), quiet), x.type)
        return builder.select(builder.fcmp_unordered("uno", x, x), kept, builder.fmul(x, y))

    return rt(a, b), codegen


def _lrelu(v, s, ge):
    """The forward rule on compute-type values: ``v`` where kept, else ``v * s`` (or a Rule's
    formula)."""


@overload(_lrelu, prefer_literal=True, jit_options=NJIT_OPTIONS)
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


@overload(_lrelu_grad, prefer_literal=True, jit_options=NJIT_OPTIONS)
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
def _kahan_add(s, c, t):
    """One compensated step (Neumaier's, with the branch-free TwoSum error): returns the new
    (sum, compensation); the value is sum - comp. ``s + t = u + e`` exactly, whichever of
    ``s`` and ``t`` is larger (Kahan's step loses ``e`` when ``|t| > |s|``), and ``e`` joins
    the compensation. Scalars and ``Vec`` values alike.

    Once the sum is ±inf or NaN the compensation is dropped (it would turn inf into NaN).
    """
    u = s + t
    b = u - s
    e = (s - (u - b)) + (t - b)
    return u, _select(abs(u) < np.inf, c - e, 0.0)


@intrinsic
def _f64_as_u64(typingctx, value):
    if value != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.uint64(types.float64), codegen


@intrinsic
def _u64_as_f64(typingctx, bits):
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        low = context.cast(builder, args[0], signature.args[0], types.uint64)
        return builder.bitcast(low, ir.DoubleType())

    return types.float64(bits), codegen


@njit(inline="always", **NJIT_OPTIONS)
def _pair_to_odd(s, c):
    """The value ``s - c`` of a (sum, compensation) pair rounded to odd in float64: to nearest,
    then, where that was inexact and landed on an even last bit, one step toward the exact
    value. Rounding it once more, to nearest in a narrower format, rounds ``s - c`` once."""
    v = s - c
    b = v - s
    e = (s - (v - b)) + (-c - b)  # s - c = v + e exactly
    if e == 0 or not abs(v) < np.inf:
        return v
    u = _f64_as_u64(v)
    if u & np.uint64(1):
        return v
    if v == 0:  # (toward e from zero: the smallest subnormal of e's sign)
        return _u64_as_f64(np.uint64(1)) if e > 0 else -_u64_as_f64(np.uint64(1))
    away = (e > 0) == (v > 0)  # the exact value lies farther from zero than v
    return _u64_as_f64(u + np.uint64(1) if away else u - np.uint64(1))


def _round_pair(s, c, like):
    """A (sum, compensation) pair's value ``s - c`` rounded once to ``like``'s storage kind."""


@overload(_round_pair, inline="always", jit_options=NJIT_OPTIONS)
def _ol_round_pair(s, c, like):
    if like.dtype == types.float64:
        return lambda s, c, like: s - c  # (the hardware rounds the exact difference once)
    return lambda s, c, like: _round_sum(_pair_to_odd(s, c), like)


def _prelu_term(x64, g64, ge):
    """The weight-gradient term of one element in float64 (exact for the float32 and half
    kinds): 0 where x is kept, else x * g; a oneDNN rule's float32 product (``_term32``)."""


@overload(_prelu_term, inline="always", prefer_literal=True, jit_options=NJIT_OPTIONS)
def _ol_prelu_term(x64, g64, ge):
    if _rule_of(ge) == _NO_RULE:
        return None
    if _rule_of(ge) is None:
        return lambda x64, g64, ge: _select(_keep(x64, ge), 0.0, x64 * g64)
    return lambda x64, g64, ge: _to64(_term32(_to32(x64), _to32(g64), ge))


def _term_of(xs, gs, xv, gv, ge):
    """The weight-gradient term, in float64, of stored elements ``xs``, ``gs`` (scalars or
    ``Vec``) whose compute-type values are ``xv``, ``gv``: exact for the float32 and half
    kinds (a product of two such values is exact in float64), the rounded float64 product
    for float64 data, a oneDNN rule's float32 product (``_term32``)."""


@overload(_term_of, inline="always", jit_options=NJIT_OPTIONS)
def _ol_term_of(xs, gs, xv, gv, ge):
    if _rule_of(ge) == _NO_RULE:
        return None
    if _rule_of(ge) is not None:
        return lambda xs, gs, xv, gv, ge: _to64(_term32(xv, gv, ge))
    if isinstance(xs, Vec) and xs.dtype == types.uint16:
        # float16: the float32 product of two float16 values is exact (22 significant bits,
        # magnitudes within 2**-48 ... 2**32), so it is widened, not formed in float64
        return lambda xs, gs, xv, gv, ge: _to64(_select(_keep(xv, ge), np.float32(0.0), xv * gv))
    return lambda xs, gs, xv, gv, ge: _prelu_term(_load64(xs), _load64(gs), ge)

