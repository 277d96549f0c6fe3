"""The Ascend 950 register API (``leakyops.ascendc.Reg``): the vendor's documented examples as
tests first (Compare's example, RegLayout's pseudo-code, the add.asc sample, UpdateMask's
count-down, the LoadDist/StoreDist examples, the Cast page's saturation examples, the boundary
value tables), then what each instruction does with masks, merge modes and distributions."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from _ascendc_testutil import same_bits

from leakyops import _core
from leakyops import _vector_math as vm
from leakyops import ascendc as ac
from leakyops.ascendc import CMPMODE, Reg, Ref, UbufPtr, __VEC_SCOPE__

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def _ub(core, dtype, values, addr=0):
    """Write ``values`` at byte ``addr`` of the core's UB; returns a pointer to them."""
    arr = np.asarray(values, dtype)
    core.ub.data[addr:addr + arr.nbytes] = arr.view(np.uint8)
    return UbufPtr[dtype](addr)


def _read(core, dtype, n, addr=0):
    return core.ub.data[addr:addr + n * np.dtype(dtype).itemsize].view(dtype).copy()


# ------------------------------------------------------------------- documented examples
def test_compare_page_example(core):
    # Compare.md: EQ of the two half vectors, then Select by the result
    a = [1.0, 4.0, 3.0, 2.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 9.0, 3.0, 4.0, 6.0, 5.0, 7.0] * 8
    b = [1.0, 3.0, 3.0, 5.0, 2.0, 6.0, 9.0, 4.0, 2.0, 5.0, 9.0, 1.0, 8.0, 3.0, 5.0, 6.0] * 8
    p0, p1 = _ub(core, F16, a, 0), _ub(core, F16, b, 256)
    dst = UbufPtr[F16](512)
    r0, r1, out = (Reg.RegTensor[F16]() for _ in range(3))
    eq = Reg.MaskReg()
    count = Ref(128)
    with __VEC_SCOPE__():
        mask = Reg.UpdateMask[F16](count)
        Reg.LoadAlign(r0, p0)
        Reg.LoadAlign(r1, p1)
        Reg.Compare[F16, CMPMODE.EQ](eq, r0, r1, mask)
        Reg.Select(out, r0, r1, eq)
        Reg.StoreAlign(dst, out, mask)
    assert eq.numpy()[:16].astype(int).tolist() == [1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0]
    # where equal both are the same; elsewhere Select takes srcReg1
    assert _read(core, F16, 128, 512).tolist() == b


@pytest.mark.parametrize("layout", [Reg.RegLayout.ZERO, Reg.RegLayout.ONE])
def test_reglayout_pseudocode_b32_b16(core, layout):
    # RegLayout.md: cast_b32_to_b16: dst[:] = 0; dst[layout:128:2] = src[0:64]
    #               cast_b16_to_b32: dst[0:64] = src[layout:128:2]
    src32 = np.arange(64, dtype=np.int32) * 3 - 90
    src16 = np.arange(128, dtype=np.int16) * 5 - 300
    p32, p16 = _ub(core, np.int32, src32, 0), _ub(core, np.int16, src16, 256)
    r32, r16, o16, o32 = (Reg.RegTensor[np.int32](), Reg.RegTensor[np.int16](),
                          Reg.RegTensor[np.int16](), Reg.RegTensor[np.int32]())
    narrow = Reg.CastTrait(layout, Reg.SatMode.SAT, Reg.MaskMergeMode.ZEROING)
    widen = Reg.CastTrait(layout, Reg.SatMode.UNKNOWN, Reg.MaskMergeMode.ZEROING)
    with __VEC_SCOPE__():
        m = Reg.CreateMask[np.int32]()
        Reg.LoadAlign(r32, p32)
        Reg.LoadAlign(r16, p16)
        Reg.Cast[np.int16, np.int32, narrow](o16, r32, m)
        Reg.Cast[np.int32, np.int16, widen](o32, r16, m)
    want16 = np.zeros(128, np.int16)
    want16[int(layout):128:2] = src32
    assert o16.numpy().tolist() == want16.tolist()
    assert o32.numpy().tolist() == src16[int(layout):128:2].astype(np.int32).tolist()


