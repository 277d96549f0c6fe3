"""Scalar conversions for the kernels: float16 and bfloat16 to and from float32.

Half types are stored as ``uint16`` bit patterns (NumPy views), widened exactly to float32 for
arithmetic and rounded back once, to nearest with ties to even; NaN stays NaN (quieted, with
its sign and top payload bits), overflow goes to ±inf.

float16 uses LLVM's ``half`` conversions (F16C instructions on x86), which vectorise; when the
target CPU lacks F16C they would compile to calls of ``__extendhfsf2``/``__truncsfhf2`` that
numba's JIT does not resolve, so an exact software conversion replaces them (see
:func:`leakyops._config.use_soft_half`). bfloat16 is the top half of a float32: widening is a
shift, narrowing adds the rounding bias.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ._config import NJIT_OPTIONS, use_soft_half

__all__ = ["h2f", "f2h", "bf2f", "f2bf", "u32_as_f32", "f32_as_u32"]


@intrinsic
def u32_as_f32(typingctx, bits):
    """Reinterpret the low 32 bits of an integer as a float32."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        low = context.cast(builder, args[0], signature.args[0], types.uint32)
        return builder.bitcast(low, ir.FloatType())

    return types.float32(bits), codegen


@intrinsic
def f32_as_u32(typingctx, value):
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


@njit(inline="always", **NJIT_OPTIONS)
def _h2f_soft(h):
    h32 = np.uint32(h)
    sign = (h32 & np.uint32(0x8000)) << np.uint32(16)
    exp = (h32 >> np.uint32(10)) & np.uint32(0x1F)
    mant = h32 & np.uint32(0x3FF)
    if exp == 0x1F:
        return u32_as_f32(sign | np.uint32(0x7F800000) | (mant << np.uint32(13)))
    if exp == 0:
        # subnormal or zero: mant * 2**-24, exact in float32
        mag = np.float32(mant) * np.float32(5.960464477539063e-08)
        return -mag if sign else mag
    return u32_as_f32(sign | ((exp + np.uint32(112)) << np.uint32(23)) | (mant << np.uint32(13)))


@njit(inline="always", **NJIT_OPTIONS)
def _f2h_soft(value):
    u = f32_as_u32(value)
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


if use_soft_half():
    h2f = _h2f_soft
    f2h = _f2h_soft
else:
    h2f = _h2f_llvm
    f2h = _f2h_llvm


@intrinsic
def bf2f(typingctx, bits):
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
def f2bf(typingctx, value):
    """Round float32 to bfloat16 bits, to nearest with ties to even; NaN stays a quiet NaN.

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

    return types.uint16(types.float32), codegen
