"""How one vector instruction call runs: its form, the mask register, the element addresses of
every operand, the documented checks, and the order in which results are written.

Every instruction (LeakyRelu, Adds, Muls, Maxs, Mins, Add, Sub, Mul, Duplicate, Cast) goes
through :func:`execute`; they differ only in their operands, their RepeatParams and the
arithmetic callback, which comes from ``leakyops._vector_math`` (or the core, for LeakyRelu).

The mask register follows the vendor's implementation (``impl/basic_api/dav_c220``):

- **Count form** ``Op(..., count)``: ``SetMaskCount(); SetMask(0, count)``, one instruction
  over ``count`` elements with contiguous strides, then ``ResetMask(); SetMaskNorm()`` — the
  register is left in Normal mode with every bit set, whatever it held before. With
  ``isSetMask=False`` the instruction runs once (``repeatTime`` 1, contiguous strides) on the
  register as it is: a count in Counter mode, one masked repeat in Normal mode.
- **Mask forms** ``Op(..., mask, repeatTime, params)``: with ``isSetMask=True`` the call writes
  its mask into the register (``[mask0, mask1]`` as ``(high=mask1, low=mask0)``; a continuous
  ``len`` as the device's bit pattern) and it stays there. Then the register's *mode* decides:
  Normal — the bits select lanes in each of ``repeatTime`` repeats; Counter — the low word is
  the element count and ``repeatTime`` is ignored.
- In Counter mode the high word must be 0 and the count must fit the 32-bit counter; anything
  else is an error raised before any work or allocation.
"""

from __future__ import annotations

import decimal
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import _core
from ._aicore import _check_int, current_core
from ._errors import AscendCError, AscendCTypeError, ConstraintError
from ._mask import (UINT32_MAX, as_repeat_params, device_len_bits, lane_indices, lane_offsets)
from ._tensor import LocalTensor
from ._types import (FULL_MASK, MAX_REPEAT_TIMES, ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE,
                     UB_POSITIONS, MaskMode, type_name)

__all__ = ["Spec", "FixedStrides", "execute", "check_operands", "scalar_of"]

MAX_ELEMENTS = 1 << 20   # emulation limit on elements per call (Counter mode can ask for 2**32)


@dataclass(frozen=True)
class Spec:
    """What the engine needs to know about an instruction."""

    name: str
    binary_params: bool = False        # BinaryRepeatParams instead of UnaryRepeatParams
    count_set_mask: bool = True        # the count form has an isSetMask template argument
    dst_src1_accumulate: bool = False  # Add/Sub/Mul: dst may feed src1 of later repeats
    count_max: int = 2**31 - 1         # int32_t count (uint32_t for Cast)


@dataclass(frozen=True)
class FixedStrides:
    """Strides given as separate arguments (Duplicate's dstBlockStride, dstRepeatStride),
    already checked: role -> (blkStride, repStride)."""

    strides: dict


@dataclass
class _Plan:
    counter: int | None        # elements in Counter mode, or None in Normal mode
    repeats: int
    lanes: np.ndarray          # lanes taking part in each (full) repeat
    strides: dict              # role -> (blkStride, repStride)
    register: tuple | None     # (mode, high, low) to leave in the register after the call


# --- operands -----------------------------------------------------------------------------------
def check_operands(name: str, tensors: dict) -> None:
    """LocalTensor, Unified Buffer position, same core, 32-byte aligned start."""
    for role, t in tensors.items():
        if not isinstance(t, LocalTensor):
            raise AscendCTypeError(f"{name}: {role} must be a LocalTensor, got {type(t).__name__}")
    for role, t in tensors.items():
        if t.position not in UB_POSITIONS:
            raise ConstraintError(
                f"{name}: {role} is at TPosition {t.position.name}; supported positions are "
                f"VECIN, VECCALC and VECOUT")
    ubs = {id(t.ub) for t in tensors.values()}
    if len(ubs) > 1:
        raise ConstraintError(f"{name}: the operands are in different Unified Buffers (cores)")
    for role, t in tensors.items():
        if t.GetPhyAddr() % ONE_BLK_SIZE:
            raise ConstraintError(
                f"{name}: {role} start address {t.GetPhyAddr()} is not 32-byte aligned "
                f"(general address alignment constraint for the Unified Buffer)")


