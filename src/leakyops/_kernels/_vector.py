"""Explicit vectors for numba: ``Vec``, a value of N lanes that LLVM keeps as one ``<N x T>``.

numba's loops vectorise well where the order of the work does not matter (every element-wise
loop here). A sum in a fixed order does not vectorise by itself: LLVM may not reorder a
floating-point sum, and it does not turn eight written-out scalar lanes into a vector (seen
with ``inspect_asm``: eight ``vaddsd`` per eight elements). ``Vec`` is that vector, written
out: ``vload``/``vstore`` move N adjacent elements, the arithmetic and comparison operators
work lane by lane (a scalar operand stands for N copies), and the scalar rules of
``_rules.py`` (``_keep``, ``_select``, ``_lrelu_grad``, ``_prelu_term``, ``_load``,
``_narrow``) accept ``Vec`` operands unchanged, so each formula is still written once.

Lane ``m`` of a result depends on lane ``m`` of the operands only, and every lane is one IEEE
operation in the order the code says, so the bits do not depend on the CPU: LLVM lowers
``<8 x double>`` to four SSE2 registers, two AVX2 or one AVX-512 register alike. It is
portable LLVM IR; the only conversions that need a CPU feature (float16 through F16C) fall
back to the exact software ones lane by lane (see ``_rules._widen``).
"""

from __future__ import annotations

import operator
import platform

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.datamodel import models
from numba.extending import intrinsic, overload, register_model

__all__ = ["Vec", "LANES", "vload", "vstore", "vsplat", "vlane", "vadd_lane", "vset_lane",
           "vhalf", "vconvert", "vbitcast", "vshift", "vselect", "vabs", "viota", "vload_first", "vstore_first",
           "vstore_stream", "vstore_whole", "store_fence", "vmuladd", "STREAM_ALIGN"]

#: The lanes of every fixed-order sum (element k of a row goes to lane k % LANES).
LANES = 16

_I32 = ir.IntType(32)
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


class Vec(types.Type):
    """N lanes of a numba scalar type (``boolean`` lanes: a comparison's mask)."""

    def __init__(self, dtype: types.Type, n: int) -> None:
        self.dtype, self.n = dtype, n
        super().__init__(name=f"Vec{n}x{dtype}")


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        elt = ir.IntType(1) if fe_type.dtype == types.boolean else \
            dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(elt, fe_type.n))


def _is_mask(t) -> bool:
    return isinstance(t, Vec) and t.dtype == types.boolean


def _llvm(context, t):
    return context.get_value_type(t)


def _splat(builder, value, vtype):
    """N copies of a scalar LLVM value."""
    v = ir.Constant(vtype, ir.Undefined)
    for m in range(vtype.count):
        v = builder.insert_element(v, value, ir.Constant(_I32, m))
    return v


def _operand(context, builder, value, ty, vec: Vec):
    """An operand as an LLVM vector of ``vec``'s lanes (a scalar is cast and splat)."""
    if isinstance(ty, Vec):
        return value
    scalar = context.cast(builder, value, ty, vec.dtype)
    return _splat(builder, scalar, _llvm(context, vec))


# --- memory ----------------------------------------------------------------------------------


def _index_types(arr, idx) -> bool:
    return (isinstance(arr, types.Array) and isinstance(idx, types.BaseTuple)
            and len(idx) == arr.ndim and all(isinstance(t, types.Integer) for t in idx))


def _pointer(context, builder, aryty, ary, idxty, idx):
    """The address of ``ary[idx]`` (``idx`` a tuple of integers; no bounds check)."""
    array = context.make_array(aryty)(context, builder, ary)
    indices = [context.cast(builder, builder.extract_value(idx, n), t, types.intp)
               for n, t in enumerate(idxty)]
    return cgutils.get_item_pointer(context, builder, aryty, array, indices, wraparound=False,
                                    boundscheck=False)


