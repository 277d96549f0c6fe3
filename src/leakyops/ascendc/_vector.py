"""The vector instructions: LeakyRelu, Adds, Muls, Maxs, Mins, Add, Sub, Mul, Duplicate, Cast.

Each one checks its operands and hands the call to :func:`._engine.execute`, which works out
the elements (count, bitwise mask, continuous mask with repeats and RepeatParams; the mask
register) and runs the arithmetic. The arithmetic lives outside this front-end:
``LeakyRelu`` is the core's ``leaky_relu_impl(..., compare=">=", slope_dtype="storage")``;
every other instruction is a function of ``leakyops._vector_math`` (one rounding to the
operand type, exactly as the device computes it — see that module).

Forms (the C++ overloads; ``isSetMask`` is the template argument)::

    Op(dst, <sources>, count)                                    # first count elements
    Op(dst, <sources>, [mask0, mask1], repeatTime, repeatParams) # bitwise mask
    Op(dst, <sources>, mask, repeatTime, repeatParams)           # continuous mask
    ... , isSetMask=False                                        # mask from SetVectorMask
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias, Union, overload

import numpy as np

from .. import _core
from .. import _vector_math as vm
from ._aicore import _check_int
from ._engine import (FixedStrides, Spec, check_operands, execute, lanes_for, scalar_of,
                      type_check)
from ._errors import AscendCTypeError, ConstraintError
from ._mask import BinaryRepeatParams, UnaryRepeatParams
from ._tensor import LocalTensor
from ._types import RoundMode, bfloat16_t, float32, half, int8_t, int16_t, int32_t, int64_t, \
    type_name, uint8_t

__all__ = ["LeakyRelu", "Adds", "Muls", "Maxs", "Mins", "Add", "Sub", "Mul", "Duplicate", "Cast"]

_FLOATS = (half, float32)

# the argument types of the forms (see the module docstring)
_Scalar: TypeAlias = Union[float, "np.generic[float]"]  # a Python bool/int/float or a NumPy scalar
_Mask: TypeAlias = Union[int, Sequence[int], np.ndarray[Any, Any]]   # continuous or [mask0, mask1]
_UnaryParams: TypeAlias = Union[UnaryRepeatParams, Sequence[int]]    # or C++ brace init {1, 1, 8, 8}
_BinaryParams: TypeAlias = Union[BinaryRepeatParams, Sequence[int]]  # or {1, 1, 1, 8, 8, 8}


def _forms_error(name: str, sources: str, n: int) -> TypeError:
    return TypeError(
        f"{name}(dst, {sources}, count) or {name}(dst, {sources}, mask, repeatTime, "
        f"repeatParams); got {n} arguments after the sources")


# --- tensor-scalar instructions ---------------------------------------------------------------
def _scalar_op(name: str, dst, src, scalar_value, args, is_set_mask, make_kernel, *,
               core_rounds: bool = False) -> None:
    """One tensor-scalar instruction. ``make_kernel`` gets the scalar in the tensor's type
    (the C++ conversion of ``const T& scalarValue``), or, with ``core_rounds``, the value as
    given, checked the same way, for a core call that rounds it to the tensor's type itself."""
    check_operands(name, {"dst": dst, "src": src})
    dtype = type_check(name, dst, {"src": src}, _FLOATS)
    scalar = scalar_of(name, scalar_value, dtype)
    if len(args) not in (1, 3):
        raise _forms_error(name, "src, scalarValue", len(args))
    lanes = lanes_for(dtype)
    kernel = make_kernel(scalar_value if core_rounds else scalar)
    execute(Spec(name), dst, {"src": src}, args, is_set_mask, kernel, lanes)


def _leaky_kernel(scalar_value):
    # the core rounds the scalar to the tensor's type once (slope_dtype="storage")
    def kernel(values):
        return _core.leaky_relu_impl(np.ascontiguousarray(values), scalar_value, compare=">=",
                                     slope_dtype="storage", fname="LeakyRelu")
    return kernel


@overload
def LeakyRelu(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, count: int, /, *,
              isSetMask: bool = True) -> None: ...
@overload
def LeakyRelu(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, mask: _Mask, repeatTime: int,
              repeatParams: _UnaryParams, /, *, isSetMask: bool = True) -> None: ...


