"""The register-based vector API of Ascend 950 (``AscendC::Reg``, "MicroAPI"), emulated.

On Ascend 950PR/950DT (NPU arch 3510) a vector function (``__VEC_SCOPE__`` or a ``__simd_vf__``
function launched with ``asc_vf_call``) moves data between the Unified Buffer and registers
and computes on registers:

- :class:`RegTensor` ``<T, RegTrait>``: one vector register of VL = 256 bytes, ``VL / sizeof(T)``
  lanes;
- :class:`MaskReg`: VL/8 = 256 bits, one bit per register byte; an element of ``sizeof(T)``
  bytes is active when the bits of its bytes are set. :func:`CreateMask` and :func:`UpdateMask`
  make masks for an element width, and every instruction reads its mask at one width (see
  ``docs/ascendc.md``);
- :data:`LoadAlign` / :data:`StoreAlign` (and the register forms of :data:`DataCopy`) with
  their :class:`LoadDist` / :class:`StoreDist` distributions; the arithmetic (:data:`Add`,
  :data:`Sub`, :data:`Mul`, :data:`Max`, :data:`Min`, :data:`Adds`, :data:`Muls`, :data:`Maxs`,
  :data:`Mins`, :data:`Duplicate`), :data:`Compare` / :data:`Compares`, :data:`Select` and
  :data:`Cast` with a :class:`CastTrait`.

C++ becomes Python this way: template arguments go in brackets (``Reg::Cast<float, T,
castTrait0>(dst, src, mask)`` is ``Reg.Cast[float32, T, castTrait0](dst, src, mask)``;
without brackets they are deduced), ``__ubuf__ T*`` is :class:`UbufPtr` (``UbufPtr[T](addr)``,
pointer arithmetic in elements), ``uint32_t&`` is :class:`Ref`, and ``__VEC_SCOPE__ { ... }`` is
``with __VEC_SCOPE__(): ...``. Values come from ``leakyops._vector_math`` (one rounding, as the
device's INF/NAN mode computes them); this module moves bytes and checks the rules.

>>> import numpy as np
>>> from leakyops import ascendc as ac
>>> from leakyops.ascendc import Reg, UbufPtr, __VEC_SCOPE__
>>> with ac.AICore():
...     t = ac.LocalMemAllocator().Alloc(ac.float32, 64)
...     t.numpy()[:] = np.arange(64) - 32
...     addr = UbufPtr[ac.float32](t.GetPhyAddr())
...     x, zero, y = (Reg.RegTensor[ac.float32]() for _ in range(3))
...     gt = Reg.MaskReg()
...     with __VEC_SCOPE__():
...         mask = Reg.CreateMask[ac.float32]()
...         Reg.LoadAlign(x, addr)
...         Reg.Duplicate(zero, 0.0)
...         Reg.Compare[ac.float32, ac.CMPMODE.GT](gt, x, zero, mask)
...         Reg.Select(y, x, zero, gt)
...         Reg.StoreAlign(addr, y, mask)
...     t.numpy()[30:35].tolist()
[0.0, 0.0, 0.0, 1.0, 2.0]
"""

from __future__ import annotations

import enum
import functools
import numbers
import threading
from dataclasses import dataclass
from typing import Any, Callable

import ml_dtypes
import numpy as np

from .. import _vector_math as vm
from ._aicore import _check_int, current_core
from ._errors import AscendCTypeError, ConstraintError
from ._types import RoundMode as _LegacyRoundMode
from ._types import as_dtype
from ._types import type_name as _type_name

__all__ = [
    "VL", "VECTOR_REG_WIDTH", "GetVecLen", "CeilDivision", "Ref", "UbufPtr", "__VEC_SCOPE__",
    "asc_vf_call", "CMPMODE", "Reg",
]

VL = 256                # bytes in a vector register (Ascend 950)
VECTOR_REG_WIDTH = VL   # the name ATVOSS kernels use
_MASK_BITS = VL         # one MaskReg bit per register byte (VL/8 bytes of mask)

_HALF, _FLOAT, _BF16 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)
_FLOATS = (_HALF, _BF16, _FLOAT)
_INTS = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                    np.int64, np.uint64))
_REG_TYPES = _FLOATS + _INTS


type_name = functools.lru_cache(maxsize=None)(_type_name)


def GetVecLen() -> int:
    """``AscendC::GetVecLen()``: VL in bytes (256 on Ascend 950)."""
    return VL