@intrinsic
def vload(typingctx, arr, idx, n):
    """``n`` (a literal) adjacent elements of ``arr`` from index ``idx`` (a tuple) on; the
    array is C-contiguous along its last axis."""
    if not (_index_types(arr, idx) and isinstance(n, types.IntegerLiteral)):
        return None
    rt = Vec(arr.dtype, n.literal_value)

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        vptr = builder.bitcast(ptr, ir.PointerType(_llvm(context, rt)))
        load = builder.load(vptr)
        load.align = context.get_abi_sizeof(_llvm(context, arr.dtype))
        return load

    return rt(arr, idx, n), codegen


#: The alignment, in bytes, a streaming store's address must have (``vstore_stream``).
STREAM_ALIGN = 64


def _store(streaming: bool, whole: bool = False):
    """The code of ``vstore`` (``streaming``: of ``vstore_stream``; ``whole``: of
    ``vstore_whole``)."""
    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        vptr = builder.bitcast(ptr, ir.PointerType(args[2].type))
        store = builder.store(args[2], vptr)
        store.volatile = whole
        if streaming:
            store.align = STREAM_ALIGN
            store.set_metadata("nontemporal",
                               builder.module.add_metadata([ir.Constant(_I32, 1)]))
        else:
            store.align = context.get_abi_sizeof(_llvm(context, sig.args[0].dtype))
        return context.get_dummy_value()
    return codegen


@intrinsic
def vstore(typingctx, arr, idx, v):
    """Store the lanes of ``v`` into ``arr`` from index ``idx`` (a tuple) on."""
    if not (_index_types(arr, idx) and isinstance(v, Vec) and v.dtype == arr.dtype):
        return None
    return types.none(arr, idx, v), _store(False)


@intrinsic
def vstore_whole(typingctx, arr, idx, v):
    """``vstore`` that stays one store of every lane (LLVM's ``volatile``): LLVM turns a store
    of ``select(mask, loaded, other)`` into a masked store of the other lanes, which on
    AVX-512 wrote an in-place row past the caches 16 % slower than whole vectors."""
    if not (_index_types(arr, idx) and isinstance(v, Vec) and v.dtype == arr.dtype):
        return None
    return types.none(arr, idx, v), _store(False, whole=True)


@intrinsic
def vstore_stream(typingctx, arr, idx, v):
    """``vstore`` as a streaming (non-temporal) store, past the caches (x86: ``vmovntps`` and
    kin; LLVM's ``!nontemporal``): the line is not read for ownership first. The address must
    be a multiple of ``STREAM_ALIGN`` bytes; ``store_fence`` orders such stores before the
    stores that follow it (another thread may read the results once told they are done)."""
    if not (_index_types(arr, idx) and isinstance(v, Vec) and v.dtype == arr.dtype):
        return None
    return types.none(arr, idx, v), _store(True)


@intrinsic
def store_fence(typingctx):
    """Every store before it, streaming ones included, visible before any store after it
    (x86: ``sfence``; elsewhere a sequentially consistent fence)."""
    def codegen(context, builder, sig, args):
        if _X86:
            fn = cgutils.get_or_insert_function(builder.module,
                                                ir.FunctionType(ir.VoidType(), []),
                                                "llvm.x86.sse.sfence")
            builder.call(fn, [])
        else:  # pragma: no cover - not x86
            builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.none(), codegen


def _first_lanes(context, builder, count, ty, n):
    """The mask of lanes 0 … count-1 (``count`` an integer value of numba type ``ty``)."""
    iota = ir.Constant(ir.VectorType(_I32, n), [ir.Constant(_I32, m) for m in range(n)])
    c = _splat(builder, context.cast(builder, count, ty, types.int32), ir.VectorType(_I32, n))
    return builder.icmp_signed("<", iota, c)


def _masked_intrinsic(builder, name, vty, ret, args):
    suffix = f"v{vty.count}{'f' if isinstance(vty.element, (ir.FloatType, ir.DoubleType)) else 'i'}" \
             f"{vty.element.width if isinstance(vty.element, ir.IntType) else (32 if isinstance(vty.element, ir.FloatType) else 64)}"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, [a.type for a in args]),
                                        f"llvm.masked.{name}.{suffix}.p0")
    return builder.call(fn, args)