def LeakyRelu(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar,
              *args: int | _Mask | _UnaryParams, isSetMask: bool = True) -> None:
    """``AscendC::LeakyRelu``: ``dst = src if src >= 0 else scalarValue * src``.

    The scalar is rounded to the tensor type; half products are computed in float32 and
    rounded once (the core's kernels). ``src = -0.0`` gives ``-0.0`` (``>=``), NaN stays NaN.
    Lanes outside the mask are not written; ``count == 0``, ``repeatTime == 0`` and a
    continuous mask of 0 are no-ops.

    >>> from leakyops.ascendc import AICore, LocalMemAllocator, half
    >>> with AICore():
    ...     alloc = LocalMemAllocator()
    ...     src, dst = alloc.Alloc(half, 16), alloc.Alloc(half, 16)
    ...     src.numpy()[:] = [-1, -2, 3, 4] * 4
    ...     LeakyRelu(dst, src, 2, 4)
    ...     dst.numpy()[:4].tolist()
    [-2.0, -4.0, 3.0, 4.0]
    """
    _scalar_op("LeakyRelu", dst, src, scalarValue, args, isSetMask, _leaky_kernel,
               core_rounds=True)


@overload
def Adds(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, count: int, /, *,
         isSetMask: bool = True) -> None: ...
@overload
def Adds(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, mask: _Mask, repeatTime: int,
         repeatParams: _UnaryParams, /, *, isSetMask: bool = True) -> None: ...


def Adds(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar,
         *args: int | _Mask | _UnaryParams, isSetMask: bool = True) -> None:
    """``dst = src + scalarValue`` (one rounding to the tensor type)."""
    _scalar_op("Adds", dst, src, scalarValue, args, isSetMask, lambda s: lambda v: vm.add(v, s))


@overload
def Muls(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, count: int, /, *,
         isSetMask: bool = True) -> None: ...
@overload
def Muls(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, mask: _Mask, repeatTime: int,
         repeatParams: _UnaryParams, /, *, isSetMask: bool = True) -> None: ...


def Muls(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar,
         *args: int | _Mask | _UnaryParams, isSetMask: bool = True) -> None:
    """``dst = src * scalarValue`` (one rounding to the tensor type)."""
    _scalar_op("Muls", dst, src, scalarValue, args, isSetMask, lambda s: lambda v: vm.mul(v, s))


@overload
def Maxs(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, count: int, /, *,
         isSetMask: bool = True) -> None: ...
@overload
def Maxs(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, mask: _Mask, repeatTime: int,
         repeatParams: _UnaryParams, /, *, isSetMask: bool = True) -> None: ...


def Maxs(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar,
         *args: int | _Mask | _UnaryParams, isSetMask: bool = True) -> None:
    """``dst = max(src, scalarValue)``: max(-0, +0) = +0; NaN gives NaN."""
    _scalar_op("Maxs", dst, src, scalarValue, args, isSetMask,
               lambda s: lambda v: vm.maximum(v, s))


@overload
def Mins(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, count: int, /, *,
         isSetMask: bool = True) -> None: ...
@overload
def Mins(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar, mask: _Mask, repeatTime: int,
         repeatParams: _UnaryParams, /, *, isSetMask: bool = True) -> None: ...


def Mins(dst: LocalTensor, src: LocalTensor, scalarValue: _Scalar,
         *args: int | _Mask | _UnaryParams, isSetMask: bool = True) -> None:
    """``dst = min(src, scalarValue)``: min(-0, +0) = -0; NaN gives NaN."""
    _scalar_op("Mins", dst, src, scalarValue, args, isSetMask,
               lambda s: lambda v: vm.minimum(v, s))


# --- tensor-tensor instructions ---------------------------------------------------------------
def _binary_op(name: str, dst, src0, src1, args, is_set_mask, fn) -> None:
    srcs = {"src0": src0, "src1": src1}
    check_operands(name, {"dst": dst, **srcs})
    dtype = type_check(name, dst, srcs, _FLOATS)
    if len(args) not in (1, 3):
        raise _forms_error(name, "src0, src1", len(args))
    spec = Spec(name, binary_params=True, dst_src1_accumulate=True)
    execute(spec, dst, srcs, args, is_set_mask, fn, lanes_for(dtype))


@overload
def Add(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, count: int, /, *,
        isSetMask: bool = True) -> None: ...