@pytest.mark.parametrize("layout", list(Reg.RegLayout)[1:])
def test_reglayout_pseudocode_b32_b8(core, layout):
    # cast_b32_to_b8: dst[layout:256:4] = src[0:64]; cast_b8_to_b32: dst[0:64] = src[layout:256:4]
    src32 = np.arange(64, dtype=np.int32) * 2
    src8 = (np.arange(256) % 120).astype(np.int8)
    p32, p8 = _ub(core, np.int32, src32, 0), _ub(core, np.int8, src8, 256)
    r32, r8, o8, o32 = (Reg.RegTensor[np.int32](), Reg.RegTensor[np.int8](),
                        Reg.RegTensor[np.uint8](), Reg.RegTensor[np.int32]())
    with __VEC_SCOPE__():
        m = Reg.CreateMask[np.int32]()
        Reg.LoadAlign(r32, p32)
        Reg.LoadAlign(r8, p8)
        Reg.Cast[np.uint8, np.int32, Reg.CastTrait(layout, Reg.SatMode.NO_SAT)](o8, r32, m)
        Reg.Cast[np.int32, np.int8, Reg.CastTrait(layout)](o32, r8, m)
    want8 = np.zeros(256, np.uint8)
    want8[int(layout)::4] = src32
    assert o8.numpy().tolist() == want8.tolist()
    assert o32.numpy().tolist() == src8[int(layout)::4].astype(np.int32).tolist()


def test_add_asc_sample():
    # examples/01_simd_cpp_api/00_introduction/04_reg_compute/add/add.asc: y = x + x, 4 blocks of
    # 256 * 256 / 4 floats; AddVF loads the tile twice, Add, StoreAlign with UpdateMask
    totalLength, numBlocks = 256 * 256, 4
    singleCoreLength = totalLength // numBlocks

    def AddVF(dstAddr, count):
        oneRepeatSize = ac.GetVecLen() // 4
        repeatTimes = ac.CeilDivision(singleCoreLength, oneRepeatSize)
        mask = Reg.MaskReg()
        srcReg, dstReg = Reg.RegTensor[ac.float32](), Reg.RegTensor[ac.float32]()
        count = Ref(count)
        for i in range(repeatTimes):
            mask = Reg.UpdateMask[ac.float32](count)
            Reg.LoadAlign(srcReg, dstAddr + i * oneRepeatSize)
            Reg.LoadAlign(dstReg, dstAddr + i * oneRepeatSize)
            Reg.Add(dstReg, dstReg, srcReg, mask)
            Reg.StoreAlign(dstAddr + i * oneRepeatSize, dstReg, mask)

    def vector_add(x, y):
        ac.InitSocState()
        xGm, yGm = ac.GlobalTensor(ac.float32), ac.GlobalTensor(ac.float32)
        xGm.SetGlobalBuffer(x)
        yGm.SetGlobalBuffer(y)
        coreOffset = ac.GetBlockIdx() * singleCoreLength
        yLocal = ac.LocalMemAllocator().Alloc(ac.float32, singleCoreLength)
        ac.DataCopy(yLocal, xGm[coreOffset:], singleCoreLength)
        ac.SetFlag[ac.HardEvent.MTE2_V](ac.EVENT_ID0)
        ac.WaitFlag[ac.HardEvent.MTE2_V](ac.EVENT_ID0)
        dstAddr = UbufPtr[ac.float32](yLocal.GetPhyAddr())
        ac.asc_vf_call(AddVF, dstAddr, singleCoreLength)
        ac.SetFlag[ac.HardEvent.V_MTE3](ac.EVENT_ID0)
        ac.WaitFlag[ac.HardEvent.V_MTE3](ac.EVENT_ID0)
        ac.DataCopy(yGm[coreOffset:], yLocal, singleCoreLength)
        ac.PipeBarrier[ac.PIPE_ALL]()

    x = np.random.default_rng(0).uniform(-100, 100, totalLength).astype(np.float32)
    y = np.zeros_like(x)
    ac.launch(vector_add, numBlocks, x, y, ub_size=253952)   # Ascend 950: 248 KiB
    assert same_bits(y, x + x)