@intrinsic
def vload_first(typingctx, arr, idx, n, count):
    """``vload`` of only the first ``count`` (< n) elements, no memory past them touched; the
    other lanes are zero (``llvm.masked.load``)."""
    if not (_index_types(arr, idx) and isinstance(n, types.IntegerLiteral)
            and isinstance(count, types.Integer)):
        return None
    rt = Vec(arr.dtype, n.literal_value)

    def codegen(context, builder, sig, args):
        vty = _llvm(context, rt)
        ptr = _pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        vptr = builder.bitcast(ptr, ir.PointerType(vty))
        align = ir.Constant(_I32, context.get_abi_sizeof(_llvm(context, arr.dtype)))
        mask = _first_lanes(context, builder, args[3], sig.args[3], rt.n)
        return _masked_intrinsic(builder, "load", vty, vty,
                                 [vptr, align, mask, ir.Constant(vty, None)])

    return rt(arr, idx, n, count), codegen


@intrinsic
def vstore_first(typingctx, arr, idx, v, count):
    """Store only the first ``count`` lanes of ``v`` (``llvm.masked.store``)."""
    if not (_index_types(arr, idx) and isinstance(v, Vec) and v.dtype == arr.dtype
            and isinstance(count, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        vty = args[2].type
        ptr = _pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        vptr = builder.bitcast(ptr, ir.PointerType(vty))
        align = ir.Constant(_I32, context.get_abi_sizeof(_llvm(context, arr.dtype)))
        mask = _first_lanes(context, builder, args[3], sig.args[3], v.n)
        _masked_intrinsic(builder, "store", vty, ir.VoidType(), [args[2], vptr, align, mask])
        return context.get_dummy_value()

    return types.none(arr, idx, v, count), codegen


# --- lanes ---------------------------------------------------------------------------------------


@intrinsic
def vsplat(typingctx, x, n):
    """``n`` copies of the scalar ``x``."""
    if not (isinstance(n, types.IntegerLiteral) and isinstance(x, (types.Float, types.Integer))):
        return None
    rt = Vec(x, n.literal_value)

    def codegen(context, builder, sig, args):
        return _splat(builder, args[0], _llvm(context, rt))

    return rt(x, n), codegen


@intrinsic
def vlane(typingctx, v, m):
    """Lane ``m`` of ``v``, a scalar."""
    if not (isinstance(v, Vec) and isinstance(m, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        return builder.extract_element(args[0], context.cast(builder, args[1], sig.args[1],
                                                             types.int32))

    return v.dtype(v, m), codegen


@intrinsic
def vadd_lane(typingctx, v, m, t):
    """``v`` with ``t`` added to lane ``m`` (the same one IEEE addition a vector add makes in
    that lane: a strided row's terms reach the lanes exactly as a contiguous row's do)."""
    if not (isinstance(v, Vec) and isinstance(m, types.Integer) and isinstance(t, types.Number)):
        return None

    def codegen(context, builder, sig, args):
        lane = context.cast(builder, args[1], sig.args[1], types.int32)
        old = builder.extract_element(args[0], lane)
        new = builder.fadd(old, context.cast(builder, args[2], sig.args[2], v.dtype))
        return builder.insert_element(args[0], new, lane)

    return v(v, m, t), codegen


@intrinsic
def vset_lane(typingctx, v, m, x):
    """``v`` with lane ``m`` replaced by ``x``."""
    if not (isinstance(v, Vec) and isinstance(m, types.Integer) and isinstance(x, types.Number)):
        return None

    def codegen(context, builder, sig, args):
        lane = context.cast(builder, args[1], sig.args[1], types.int32)
        return builder.insert_element(args[0], context.cast(builder, args[2], sig.args[2],
                                                            v.dtype), lane)

    return v(v, m, x), codegen


@intrinsic
def vhalf(typingctx, v, upper):
    """The lower (``upper`` False) or upper half of ``v``'s lanes, a ``Vec`` of half as many
    (``upper`` a literal bool; ``v`` an even number of lanes)."""
    if not (isinstance(v, Vec) and v.n % 2 == 0 and isinstance(upper, types.BooleanLiteral)):
        return None
    rt = Vec(v.dtype, v.n // 2)
    first = rt.n if upper.literal_value else 0

    def codegen(context, builder, sig, args):
        pick = ir.Constant(ir.VectorType(_I32, rt.n), [ir.Constant(_I32, first + m)
                                                       for m in range(rt.n)])
        return builder.shuffle_vector(args[0], ir.Constant(args[0].type, ir.Undefined), pick)

    return rt(v, upper), codegen


@intrinsic
def viota(typingctx, n):
    """The lane numbers 0, 1, …, n-1 (``int32`` lanes; ``n`` a literal)."""
    if not isinstance(n, types.IntegerLiteral):
        return None
    rt = Vec(types.int32, n.literal_value)

    def codegen(context, builder, sig, args):
        return ir.Constant(_llvm(context, rt), [ir.Constant(_I32, m) for m in range(rt.n)])

    return rt(n), codegen


# --- conversions ---------------------------------------------------------------------------------


@intrinsic
def vconvert(typingctx, v, to):
    """``v``'s lanes converted to the scalar type ``to`` (a NumberClass such as
    ``np.float64``): float widening/narrowing (rounded to nearest, ties to even), integer
    widening/truncation, or float16 bits (``uint16``) to float32 and back with LLVM's ``half``
    (the caller makes sure the CPU has F16C)."""
    if not (isinstance(v, Vec) and isinstance(to, types.NumberClass)):
        return None
    dst = to.instance_type
    rt = Vec(dst, v.n)

    def codegen(context, builder, sig, args):
        src, value = v.dtype, args[0]
        target = _llvm(context, rt)
        if src == types.uint16 and dst == types.float32:  # float16 bits
            half = builder.bitcast(value, ir.VectorType(ir.HalfType(), v.n))
            return builder.fpext(half, target)
        if src == types.float32 and dst == types.uint16:
            half = builder.fptrunc(value, ir.VectorType(ir.HalfType(), v.n))
            return builder.bitcast(half, target)
        if isinstance(src, types.Float) and isinstance(dst, types.Float):
            if src.bitwidth < dst.bitwidth:
                return builder.fpext(value, target)
            return builder.fptrunc(value, target) if src.bitwidth > dst.bitwidth else value
        if isinstance(src, types.Integer) and isinstance(dst, types.Integer):
            if src.bitwidth < dst.bitwidth:
                return (builder.sext if src.signed else builder.zext)(value, target)
            return builder.trunc(value, target) if src.bitwidth > dst.bitwidth else value
        raise TypeError(f"vconvert: {src} to {dst}")

    return rt(v, to), codegen


@intrinsic
def vbitcast(typingctx, v, to):
    """``v``'s bits as lanes of the same width of the scalar type ``to``."""
    if not (isinstance(v, Vec) and isinstance(to, types.NumberClass)):
        return None
    rt = Vec(to.instance_type, v.n)

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _llvm(context, rt))

    return rt(v, to), codegen


@intrinsic
def vshift(typingctx, v, amount, op):
    """Integer lanes shifted by a constant: ``op`` is ``"shl"`` or ``"lshr"``."""
    if not (isinstance(v, Vec) and isinstance(v.dtype, types.Integer)
            and isinstance(amount, types.IntegerLiteral) and isinstance(op, types.StringLiteral)):
        return None
    name = op.literal_value

    def codegen(context, builder, sig, args):
        shift = _splat(builder, ir.Constant(_llvm(context, v.dtype), amount.literal_value),
                       args[0].type)
        return getattr(builder, name)(args[0], shift)

    return v(v, amount, op), codegen


# --- arithmetic, comparisons, masks -------------------------------------------------------------


def _vec_of(a, b):
    """The vector type of a binary operation of ``a`` and ``b`` (one of them a Vec of
    numbers, the other the same Vec or a scalar), or None."""
    for va, other in ((a, b), (b, a)):
        if isinstance(va, Vec) and not _is_mask(va):
            if other == va or isinstance(other, (types.Number, types.Boolean)):
                return va
    return None


@intrinsic
def _vbinary(typingctx, a, b, op):
    vec = _vec_of(a, b)
    if vec is None or not isinstance(op, types.StringLiteral):
        return None
    name = op.literal_value
    if isinstance(vec.dtype, types.Integer):
        name = {"fadd": "add", "fsub": "sub", "fmul": "mul"}.get(name, name)

    def codegen(context, builder, sig, args):
        x = _operand(context, builder, args[0], sig.args[0], vec)
        y = _operand(context, builder, args[1], sig.args[1], vec)
        return getattr(builder, name)(x, y)

    return vec(a, b, op), codegen


@intrinsic
def vmuladd(typingctx, a, b, c):
    """``a * b + c`` lane by lane, of three float ``Vec`` of one type, as LLVM's ``fmuladd``:
    one FMA where the target has one, else a multiply and an add. The two round alike only
    where the product is exact (float32 values widened to float64): use it there only."""
    if not (isinstance(a, Vec) and isinstance(a.dtype, types.Float) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        vty = args[0].type
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vty, [vty] * 3),
            f"llvm.fmuladd.v{vty.count}f{a.dtype.bitwidth}")
        return builder.call(fn, list(args))

    return a(a, b, c), codegen


_FCMP = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}


@intrinsic
def _vcompare(typingctx, a, b, op):
    vec = _vec_of(a, b)
    if vec is None or not isinstance(op, types.StringLiteral):
        return None
    symbol = _FCMP[op.literal_value]
    rt = Vec(types.boolean, vec.n)

    def codegen(context, builder, sig, args):
        x = _operand(context, builder, args[0], sig.args[0], vec)
        y = _operand(context, builder, args[1], sig.args[1], vec)
        if isinstance(vec.dtype, types.Integer):
            return builder.icmp_signed(symbol, x, y) if vec.dtype.signed \
                else builder.icmp_unsigned(symbol, x, y)
        if symbol == "!=":
            return builder.fcmp_unordered(symbol, x, y)  # NaN != anything, as Python's !=
        return builder.fcmp_ordered(symbol, x, y)  # NaN is not >, >=, <, <=, ==

    return rt(a, b, op), codegen


@intrinsic
def _vlogic(typingctx, a, b, op):
    """``and``/``or`` of masks; a Python bool operand stands for all lanes."""
    mask = a if _is_mask(a) else b
    other = b if mask is a else a
    if not (_is_mask(mask) and (other == mask or isinstance(other, types.Boolean))
            and isinstance(op, types.StringLiteral)):
        return None
    name = op.literal_value + "_"

    def codegen(context, builder, sig, args):
        def as_mask(value, ty):
            if _is_mask(ty):
                return value
            bit = context.cast(builder, value, ty, types.boolean)
            return _splat(builder, bit, ir.VectorType(ir.IntType(1), mask.n))
        return getattr(builder, name)(as_mask(args[0], sig.args[0]),
                                      as_mask(args[1], sig.args[1]))

    return mask(a, b, op), codegen


@intrinsic
def vselect(typingctx, cond, a, b):
    """Lane by lane ``a`` where ``cond`` else ``b``; a scalar ``a`` or ``b`` stands for all
    lanes (``cond`` a mask)."""
    if not _is_mask(cond):
        return None
    vec = _vec_of(a, b)
    if vec is None or vec.n != cond.n:
        return None

    def codegen(context, builder, sig, args):
        x = _operand(context, builder, args[1], sig.args[1], vec)
        y = _operand(context, builder, args[2], sig.args[2], vec)
        return builder.select(args[0], x, y)

    return vec(cond, a, b), codegen


def _by_256(builder, cond, vectors, combine):
    """``combine`` applied 256 bits at a time: ``vectors`` (of one float type, its bits a
    multiple of 256) and the mask of ``cond`` (all ones where true, as that type) cut into
    256-bit chunks, ``combine(*chunks, mask chunk)`` for each, the results joined again."""
    vty = vectors[0].type
    elt = vty.element
    width = 32 if isinstance(elt, ir.FloatType) else 64
    per = 256 // width
    maskf = builder.bitcast(builder.sext(cond, ir.VectorType(ir.IntType(width), vty.count)), vty)
    chunk = ir.VectorType(elt, per)
    undef = ir.Constant(vty, ir.Undefined)
    parts = []
    for c in range(vty.count // per):
        pick = ir.Constant(ir.VectorType(_I32, per), [ir.Constant(_I32, c * per + m)
                                                      for m in range(per)])
        pieces = [builder.shuffle_vector(v, undef, pick) for v in (*vectors, maskf)]
        # an empty inline asm hides that the mask is a sign-extended bool: LLVM's x86 combiner
        # would turn a blend or an and with it back into a select (and the store of a select
        # into masked stores)
        m = builder.asm(ir.FunctionType(chunk, [chunk]), "", "=x,0", [pieces[-1]], False)
        parts.append(combine(*pieces[:-1], m))
    while len(parts) > 1:  # reassemble, halves first
        joined = []
        for x, y in zip(parts[0::2], parts[1::2]):
            n = x.type.count
            idx = ir.Constant(ir.VectorType(_I32, 2 * n), [ir.Constant(_I32, m) for m in range(2 * n)])
            joined.append(builder.shuffle_vector(x, y, idx))
        parts = joined
    return parts[0]


def blend_avx(context, builder, cond, a, b):
    """``cond ? a : b`` lane by lane through AVX's ``vblendvps``/``vblendvpd`` intrinsics, 256
    bits at a time (the vector's bits a multiple of 256). The same instruction LLVM emits for a
    select on AVX2, but opaque to it: LLVM turns a full store of ``select(m, x loaded, y)`` into
    masked stores (``vmaskmovps``), which are slow on AMD's Zen CPUs."""
    width = 32 if isinstance(a.type.element, ir.FloatType) else 64
    chunk = ir.VectorType(a.type.element, 256 // width)
    name = "llvm.x86.avx.blendv.ps.256" if width == 32 else "llvm.x86.avx.blendv.pd.256"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(chunk, [chunk] * 3), name)
    return _by_256(builder, cond, (b, a), lambda lo, hi, m: builder.call(fn, [lo, hi, m]))


def clear_avx(context, builder, cond, a):
    """``cond ? +0 : a`` lane by lane as an and-not of ``a``'s bits with the mask, 256 bits
    at a time (the vector's bits a multiple of 256): ``vandnps``, a logic instruction (Zen 5:
    four a cycle, where ``vblendvps`` is two). The mask is hidden from LLVM as for
    :func:`blend_avx`, or its combiner turns the and back into a select, a blend."""
    width = 32 if isinstance(a.type.element, ir.FloatType) else 64
    chunk = ir.VectorType(a.type.element, 256 // width)
    ity = ir.VectorType(ir.IntType(width), 256 // width)

    def cleared(v, m):
        bits = builder.and_(builder.bitcast(v, ity), builder.not_(builder.bitcast(m, ity)))
        return builder.bitcast(bits, chunk)
    return _by_256(builder, cond, (a,), cleared)


class _BFloat(ir.Type):
    """LLVM's ``bfloat`` (llvmlite's IR builder has no such type)."""

    def _to_string(self):
        return "bfloat"

    def __eq__(self, other):
        return isinstance(other, _BFloat)

    def __hash__(self):
        return hash("bfloat")


_FC_SUBNORMAL = 0x10 | 0x80  # llvm.is.fpclass: negative and positive subnormals
_VFPCLASS_DENORMAL = 0x20  # vfpclassps: a denormal (either sign)


def round_bf16_hw(builder, value, exact):
    """float32 lanes ``value`` rounded to bfloat16 bits (``<N x i16>``) with AVX512-BF16's
    ``vcvtneps2bf16`` (LLVM's ``fptrunc`` to ``bfloat``, which LLVM lowers to it where the
    target has the feature; elsewhere it would be a library call per lane that numba's JIT
    does not resolve: the caller checks the feature, ``_cpu.bf16_convert``).

    The instruction rounds to nearest even and quiets NaN as the integer rounding does, but
    takes a float32 subnormal for zero (its bfloat16 result is subnormal too, or the smallest
    normal): a vector with such a lane takes ``exact(builder)`` instead, the integer rounding,
    in a branch of its own. The common path tests the result's words for +-0 (one
    ``vptestnmw`` a vector); only a vector with a zero lane tests its inputs for subnormals
    (``vfpclassps``). Checked for every one of the 2**32 float32 values: the same bits as the
    integer rounding."""
    n = value.type.count
    i16 = ir.VectorType(ir.IntType(16), n)
    if n == 32:  # one vcvtne2ps2bf16 for both halves (LLVM makes two vcvtneps2bf16 of fptrunc)
        undef = ir.Constant(value.type, ir.Undefined)
        lo, hi = (builder.shuffle_vector(value, undef, ir.Constant(
            ir.VectorType(_I32, 16), [ir.Constant(_I32, c + m) for m in range(16)]))
            for c in (0, 16))
        both = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VectorType(_BFloat(), 32), [lo.type, hi.type]),
            "llvm.x86.avx512bf16.cvtne2ps2bf16.512")
        fast = builder.bitcast(builder.call(both, [hi, lo]), i16)  # (the second gives lanes 0-15)
    else:
        fast = builder.bitcast(builder.fptrunc(value, ir.VectorType(_BFloat(), n)), i16)
    # The instruction's result is +-0 exactly where its input is +-0 or a float32 subnormal (a
    # normal float32 rounds to a normal bfloat16 or to infinity): one test of the result's
    # words (vptestnmw, 32 lanes at once) picks the vectors that may need the integer
    # rounding, and only those (a zero lane, or a subnormal) take vfpclassps on the input.
    # On Intel's two 512-bit ports that test of the common path replaces two vfpclassps.
    # (through an empty asm: LLVM would otherwise see the bfloat behind the bits and compare
    # the result with 0.0 as float32, widened through the stack)
    fast = builder.asm(ir.FunctionType(i16, [i16]), "", "=v,0", [fast], False)
    zero = builder.icmp_unsigned("==", builder.and_(fast, ir.Constant(i16, 0x7FFF)),
                                 ir.Constant(i16, 0))
    zeros = builder.asm(ir.FunctionType(ir.IntType(n), [ir.IntType(n)]), "", "=r,0",
                        [builder.bitcast(zero, ir.IntType(n))], False)
    any_zero = builder.icmp_unsigned("!=", zeros, ir.Constant(ir.IntType(n), 0))
    start = builder.block
    with cgutils.if_unlikely(builder, any_zero):
        any_subnormal = _any_subnormal(builder, value)
        check_end = builder.block
        with cgutils.if_unlikely(builder, any_subnormal):
            slow = exact(builder)
            slow_end = builder.block
        checked = builder.phi(i16)
        checked.add_incoming(fast, check_end)
        checked.add_incoming(slow, slow_end)
        checked_end = builder.block
    result = builder.phi(i16)
    result.add_incoming(fast, start)
    result.add_incoming(checked, checked_end)
    return result


def _any_subnormal(builder, value):
    """Whether any float32 lane of ``value`` is subnormal (an ``i1``)."""
    n = value.type.count
    if n % 16 == 0 or n == 8:  # AVX512-DQ's vfpclassps, 16 lanes at a time (LLVM's own
        # llvm.is.fpclass becomes three integer operations)
        part = min(n, 16)
        fpclass = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VectorType(ir.IntType(1), part),
                                            [ir.VectorType(value.type.element, part),
                                             ir.IntType(32)]),
            f"llvm.x86.avx512.fpclass.ps.{32 * part}")
        test = ir.Constant(ir.IntType(32), _VFPCLASS_DENORMAL)
        undef = ir.Constant(value.type, ir.Undefined)
        masks = [builder.call(fpclass, [value if part == n else builder.shuffle_vector(
            value, undef, ir.Constant(ir.VectorType(_I32, part),
                                      [ir.Constant(_I32, c + m) for m in range(part)])), test])
                 for c in range(0, n, part)]
        lanes = [builder.bitcast(m, ir.IntType(part)) for m in masks]
        # each mask through an empty inline asm into a general register: kmovd (and an or),
        # where LLVM would test them with kortestw (bfloat16 on one thread, AMD Zen 5:
        # leaky_relu of 102,400 elements 6.3 -> 5.6 µs, 1,024,000 52.7 -> 47.4 µs; the one mask
        # of prelu_backward's 16 lanes, 1e6 elements 155.8 -> 151.0 µs)
        lanes = [builder.asm(ir.FunctionType(ir.IntType(part), [ir.IntType(part)]), "",
                             "=r,0", [m], False) for m in lanes]
        any_lane = lanes[0]
        for more in lanes[1:]:
            any_lane = builder.or_(any_lane, more)
        any_subnormal = builder.icmp_unsigned("!=", any_lane, ir.Constant(ir.IntType(part), 0))
    else:
        fpclass = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VectorType(ir.IntType(1), n),
                                            [value.type, ir.IntType(32)]),
            f"llvm.is.fpclass.v{n}f32")
        subnormal = builder.call(fpclass, [value, ir.Constant(ir.IntType(32), _FC_SUBNORMAL)])
        any_subnormal = builder.icmp_unsigned("!=", builder.bitcast(subnormal, ir.IntType(n)),
                                              ir.Constant(ir.IntType(n), 0))
    return any_subnormal