@overload
def Add(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, mask: _Mask, repeatTime: int,
        repeatParams: _BinaryParams, /, *, isSetMask: bool = True) -> None: ...


def Add(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor,
        *args: int | _Mask | _BinaryParams, isSetMask: bool = True) -> None:
    """``dst = src0 + src1`` (one rounding); RepeatParams are BinaryRepeatParams
    ``{dstBlk, src0Blk, src1Blk, dstRep, src0Rep, src1Rep}``."""
    _binary_op("Add", dst, src0, src1, args, isSetMask, vm.add)


@overload
def Sub(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, count: int, /, *,
        isSetMask: bool = True) -> None: ...
@overload
def Sub(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, mask: _Mask, repeatTime: int,
        repeatParams: _BinaryParams, /, *, isSetMask: bool = True) -> None: ...


def Sub(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor,
        *args: int | _Mask | _BinaryParams, isSetMask: bool = True) -> None:
    """``dst = src0 - src1`` (one rounding)."""
    _binary_op("Sub", dst, src0, src1, args, isSetMask, vm.sub)


@overload
def Mul(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, count: int, /, *,
        isSetMask: bool = True) -> None: ...
@overload
def Mul(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, mask: _Mask, repeatTime: int,
        repeatParams: _BinaryParams, /, *, isSetMask: bool = True) -> None: ...


def Mul(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor,
        *args: int | _Mask | _BinaryParams, isSetMask: bool = True) -> None:
    """``dst = src0 * src1`` (one rounding)."""
    _binary_op("Mul", dst, src0, src1, args, isSetMask, vm.mul)


# --- Duplicate --------------------------------------------------------------------------------
@overload
def Duplicate(dst: LocalTensor, scalarValue: _Scalar, count: int, /, *,
              isSetMask: bool = True) -> None: ...
@overload
def Duplicate(dst: LocalTensor, scalarValue: _Scalar, mask: _Mask, repeatTime: int,
              dstBlockStride: int, dstRepeatStride: int, /, *, isSetMask: bool = True) -> None: ...


def Duplicate(dst: LocalTensor, scalarValue: _Scalar, *args: int | _Mask,
              isSetMask: bool = True) -> None:
    """Fill ``dst`` with ``scalarValue`` (converted to the tensor type).

    ``Duplicate(dst, scalar, count)`` or ``Duplicate(dst, scalar, mask, repeatTime,
    dstBlockStride, dstRepeatStride)``. The count form has no ``isSetMask``. The form with a
    LocalTensor source (its first element) exists only on Ascend 950 and is not emulated.
    """
    name = "Duplicate"
    if isinstance(scalarValue, LocalTensor):
        raise AscendCTypeError(
            f"{name}: the LocalTensor-source form (dst, src, count) is Ascend 950 only and is "
            f"not emulated; pass the scalar value")
    check_operands(name, {"dst": dst})
    dtype = type_check(name, dst, {}, _FLOATS)
    scalar = scalar_of(name, scalarValue, dtype)
    if len(args) == 4:
        mask, repeat_time, blk, rep = args
        blk = _check_int(blk, f"{name}: dstBlockStride", lo=0, hi=65535)
        rep = _check_int(rep, f"{name}: dstRepeatStride", lo=0, hi=255)
        if blk == 0:
            raise ConstraintError(
                f"{name}: dstBlockStride = 0 is not supported (the vendor documents "
                f"dstBlkStride = 0 as undefined behaviour)")
        args = (mask, repeat_time, FixedStrides({"dst": (blk, rep)}))
    elif len(args) != 1:
        raise TypeError(
            f"{name}(dst, scalarValue, count) or {name}(dst, scalarValue, mask, repeatTime, "
            f"dstBlockStride, dstRepeatStride); got {len(args)} arguments after the scalar")
    spec = Spec(name, count_set_mask=False)
    # no sources: the kernel's scalar result is broadcast over the selected elements
    execute(spec, dst, {}, args, isSetMask, lambda: scalar, lanes_for(dtype))


# --- Cast -------------------------------------------------------------------------------------
_R, _F, _C, _RO, _T, _O, _N = (RoundMode.CAST_RINT, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
                               RoundMode.CAST_ROUND, RoundMode.CAST_TRUNC, RoundMode.CAST_ODD,
                               RoundMode.CAST_NONE)
