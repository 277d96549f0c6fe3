"""``AscendC::LeakyRelu`` in its three forms, computed by the core's kernels.

``dst_i = src_i if src_i >= 0 else scalarValue * src_i`` with the scalar in the tensor's
type (rounded to half for half tensors); half is widened to float32 for the product and
rounded once. The front-end only works out *which* elements a call touches (count, mask,
repeats, strides), checks the documented constraints, and hands those elements to
``leakyops._core.leaky_relu_impl(..., compare=">=", slope_dtype="storage")``.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _core
from ._aicore import _check_int, current_core
from ._errors import AscendCError, AscendCTypeError, ConstraintError
from ._mask import (as_repeat_params, continuous_bits, element_pattern, lane_indices, lanes_of)
from ._tensor import LocalTensor
from ._types import (FULL_MASK, MAX_REPEAT_TIMES, ONE_BLK_SIZE, UB_POSITIONS, MaskMode, float32,
                     half, type_name)

__all__ = ["LeakyRelu"]

_NAME = "LeakyRelu"
_TYPES = (half, float32)


def _check_operands(dst, src) -> np.dtype:
    for name, t in (("dst", dst), ("src", src)):
        if not isinstance(t, LocalTensor):
            raise AscendCTypeError(f"{_NAME}: {name} must be a LocalTensor, got {type(t).__name__}")
    if dst.dtype not in _TYPES:
        raise AscendCTypeError(
            f"{_NAME}: unsupported type {type_name(dst.dtype)} (dst); LeakyRelu supports half "
            f"and float")
    if src.dtype != dst.dtype:
        raise AscendCTypeError(
            f"{_NAME}: src is {type_name(src.dtype)} but dst is {type_name(dst.dtype)}; src "
            f"must have the destination's type")
    for name, t in (("dst", dst), ("src", src)):
        if t.position not in UB_POSITIONS:
            raise ConstraintError(
                f"{_NAME}: {name} is at TPosition {t.position.name}; supported positions are "
                f"VECIN, VECCALC and VECOUT")
    if dst.ub is not src.ub:
        raise ConstraintError(f"{_NAME}: dst and src are in different Unified Buffers (cores)")
    for name, t in (("dst", dst), ("src", src)):
        if t.GetPhyAddr() % ONE_BLK_SIZE:
            raise ConstraintError(
                f"{_NAME}: {name} start address {t.GetPhyAddr()} is not 32-byte aligned "
                f"(general address alignment constraint for the Unified Buffer)")
    return dst.dtype


def _check_scalar(value, dtype: np.dtype):
    """The scalar as a value of the tensor's type (``const T& scalarValue``).

    Converting it here is the C++ implicit conversion, not arithmetic; it also keeps the
    overflow of e.g. 1e30 -> half (inf) silent, as a C++ conversion is."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (numbers.Real, np.integer, np.floating, np.bool_)) and not isinstance(
            value, (str, bytes)):
        try:
            wide = np.asarray(value, dtype=np.float64)
        except OverflowError:          # a Python int beyond float64
            wide = np.asarray(np.inf if value > 0 else -np.inf)
        with np.errstate(over="ignore", invalid="ignore"):
            return wide.astype(dtype)[()]
    raise AscendCTypeError(
        f"{_NAME}: scalarValue must be a real number (it takes the tensor's type), got "
        f"{type(value).__name__} {value!r}")


def _compute(values: np.ndarray, scalar, out: np.ndarray | None = None) -> None:
    """The core's LeakyRelu with Ascend C's rules, from ``values`` into ``out`` (default: in
    place); the core's TypeError/ValueError become this front-end's errors."""
    try:
        _core.leaky_relu_impl(values, scalar, out=values if out is None else out, compare=">=",
                              slope_dtype="storage", fname=_NAME)
    except AscendCError:
        raise
    except TypeError as exc:
        raise AscendCTypeError(str(exc)) from exc
    except ValueError as exc:
        raise ConstraintError(str(exc)) from exc