def test_update_mask_counts_down(core):
    # MaskReg.md: scalarValue = (scalarValue < VL_T) ? 0 : (scalarValue - VL_T); the example's
    # uint32 count 127 gives 64 then 63 lanes
    r = Ref(127)
    with __VEC_SCOPE__():
        m1 = Reg.UpdateMask[np.uint32](r)
        assert r.value == 63
        m2 = Reg.UpdateMask[np.uint32](r)
        assert r.value == 0
        m3 = Reg.UpdateMask[np.uint32](r)
    assert (m1.numpy().sum(), m2.numpy().sum(), m3.numpy().sum()) == (64, 63, 0)
    assert m2.numpy()[:63].all() and not m2.numpy()[63]
    # int16: a count above 128 still selects one register's 128 lanes
    r = Ref(300)
    with __VEC_SCOPE__():
        m = Reg.UpdateMask[np.int16](r)
    assert m.numpy().sum() == 128 and r.value == 172


def test_create_mask_patterns(core):
    with __VEC_SCOPE__():
        got = {p: Reg.CreateMask[np.int8, p]().numpy() for p in Reg.MaskPattern}
        f32 = Reg.CreateMask[F32, Reg.MaskPattern.VL128]().numpy()
    assert got[Reg.MaskPattern.ALL].all() and not got[Reg.MaskPattern.ALLF].any()
    assert got[Reg.MaskPattern.VL3].sum() == 3 and got[Reg.MaskPattern.VL3][:3].all()
    assert got[Reg.MaskPattern.H].sum() == 128 and got[Reg.MaskPattern.Q].sum() == 64
    assert np.flatnonzero(got[Reg.MaskPattern.M3])[:4].tolist() == [0, 3, 6, 9]
    assert np.flatnonzero(got[Reg.MaskPattern.M4])[:3].tolist() == [0, 4, 8]
    assert f32.size == 64 and f32.all()         # VL128 of 64 float lanes: all of them


def test_loaddist_examples(core):
    # LoadAlign table 3: DIST_UNPACK_B16 turns [0, 1, 2, ...] into [0, 0, 1, 0, 2, 0, ...];
    # DIST_BRC_B16 broadcasts one element; DIST_US_B16 repeats each twice; DIST_DS_B16 keeps
    # every other one of 2*VL; DIST_BLK repeats one 32-byte block; DIST_E2B_B16 fills a block
    # with each of 8 elements
    p = _ub(core, np.uint16, np.arange(256, dtype=np.uint16))
    regs = {d: Reg.RegTensor[np.uint16]() for d in Reg.LoadDist if d.name.endswith(("B16", "BLK", "NORM"))}
    with __VEC_SCOPE__():
        for d, r in regs.items():
            Reg.LoadAlign[np.uint16, d](r, p)
    v = {d.name: r.numpy() for d, r in regs.items()}
    assert v["DIST_NORM"].tolist() == list(range(128))
    assert v["DIST_UNPACK_B16"][:6].tolist() == [0, 0, 1, 0, 2, 0] and v["DIST_UNPACK_B16"][-2:].tolist() == [63, 0]
    assert (v["DIST_BRC_B16"] == 0).all()
    brc = Reg.RegTensor[np.uint16]()
    with __VEC_SCOPE__():
        Reg.LoadAlign[np.uint16, Reg.LoadDist.DIST_BRC_B16](brc, p + 5)   # 2-byte alignment
    assert (brc.numpy() == 5).all()
    assert v["DIST_US_B16"][:6].tolist() == [0, 0, 1, 1, 2, 2]
    assert v["DIST_DS_B16"][:4].tolist() == [0, 2, 4, 6] and v["DIST_DS_B16"][-1] == 254
    assert v["DIST_BLK"].tolist() == list(range(16)) * 8
    assert v["DIST_E2B_B16"].tolist() == np.repeat(np.arange(8), 16).tolist()