_ROUNDING = (_R, _F, _C, _RO, _T)
# (src, dst) -> RoundModes allowed: the Cast page's table for Atlas A2 and A3 (identical), without
# int4b_t (no such NumPy type), int32_t -> half (needs SetDeqScale) and int64_t sources
CAST_TABLE = {
    (int8_t, half): (_N,),
    (uint8_t, half): (_N,),
    (int16_t, half): _ROUNDING + (_N,),
    (int16_t, float32): (_N,),
    (half, int8_t): _ROUNDING + (_N,),
    (half, uint8_t): _ROUNDING + (_N,),
    (half, int16_t): _ROUNDING,
    (half, int32_t): _ROUNDING,
    (half, float32): (_N,),
    (bfloat16_t, int32_t): _ROUNDING,
    (bfloat16_t, float32): (_N,),
    (int32_t, int16_t): (_N,),
    (int32_t, float32): _ROUNDING + (_N,),
    (int32_t, int64_t): (_N,),
    (float32, int16_t): _ROUNDING,
    (float32, half): _ROUNDING + (_O, _N),
    (float32, bfloat16_t): _ROUNDING,
    (float32, int32_t): _ROUNDING,
    (float32, float32): _ROUNDING,
    (float32, int64_t): _ROUNDING,
}
_MODE_NAMES = {_N: "none", _R: "rint", _F: "floor", _C: "ceil", _RO: "round", _T: "trunc",
               _O: "odd"}


@overload
def Cast(dst: LocalTensor, src: LocalTensor, roundMode: RoundMode, count: int, /, *,
         isSetMask: bool = True) -> None: ...
@overload
def Cast(dst: LocalTensor, src: LocalTensor, roundMode: RoundMode, mask: _Mask, repeatTime: int,
         repeatParams: _UnaryParams, /, *, isSetMask: bool = True) -> None: ...


def Cast(dst: LocalTensor, src: LocalTensor, roundMode: RoundMode, *args: int | _Mask | _UnaryParams,
         isSetMask: bool = True) -> None:
    """``AscendC::Cast``: convert ``src`` to ``dst``'s type with a :class:`RoundMode`.

    The (src, dst) pairs and the modes each allows are the vendor's table for Atlas A2/A3
    (:data:`CAST_TABLE`). A mask selects lanes of the *wider* type (64 lanes for half <->
    float); the count form's default repeat strides are 8 blocks for the wider operand and 4
    for the narrower one, and it has no ``isSetMask``. Out-of-range values saturate for integer
    destinations (NaN -> 0); float destinations follow IEEE 754 (±inf, NaN kept).
    ``CAST_ODD`` is round-to-odd; ``CAST_NONE`` is ``CAST_RINT`` when the conversion loses
    precision and exact otherwise.
    """
    name = "Cast"
    check_operands(name, {"dst": dst, "src": src})
    if not isinstance(roundMode, RoundMode):
        raise AscendCTypeError(f"{name}: roundMode must be a RoundMode, got {roundMode!r}")
    pair = (src.dtype, dst.dtype)
    modes = CAST_TABLE.get(pair)
    if modes is None:
        pairs = ", ".join(f"{type_name(s)}->{type_name(d)}" for s, d in CAST_TABLE)
        raise AscendCTypeError(
            f"{name}: {type_name(src.dtype)} -> {type_name(dst.dtype)} is not an emulated "
            f"conversion; supported: {pairs}")
    if roundMode not in modes:
        raise ConstraintError(
            f"{name}: {type_name(src.dtype)} -> {type_name(dst.dtype)} does not support "
            f"{roundMode.name}; supported round modes: {', '.join(m.name for m in modes)}")
    if len(args) not in (1, 3):
        raise _forms_error(name, "src, roundMode", len(args))
    mode = _MODE_NAMES[roundMode]
    out_type = dst.dtype
    lanes = lanes_for(src.dtype, dst.dtype)
    narrow = min(src.dtype.itemsize, dst.dtype.itemsize)
    spec = Spec(name, count_set_mask=False, count_max=2**32 - 1)
    execute(spec, dst, {"src": src}, args, isSetMask,
            lambda values: vm.cast(values, out_type, mode), lanes,
            type_lanes=256 // narrow)