def _count_form(dst, src, scalar, count, is_set_mask: bool) -> None:
    count = _check_int(count, f"{_NAME}: count", lo=0, hi=2**31 - 1)
    if not is_set_mask:
        core = current_core()
        if core.mask_mode is not MaskMode.COUNTER:
            raise ConstraintError(
                f"{_NAME}: with isSetMask=False the count form takes its element count from the "
                f"mask register in Counter mode: call SetMaskCount() and SetVectorMask(len) "
                f"first (the count argument is ignored)")
        count = core.mask_low
    if count == 0:
        return  # documented NOP
    for name, t in (("dst", dst), ("src", src)):
        if count > t.GetSize():
            raise ConstraintError(
                f"{_NAME}: count {count} is past the end of {name}, which has {t.GetSize()} "
                f"elements")
    isz = dst.dtype.itemsize
    d0, s0 = dst.GetPhyAddr() // isz, src.GetPhyAddr() // isz
    if d0 != s0 and d0 < s0 + count and s0 < d0 + count:
        raise ConstraintError(
            f"{_NAME}: dst [{d0 * isz}, {(d0 + count) * isz}) and src [{s0 * isz}, "
            f"{(s0 + count) * isz}) overlap partially; they may only overlap completely "
            f"(in place) (general address overlap constraint)")
    view = dst.ub.view(dst.dtype)
    _compute(view[s0:s0 + count], scalar, out=view[d0:d0 + count])


def _mask_lanes(mask, dtype, lanes: int) -> np.ndarray:
    """Selected lanes of one repeat for a mask argument given with isSetMask=True."""
    if isinstance(mask, (int, np.integer)) and not isinstance(mask, (bool, np.bool_)):
        length = _check_int(mask, f"{_NAME}: mask (continuous mode)", lo=0)
        high, low = continuous_bits(length, lanes)
        return lane_indices(high, low, lanes)
    if isinstance(mask, (list, tuple, np.ndarray)) and len(mask) == 2:
        low = _check_int(mask[0], f"{_NAME}: mask[0] (lanes 0-63)", lo=0, hi=FULL_MASK)
        high = _check_int(mask[1], f"{_NAME}: mask[1] (lanes 64-127)", lo=0, hi=FULL_MASK)
        if lanes <= 64 and high:
            raise ConstraintError(
                f"{_NAME}: mask[1] must be 0 for a 32-bit type ({type_name(dtype)} has {lanes} "
                f"lanes per repeat, all in mask[0]); got {high:#x}")
        return lane_indices(high, low, lanes)
    raise AscendCTypeError(
        f"{_NAME}: mask must be an int (continuous mode) or two uint64 words [mask0, mask1] "
        f"(bitwise mode), got {mask!r}")