def test_storedist_examples(core):
    # StoreAlign table 3: DIST_PACK_B16 stores the low byte of each active b16 slot contiguously
    # (uint16 [0x3210, 0x7654, 0xBA98, 0xFEDC] -> bytes seen as uint16 [0x5410, 0xDC98]);
    # DIST_FIRST_ELEMENT_B16 stores element 0, whatever the mask
    src = np.array([0x3210, 0x7654, 0xBA98, 0xFEDC] * 32, np.uint16)
    p = _ub(core, np.uint16, src)
    core.ub.data[512:1024] = 0
    r8, r16 = Reg.RegTensor[np.uint8](), Reg.RegTensor[np.uint16]()
    with __VEC_SCOPE__():
        Reg.LoadAlign(r8, UbufPtr[np.uint8](p))
        Reg.LoadAlign(r16, p)
        Reg.StoreAlign[np.uint8, Reg.StoreDist.DIST_PACK_B16](UbufPtr[np.uint8](512), r8,
                                                               Reg.CreateMask[np.uint16]())
        Reg.StoreAlign[np.uint16, Reg.StoreDist.DIST_FIRST_ELEMENT_B16](
            UbufPtr[np.uint16](770), r16, Reg.CreateMask[np.uint16, Reg.MaskPattern.ALLF]())
    assert _read(core, np.uint16, 4, 512).tolist() == [0x5410, 0xDC98] * 2
    assert _read(core, np.uint16, 2, 768).tolist() == [0, 0x3210]


def test_cast_page_saturation_examples(core):
    # Cast.md table 4: half 257 -> uint8 is 1 without saturation, 255 with; -inf -> 0 with
    # saturation; NaN -> 0 either way
    p = _ub(core, F16, np.array([257, -np.inf, np.nan, 300.6] * 32, F16))
    src, out = Reg.RegTensor[F16](), {}
    with __VEC_SCOPE__():
        m = Reg.CreateMask[F16]()
        Reg.LoadAlign(src, p)
        for sat in (Reg.SatMode.NO_SAT, Reg.SatMode.SAT):
            r = out[sat] = Reg.RegTensor[np.uint8]()
            Reg.Cast[np.uint8, F16, Reg.CastTrait(Reg.RegLayout.ZERO, sat, Reg.MaskMergeMode.ZEROING,
                                                   ac.RoundMode.CAST_TRUNC)](r, src, m)
    assert out[Reg.SatMode.NO_SAT].numpy()[0:8:2].tolist() == [1, 0, 0, 44]
    assert out[Reg.SatMode.SAT].numpy()[0:8:2].tolist() == [255, 0, 0, 255]
    assert not out[Reg.SatMode.SAT].numpy()[1::2].any()     # the other narrow position is 0


# boundary value tables of the appendix (INF/NAN mode; half rows, float rows alike)
MIN, MAX = -65504.0, 65504.0
_ADD = [(MIN, MIN, -np.inf), (MIN, MAX, 0.0), (MIN, 0.0, MIN), (MAX, np.inf, np.inf),
        (0.0, -0.0, 0.0), (-0.0, -0.0, -0.0), (np.inf, -np.inf, np.nan), (MAX, -np.inf, -np.inf)]
_MUL = [(MIN, MIN, np.inf), (MIN, 0.0, -0.0), (MIN, -0.0, 0.0), (MAX, -0.0, -0.0),
        (0.0, np.inf, np.nan), (-0.0, -0.0, 0.0), (np.inf, -np.inf, -np.inf), (-np.inf, -np.inf, np.inf)]
_MAXS = [(MIN, np.inf, np.inf), (MIN, 0.0, 0.0), (0.0, -0.0, 0.0), (-0.0, -0.0, -0.0),
         (-0.0, np.inf, np.inf), (np.nan, 1.0, np.nan), (MAX, np.nan, np.nan)]
_MINS = [(-0.0, 0.0, -0.0), (0.0, -0.0, -0.0), (MIN, -np.inf, -np.inf), (np.nan, 0.0, np.nan)]


@pytest.mark.parametrize("dtype", [F16, F32], ids=["half", "float"])
@pytest.mark.parametrize("op,rows", [("Add", _ADD), ("Mul", _MUL), ("Muls", _MUL), ("Maxs", _MAXS),
                                     ("Mins", _MINS), ("Adds", _ADD)])