def blends_avx(vec: Vec) -> bool:
    """Whether :func:`blend_avx` can blend ``vec`` (float lanes, a multiple of 256 bits)."""
    return isinstance(vec.dtype, types.Float) and (vec.n * vec.dtype.bitwidth) % 256 == 0


@intrinsic
def vabs(typingctx, v):
    """``|v|`` lane by lane (``llvm.fabs``)."""
    if not (isinstance(v, Vec) and isinstance(v.dtype, types.Float)):
        return None

    def codegen(context, builder, sig, args):
        vty = args[0].type
        suffix = f"v{vty.count}f{v.dtype.bitwidth}"  # (llvmlite names no vector intrinsics)
        fabs = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty]),
                                              f"llvm.fabs.{suffix}")
        return builder.call(fabs, [args[0]])

    return v(v), codegen


@overload(abs)
def _ol_abs(v):
    if isinstance(v, Vec) and isinstance(v.dtype, types.Float):
        return lambda v: vabs(v)
    return None


def _overload_binary(op, name):
    @overload(op)
    def ol(a, b):
        if _vec_of(a, b) is not None:
            return lambda a, b: _vbinary(a, b, name)
        return None


def _overload_compare(op, name):
    @overload(op)
    def ol(a, b):
        if _vec_of(a, b) is not None:
            return lambda a, b: _vcompare(a, b, name)
        return None


def _overload_logic(op, name):
    @overload(op)
    def ol(a, b):
        if _is_mask(a) or _is_mask(b):
            return lambda a, b: _vlogic(a, b, name)
        return None


for _op, _name in ((operator.add, "fadd"), (operator.sub, "fsub"), (operator.mul, "fmul")):
    _overload_binary(_op, _name)
for _op, _name in ((operator.gt, "gt"), (operator.ge, "ge"), (operator.lt, "lt"),
                   (operator.le, "le"), (operator.eq, "eq"), (operator.ne, "ne")):
    _overload_compare(_op, _name)
for _op, _name in ((operator.and_, "and"), (operator.or_, "or")):
    _overload_logic(_op, _name)
del _op, _name