def _mask_form(dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask: bool) -> None:
    dtype = dst.dtype
    lanes = lanes_of(dtype)
    repeats = _check_int(repeat_times, f"{_NAME}: repeatTime", lo=0)
    if repeats > MAX_REPEAT_TIMES:
        raise ConstraintError(
            f"{_NAME}: repeatTime {repeats} is out of range: at most {MAX_REPEAT_TIMES} "
            f"(a uint8_t)")
    params = as_repeat_params(repeat_params, _NAME)
    counter = None
    if is_set_mask:
        sel = _mask_lanes(mask, dtype, lanes)
    else:
        core = current_core()
        if core.mask_mode is MaskMode.COUNTER:
            counter = core.mask_low
            repeats = -(-counter // lanes)   # Counter mode: repeatTime is not used
            sel = np.arange(lanes)
        else:
            sel = lane_indices(core.mask_high, core.mask_low, lanes)
    if repeats == 0 or sel.size == 0:
        return  # documented NOP (repeatTime 0, continuous mask 0, empty bitwise mask)
    isz = dtype.itemsize
    s_base, d_base = src.GetPhyAddr() // isz, dst.GetPhyAddr() // isz
    s_idx = element_pattern(s_base, dtype, repeats, params.srcBlkStride, params.srcRepStride, sel)
    d_idx = element_pattern(d_base, dtype, repeats, params.dstBlkStride, params.dstRepStride, sel)
    rep = np.broadcast_to(np.arange(repeats)[:, None], s_idx.shape)
    s_idx, d_idx, rep = s_idx.ravel(), d_idx.ravel(), rep.ravel()
    if counter is not None:
        s_idx, d_idx, rep = s_idx[:counter], d_idx[:counter], rep[:counter]
    for name, t, idx, base in (("dst", dst, d_idx, d_base), ("src", src, s_idx, s_base)):
        last = int(idx.max()) - base
        if last >= t.GetSize():
            k = int(np.argmax(idx))
            raise ConstraintError(
                f"{_NAME}: repeat {int(rep[k])} reaches element {last} of {name}, which has "
                f"{t.GetSize()} elements (mask, repeatTime and strides go past the end)")
    in_place = np.array_equal(s_idx, d_idx)
    if not in_place and np.intersect1d(s_idx, d_idx).size:
        raise ConstraintError(
            f"{_NAME}: dst and src overlap partially: within a repeat they must overlap 100% "
            f"or not at all, and no repeat may read what an earlier one wrote (general address "
            f"overlap constraint)")
    view = dst.ub.view(dtype)
    if np.unique(d_idx).size == d_idx.size:
        values = view[s_idx]            # gather (a copy), compute, scatter
        _compute(values, scalar)
        view[d_idx] = values
        return
    # dst written more than once (e.g. dstRepStride 0): run repeat by repeat, in order
    for r in range(repeats):
        sl = rep == r
        values = view[s_idx[sl]]
        _compute(values, scalar)
        view[d_idx[sl]] = values


def LeakyRelu(dst: LocalTensor, src: LocalTensor, scalarValue, *args, isSetMask: bool = True
              ) -> None:
    """``AscendC::LeakyRelu``: ``dst = src if src >= 0 else scalarValue * src``.

    Forms (the C++ overloads)::

        LeakyRelu(dst, src, scalar, count)                              # first count elements
        LeakyRelu(dst, src, scalar, [mask0, mask1], repeatTime, params) # bitwise mask
        LeakyRelu(dst, src, scalar, mask, repeatTime, params)           # continuous mask

    ``params`` is a :class:`UnaryRepeatParams` or ``(dstBlkStride, srcBlkStride,
    dstRepStride, srcRepStride)``. With ``isSetMask=False`` the mask argument is ignored
    (pass ``MASK_PLACEHOLDER``) and the mask register set by ``SetVectorMask`` applies.

    The scalar is rounded to the tensor type; half products are computed in float32 and
    rounded once. ``src = -0.0`` gives ``-0.0`` (``>=``), NaN stays NaN. Lanes outside the
    mask are not written. ``count == 0``, ``repeatTime == 0`` and a continuous mask of 0 are
    no-ops.

    >>> from leakyops.ascendc import AICore, LocalMemAllocator, half
    >>> with AICore():
    ...     alloc = LocalMemAllocator()
    ...     src, dst = alloc.Alloc(half, 16), alloc.Alloc(half, 16)
    ...     src.numpy()[:] = [-1, -2, 3, 4] * 4
    ...     LeakyRelu(dst, src, 2, 4)
    ...     dst.numpy()[:4].tolist()
    [-2.0, -4.0, 3.0, 4.0]
    """
    if not isinstance(isSetMask, (bool, np.bool_)):
        raise AscendCTypeError(f"{_NAME}: isSetMask must be a bool, got {isSetMask!r}")
    dtype = _check_operands(dst, src)
    scalar = _check_scalar(scalarValue, dtype)
    if len(args) == 1:
        _count_form(dst, src, scalar, args[0], bool(isSetMask))
    elif len(args) == 3:
        _mask_form(dst, src, scalar, *args, is_set_mask=bool(isSetMask))
    else:
        raise TypeError(
            f"{_NAME}(dst, src, scalar, count) or {_NAME}(dst, src, scalar, mask, repeatTime, "
            f"repeatParams); got {len(args)} arguments after the scalar")