def test_boundary_value_tables(core, dtype, op, rows):
    big = float(np.finfo(dtype).max)
    rows = [tuple(big * np.sign(v) if abs(v) == MAX else v for v in r) for r in rows]
    n = 256 // dtype.itemsize
    results = []
    with __VEC_SCOPE__():
        m = Reg.CreateMask[dtype]()
        for a, b, _ in rows:
            ra, rb, out = Reg.RegTensor[dtype](), Reg.RegTensor[dtype](), Reg.RegTensor[dtype]()
            Reg.Duplicate(ra, a)
            Reg.Duplicate(rb, b)
            if op in ("Add", "Mul"):
                getattr(Reg, op)(out, ra, rb, m)
            else:
                getattr(Reg, op)(out, ra, b, m)
            results.append(out.numpy())
    for (a, b, want), got in zip(rows, results):
        assert got.size == n
        if np.isnan(want):
            assert np.isnan(got).all(), (op, a, b)
        else:
            assert (got == want).all() and (np.signbit(got) == np.signbit(want)).all(), (op, a, b, got[0])


# Compare: rows src0 vs (MIN, MAX, +0, -0, nan, +inf, -inf), the appendix's half/half table
_CMP_ROWS = {
    CMPMODE.EQ: ["1000000", "0100000", "0011000", "0011000", "0000000", "0000010", "0000001"],
    CMPMODE.GE: ["1000001", "1111001", "1011001", "1011001", "0000000", "1111011", "0000001"],
    CMPMODE.GT: ["0000001", "1011001", "1000001", "1000001", "0000000", "1111001", "0000000"],
    CMPMODE.LE: ["1111010", "0100010", "0111010", "0111010", "0000000", "0000010", "1111011"],
    CMPMODE.LT: ["0111010", "0000010", "0100010", "0100010", "0000000", "0000000", "1111010"],
    CMPMODE.NE: ["0111111", "1011111", "1100111", "1100111", "1111111", "1111101", "1111110"],
}