def scalar_of(name: str, value, dtype: np.dtype):
    """The scalar as a value of the tensor's type (``const T& scalarValue``).

    Converting it here is the C++ implicit conversion, not arithmetic; it keeps the overflow
    of e.g. 1e30 -> half (inf) silent, as a C++ conversion is."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (numbers.Real, np.integer, np.floating, np.bool_, decimal.Decimal)) \
            and not isinstance(value, (str, bytes, np.timedelta64)):
        # rounded once from its exact value (ints beyond 2**53, Fraction, longdouble), by the
        # core's slope conversion; beyond the type's range: ±inf
        try:
            return dtype.type(_core.slope_value(value, name, "scalarValue", dtype))
        except TypeError as exc:
            raise AscendCTypeError(str(exc)) from None
    raise AscendCTypeError(
        f"{name}: scalarValue must be a real number (it takes the tensor's type), got "
        f"{type(value).__name__} {value!r}")


# --- the mask register --------------------------------------------------------------------------
def _counter_count(name: str, high: int, low: int, where: str) -> int:
    if high:
        raise ConstraintError(
            f"{name}: in Counter mode the mask register's high word must be 0 (the low word is "
            f"the element count), but {where} maskHigh = {high:#x}; set the count with "
            f"SetVectorMask<T, MaskMode::COUNTER>(len) or pass mask=[count, 0]")
    if low > UINT32_MAX:
        raise ConstraintError(
            f"{name}: in Counter mode the element count must be in [0, UINT32_MAX], but {where} "
            f"{low}")
    return low


def _call_mask_words(name: str, mask, type_lanes: int, lanes: int) -> tuple[int, int]:
    """(high, low) a mask argument puts into the register (``AscendCUtils::SetMask``)."""
    if isinstance(mask, np.ndarray) and mask.ndim == 0:
        mask = mask[()]
    if isinstance(mask, (int, np.integer)) and not isinstance(mask, (bool, np.bool_)):
        length = _check_int(mask, f"{name}: mask (continuous mode)", lo=0, hi=FULL_MASK)
        return device_len_bits(min(length, 2**31 - 1), type_lanes)
    if (isinstance(mask, (list, tuple)) or (isinstance(mask, np.ndarray) and mask.ndim == 1)) \
            and len(mask) >= 2:
        low = _check_int(mask[0], f"{name}: mask[0] (lanes 0-63)", lo=0, hi=FULL_MASK)
        high = _check_int(mask[1], f"{name}: mask[1] (lanes 64-127)", lo=0, hi=FULL_MASK)
        return high, low
    raise AscendCTypeError(
        f"{name}: mask must be an int (continuous mode) or two uint64 words [mask0, mask1] "
        f"(bitwise mode), got {mask!r}")


def _default_strides(roles: dict, lanes: int) -> dict:
    """Contiguous strides: block stride 1, repeat stride = the operand's blocks per repeat."""
    out = {}
    for role, t in roles.items():
        out[role] = (1, lanes * t.dtype.itemsize // ONE_BLK_SIZE)
    return out


def _plan(spec: Spec, tensors: dict, args: tuple, is_set_mask: bool, lanes: int,
          type_lanes: int) -> _Plan:
    name = spec.name
    core = current_core()
    if len(args) == 1:                                   # count form
        count = _check_int(args[0], f"{name}: count", lo=None)
        strides = _default_strides(tensors, lanes)
        if is_set_mask:
            count = _check_int(count, f"{name}: count", lo=0, hi=spec.count_max)
            # SetMaskCount; SetMask(0, count); run; ResetMask; SetMaskNorm
            return _Plan(count, -(-count // lanes), np.arange(lanes), strides,
                         (MaskMode.NORMAL, FULL_MASK, FULL_MASK))
        if core.mask_mode is MaskMode.COUNTER:
            n = _counter_count(name, core.mask_high, core.mask_low, "the register holds")
            return _Plan(n, -(-n // lanes), np.arange(lanes), strides, None)
        sel = lane_indices(core.mask_high, core.mask_low, lanes)
        return _Plan(None, 1, sel, strides, None)

    mask, repeat_time, params = args                      # mask forms
    repeats = _check_int(repeat_time, f"{name}: repeatTime", lo=0)
    if repeats > MAX_REPEAT_TIMES:
        raise ConstraintError(
            f"{name}: repeatTime {repeats} is out of range: at most {MAX_REPEAT_TIMES} "
            f"(a uint8_t)")
    if isinstance(params, FixedStrides):                  # Duplicate's separate stride args
        strides = params.strides
    else:
        strides = as_repeat_params(params, name, binary=spec.binary_params).strides()
    if is_set_mask:
        high, low = _call_mask_words(name, mask, type_lanes, lanes)
        register = (core.mask_mode, high, low)
        where = "the call's mask gives"
    else:
        high, low, register = core.mask_high, core.mask_low, None
        where = "the register holds"
    if core.mask_mode is MaskMode.COUNTER:
        n = _counter_count(name, high, low, where)
        return _Plan(n, -(-n // lanes), np.arange(lanes), strides, register)
    if lanes <= 64 and high and is_set_mask and not isinstance(mask, (int, np.integer)):
        raise ConstraintError(
            f"{name}: mask[1] must be 0 for a 32-bit type (the instruction has {lanes} lanes per "
            f"repeat, all in mask[0]); got {high:#x}")
    return _Plan(None, repeats, lane_indices(high, low, lanes), strides, register)


# --- addresses ----------------------------------------------------------------------------------
@dataclass
class _Operand:
    role: str
    tensor: LocalTensor
    blk: int
    rep: int

    @property
    def itemsize(self) -> int:
        return self.tensor.dtype.itemsize

    @property
    def base(self) -> int:
        return self.tensor.GetPhyAddr() // self.itemsize

    def elems_per_block(self) -> int:
        return ONE_BLK_SIZE // self.itemsize


def _extent(op: _Operand, plan: _Plan, lanes: int) -> tuple[int, int]:
    """(last element index touched, relative to the operand's start; the repeat touching it),
    worked out without building the index arrays."""
    e = op.elems_per_block()
    offs = lane_offsets(op.itemsize, op.blk, lanes)
    step = op.rep * e
    if plan.counter is None:
        last_full = int(offs[plan.lanes].max())
        return (plan.repeats - 1) * step + last_full, plan.repeats - 1
    n_last = plan.counter - (plan.repeats - 1) * lanes
    best = ((plan.repeats - 1) * step + int(offs[:n_last].max()), plan.repeats - 1)
    if plan.repeats >= 2:
        prev = ((plan.repeats - 2) * step + int(offs.max()), plan.repeats - 2)
        best = max(best, prev)
    return best


def _check_extents(spec: Spec, ops: list, plan: _Plan, lanes: int, count_form: bool) -> None:
    for op in ops:
        last, rep = _extent(op, plan, lanes)
        size = op.tensor.GetSize()
        if last >= size:
            if count_form and plan.counter is not None:
                raise ConstraintError(
                    f"{spec.name}: count {plan.counter} is past the end of {op.role}, which has "
                    f"{size} elements")
            raise ConstraintError(
                f"{spec.name}: repeat {rep} reaches element {last} of {op.role}, which has "
                f"{size} elements (mask, repeatTime and strides go past the end)")


def _flat_indices(op: _Operand, plan: _Plan, lanes: int, rep_ids: np.ndarray,
                  lane_ids: np.ndarray) -> np.ndarray:
    offs = lane_offsets(op.itemsize, op.blk, lanes)
    return op.base + rep_ids * (op.rep * op.elems_per_block()) + offs[lane_ids]


def _contiguous(op: _Operand, lanes: int) -> bool:
    return op.blk == 1 and op.rep * op.elems_per_block() == lanes


# --- overlap ------------------------------------------------------------------------------------
def _partial(spec: Spec, dst: _Operand, src: _Operand, why: str) -> ConstraintError:
    return ConstraintError(
        f"{spec.name}: {dst.role} and {src.role} overlap partially ({why}): within a repeat "
        f"they must overlap 100% or not at all, and no repeat may read what an earlier one "
        f"wrote (general address overlap constraint)")


def _byte_runs(idx: np.ndarray, itemsize: int) -> np.ndarray:
    return (idx[:, None] * itemsize + np.arange(itemsize)).reshape(-1)


def _overlap(spec: Spec, dst: _Operand, d_idx: np.ndarray, src: _Operand, s_idx: np.ndarray,
             rep_ids: np.ndarray, repeats: int) -> bool:
    """Check dst against one source; return True when the call must run repeat by repeat."""
    dsz, ssz = dst.itemsize, src.itemsize
    d_lo, d_hi = int(d_idx.min()) * dsz, (int(d_idx.max()) + 1) * dsz
    s_lo, s_hi = int(s_idx.min()) * ssz, (int(s_idx.max()) + 1) * ssz
    if d_hi <= s_lo or s_hi <= d_lo:
        return False                                    # byte ranges apart
    if dsz != ssz:                                      # Cast between types of different size
        d_b, s_b = _byte_runs(d_idx, dsz), _byte_runs(s_idx, ssz)
        if np.intersect1d(d_b, s_b).size == 0:
            return False
        if dsz > ssz:
            raise ConstraintError(
                f"{spec.name}: dst and src overlap; for a Cast to a wider type the vendor warns "
                f"that overlapping addresses give wrong results, so the emulation refuses it "
                f"(use separate buffers)")
        d_r, s_r = np.repeat(rep_ids, dsz), np.repeat(rep_ids, ssz)
        if _read_after_write(d_b, d_r, s_b, s_r, repeats).any():
            raise _partial(spec, dst, src, "a later repeat reads bytes an earlier one wrote")
        return False
    # same element size: compare element indices
    same = d_idx == s_idx
    lane_equal = np.bincount(rep_ids[~same], minlength=repeats) == 0   # 100% in that repeat
    span = int(max(d_idx.max(), s_idx.max())) + 1
    dkeys = rep_ids * span + d_idx
    skeys = rep_ids * span + s_idx
    common = np.intersect1d(dkeys, skeys)
    if common.size and not lane_equal[common // span].all():
        raise _partial(spec, dst, src, "inside one repeat")
    raw = _read_after_write(d_idx, rep_ids, s_idx, rep_ids, repeats)
    if not raw.any():
        return False
    if (spec.dst_src1_accumulate and src.role == "src1"
            and src.tensor.dtype.kind == "f" and (src.rep == 0 or dst.rep == 0)):
        return True            # documented exception: accumulate into dst through src1
    raise _partial(spec, dst, src, "a later repeat reads what an earlier one wrote")


def _read_after_write(d_idx, d_rep, s_idx, s_rep, repeats: int) -> np.ndarray:
    """For each source access: was that location written by an *earlier* repeat?"""
    lo = int(min(d_idx.min(), s_idx.min()))
    first_write = np.full(int(max(d_idx.max(), s_idx.max())) - lo + 1, repeats, dtype=np.int64)
    np.minimum.at(first_write, d_idx - lo, d_rep)
    return first_write[s_idx - lo] < s_rep


# --- running ------------------------------------------------------------------------------------
def _wrap(spec: Spec, kernel: Callable, values: list) -> np.ndarray:
    try:
        return kernel(*values)
    except AscendCError:
        raise
    except TypeError as exc:
        raise AscendCTypeError(f"{spec.name}: {exc}") from exc
    except ValueError as exc:
        raise ConstraintError(f"{spec.name}: {exc}") from exc


def execute(spec: Spec, dst: LocalTensor, srcs: dict, args: tuple, is_set_mask: bool,
            kernel: Callable, lanes: int, type_lanes: int | None = None) -> None:
    """Run one call. ``srcs`` maps role -> LocalTensor; ``kernel(*source_values)`` returns the
    destination values (in dst's type) for the gathered source values, lane by lane.
    ``lanes`` is the lane count per repeat (of the widest operand); ``type_lanes`` is the lane
    count of the type the mask argument is encoded for (defaults to ``lanes``)."""
    name = spec.name
    if not isinstance(is_set_mask, (bool, np.bool_)):
        raise AscendCTypeError(f"{name}: isSetMask must be a bool, got {is_set_mask!r}")
    is_set_mask = bool(is_set_mask)
    count_form = len(args) == 1
    if count_form and not spec.count_set_mask and not is_set_mask:
        raise AscendCTypeError(
            f"{name}: the count form has no isSetMask template argument (it always sets the "
            f"mask itself)")
    tensors = {"dst": dst, **srcs}
    plan = _plan(spec, tensors, args, is_set_mask, lanes, type_lanes or lanes)
    ops = [_Operand(role, t, *plan.strides[role]) for role, t in tensors.items()]
    total = plan.counter if plan.counter is not None else plan.repeats * plan.lanes.size
    if total:
        _check_extents(spec, ops, plan, lanes, count_form)      # analytic: no allocation
        if total > MAX_ELEMENTS:
            raise ConstraintError(
                f"{name}: {total} elements in one call exceed the emulation's limit of "
                f"{MAX_ELEMENTS} (only strides that fold a Counter-mode count onto itself keep "
                f"this many inside the Unified Buffer)")
        _run(spec, ops, plan, lanes, total, kernel)
    if plan.register is not None:
        core = current_core()
        core.mask_mode, core.mask_high, core.mask_low = plan.register


def _run(spec: Spec, ops: list, plan: _Plan, lanes: int, total: int, kernel: Callable) -> None:
    dst, srcs = ops[0], ops[1:]
    ub = dst.tensor.ub
    full = plan.counter is not None or plan.lanes.size == lanes
    if full and all(_contiguous(op, lanes) for op in ops):
        # every operand is one contiguous run: slices instead of index arrays
        ranges = [(op.base * op.itemsize, (op.base + total) * op.itemsize) for op in ops]
        clash = [s for s, r in zip(srcs, ranges[1:])
                 if not (r[1] <= ranges[0][0] or ranges[0][1] <= r[0])
                 and not (r[0] == ranges[0][0] and s.itemsize == dst.itemsize)]
        if not clash:
            values = [ub.view(s.tensor.dtype)[s.base:s.base + total] for s in srcs]
            result = _wrap(spec, kernel, values)
            ub.view(dst.tensor.dtype)[dst.base:dst.base + total] = result
            return
    # general case: the element index of every lane of every repeat
    if plan.counter is None:
        rep_ids = np.repeat(np.arange(plan.repeats, dtype=np.int64), plan.lanes.size)
        lane_ids = np.tile(plan.lanes.astype(np.int64), plan.repeats)
    else:
        rep_ids = np.arange(total, dtype=np.int64) // lanes
        lane_ids = np.arange(total, dtype=np.int64) % lanes
    idx = {op.role: _flat_indices(op, plan, lanes, rep_ids, lane_ids) for op in ops}
    d_idx = idx["dst"]
    sequential = False
    for s in srcs:
        sequential |= _overlap(spec, dst, d_idx, s, idx[s.role], rep_ids, plan.repeats)
    d_view = ub.view(dst.tensor.dtype)
    if not sequential and np.unique(d_idx).size == d_idx.size:
        values = [ub.view(s.tensor.dtype)[idx[s.role]] for s in srcs]
        d_view[d_idx] = _wrap(spec, kernel, values)
        return
    # dst written more than once, or a documented accumulation: repeat by repeat, in order
    bounds = np.searchsorted(rep_ids, np.arange(plan.repeats + 1))
    for r in range(plan.repeats):
        sl = slice(bounds[r], bounds[r + 1])
        if sl.start == sl.stop:
            continue
        values = [ub.view(s.tensor.dtype)[idx[s.role][sl]] for s in srcs]
        d_view[d_idx[sl]] = _wrap(spec, kernel, values)


def lanes_for(*dtypes) -> int:
    """Lanes per repeat: 256 bytes of the widest operand type."""
    return ONE_REPEAT_BYTE_SIZE // max(np.dtype(d).itemsize for d in dtypes)


def type_check(name: str, dst: LocalTensor, srcs: dict, allowed) -> np.dtype:
    """All operands have dst's type, which is one of ``allowed``."""
    if dst.dtype not in allowed:
        names = " and ".join(type_name(t) for t in allowed)
        raise AscendCTypeError(
            f"{name}: unsupported type {type_name(dst.dtype)} (dst); {name} supports {names}")
    for role, t in srcs.items():
        if t.dtype != dst.dtype:
            raise AscendCTypeError(
                f"{name}: {role} is {type_name(t.dtype)} but dst is {type_name(dst.dtype)}; "
                f"{role} must have the destination's type")
    return dst.dtype