def CeilDivision(a: int, b: int) -> int:
    """``CeilDivision(a, b)``: ``(a + b - 1) / b`` for unsigned integers."""
    a = _check_int(a, "CeilDivision: a", lo=0)
    b = _check_int(b, "CeilDivision: b", lo=1)
    return -(-a // b)


# --- scalars passed by reference, UB pointers --------------------------------------------------
class Ref:
    """A C++ ``uint32_t`` variable passed by reference (``uint32_t&``), for :data:`UpdateMask`,
    which counts it down: ``uint32_t sregMask = count;`` is ``sregMask = Ref(count)``.

    >>> r = Ref(300)
    >>> int(r), r.value
    (300, 300)
    """

    __slots__ = ("value",)

    def __init__(self, value: int = 0):
        self.value = _check_int(value, "Ref (uint32_t)", lo=0, hi=2**32 - 1)

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __repr__(self) -> str:
        return f"Ref({self.value})"


class UbufPtr:
    """``__ubuf__ T*``: a typed address in the Unified Buffer of the current core.

    ``UbufPtr[T](addr)`` is ``(__ubuf__ T*)addr`` (``addr`` a byte address such as
    ``LocalTensor.GetPhyAddr()``, or another pointer, reinterpreted); ``p + n`` moves ``n``
    elements of ``T``. Alignment and bounds are checked where the pointer is used.

    >>> from leakyops.ascendc import half
    >>> p = UbufPtr[half](64) + 3
    >>> (p.addr, type_name(p.dtype))
    (70, 'half')
    """

    __slots__ = ("dtype", "addr")

    def __class_getitem__(cls, dtype: Any) -> Callable[[Any], UbufPtr]:
        dt = _reg_dtype(dtype, "__ubuf__ T*")

        def construct(addr: Any) -> UbufPtr:
            return cls(dt, addr)
        construct.__name__ = f"(__ubuf__ {type_name(dt)}*)"
        return construct

    def __init__(self, dtype: Any, addr: Any):
        self.dtype = _reg_dtype(dtype, "__ubuf__ T*")
        if isinstance(addr, UbufPtr):
            addr = addr.addr
        self.addr = addr if type(addr) is int else _check_int(addr, "__ubuf__ T*: address")

    def __add__(self, n: int) -> UbufPtr:
        n = n if type(n) is int else _check_int(n, "__ubuf__ pointer arithmetic: offset")
        return UbufPtr(self.dtype, self.addr + n * self.dtype.itemsize)

    __radd__ = __add__

    def __sub__(self, n: int) -> UbufPtr:
        n = _check_int(n, "__ubuf__ pointer arithmetic: offset")
        return UbufPtr(self.dtype, self.addr - n * self.dtype.itemsize)

    def __repr__(self) -> str:
        return f"(__ubuf__ {type_name(self.dtype)}*){self.addr}"


_DTYPES: dict = {}


def _reg_dtype(t: Any, what: str) -> np.dtype[Any]:
    try:
        return _DTYPES[t]
    except (KeyError, TypeError):
        pass
    dt = as_dtype(t, what)
    if dt not in _REG_TYPES:
        raise AscendCTypeError(f"{what}: {type_name(dt)} is not a register type of the emulation "
                               f"(b8/b16/b32/b64 integers, half, bfloat16_t, float)")
    try:
        _DTYPES[t] = dt
    except TypeError:
        pass
    return dt


def _ub_bytes(ptr: Any, nbytes: int, align: int, what: str) -> np.ndarray[Any, Any]:
    """The ``nbytes`` UB bytes at ``ptr`` (checked: a pointer, aligned, inside the UB)."""
    if not isinstance(ptr, UbufPtr):
        raise AscendCTypeError(f"{what}: the UB address must be a __ubuf__ pointer (UbufPtr), got "
                               f"{type(ptr).__name__}")
    if ptr.addr % align:
        raise ConstraintError(f"{what}: UB address {ptr.addr} is not {align}-byte aligned (the "
                              f"distribution's alignment constraint)")
    ub = current_core().ub
    if ptr.addr < 0 or ptr.addr + nbytes > ub.capacity:
        raise ConstraintError(f"{what}: bytes [{ptr.addr}, {ptr.addr + nbytes}) are outside the "
                              f"{ub.capacity}-byte Unified Buffer")
    return ub.data[ptr.addr:ptr.addr + nbytes]


# --- the vector function scope -------------------------------------------------------------------
_local = threading.local()


class _Scope:
    """One entry into a vector function: registers written in it are readable only in it."""

    __slots__ = ()


def _scope(what: str) -> _Scope:
    scope = getattr(_local, "scope", None)
    if scope is None:
        raise ConstraintError(
            f"{what}: Reg instructions run inside a vector function: a __VEC_SCOPE__ block "
            f"(with __VEC_SCOPE__(): ...) or a function launched with asc_vf_call")
    return scope


class __VEC_SCOPE__:
    """``__VEC_SCOPE__ { ... }``: a vector function (VF) body, as a context manager.

    Register instructions are refused outside one; registers live for one scope (what a
    register held is gone when the scope ends, as the vendor's RegTensor page says); scopes do
    not nest.
    """

    def __enter__(self) -> __VEC_SCOPE__:
        if getattr(_local, "scope", None) is not None:
            raise ConstraintError("__VEC_SCOPE__: vector functions do not nest (already inside one)")
        _local.scope = _Scope()
        return self

    def __exit__(self, *exc: object) -> None:
        _local.scope = None


def asc_vf_call(func: Callable[..., Any], *args: Any) -> None:
    """``asc_vf_call<func>(args...)``: run the ``__simd_vf__`` function ``func`` as a vector
    function (inside a :class:`__VEC_SCOPE__`)."""
    if not callable(func):
        raise AscendCTypeError(f"asc_vf_call: expected a function, got {func!r}")
    with __VEC_SCOPE__():
        func(*args)


# --- enums and traits ------------------------------------------------------------------------------
class CMPMODE(enum.IntEnum):
    """``AscendC::CMPMODE``."""

    LT = 0
    GT = 1
    EQ = 2
    LE = 3
    GE = 4
    NE = 5


class MaskPattern(enum.IntEnum):
    """``Reg::MaskPattern``: which elements :func:`CreateMask` sets."""

    ALL = 0
    VL1 = 1
    VL2 = 2
    VL3 = 3
    VL4 = 4
    VL8 = 5
    VL16 = 6
    VL32 = 7
    VL64 = 8
    VL128 = 9
    M3 = 10
    M4 = 11
    H = 12
    Q = 13
    ALLF = 15


class LoadDist(enum.Enum):
    """``Reg::LoadDist`` (single-register distributions)."""

    DIST_NORM = "norm"
    DIST_BRC_B8 = "brc8"
    DIST_BRC_B16 = "brc16"
    DIST_BRC_B32 = "brc32"
    DIST_US_B8 = "us8"
    DIST_US_B16 = "us16"
    DIST_DS_B8 = "ds8"
    DIST_DS_B16 = "ds16"
    DIST_UNPACK_B8 = "unpack8"
    DIST_UNPACK_B16 = "unpack16"
    DIST_UNPACK_B32 = "unpack32"
    DIST_UNPACK4_B8 = "unpack4_8"
    DIST_BLK = "blk"
    DIST_E2B_B16 = "e2b16"
    DIST_E2B_B32 = "e2b32"


class StoreDist(enum.Enum):
    """``Reg::StoreDist`` (single-register distributions)."""

    DIST_NORM = "norm"
    DIST_NORM_B8 = "norm8"
    DIST_NORM_B16 = "norm16"
    DIST_NORM_B32 = "norm32"
    DIST_FIRST_ELEMENT_B8 = "first8"
    DIST_FIRST_ELEMENT_B16 = "first16"
    DIST_FIRST_ELEMENT_B32 = "first32"
    DIST_PACK_B16 = "pack16"
    DIST_PACK_B32 = "pack32"
    DIST_PACK_B64 = "pack64"
    DIST_PACK4_B32 = "pack4_32"


class RegLayout(enum.IntEnum):
    """``Reg::RegLayout``: where the narrower elements of a Cast between widths sit."""

    UNKNOWN = -1
    ZERO = 0
    ONE = 1
    TWO = 2
    THREE = 3


class SatMode(enum.IntEnum):
    """``Reg::SatMode``."""

    UNKNOWN = -1
    NO_SAT = 0
    SAT = 1


class MaskMergeMode(enum.IntEnum):
    """``Reg::MaskMergeMode``: what an instruction leaves in lanes its mask does not select."""

    UNKNOWN = 0
    MERGING = 1
    ZEROING = 2


class RoundMode(enum.IntEnum):
    """``AscendC::RoundMode`` as the register API's CastTrait takes it, with ``UNKNOWN`` (the
    trait's default, for conversions that do not round). ``ac.RoundMode`` values are accepted
    too."""

    UNKNOWN = -1
    CAST_NONE = 0
    CAST_RINT = 1
    CAST_FLOOR = 2
    CAST_CEIL = 3
    CAST_ROUND = 4
    CAST_TRUNC = 5
    CAST_ODD = 6
    CAST_HYBRID = 7


@dataclass(frozen=True)
class RegTrait:
    """``Reg::RegTrait``: how many VL registers a RegTensor holds."""

    regNum: int


RegTraitNumOne = RegTrait(1)
RegTraitNumTwo = RegTrait(2)


@dataclass(frozen=True)
class CastTrait:
    """``Reg::CastTrait{layoutMode, satMode, mrgMode, roundMode}``."""

    layoutMode: RegLayout = RegLayout.UNKNOWN
    satMode: SatMode = SatMode.UNKNOWN
    mrgMode: MaskMergeMode = MaskMergeMode.UNKNOWN
    roundMode: Any = RoundMode.UNKNOWN

    def __post_init__(self) -> None:
        for field, kind in (("layoutMode", RegLayout), ("satMode", SatMode),
                            ("mrgMode", MaskMergeMode)):
            if not isinstance(getattr(self, field), kind):
                raise AscendCTypeError(f"CastTrait: {field} must be a {kind.__name__}, got "
                                       f"{getattr(self, field)!r}")
        rm = self.roundMode
        if isinstance(rm, _LegacyRoundMode):
            object.__setattr__(self, "roundMode", RoundMode[rm.name])
        elif not isinstance(rm, RoundMode):
            raise AscendCTypeError(f"CastTrait: roundMode must be a RoundMode, got {rm!r}")


castTrait = CastTrait()   # the default trait of Reg::Cast


# --- registers -------------------------------------------------------------------------------------
class RegTensor:
    """``Reg::RegTensor<T, RegTrait>``: VL = 256 bytes, ``VL / sizeof(T)`` lanes.

    ``RegTensor[T]()`` or ``RegTensor[T, RegTraitNumOne]()`` declares one (C++ ``RegTensor<T>
    reg;``). Its content is undefined until an instruction writes it in the current vector
    function; reading it before that is an error.
    """

    __slots__ = ("dtype", "trait", "_bytes", "_scope")

    def __class_getitem__(cls, key: Any) -> Callable[[], RegTensor]:
        dtype, trait = key if isinstance(key, tuple) else (key, RegTraitNumOne)
        return lambda: cls(dtype, trait)

    def __init__(self, dtype: Any, trait: RegTrait = RegTraitNumOne):
        self.dtype = _reg_dtype(dtype, "RegTensor<T>")
        if not isinstance(trait, RegTrait):
            raise AscendCTypeError(f"RegTensor<T, RegTrait>: expected RegTraitNumOne or "
                                   f"RegTraitNumTwo, got {trait!r}")
        if trait.regNum != 1:
            raise AscendCTypeError(
                "RegTensor<T, RegTraitNumTwo> (2*VL for b64 and complex32) is not emulated; use "
                "RegTraitNumOne")
        self.trait = trait
        self._bytes = np.zeros(VL, np.uint8)
        self._scope: _Scope | None = None

    @property
    def lanes(self) -> int:
        return VL // self.dtype.itemsize

    def _read(self, what: str, scope: _Scope) -> np.ndarray[Any, Any]:
        if self._scope is not scope:
            raise ConstraintError(
                f"{what}: RegTensor<{type_name(self.dtype)}> is read before anything wrote it in "
                f"this vector function (a register's content does not outlive its __VEC_SCOPE__)")
        return self._bytes.view(self.dtype)

    def _write(self, values: np.ndarray[Any, Any], scope: _Scope) -> None:
        self._bytes[:] = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
        self._scope = scope

    def numpy(self) -> np.ndarray[Any, Any]:
        """A copy of the lanes (host-side convenience; no checks)."""
        return self._bytes.view(self.dtype).copy()

    def __repr__(self) -> str:
        return f"RegTensor<{type_name(self.dtype)}>"


class MaskReg:
    """``Reg::MaskReg``: 256 bits, one per register byte. Made by :func:`CreateMask`,
    :func:`UpdateMask` or :data:`Compare`; an element of ``w`` bytes is active when its bits
    are set. The emulation remembers the element width a mask was made for, and an instruction
    that reads it at another width is an error (see ``docs/ascendc.md``)."""

    __slots__ = ("_bits", "width", "_scope")

    def __init__(self) -> None:
        self._bits = np.zeros(_MASK_BITS, np.bool_)
        self.width = 0            # element width in bytes the mask was made for (0: unwritten)
        self._scope: _Scope | None = None

    def _set(self, active: np.ndarray[Any, Any], width: int, scope: _Scope) -> MaskReg:
        self._bits = np.repeat(np.asarray(active, np.bool_), width)
        self.width = width
        self._scope = scope
        return self

    def _lanes(self, width: int, what: str, scope: _Scope) -> np.ndarray[Any, Any]:
        if not isinstance(self, MaskReg):
            raise AscendCTypeError(f"{what}: mask must be a MaskReg, got {type(self).__name__}")
        if self._scope is not scope:
            raise ConstraintError(f"{what}: the MaskReg is read before anything wrote it in this "
                                  f"vector function")
        if self.width != width:
            raise ConstraintError(
                f"{what}: the mask was made for {self.width}-byte elements, but this instruction "
                f"reads it at {width}-byte elements (make it with CreateMask/UpdateMask/Compare of "
                f"a {width}-byte type)")
        return self._bits[::width]

    def numpy(self, width: int | None = None) -> np.ndarray[Any, Any]:
        """The active flags at ``width`` (default: the width it was made for); no checks."""
        w = width or self.width or 1
        return self._bits[::w].copy()

    def __repr__(self) -> str:
        if not self.width:
            return "MaskReg(unwritten)"
        return f"MaskReg({int(self._bits[::self.width].sum())} of {VL // self.width} b{8 * self.width})"


def _mask_of(mask: Any, width: int, what: str, scope: _Scope) -> np.ndarray[Any, Any]:
    if not isinstance(mask, MaskReg):
        raise AscendCTypeError(f"{what}: mask must be a MaskReg, got {type(mask).__name__}")
    return mask._lanes(width, what, scope)


# --- templates --------------------------------------------------------------------------------------
class _Template:
    """A function template: ``F[args](...)`` with explicit template arguments, ``F(...)``
    with the defaults (and the types deduced from the operands)."""

    def __init__(self, name: str, impl: Callable[..., Any], max_targs: int):
        self.__name__ = self.name = name
        self._impl = impl
        self._max = max_targs
        self.__doc__ = impl.__doc__

    def __getitem__(self, targs: Any) -> Callable[..., Any]:
        targs = targs if isinstance(targs, tuple) else (targs,)
        if len(targs) > self._max:
            raise AscendCTypeError(f"Reg::{self.name}: at most {self._max} template arguments, "
                                   f"got {len(targs)}")

        def call(*args: Any) -> Any:
            return self._impl(targs, *args)
        call.__name__ = f"Reg::{self.name}<...>"
        return call

    def __call__(self, *args: Any) -> Any:
        return self._impl((), *args)

    def __repr__(self) -> str:
        return f"<Reg::{self.name}>"


def _targ(targs: tuple, i: int, default: Any = None) -> Any:
    return targs[i] if len(targs) > i and targs[i] is not None else default


def _check_T(name: str, targs: tuple, i: int, actual: np.dtype[Any], role: str) -> None:
    """An explicit type template argument must be the operand's type (C++ deduction)."""
    t = _targ(targs, i)
    if t is not None and as_dtype(t, f"Reg::{name}<T>") != actual:
        raise AscendCTypeError(f"Reg::{name}: template type {type_name(as_dtype(t, name))} but "
                               f"{role} is {type_name(actual)}")


def _reg(name: str, role: str, r: Any) -> RegTensor:
    if not isinstance(r, RegTensor):
        raise AscendCTypeError(f"Reg::{name}: {role} must be a RegTensor, got {type(r).__name__}")
    return r


def _same_types(name: str, dst: RegTensor, *srcs: RegTensor) -> np.dtype[Any]:
    for s in srcs:
        if s.dtype != dst.dtype:
            raise AscendCTypeError(f"Reg::{name}: operands are {type_name(s.dtype)} and "
                                   f"{type_name(dst.dtype)}; they must have one type")
    return dst.dtype


def _supported(name: str, dtype: np.dtype[Any], allowed: tuple) -> None:
    if dtype not in allowed:
        raise AscendCTypeError(f"Reg::{name}: {type_name(dtype)} is not supported; "
                               f"{name} takes {', '.join(type_name(t) for t in allowed)} here")


def _merge_mode(name: str, mode: Any, merging: bool) -> MaskMergeMode:
    if mode is None:
        return MaskMergeMode.ZEROING
    if not isinstance(mode, MaskMergeMode):
        raise AscendCTypeError(f"Reg::{name}: mode must be a MaskMergeMode, got {mode!r}")
    if mode is MaskMergeMode.MERGING and not merging:
        raise ConstraintError(f"Reg::{name}: MaskMergeMode::MERGING is not supported by {name} "
                              f"(the vendor's MergeMode table lists ZEROING only)")
    return MaskMergeMode.ZEROING if mode is MaskMergeMode.UNKNOWN else mode


def _scalar(name: str, value: Any, dtype: np.dtype[Any]) -> np.generic:
    """A scalar argument converted to the register's type (the C++ implicit conversion)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (str, bytes)) or not isinstance(
            value, (numbers.Real, np.integer, np.floating, np.bool_)):
        raise AscendCTypeError(f"Reg::{name}: scalarValue must be a real number, got {value!r}")
    if dtype.kind in "iu":
        if isinstance(value, (float, np.floating)):
            value = int(np.trunc(value)) if np.isfinite(value) else 0
        return np.array(int(value) % 2 ** (8 * dtype.itemsize), np.uint64).astype(
            dtype.str.replace("i", "u")).view(dtype)[()]
    with np.errstate(over="ignore", invalid="ignore"):
        wide = np.array(value, np.float64)
        return (vm.cast(wide.reshape(1), dtype, "rint")[0] if dtype == _BF16
                else wide.astype(dtype)[()])


def _finish(dst: RegTensor, result: np.ndarray[Any, Any], active: np.ndarray[Any, Any],
            mode: MaskMergeMode, name: str, scope: _Scope) -> None:
    """Write ``result`` into the active lanes of ``dst``; the others become 0 (ZEROING) or
    keep ``dst`` (MERGING, which reads ``dst``)."""
    if mode is MaskMergeMode.MERGING:
        other = dst._read(f"Reg::{name} (MERGING reads dst)", scope)
    else:
        other = np.zeros(dst.lanes, dst.dtype)
    dst._write(np.where(active, result, other).astype(dst.dtype, copy=False), scope)


# --- masks ----------------------------------------------------------------------------------------------
def _pattern_active(pattern: MaskPattern, lanes: int) -> np.ndarray[Any, Any]:
    i = np.arange(lanes)
    counts = {MaskPattern.VL1: 1, MaskPattern.VL2: 2, MaskPattern.VL3: 3, MaskPattern.VL4: 4,
              MaskPattern.VL8: 8, MaskPattern.VL16: 16, MaskPattern.VL32: 32,
              MaskPattern.VL64: 64, MaskPattern.VL128: 128, MaskPattern.H: lanes // 2,
              MaskPattern.Q: lanes // 4}
    if pattern is MaskPattern.ALL:
        return np.ones(lanes, np.bool_)
    if pattern is MaskPattern.ALLF:
        return np.zeros(lanes, np.bool_)
    if pattern is MaskPattern.M3:
        return i % 3 == 0
    if pattern is MaskPattern.M4:
        return i % 4 == 0
    return i < counts[pattern]


def _create_mask(targs: tuple) -> MaskReg:
    """``CreateMask<T, MaskPattern = ALL, RegTrait>()``: a mask of ``pattern`` for ``T``."""
    scope = _scope("Reg::CreateMask")
    if not targs:
        raise AscendCTypeError("Reg::CreateMask<T>: the element type T is required")
    dt = _reg_dtype(targs[0], "Reg::CreateMask<T>")
    pattern = _targ(targs, 1, MaskPattern.ALL)
    if not isinstance(pattern, MaskPattern):
        raise AscendCTypeError(f"Reg::CreateMask: mode must be a MaskPattern, got {pattern!r}")
    return MaskReg()._set(_pattern_active(pattern, VL // dt.itemsize), dt.itemsize, scope)


def _update_mask(targs: tuple, scalarValue: Any) -> MaskReg:
    """``UpdateMask<T, RegTrait>(uint32_t& scalarValue)``: the first ``scalarValue`` elements
    of ``T`` (at most VL_T), then ``scalarValue = scalarValue < VL_T ? 0 : scalarValue - VL_T``."""
    scope = _scope("Reg::UpdateMask")
    if not targs:
        raise AscendCTypeError("Reg::UpdateMask<T>: the element type T is required")
    dt = _reg_dtype(targs[0], "Reg::UpdateMask<T>")
    if not isinstance(scalarValue, Ref):
        raise AscendCTypeError(
            f"Reg::UpdateMask: scalarValue is a uint32_t& the call counts down; pass a Ref "
            f"(e.g. sregMask = Ref(count)), got {type(scalarValue).__name__}")
    lanes = VL // dt.itemsize
    n = scalarValue.value
    mask = MaskReg()._set(np.arange(lanes) < n, dt.itemsize, scope)
    scalarValue.value = 0 if n < lanes else n - lanes
    return mask


CreateMask = _Template("CreateMask", _create_mask, 3)
UpdateMask = _Template("UpdateMask", _update_mask, 2)


# --- load / store ---------------------------------------------------------------------------------------
# LoadDist -> (element width the distribution moves, or 0 for any; bytes read; alignment)
_LOAD = {
    LoadDist.DIST_NORM: (0, VL, 32),
    LoadDist.DIST_BRC_B8: (1, 1, 1), LoadDist.DIST_BRC_B16: (2, 2, 2),
    LoadDist.DIST_BRC_B32: (4, 4, 4),
    LoadDist.DIST_US_B8: (1, VL // 2, 32), LoadDist.DIST_US_B16: (2, VL // 2, 32),
    LoadDist.DIST_DS_B8: (1, 2 * VL, 32), LoadDist.DIST_DS_B16: (2, 2 * VL, 32),
    LoadDist.DIST_UNPACK_B8: (1, VL // 2, 32), LoadDist.DIST_UNPACK_B16: (2, VL // 2, 32),
    LoadDist.DIST_UNPACK_B32: (4, VL // 2, 32), LoadDist.DIST_UNPACK4_B8: (1, VL // 4, 32),
    LoadDist.DIST_BLK: (0, 32, 32),
    LoadDist.DIST_E2B_B16: (2, 16, 16), LoadDist.DIST_E2B_B32: (4, 32, 32),
}


def _distribute(dist: LoadDist, src: np.ndarray[Any, Any], dt: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """The register lanes a load distribution makes of the bytes it read."""
    lanes = VL // dt.itemsize
    e = src.view(dt)
    if dist in (LoadDist.DIST_NORM,):
        return e
    if dist in (LoadDist.DIST_BRC_B8, LoadDist.DIST_BRC_B16, LoadDist.DIST_BRC_B32):
        return np.full(lanes, e[0], dt)
    if dist in (LoadDist.DIST_US_B8, LoadDist.DIST_US_B16):
        return np.repeat(e, 2)
    if dist in (LoadDist.DIST_DS_B8, LoadDist.DIST_DS_B16):
        return e[::2]
    out = np.zeros(lanes, dt)
    if dist in (LoadDist.DIST_UNPACK_B8, LoadDist.DIST_UNPACK_B16, LoadDist.DIST_UNPACK_B32):
        out[::2] = e
    elif dist is LoadDist.DIST_UNPACK4_B8:
        out[::4] = e
    elif dist is LoadDist.DIST_BLK:
        return np.tile(e, VL // 32)
    else:                                            # E2B: each element fills a 32-byte block
        return np.repeat(e, 32 // dt.itemsize)
    return out


def _load(name: str, targs: tuple, dstReg: Any, srcAddr: Any, dist: Any) -> None:
    scope = _scope(f"Reg::{name}")
    dst = _reg(name, "dstReg", dstReg)
    _check_T(name, targs, 0, dst.dtype, "dstReg")
    if not isinstance(dist, LoadDist):
        raise AscendCTypeError(f"Reg::{name}: dist must be a LoadDist, got {dist!r}")
    width, nbytes, align = _LOAD[dist]
    if width and width != dst.dtype.itemsize:
        raise ConstraintError(f"Reg::{name}: {dist.name} moves {8 * width}-bit elements but the "
                              f"register holds {type_name(dst.dtype)}")
    if isinstance(srcAddr, UbufPtr) and srcAddr.dtype != dst.dtype:
        raise AscendCTypeError(f"Reg::{name}: srcAddr is __ubuf__ {type_name(srcAddr.dtype)}* but "
                               f"dstReg is RegTensor<{type_name(dst.dtype)}>; the types must match")
    src = _ub_bytes(srcAddr, nbytes, align, f"Reg::{name}<{dist.name}>")
    dst._write(_distribute(dist, src.copy(), dst.dtype), scope)


# StoreDist -> (width of the register slots it reads (0: sizeof(T)); bytes it keeps of each slot
#              (0: all); alignment; mask ignored)
_STORE = {
    StoreDist.DIST_NORM: (0, 0, 32, False),
    StoreDist.DIST_NORM_B8: (1, 0, 32, False), StoreDist.DIST_NORM_B16: (2, 0, 32, False),
    StoreDist.DIST_NORM_B32: (4, 0, 32, False),
    StoreDist.DIST_FIRST_ELEMENT_B8: (1, 0, 1, True),
    StoreDist.DIST_FIRST_ELEMENT_B16: (2, 0, 2, True),
    StoreDist.DIST_FIRST_ELEMENT_B32: (4, 0, 4, True),
    StoreDist.DIST_PACK_B16: (2, 1, 32, False), StoreDist.DIST_PACK_B32: (4, 2, 32, False),
    StoreDist.DIST_PACK_B64: (8, 4, 32, False), StoreDist.DIST_PACK4_B32: (4, 1, 32, False),
}


def _store(name: str, targs: tuple, dstAddr: Any, srcReg: Any, mask: Any, dist: Any) -> None:
    scope = _scope(f"Reg::{name}")
    src = _reg(name, "srcReg", srcReg)
    _check_T(name, targs, 0, src.dtype, "srcReg")
    if not isinstance(dist, StoreDist):
        raise AscendCTypeError(f"Reg::{name}: dist must be a StoreDist, got {dist!r}")
    if isinstance(dstAddr, UbufPtr) and dstAddr.dtype != src.dtype:
        raise AscendCTypeError(f"Reg::{name}: dstAddr is __ubuf__ {type_name(dstAddr.dtype)}* but "
                               f"srcReg is RegTensor<{type_name(src.dtype)}>; the types must match")
    slot, keep, align, first = _STORE[dist]
    isz = src.dtype.itemsize
    what = f"Reg::{name}<{dist.name}>"
    if keep == 0 and slot and slot != isz:
        raise ConstraintError(f"{what}: moves {8 * slot}-bit elements but the register holds "
                              f"{type_name(src.dtype)}")
    if keep and keep != isz:
        raise ConstraintError(f"{what}: stores the low {8 * keep} bits of {8 * slot}-bit slots as "
                              f"{8 * keep}-bit elements, but T is {type_name(src.dtype)}")
    data = src._read(what, scope).view(np.uint8)
    if first:                                     # mask ignored: element 0 only
        if not isinstance(mask, MaskReg):
            raise AscendCTypeError(f"{what}: mask must be a MaskReg, got {type(mask).__name__}")
        _ub_bytes(dstAddr, isz, align, what)[:] = data[:isz]
        return
    slot = slot or isz
    active = _mask_of(mask, slot, what, scope)
    out_isz = keep or slot
    pieces = data.reshape(-1, slot)[:, :out_isz]  # little-endian: the low bytes come first
    if not active.any():
        _ub_bytes(dstAddr, 0, align, what)
        return
    last = int(np.flatnonzero(active)[-1])
    ub = _ub_bytes(dstAddr, (last + 1) * out_isz, align, what).reshape(-1, out_isz)
    ub[active[:last + 1]] = pieces[:last + 1][active[:last + 1]]


def _load_align(targs: tuple, dstReg: Any, srcAddr: Any) -> None:
    """``LoadAlign<T, LoadDist = DIST_NORM>(dstReg, __ubuf__ T* srcAddr)``: UB -> register
    with a distribution; the address aligned as the distribution requires (32 bytes for
    DIST_NORM and the unpack modes)."""
    _load("LoadAlign", targs, dstReg, srcAddr, _targ(targs, 1, LoadDist.DIST_NORM))


def _store_align(targs: tuple, dstAddr: Any, srcReg: Any, mask: Any) -> None:
    """``StoreAlign<T, StoreDist = DIST_NORM>(__ubuf__ T* dstAddr, srcReg, mask)``: register ->
    UB, active lanes only (a PACK distribution stores the low half of each active slot)."""
    _store("StoreAlign", targs, dstAddr, srcReg, mask, _targ(targs, 1, StoreDist.DIST_NORM))


def _data_copy(targs: tuple, *args: Any) -> None:
    """The register forms of ``DataCopy`` (the older names of LoadAlign/StoreAlign):
    ``DataCopy<T, LoadDist>(dstReg, srcAddr)`` and ``DataCopy<T, StoreDist>(dstAddr, srcReg,
    mask)``."""
    if len(args) == 2 and isinstance(args[0], RegTensor):
        _load("DataCopy", targs, args[0], args[1], _targ(targs, 1, LoadDist.DIST_NORM))
    elif len(args) == 3 and isinstance(args[1], RegTensor):
        _store("DataCopy", targs, args[0], args[1], args[2], _targ(targs, 1, StoreDist.DIST_NORM))
    else:
        raise AscendCTypeError(
            "Reg::DataCopy: expected (RegTensor dstReg, __ubuf__ T* srcAddr) or (__ubuf__ T* "
            "dstAddr, RegTensor srcReg, MaskReg mask)")


LoadAlign = _Template("LoadAlign", _load_align, 2)
StoreAlign = _Template("StoreAlign", _store_align, 2)
DataCopy = _Template("DataCopy", _data_copy, 2)


# --- arithmetic ---------------------------------------------------------------------------------------
def _binary(name: str, fn: Callable[..., Any], allowed: tuple, merging: bool) -> _Template:
    def impl(targs: tuple, dstReg: Any, srcReg0: Any, srcReg1: Any, mask: Any) -> None:
        scope = _scope(f"Reg::{name}")
        dst, a, b = (_reg(name, r, x) for r, x in (("dstReg", dstReg), ("srcReg0", srcReg0),
                                                     ("srcReg1", srcReg1)))
        dt = _same_types(name, dst, a, b)
        _check_T(name, targs, 0, dt, "dstReg")
        _supported(name, dt, allowed)
        mode = _merge_mode(name, _targ(targs, 1), merging)
        active = _mask_of(mask, dt.itemsize, f"Reg::{name}", scope)
        x, y = a._read(f"Reg::{name}", scope), b._read(f"Reg::{name}", scope)
        _finish(dst, fn(x, y), active, mode, name, scope)
    impl.__doc__ = (f"``{name}<T, MaskMergeMode = ZEROING>(dstReg, srcReg0, srcReg1, mask)`` "
                    f"({', '.join(type_name(t) for t in allowed)}).")
    return _Template(name, impl, 2)


def _scalar_op(name: str, fn: Callable[..., Any], allowed: tuple) -> _Template:
    def impl(targs: tuple, dstReg: Any, srcReg: Any, scalarValue: Any, mask: Any) -> None:
        scope = _scope(f"Reg::{name}")
        dst, a = _reg(name, "dstReg", dstReg), _reg(name, "srcReg", srcReg)
        dt = _same_types(name, dst, a)
        _check_T(name, targs, 0, dt, "dstReg")
        _supported(name, dt, allowed)
        mode = _merge_mode(name, _targ(targs, 2), False)
        s = _scalar(name, scalarValue, dt)
        active = _mask_of(mask, dt.itemsize, f"Reg::{name}", scope)
        _finish(dst, fn(a._read(f"Reg::{name}", scope), s), active, mode, name, scope)
    impl.__doc__ = (f"``{name}<T, U, MaskMergeMode = ZEROING>(dstReg, srcReg, scalarValue, mask)`` "
                    f"({', '.join(type_name(t) for t in allowed)}); the scalar takes T.")
    return _Template(name, impl, 3)


Add = _binary("Add", vm.add, _FLOATS, merging=True)
Sub = _binary("Sub", vm.sub, _FLOATS, merging=False)
Mul = _binary("Mul", vm.mul, _FLOATS, merging=False)
Max = _binary("Max", vm.maximum, _FLOATS, merging=True)
Min = _binary("Min", vm.minimum, _FLOATS, merging=True)
Adds = _scalar_op("Adds", vm.add, _FLOATS)
Muls = _scalar_op("Muls", vm.mul, (_HALF, _FLOAT))          # no bfloat16_t (Muls page)
Maxs = _scalar_op("Maxs", vm.maximum, _FLOATS)
Mins = _scalar_op("Mins", vm.minimum, _FLOATS)


def _duplicate(targs: tuple, dstReg: Any, value: Any, mask: Any = None) -> None:
    """``Duplicate(dstReg, scalarValue)``, ``Duplicate<T, MaskMergeMode>(dstReg, scalarValue,
    mask)`` and ``Duplicate<T, HighLowPart, MaskMergeMode>(dstReg, srcReg, mask)`` (the lowest
    element of srcReg); ZEROING or MERGING."""
    scope = _scope("Reg::Duplicate")
    dst = _reg("Duplicate", "dstReg", dstReg)
    _check_T("Duplicate", targs, 0, dst.dtype, "dstReg")
    if isinstance(value, RegTensor):
        if mask is None:
            raise AscendCTypeError("Reg::Duplicate(dstReg, srcReg, mask): the mask is required")
        _same_types("Duplicate", dst, value)
        mode = _merge_mode("Duplicate", _targ(targs, 2), True)
        s = value._read("Reg::Duplicate", scope)[0]
    else:
        mode = _merge_mode("Duplicate", _targ(targs, 1), True)
        s = _scalar("Duplicate", value, dst.dtype)
    active = (np.ones(dst.lanes, np.bool_) if mask is None
              else _mask_of(mask, dst.dtype.itemsize, "Reg::Duplicate", scope))
    _finish(dst, np.full(dst.lanes, s, dst.dtype), active, mode, "Duplicate", scope)


Duplicate = _Template("Duplicate", _duplicate, 3)

_CMP = {CMPMODE.LT: "lt", CMPMODE.GT: "gt", CMPMODE.EQ: "eq", CMPMODE.LE: "le", CMPMODE.GE: "ge",
        CMPMODE.NE: "ne"}


def _compare_into(name: str, targs: tuple, dst: Any, a: Any, b: Any, mask: Any,
                  scalar: bool) -> None:
    scope = _scope(f"Reg::{name}")
    if not isinstance(dst, MaskReg):
        raise AscendCTypeError(f"Reg::{name}: dst must be a MaskReg, got {type(dst).__name__}")
    src = _reg(name, "srcReg0" if not scalar else "srcReg", a)
    dt = src.dtype if scalar else _same_types(name, src, _reg(name, "srcReg1", b))
    _check_T(name, targs, 0, dt, "the sources")
    cmp = _targ(targs, 1, CMPMODE.EQ)
    if not isinstance(cmp, CMPMODE):
        raise AscendCTypeError(f"Reg::{name}: mode must be a CMPMODE, got {cmp!r}")
    other = _scalar(name, b, dt) if scalar else b._read(f"Reg::{name}", scope)
    active = _mask_of(mask, dt.itemsize, f"Reg::{name}", scope)
    result = vm.compare(src._read(f"Reg::{name}", scope), other, _CMP[cmp])
    dst._set(result & active, dt.itemsize, scope)      # unselected elements: 0


def _compare(targs: tuple, dst: Any, srcReg0: Any, srcReg1: Any, mask: Any) -> None:
    """``Compare<T, CMPMODE = EQ>(MaskReg dst, srcReg0, srcReg1, mask)``: bit set where
    ``srcReg0 <mode> srcReg1`` (IEEE: NaN is false in every mode but NE); elements the mask
    does not select are 0."""
    _compare_into("Compare", targs, dst, srcReg0, srcReg1, mask, scalar=False)


def _compares(targs: tuple, dst: Any, srcReg: Any, scalarValue: Any, mask: Any) -> None:
    """``Compares<T, CMPMODE = EQ>(MaskReg dst, srcReg, scalarValue, mask)``."""
    _compare_into("Compares", targs, dst, srcReg, scalarValue, mask, scalar=True)


def _select(targs: tuple, dstReg: Any, srcReg0: Any, srcReg1: Any, mask: Any) -> None:
    """``Select<T>(dstReg, srcReg0, srcReg1, mask)``: srcReg0 where the mask bit is 1, srcReg1
    where it is 0 (every lane written)."""
    scope = _scope("Reg::Select")
    dst, a, b = (_reg("Select", r, x) for r, x in (("dstReg", dstReg), ("srcReg0", srcReg0),
                                                    ("srcReg1", srcReg1)))
    dt = _same_types("Select", dst, a, b)
    _check_T("Select", targs, 0, dt, "dstReg")
    sel = _mask_of(mask, dt.itemsize, "Reg::Select", scope)
    dst._write(np.where(sel, a._read("Reg::Select", scope), b._read("Reg::Select", scope)), scope)


Compare = _Template("Compare", _compare, 2)
Compares = _Template("Compares", _compares, 2)
Select = _Template("Select", _select, 1)


# --- Cast ---------------------------------------------------------------------------------------------
_i8, _u8, _i16, _u16, _i32, _u32, _i64 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16,
                                                                 np.uint16, np.int32, np.uint32,
                                                                 np.int64))
_R = (RoundMode.CAST_RINT, RoundMode.CAST_ROUND, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
      RoundMode.CAST_TRUNC)
_ZO = (RegLayout.ZERO, RegLayout.ONE)
_ZT = _ZO + (RegLayout.TWO, RegLayout.THREE)
_U = (RegLayout.UNKNOWN,)
_SAT = (SatMode.NO_SAT, SatMode.SAT)
_EXACT: tuple = ()
#: (src, dst) -> (layouts, saturation modes (empty: fixed by the pair), round modes (empty: the
#: conversion is exact)). The Cast page's tables 6-9 for the emulated types (half -> float, in
#: the page's table 3 only, takes bfloat16_t -> float's row; int64 sources are not emulated).
CAST_TABLE = {
    (_HALF, _i8): (_ZO, _SAT, _R), (_HALF, _u8): (_ZO, _SAT, _R), (_HALF, _i16): (_U, _SAT, _R),
    (_HALF, _i32): (_ZO, (), _R), (_BF16, _i32): (_ZO, _SAT, _R), (_FLOAT, _i16): (_ZO, _SAT, _R),
    (_FLOAT, _i32): (_U, _SAT, _R), (_FLOAT, _i64): (_ZO, _SAT, _R),
    (_HALF, _BF16): (_U, (), _R), (_BF16, _HALF): (_U, _SAT, _R), (_BF16, _FLOAT): (_ZO, (), _EXACT),
    (_HALF, _FLOAT): (_ZO, (), _EXACT), (_FLOAT, _HALF): (_ZO, _SAT, (RoundMode.CAST_ODD,) + _R),
    (_FLOAT, _BF16): (_ZO, _SAT, _R),
    (_i8, _HALF): (_ZO, (), _EXACT), (_u8, _HALF): (_ZO, (), _EXACT), (_i16, _HALF): (_U, (), _R),
    (_i16, _FLOAT): (_ZO, (), _EXACT), (_i32, _FLOAT): (_U, (), _R),
    (_i8, _i16): (_ZO, (), _EXACT), (_i8, _i32): (_ZT, (), _EXACT), (_u8, _u16): (_ZO, (), _EXACT),
    (_u8, _u32): (_ZT, (), _EXACT), (_i16, _u8): (_ZO, _SAT, _EXACT), (_i16, _i32): (_ZO, (), _EXACT),
    (_i16, _u32): (_ZO, (), _EXACT), (_u16, _u8): (_ZO, _SAT, _EXACT), (_u16, _u32): (_ZO, (), _EXACT),
    (_i32, _u8): (_ZT, _SAT, _EXACT), (_i32, _i16): (_ZO, _SAT, _EXACT), (_i32, _u16): (_ZO, _SAT, _EXACT),
    (_i32, _i64): (_ZO, (), _EXACT), (_u32, _u8): (_ZT, _SAT, _EXACT), (_u32, _i16): (_ZO, _SAT, _EXACT),
    (_u32, _u16): (_ZO, _SAT, _EXACT),
}
_MODE_NAMES = {RoundMode.CAST_RINT: "rint", RoundMode.CAST_FLOOR: "floor",
               RoundMode.CAST_CEIL: "ceil", RoundMode.CAST_ROUND: "round",
               RoundMode.CAST_TRUNC: "trunc", RoundMode.CAST_ODD: "odd"}


def _cast(targs: tuple, dstReg: Any, srcReg: Any, mask: Any) -> None:
    """``Cast<To, From, CastTrait>(dstReg, srcReg, mask)``: convert with the trait's layout,
    saturation, merge and round modes (the pairs and modes of the Cast page; see
    :data:`CAST_TABLE`). Between widths the instruction has the wider type's lanes, reads the
    mask there, and the narrower elements sit at ``RegLayout`` within each group (the other
    narrow positions of a narrowing Cast are 0)."""
    name = "Cast"
    scope = _scope("Reg::Cast")
    dst, src = _reg(name, "dstReg", dstReg), _reg(name, "srcReg", srcReg)
    _check_T(name, targs, 0, dst.dtype, "dstReg")
    _check_T(name, targs, 1, src.dtype, "srcReg")
    trait = _targ(targs, 2, castTrait)
    if not isinstance(trait, CastTrait):
        raise AscendCTypeError(f"Reg::Cast: trait must be a CastTrait, got {trait!r}")
    pair = (src.dtype, dst.dtype)
    if pair not in CAST_TABLE:
        raise AscendCTypeError(f"Reg::Cast: {type_name(src.dtype)} -> {type_name(dst.dtype)} is not an "
                               f"emulated conversion (see CAST_TABLE)")
    layouts, sats, rounds = CAST_TABLE[pair]
    what = f"Reg::Cast<{type_name(dst.dtype)}, {type_name(src.dtype)}>"
    if trait.roundMode is RoundMode.CAST_HYBRID:   # also on exact pairs, which ignore the others
        raise ConstraintError(f"{what}: roundMode CAST_HYBRID is not supported (hifloat8's "
                              f"rounding; no emulated conversion takes it)")
    if trait.layoutMode not in layouts:
        raise ConstraintError(f"{what}: layoutMode {trait.layoutMode.name} is not allowed; expected "
                              f"{' or '.join(m.name for m in layouts)}")
    if sats and trait.satMode not in sats:
        raise ConstraintError(f"{what}: this conversion needs satMode NO_SAT or SAT, got "
                              f"{trait.satMode.name}")
    if trait.mrgMode is MaskMergeMode.MERGING:
        raise ConstraintError(f"{what}: MaskMergeMode::MERGING is not supported by Cast (ZEROING only)")
    if rounds and trait.roundMode not in rounds:
        raise ConstraintError(f"{what}: roundMode {trait.roundMode.name} is not supported; expected "
                              f"{', '.join(m.name for m in rounds)}")
    mode = _MODE_NAMES.get(trait.roundMode, "none") if rounds else "none"
    sat = None if not sats else trait.satMode is SatMode.SAT
    sw, dw = src.dtype.itemsize, dst.dtype.itemsize
    lanes_w = max(sw, dw)
    active = _mask_of(mask, lanes_w, what, scope)
    values = src._read(what, scope)
    layout = max(int(trait.layoutMode), 0)
    if sw < dw:                                     # widening: pick the narrow elements
        values = values[layout::dw // sw]
    converted = vm.cast(values, dst.dtype, mode, sat=sat)
    converted = np.where(active, converted, np.zeros(1, dst.dtype))
    if sw > dw:                                     # narrowing: place into the groups
        out = np.zeros(dst.lanes, dst.dtype)
        out[layout::sw // dw] = converted
        converted = out
    dst._write(converted.astype(dst.dtype, copy=False), scope)


Cast = _Template("Cast", _cast, 3)


class _Namespace:
    """``AscendC::Reg``: the register API's names (``Reg.RegTensor``, ``Reg.LoadAlign``, ...)."""

    def __init__(self, names: dict[str, Any]):
        self.__dict__.update(names)

    def __repr__(self) -> str:
        return "<namespace AscendC::Reg>"


Reg = _Namespace({n: globals()[n] for n in (
    "RegTensor", "MaskReg", "RegTrait", "RegTraitNumOne", "RegTraitNumTwo", "MaskPattern",
    "CreateMask", "UpdateMask", "LoadDist", "StoreDist", "LoadAlign", "StoreAlign", "DataCopy",
    "Add", "Sub", "Mul", "Max", "Min", "Adds", "Muls", "Maxs", "Mins", "Duplicate", "Compare",
    "Compares", "Select", "Cast", "CastTrait", "castTrait", "RegLayout", "SatMode",
    "MaskMergeMode", "RoundMode", "CAST_TABLE")})