@pytest.mark.parametrize("dtype", [F16, F32, BF16], ids=["half", "float", "bfloat16"])
def test_compare_boundary_table(core, dtype):
    big = float(ml_dtypes.finfo(dtype).max)
    vals = [-big, big, 0.0, -0.0, np.nan, np.inf, -np.inf]
    for cmp, rows in _CMP_ROWS.items():
        for a, row in zip(vals, rows):
            ra, rb = Reg.RegTensor[dtype](), Reg.RegTensor[dtype]()
            got = Reg.MaskReg()
            p = _ub(core, dtype, np.array(vals * (256 // dtype.itemsize // 7 + 1), np.float64).astype(dtype)[:256 // dtype.itemsize])
            with __VEC_SCOPE__():
                Reg.Duplicate(ra, a)
                Reg.LoadAlign(rb, p)
                Reg.Compare[dtype, cmp](got, ra, rb, Reg.CreateMask[dtype]())
            assert "".join(str(int(v)) for v in got.numpy()[:7]) == row, (cmp, a)


# ------------------------------------------------------------------------- behaviour
def test_masks_zeroing_and_merging(core):
    # MaskMergeMode.md (Duplicate's figure): unselected lanes are 0 (ZEROING) or keep dst (MERGING)
    r = Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        Reg.Duplicate(r, 7.0)
        half_mask = Reg.CreateMask[F32, Reg.MaskPattern.H]()
        Reg.Duplicate[F32, Reg.MaskMergeMode.MERGING](r, 1.0, half_mask)
        merged = r.numpy()
        Reg.Duplicate[F32, Reg.MaskMergeMode.ZEROING](r, 2.0, half_mask)
        zeroed = r.numpy()
        a = Reg.RegTensor[F32]()
        Reg.Duplicate(a, 3.0)
        Reg.Add[F32, Reg.MaskMergeMode.MERGING](r, a, a, Reg.CreateMask[F32, Reg.MaskPattern.VL4]())
        added = r.numpy()
        # Max and Min merge too (the MergeMode appendix lists MERGING for both): lanes 0-1 get
        # max(3, -1), lane 0 then min(3, -1); every other lane keeps what r held
        b = Reg.RegTensor[F32]()
        Reg.Duplicate(b, -1.0)
        Reg.Max[F32, Reg.MaskMergeMode.MERGING](r, a, b, Reg.CreateMask[F32, Reg.MaskPattern.VL2]())
        maxed = r.numpy()
        Reg.Min[F32, Reg.MaskMergeMode.MERGING](r, a, b, Reg.CreateMask[F32, Reg.MaskPattern.VL1]())
        mined = r.numpy()
        # the same with ZEROING clears the unselected lanes
        Reg.Max[F32, Reg.MaskMergeMode.ZEROING](r, a, b, Reg.CreateMask[F32, Reg.MaskPattern.VL2]())
    assert merged.tolist() == [1.0] * 32 + [7.0] * 32
    assert zeroed.tolist() == [2.0] * 32 + [0.0] * 32
    assert added.tolist() == [6.0] * 4 + [2.0] * 28 + [0.0] * 32
    assert maxed.tolist() == [3.0] * 2 + [6.0] * 2 + [2.0] * 28 + [0.0] * 32
    assert mined.tolist() == [-1.0, 3.0] + [6.0] * 2 + [2.0] * 28 + [0.0] * 32
    assert r.numpy().tolist() == [3.0] * 2 + [0.0] * 62


def test_duplicate_tensor_form_and_select_keeps_sources(core):
    src, dst, other = Reg.RegTensor[F16](), Reg.RegTensor[F16](), Reg.RegTensor[F16]()
    p = _ub(core, F16, np.arange(128) + 5)
    with __VEC_SCOPE__():
        Reg.LoadAlign(src, p)
        Reg.Duplicate(dst, src, Reg.CreateMask[F16]())          # the lowest element everywhere
        Reg.Duplicate(other, -1.0)
        sel = Reg.MaskReg()
        Reg.Compares[F16, CMPMODE.LT](sel, src, 10.0, Reg.CreateMask[F16]())
        Reg.Select(dst, src, other, sel)
    assert dst.numpy()[:7].tolist() == [5, 6, 7, 8, 9, -1, -1]


def test_store_writes_active_lanes_only(core):
    core.ub.data[:512] = 0
    r = Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        Reg.Duplicate(r, 9.0)
        Reg.StoreAlign(UbufPtr[F32](0), r, Reg.UpdateMask[F32](Ref(5)))
    assert _read(core, F32, 8).tolist() == [9.0] * 5 + [0.0] * 3


def test_store_near_the_end_with_inactive_tail(core):
    # a masked store touches only its active lanes: 8 floats 32 bytes before the end are fine
    end = core.ub.capacity
    r = Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        Reg.Duplicate(r, 1.5)
        Reg.StoreAlign(UbufPtr[F32](end - 32), r, Reg.UpdateMask[F32](Ref(8)))
    assert _read(core, F32, 8, end - 32).tolist() == [1.5] * 8


def test_pack_b32_store_values(core):
    # DIST_PACK_B32 (the half path's store): the low 16 bits of each active 32-bit slot, packed
    # contiguously; the mask is read at 32 bits. A half register as a float -> half Cast leaves
    # it (results in the even lanes, 0 in the odd ones) stores its even lanes.
    lanes = np.array([(-1) ** i * (i + 0.5) for i in range(128)], F16)   # 0.5, -1.5, 2.5, ...
    p = _ub(core, F16, lanes)
    sentinel = np.array(-7.0, F16)
    core.ub.data[512:768] = np.full(128, sentinel).view(np.uint8)
    r = Reg.RegTensor[F16]()
    with __VEC_SCOPE__():
        Reg.LoadAlign(r, p)
        Reg.StoreAlign[F16, Reg.StoreDist.DIST_PACK_B32](UbufPtr[F16](512), r, Reg.UpdateMask[F32](Ref(5)))
    # slots 0..4 hold lanes (0, 1), (2, 3), ... (8, 9): their low halves are lanes 0, 2, 4, 6, 8
    assert _read(core, F16, 7, 512).tolist() == [0.5, 2.5, 4.5, 6.5, 8.5, -7.0, -7.0]
    # a full mask packs all 64 slots: 128 bytes, the even lanes in order, and nothing beyond
    core.ub.data[512:768] = np.full(128, sentinel).view(np.uint8)
    u = Reg.RegTensor[np.uint16]()
    with __VEC_SCOPE__():
        Reg.LoadAlign(u, UbufPtr[np.uint16](0))
        Reg.StoreAlign[np.uint16, Reg.StoreDist.DIST_PACK_B32](UbufPtr[np.uint16](512), u,
                                                                Reg.CreateMask[np.uint32]())
    assert _read(core, F16, 64, 512).tolist() == [i + 0.5 for i in range(0, 128, 2)]
    assert (_read(core, F16, 64, 640) == sentinel).all()


_TIES = [2.5, -2.5, 3.5, -3.5, 0.5, -0.5, 1.75, -1.75, -0.0, 7.0]
_ODD_IN = [1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-12, -(1 + 2**-12), -(1 + 3 * 2**-11), 1 + 2**-10,
           2.0, 65520.0, 2**-25, -(2**-25), 3 * 2**-26, -0.0]


@pytest.mark.parametrize("mode,dst,values,want", [
    # float -> int32: ties and negatives in each direction
    (ac.RoundMode.CAST_RINT, np.int32, _TIES, [2, -2, 4, -4, 0, 0, 2, -2, 0, 7]),
    (ac.RoundMode.CAST_FLOOR, np.int32, _TIES, [2, -3, 3, -4, 0, -1, 1, -2, 0, 7]),
    (ac.RoundMode.CAST_CEIL, np.int32, _TIES, [3, -2, 4, -3, 1, 0, 2, -1, 0, 7]),
    (ac.RoundMode.CAST_ROUND, np.int32, _TIES, [3, -3, 4, -4, 1, -1, 2, -2, 0, 7]),
    (ac.RoundMode.CAST_TRUNC, np.int32, _TIES, [2, -2, 3, -3, 0, 0, 1, -1, 0, 7]),
    # float -> half to odd: an inexact result takes the neighbour with an odd last bit, ties
    # included (1 + 2**-11 lies halfway between 1 and 1 + 2**-10); exact values stay; past the
    # largest half it stops at 65504 (odd); below the smallest subnormal 2**-24 it is 2**-24
    (ac.RoundMode.CAST_ODD, np.float16, _ODD_IN,
     [1 + 2**-10, 1 + 2**-10, 1 + 2**-10, -(1 + 2**-10), -(1 + 2**-10), 1 + 2**-10, 2.0, 65504.0,
      2**-24, -(2**-24), 2**-24, -0.0]),
], ids=["RINT", "FLOOR", "CEIL", "ROUND", "TRUNC", "ODD"])
def test_cast_round_modes(core, mode, dst, values, want):
    src = np.array(values, F32)
    assert src.astype(np.float64).tolist() == values              # every input exact in float
    p = _ub(core, F32, np.resize(src, 64))
    r, out = Reg.RegTensor[F32](), Reg.RegTensor[dst]()
    layout = Reg.RegLayout.ZERO if dst is np.float16 else Reg.RegLayout.UNKNOWN
    trait = Reg.CastTrait(layout, Reg.SatMode.NO_SAT, Reg.MaskMergeMode.ZEROING, mode)
    with __VEC_SCOPE__():
        Reg.LoadAlign(r, p)
        Reg.Cast[dst, F32, trait](out, r, Reg.CreateMask[F32]())
    got = out.numpy()
    if dst is np.float16:                                         # RegLayout ZERO: the even lanes
        assert not got[1::2].view(np.uint16).any()
        got = got[0::2]
    assert same_bits(got[:len(want)], np.array(want, dst))


def test_cast_hybrid_is_refused(core):
    # CAST_HYBRID is hifloat8's round mode; no emulated conversion takes it, exact ones included
    src, f16, f32 = Reg.RegTensor[F32](), Reg.RegTensor[F16](), Reg.RegTensor[F32]()
    hybrid = Reg.RoundMode.CAST_HYBRID
    with __VEC_SCOPE__():
        Reg.Duplicate(src, 1.5)
        Reg.Duplicate(f16, 1.5)
        m = Reg.CreateMask[F32]()
        with pytest.raises(ac.ConstraintError, match="CAST_HYBRID"):
            Reg.Cast[F16, F32, Reg.CastTrait(Reg.RegLayout.ZERO, Reg.SatMode.NO_SAT,
                                             Reg.MaskMergeMode.ZEROING, hybrid)](f16, src, m)
        with pytest.raises(ac.ConstraintError, match="CAST_HYBRID"):
            Reg.Cast[F32, F16, Reg.CastTrait(Reg.RegLayout.ZERO, Reg.SatMode.UNKNOWN,
                                             Reg.MaskMergeMode.ZEROING, hybrid)](f32, f16, m)
        with pytest.raises(ac.ConstraintError, match="read before"):   # nothing was written
            Reg.Add(f32, f32, f32, m)
    assert (f16.numpy() == 1.5).all()


@pytest.mark.parametrize("t", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4, "hifloat8"],
                         ids=["fp8_e4m3", "fp8_e5m2", "int4", "hifloat8"])
def test_cast_types_not_emulated_are_refused(core, t):
    with pytest.raises(ac.AscendCTypeError, match="not (one of the emulated types|an element type)"):
        Reg.RegTensor[t]()
    src, dst = Reg.RegTensor[F32](), Reg.RegTensor[F16]()
    with __VEC_SCOPE__():
        Reg.Duplicate(src, 1.0)
        with pytest.raises(ac.AscendCTypeError):
            Reg.Cast[t, F32](dst, src, Reg.CreateMask[F32]())


def test_arithmetic_is_the_exact_layer(core):
    # bf16 Mul and Add round once (the product of two bf16 is exact in float64)
    rng = np.random.default_rng(3)
    a = rng.standard_normal(128).astype(BF16)
    b = rng.standard_normal(128).astype(BF16)
    pa, pb = _ub(core, BF16, a, 0), _ub(core, BF16, b, 256)
    ra, rb, prod, s = (Reg.RegTensor[BF16]() for _ in range(4))
    with __VEC_SCOPE__():
        m = Reg.CreateMask[BF16]()
        Reg.LoadAlign(ra, pa)
        Reg.LoadAlign(rb, pb)
        Reg.Mul(prod, ra, rb, m)
        Reg.Add(s, ra, rb, m)
    exact = a.astype(np.float64) * b.astype(np.float64)
    assert same_bits(prod.numpy(), exact.astype(np.float32).astype(BF16))   # 16-bit products: f32 exact
    assert same_bits(s.numpy(), vm.add(a, b))


def test_leaky_relu_vf_matches_the_core(core):
    # the LeakyReLU formula written in registers equals the core's result bit for bit
    x = np.array([-3.5, -0.0, 0.0, 2.0, np.inf, -np.inf, 1e-40, -1e-40] * 8, np.float32)
    p = _ub(core, F32, x)
    xr, zero, neg, out = (Reg.RegTensor[F32]() for _ in range(4))
    gt = Reg.MaskReg()
    with __VEC_SCOPE__():
        m = Reg.CreateMask[F32]()
        Reg.LoadAlign(xr, p)
        Reg.Duplicate(zero, 0.0)
        Reg.Muls(neg, xr, np.float32(0.1), m)
        Reg.Compare[F32, CMPMODE.GT](gt, xr, zero, m)
        Reg.Select(out, xr, neg, gt)
    assert same_bits(out.numpy(), _core.leaky_relu_impl(x, 0.1, slope_dtype=np.float32))


def test_asc_vf_call_and_scope_lifetime(core):
    r = Reg.RegTensor[F32]()

    def vf(value):
        Reg.Duplicate(r, value)

    ac.asc_vf_call(vf, 4.0)
    assert r.numpy()[0] == 4.0
    with pytest.raises(ac.AscendCTypeError, match="expected a function"):
        ac.asc_vf_call(3)
